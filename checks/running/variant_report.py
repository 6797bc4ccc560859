"""Which kernel variants each check of a GPU workshop launches, and what compiling them costs.

A save of a kernel file compiles every distinct variant the checks launch again: one per
dtype, constexpr values, launch options (num_warps, num_stages, ...) and Triton's own
specializations of the arguments (an integer equal to 1 becomes a constant, an integer or
a pointer divisible by 16 is marked so).  This tool runs a workshop's checks against its
reference answer in Triton's interpreter, works out each launch's variant with Triton's
own binder for the GPU target (the one ``JITFunction.run`` uses), then compiles each
distinct variant once, serially, for that target (sm_90 by default) in a fresh process
and cache, and reports the CPU seconds (ptxas's included)::

    python -m checks.running.variant_report --workshops all --json OUT.json

Per workshop: the variants in the order first launched, the checks that launch each, and
per check the variants it launches and how many of them are new (not launched by an
earlier check).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from checks import interpreter
from checks.judging import launches

TARGET = ("cuda", 90, 32)  # the H200's compile target: backend, compute capability, warp size


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


class SpecializationRecorder(launches.Listener):
    """Each launch of a kernel defined in ``kernel_file``, as the variant Triton would
    compile for ``target``: its ``specialization_data`` (the format the compile pool reads)."""

    launch_kinds = frozenset((launches.INTERPRETED, launches.JIT))

    def __init__(self, kernel_file: Any, target: tuple = TARGET) -> None:
        from triton.backends.compiler import GPUTarget
        from triton.compiler import make_backend

        self.kernel_file = str(kernel_file)
        self.backend = make_backend(GPUTarget(*target))
        self.binders: dict = {}  # python function -> (JITFunction, binder)
        self.check = ""  # the check running now
        self.variants: dict = {}  # id -> {"qualname", "data", "summary", "checks": [...]}
        self.by_check: dict = {}  # check id -> [variant ids in launch order, each once]

    def around_launch(self, launch: launches.Launch, proceed: Any) -> Any:
        fn = launch.function
        if fn is not None and _same_file(fn.__code__.co_filename, self.kernel_file):
            try:
                self.record(launch.kernel, fn, launch.args, launch.kwargs)
            except Exception as e:  # noqa: BLE001 - a launch Triton itself would refuse
                self.by_check.setdefault(self.check, []).append(f"unbound: {type(e).__name__}: {e}")
        return proceed()

    def _binder(self, kernel: Any, fn: Any) -> tuple:
        found = self.binders.get(fn)
        if found is None:
            from triton.runtime.jit import JITFunction, create_function_from_signature

            options = getattr(kernel, "kwargs", None) or {}
            jit = JITFunction(
                fn,
                do_not_specialize=options.get("do_not_specialize"),
                do_not_specialize_on_alignment=options.get("do_not_specialize_on_alignment"),
            )
            found = (jit, create_function_from_signature(jit.signature, jit.params, self.backend))
            self.binders[fn] = found
        return found

    def record(self, kernel: Any, fn: Any, args: tuple, kwargs: dict) -> str:
        from triton.runtime.jit import serialize_specialization_data

        from checks.running.variants import identity

        jit, binder = self._binder(kernel, fn)
        bound, specialization, options = binder(*args, **kwargs)
        parsed = self.backend.parse_options(options)
        names = [p.name for p in jit.params]
        signature = {name: kind for name, (kind, _) in zip(names, specialization)}
        values = list(bound.values())
        constexprs = {(i,): values[i] for i, (kind, _) in enumerate(specialization) if kind == "constexpr"}
        attrs = {
            (i,): self.backend.parse_attr(spec)
            for i, (_, spec) in enumerate(specialization)
            if isinstance(spec, str) and spec
        }
        key = json.dumps([specialization[i] if (i,) not in constexprs else "c" for i in range(len(names))])
        data = serialize_specialization_data(fn.__qualname__, signature, constexprs, attrs, parsed, key)
        ident = identity(fn.__qualname__, data)
        if ident not in self.variants:
            self.variants[ident] = {
                "qualname": fn.__qualname__,
                "data": data,
                "summary": summary(names, specialization, values, parsed),
                "checks": [],
            }
        seen = self.variants[ident]["checks"]
        if self.check not in seen:
            seen.append(self.check)
        mine = self.by_check.setdefault(self.check, [])
        if ident not in mine:
            mine.append(ident)
        return ident


def summary(names: list, specialization: list, values: list, options: Any) -> str:
    """One line naming what makes a variant: types, the D (divisible by 16) marks, the
    constants (constexprs and integers equal to 1) and the launch options."""
    parts = []
    for name, (kind, spec), value in zip(names, specialization, values):
        if kind == "constexpr":
            parts.append(f"{name}={value}")
        elif kind.startswith("*"):
            parts.append(f"{name}:{kind}{'/16' if spec == 'D' else ''}")
        elif spec == "D":
            parts.append(f"{name}/16")
    parts.append(f"w{options.num_warps}s{options.num_stages}")
    return " ".join(parts)


def record_workshop(workshop_id: str, target: tuple = TARGET, file: Optional[Path] = None) -> dict:
    """Run the workshop's checks on its reference answer (or ``file``) in the
    interpreter, recording the variants each check launches."""
    from checks.judging import engine
    from workshops import catalog

    engine.use_interpreter()
    path = Path(file) if file else catalog.get(workshop_id).solution
    recorder = SpecializationRecorder(path, target)

    def begin(case: Any) -> None:
        recorder.check = case.id

    t0 = time.perf_counter()
    with launches.listening(recorder):
        records = engine.run_checks(workshop_id, path, interpret=True, on_begin=begin)
    order = list(recorder.variants)
    seen: set = set()
    checks = []
    for rec in records:
        ids = recorder.by_check.get(rec.id, [])
        new = [i for i in ids if i in recorder.variants and i not in seen]
        seen.update(new)
        checks.append(
            {
                "check": rec.id,
                "status": rec.status,
                "variants": [order.index(i) if i in recorder.variants else i for i in ids],
                "new": len(new),
            }
        )
    return {
        "workshop": workshop_id,
        "file": str(path),
        "target": list(target),
        "interpreter_s": round(time.perf_counter() - t0, 2),
        "failed_checks": [r.id for r in records if r.status in ("fail", "error")],
        "variants": [
            {"index": n, "id": i, **{k: v for k, v in recorder.variants[i].items()}}
            for n, i in enumerate(order)
        ],
        "checks": checks,
    }


def cpu_seconds() -> float:
    """CPU seconds of this process and of its waited children (ptxas)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def compile_each(path: str, variants: list, target: tuple) -> list:
    """Compile each variant once, one after another; the CPU seconds of each (run in a
    process that does not use the interpreter, with a fresh Triton cache)."""
    import importlib.util

    from checks.running.variants import compile_variant, jit_function

    spec = importlib.util.spec_from_file_location("variant_report_kernels", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    seconds: list = []
    for v in variants:
        fn = jit_function(mod, v["qualname"])
        c0, t0 = cpu_seconds(), time.perf_counter()
        try:
            compile_variant(fn, v["data"], target)
            seconds.append(
                {"cpu_s": round(cpu_seconds() - c0, 3), "wall_s": round(time.perf_counter() - t0, 3)}
            )
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            seconds.append({"error": f"{type(e).__name__}: {str(e)[:300]}"})
    return seconds


def measure_compiles(report: dict) -> dict:
    """Add each variant's compile CPU seconds and the total per save to ``report``."""
    with tempfile.TemporaryDirectory(prefix="variant-report-") as tmp:
        job = Path(tmp) / "job.json"
        job.write_text(
            json.dumps({"path": report["file"], "variants": report["variants"], "target": report["target"]}),
            encoding="utf-8",
        )
        env = interpreter.interpreter_env(False)  # compiling for sm_90, not interpreting
        env.update(TRITON_CACHE_DIR=str(Path(tmp) / "cache"), TRITON_ALWAYS_COMPILE="1")
        cmd = [sys.executable, "-m", "checks.running.variant_report", "--compile-job", str(job)]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"compiling {report['workshop']}'s variants failed: {done.stderr[-2000:]}")
    seconds = json.loads(done.stdout.strip().splitlines()[-1])
    for v, s in zip(report["variants"], seconds):
        v["compile_cpu_s"] = s.get("cpu_s")
        v["compile_wall_s"] = s.get("wall_s")
        if "error" in s:
            v["compile_error"] = s["error"]
    ok = [s for s in seconds if "error" not in s]
    report["compile_cpu_s"] = round(sum(s["cpu_s"] for s in ok), 2)  # serial, one save's worth
    report["compile_serial_wall_s"] = round(sum(s["wall_s"] for s in ok), 2)
    report["compile_process_wall_s"] = round(wall, 2)  # with the process's start and imports
    report["compile_errors"] = len(seconds) - len(ok)
    return report


def print_report(report: dict, out: Any = sys.stdout) -> None:
    w = report["workshop"]
    cpu = report.get("compile_cpu_s")
    said = (
        f", {cpu} CPU-s ({report['compile_serial_wall_s']} s wall, serial)"
        f" to compile for sm_{report['target'][1]}"
        if cpu is not None
        else ""
    )
    print(f"{w}: {len(report['variants'])} variants per save{said}", file=out)
    for v in report["variants"]:
        s = v.get("compile_cpu_s")
        cost = (
            f"{s:6.2f}s"
            if isinstance(s, (int, float))
            else ("  error" if "compile_error" in v else "   n/a ")
        )
        print(
            f"  [{v['index']:2}] {cost} {v['qualname']} {v['summary']}  ({len(v['checks'])} checks)", file=out
        )
    for c in report["checks"]:
        print(
            f"    {c['check']:<40} {c['status']:<7} {len(c['variants']):2} variants, {c['new']} new", file=out
        )


def main(argv: Optional[list] = None) -> int:
    from workshops import catalog

    p = argparse.ArgumentParser(
        prog="python -m checks.running.variant_report", description=__doc__.split("\n")[0]
    )
    p.add_argument("--workshops", default="all", help="GPU workshop ids, comma-separated, or 'all'")
    p.add_argument("--json", type=Path, help="write the report as JSON here")
    p.add_argument("--no-compile", action="store_true", help="count the variants only")
    p.add_argument(
        "--arch", type=int, default=TARGET[1], help="compute capability to compile for (default 90)"
    )
    p.add_argument("--compile-job", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.compile_job:
        job = json.loads(args.compile_job.read_text(encoding="utf-8"))
        print(json.dumps(compile_each(job["path"], job["variants"], tuple(job["target"]))))
        return 0
    gpu = [w.id for w in catalog.workshops() if w.gpu]
    wanted = gpu if args.workshops == "all" else [x.strip() for x in args.workshops.split(",") if x.strip()]
    unknown = [x for x in wanted if x not in gpu]
    if unknown:
        p.error(f"--workshops: not GPU workshops: {', '.join(unknown)} (known: {', '.join(gpu)})")
    target = (TARGET[0], args.arch, TARGET[2])
    reports = []
    for wid in wanted:
        report = record_workshop(wid, target)
        if not args.no_compile:
            measure_compiles(report)
        print_report(report)
        reports.append(report)
    if args.json:
        from checks.json_files import write_json_atomic

        write_json_atomic(args.json, {"target": list(target), "workshops": reports})
    return 0


if __name__ == "__main__":
    sys.exit(main())
