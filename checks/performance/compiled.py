"""What the H200's compiler makes of a recorded launch: registers, spills, shared memory,
and whether ``tl.dot`` became tensor-core instructions.

The interpreter runs the kernels of a reading; the compile needs Triton's code generator,
which the interpreter's switch turns off in its process.  So :func:`compile_facts` sends
the launches (each kernel's file and name, the argument types and constexprs derived from
the recorded values) to a child process without the switch, which compiles each with
``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))`` and runs Triton's
ptxas with ``-v`` on the PTX for the register and spill counts (no GPU needed).

:class:`Compiler` starts that child before the interpreter runs (its imports overlap the
recording) and hands it each launch as it is recorded, one JSON line each; it compiles
them while the interpreter goes on.  A kernel that does not compile for sm_90 comes back
with ``compile_error``: the compiler's own words (the innermost message of Triton's
CompilationError, and the line of the learner's file it points at), or Triton's words for
a launch the H200 would refuse (more shared memory than a block may have).  A child that
could not answer at all gives ``error`` instead: no facts, and no fault of the kernel.
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
MARK = "@@compiled "  # the child's answer lines (the answer's module may print at import)
SHARED_LIMIT = 232448  # bytes of shared memory one block may use on an H100/H200 (227 KiB)

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


class Compiler:
    """The compile child of one reading, fed each launch as the interpreter records it."""

    def __init__(self) -> None:
        self.keys: dict = {}  # a job's JSON -> its place in the child's answers
        self.answers: Optional[list] = None
        self.error = ""
        try:
            self.proc: Optional[subprocess.Popen] = subprocess.Popen(
                [sys.executable, "-m", "checks.performance.compiled"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=interpreter.interpreter_env(False),
            )
        except OSError as e:
            self.proc, self.error = None, f"{type(e).__name__}: {e}"

    def key(self, rec: Any) -> Optional[str]:
        job = launch_job(rec)
        return None if job is None else json.dumps(job, sort_keys=True)

    def submit(self, rec: Any) -> None:
        """Compile ``rec``'s kernel (once per kernel and signature)."""
        key = self.key(rec)
        if key is None or key in self.keys:
            return
        self.keys[key] = len(self.keys)
        if self.proc is not None and self.proc.stdin is not None:
            try:
                self.proc.stdin.write(key + "\n")
                self.proc.stdin.flush()
            except OSError as e:  # the child is gone: finish() says why
                self.error = self.error or f"{type(e).__name__}: {e}"

    def finish(self) -> list:
        """The child's answers, in the order the jobs were submitted (it is waited for)."""
        if self.answers is not None:
            return self.answers
        answers: list = []
        if self.proc is not None:
            try:
                out, err = self.proc.communicate(timeout=TIMEOUT)
                answers = [
                    json.loads(line[len(MARK) :]) for line in out.splitlines() if line.startswith(MARK)
                ]
                if len(answers) < len(self.keys):
                    self.error = self.error or (err or "the compile child ended early").strip()[-300:]
            except (subprocess.TimeoutExpired, ValueError, OSError) as e:
                self.proc.kill()
                self.proc.communicate()
                self.error = f"{type(e).__name__}: {e}"
        why = f"no compile facts: {self.error or 'the compile child gave no answer'}"
        self.answers = answers + [{"error": why}] * (len(self.keys) - len(answers))
        return self.answers

    def close(self) -> None:
        """Stop the child if its answers were never asked for (the reading ended early)."""
        if self.proc is not None and self.answers is None:
            self.proc.kill()
            self.proc.communicate()
            self.answers = []

    def facts(self, records: list) -> list:
        """One facts dict (or None: a kernel it cannot find by name) per record; every
        record must have been submitted."""
        answers = self.finish()
        out = []
        for rec in records:
            key = self.key(rec)
            out.append(None if key is None or key not in self.keys else answers[self.keys[key]])
        return out


def compile_facts(records: list) -> list:
    """One facts dict (or None) per record: ``n_regs``, ``spill_bytes``, ``shared_bytes``,
    ``num_warps``, ``tensor_cores`` (mma/wgmma in the PTX), ``dot`` (the kernel calls
    ``tl.dot``); ``compile_error`` (the kernel does not compile) or ``error`` (no facts)."""
    compiler = Compiler()
    for rec in records:
        compiler.submit(rec)
    return compiler.facts(records)


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
    if out.returncode != 0:
        said = [line for line in text.splitlines() if line.strip()]
        return {"compile_error": f"ptxas: {said[-1] if said else f'exit status {out.returncode}'}"}
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


def _unwrapped(message: str) -> str:
    """'AssertionError("Loop-carried ...")' -> 'Loop-carried ...' (Triton wraps the words)."""
    m = re.fullmatch(r"\w+\((['\"])(.*)\1\)", message.strip(), re.DOTALL)
    return m.group(2) if m else message.strip()


def compiler_words(e: BaseException, path: str) -> str:
    """The compiler's own words for ``e``: the innermost message of a CompilationError with
    the line of ``path`` it points at, else the exception's first lines."""
    said: Optional[BaseException] = None
    chain: Optional[BaseException] = e
    seen: set = set()
    while chain is not None and id(chain) not in seen:
        seen.add(id(chain))
        if getattr(chain, "error_message", None):
            said = chain
        chain = chain.__cause__ or chain.__context__
    if said is None:
        text = str(e).strip()
        return f"{type(e).__name__}: {text[:600]}" if text else type(e).__name__
    words = _unwrapped(str(getattr(said, "error_message", "")))
    node, src = getattr(said, "node", None), getattr(said, "src", None) or ""
    lineno = getattr(node, "lineno", None)
    m = re.match(r"\s*def\s+(\w+)", src)
    if lineno is None or m is None:
        return words
    where = f"line {lineno} of {m.group(1)}"
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        start = next(i for i, line in enumerate(lines) if re.match(rf"\s*def\s+{m.group(1)}\b", line))
        where = f"line {start + lineno} of {os.path.basename(path)}: {lines[start + lineno - 1].strip()}"
    except (OSError, StopIteration, IndexError):
        pass
    return f"{words} ({where})"


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
    try:
        kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=job["options"])
    except Exception as e:  # noqa: BLE001 - the kernel does not compile: the compiler's words
        return {"compile_error": compiler_words(e, job["file"])}
    ptx = kernel.asm["ptx"]
    facts = _ptxas_counts(ptx)
    if facts.get("compile_error"):
        return facts
    if int(kernel.metadata.shared) > SHARED_LIMIT:
        facts["compile_error"] = (
            f"out of resource: shared memory, Required: {int(kernel.metadata.shared)}, Hardware limit: "
            f"{SHARED_LIMIT}. Reducing block sizes or `num_stages` may help (Triton's words at launch)"
        )
    facts.update(
        shared_bytes=int(kernel.metadata.shared),
        num_warps=int(kernel.metadata.num_warps),
        tensor_cores=bool(re.search(r"\b(wgmma|mma)\.", ptx)),
        dot="tt.dot" in kernel.asm.get("ttir", ""),
    )
    return facts


def _answer(job: dict) -> dict:
    try:
        return _compile_one(job)
    except Exception as e:  # noqa: BLE001 - one kernel the child cannot compile: say so
        return {"error": f"{type(e).__name__}: {str(e)[:300]}"}


def main() -> None:
    """One job per line on stdin, each answered on stdout as soon as it is compiled."""
    for line in sys.stdin:
        if line.strip():
            print(MARK + json.dumps(_answer(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
