"""What the H200's compiler makes of a recorded launch: registers, spills, shared memory,
and whether ``tl.dot`` became tensor-core instructions.

The interpreter runs the kernels of a reading; the compile needs Triton's code generator,
which the interpreter's switch turns off in its process.  So :func:`compile_facts` sends
the launches (each kernel's file and name, the argument types and constexprs derived from
the recorded values) to a child process without the switch, which compiles each with
``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))`` and runs Triton's
ptxas with ``-v`` on the PTX for the register and spill counts (no GPU needed).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any, Optional

from checks import interpreter

TIMEOUT = 300

_DTYPES = {
    "torch.float32": "fp32",
    "torch.float16": "fp16",
    "torch.bfloat16": "bf16",
    "torch.float64": "fp64",
    "torch.int32": "i32",
    "torch.int64": "i64",
    "torch.int16": "i16",
    "torch.int8": "i8",
    "torch.uint8": "u8",
    "torch.bool": "i1",
}


def describe_value(value: Any) -> Any:
    """A launch argument as the child needs it (JSON): a tensor's dtype and alignment, a
    number, or None."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return {"tensor": _DTYPES.get(str(value.dtype), "fp32"), "aligned": value.data_ptr() % 16 == 0}
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if hasattr(value, "value"):  # a tl.constexpr
        return describe_value(value.value)
    return str(value)


def launch_job(rec: Any) -> Optional[dict]:
    """The child's job for one KernelRecord, or None (a kernel it cannot find by name)."""
    fn = rec.function
    path = getattr(getattr(fn, "__code__", None), "co_filename", None)
    if fn is None or not path or not os.path.isfile(path):
        return None
    options = {k: rec.kwargs[k] for k in ("num_warps", "num_stages") if isinstance(rec.kwargs.get(k), int)}
    values = dict(zip(rec.arg_names, rec.args))
    values.update({k: v for k, v in rec.kwargs.items() if k not in ("num_warps", "num_stages", "num_ctas")})
    return {
        "file": path,
        "kernel": fn.__name__,
        "values": {k: describe_value(v) for k, v in values.items()},
        "options": options,
    }


def compile_facts(records: list) -> list:
    """One facts dict (or None) per record: ``n_regs``, ``spill_bytes``, ``shared_bytes``,
    ``num_warps``, ``tensor_cores`` (mma/wgmma in the PTX), ``dot`` (the kernel calls
    ``tl.dot``), ``error``."""
    jobs = [launch_job(r) for r in records]
    todo = [j for j in jobs if j is not None]
    if not todo:
        return [None] * len(jobs)
    env = interpreter.interpreter_env(False)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "checks.performance.compiled"],
            input=json.dumps(todo),
            capture_output=True,
            text=True,
            env=env,
            timeout=TIMEOUT,
        )
        answers = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else []
    except (subprocess.TimeoutExpired, ValueError, OSError) as e:
        answers = [{"error": f"{type(e).__name__}: {e}"}] * len(todo)
    if len(answers) != len(todo):
        answers = [{"error": (done.stderr or "the compile failed").strip()[-300:]}] * len(todo)
    it = iter(answers)
    return [next(it) if j is not None else None for j in jobs]


# --- the child --------------------------------------------------------------------------


def _signature(jit: Any, values: dict) -> tuple:
    signature, constexprs, attrs = {}, {}, {}
    for i, param in enumerate(jit.params):
        name = param.name
        v = values.get(name)
        if param.is_constexpr or v is None:
            signature[name] = "constexpr"
            constexprs[name] = v
        elif isinstance(v, dict):
            signature[name] = "*" + v["tensor"]
            if v["aligned"]:
                attrs[(i,)] = [["tt.divisibility", 16]]
        elif isinstance(v, bool):
            signature[name] = "i1"
        elif isinstance(v, int):
            if v == 1:  # Triton specializes an integer 1 into a constant
                signature[name] = "constexpr"
                constexprs[name] = 1
                continue
            signature[name] = "i32" if -(2**31) <= v < 2**31 else "i64"
            if v % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            signature[name] = "fp32"
    return signature, constexprs, attrs


def _ptxas_counts(ptx: str) -> dict:
    import tempfile

    import triton.knobs as knobs

    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w", encoding="utf-8") as f:
            f.write(ptx)
        out = subprocess.run(
            [knobs.nvidia.ptxas.path, "-arch=sm_90a", "-v", src, "-o", os.path.join(d, "k.cubin")],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    text = out.stdout + out.stderr
    regs = re.search(r"Used (\d+) registers", text)
    stores = re.search(r"(\d+) bytes spill stores", text)
    loads = re.search(r"(\d+) bytes spill loads", text)
    stack = re.search(r"(\d+) bytes stack frame", text)
    spill_stores, spill_loads = (int(m.group(1)) if m else 0 for m in (stores, loads))
    return {
        "n_regs": int(regs.group(1)) if regs else None,
        "spill_bytes": spill_stores + spill_loads,
        "spill_stores": spill_stores,
        "spill_loads": spill_loads,
        "stack_bytes": int(stack.group(1)) if stack else 0,
    }


def _compile_one(job: dict) -> dict:
    import importlib.util

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    spec = importlib.util.spec_from_file_location(f"perf_compile_{abs(hash(job['file']))}", job["file"])
    if spec is None or spec.loader is None:
        return {"error": f"cannot import {job['file']}"}
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    jit = getattr(module, job["kernel"], None)
    jit = getattr(jit, "fn", jit) if not hasattr(jit, "params") else jit
    while jit is not None and not hasattr(jit, "params"):
        jit = getattr(jit, "fn", None)
    if jit is None:
        return {"error": f"{job['kernel']} is not a module-level @triton.jit kernel"}
    signature, constexprs, attrs = _signature(jit, job["values"])
    src = ASTSource(fn=jit, signature=signature, constexprs=constexprs, attrs=attrs)
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=job["options"])
    ptx = kernel.asm["ptx"]
    facts = _ptxas_counts(ptx)
    facts.update(
        shared_bytes=int(kernel.metadata.shared),
        num_warps=int(kernel.metadata.num_warps),
        tensor_cores=bool(re.search(r"\b(wgmma|mma)\.", ptx)),
        dot="tt.dot" in kernel.asm.get("ttir", ""),
    )
    return facts


def main() -> None:
    jobs = json.loads(sys.stdin.read())
    answers = []
    for job in jobs:
        try:
            answers.append(_compile_one(job))
        except Exception as e:  # noqa: BLE001 - one kernel that does not compile: say so
            answers.append({"error": f"{type(e).__name__}: {str(e)[:300]}"})
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
