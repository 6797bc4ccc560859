"""``python -m checks.performance <workshop>``: the performance reading of a passing answer,
run in Triton's interpreter (no GPU needed), and the lesson's performance step.

Exit codes: 0 read (the step met or not, see the output); 1 the answer's call raised, one
of its programs ran too long to read, or a kernel does not compile for sm_90 (the
compiler's words are the reading); 3 no reading for that workshop; 4 this environment
cannot run Triton's interpreter (numpy 2.4 or newer with Triton 3.6: it says what to
install); 64 a usage error.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from checks import interpreter
from checks.command_line import EXIT_UNAVAILABLE, EXIT_USAGE, UsageParser
from checks.json_files import write_json_atomic
from checks.performance import environment

EXIT_FAILED = 1


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"perf_answer_{abs(hash(str(path)))}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"--file: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _step_word(met) -> str:
    return "not judged" if met is None else "met" if met else "not met"


def main(argv=None) -> int:
    p = UsageParser(prog="python -m checks.performance", description=__doc__.split("\n\n")[0])
    p.add_argument("workshop", help="a GPU workshop's id (strided_softmax, softmax_backward, ...)")
    p.add_argument(
        "--file", type=Path, metavar="PATH", help="the answer to read (default: the reference answer)"
    )
    p.add_argument(
        "--all-variants",
        action="store_true",
        help="read every candidate of the benchmark, not only the default call",
    )
    p.add_argument("--limit", type=int, metavar="N", help="with --all-variants: the first N candidates only")
    p.add_argument(
        "--every-program",
        action="store_true",
        help="run every program of each launch in the interpreter (default: sample the first ones)",
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="write the readings as JSON")
    args = p.parse_args(argv)
    from checks.performance import problems

    if args.workshop not in problems.READING_SHAPES:
        print(
            f"workshop: no performance reading for {args.workshop!r} "
            f"(have {', '.join(problems.READING_SHAPES)})",
            file=sys.stderr,
        )
        return EXIT_UNAVAILABLE
    problem = environment.interpreter_problem()
    if problem:
        print(f"no reading: {problem}")
        return environment.EXIT_ENVIRONMENT
    from workshops import catalog

    path = args.file or catalog.get(args.workshop).solution
    if not Path(path).is_file():
        print(f"--file: {path} does not exist", file=sys.stderr)
        return EXIT_USAGE
    interpreter.select(True)  # before the answer decorates its kernels
    from checks.performance import compiled

    compiler = compiled.Compiler()  # its imports overlap ours and the interpreter's run
    try:
        return _read(args, Path(path), compiler)
    finally:
        compiler.close()


def _read(args, path: Path, compiler) -> int:
    from checks.performance import accesses, format_reading, goals, problems, read_module

    shape, dtype = problems.READING_SHAPES[args.workshop]
    print(
        f"Performance reading of {path} on {shape['name']} {dtype} "
        "(interpreter accesses, sm_90 compile; predicted for an H200):"
    )
    try:
        module = load_module(path)
        readings = read_module(
            args.workshop,
            module,
            default_only=not args.all_variants,
            limit=args.limit,
            every_program=args.every_program,
            compiler=compiler,
        )
        calls = problems.candidate_calls(problems.problem(args.workshop), module, not args.all_variants)
    except accesses.TooSlow as e:
        print(f"no reading: {e}")
        return EXIT_FAILED
    except Exception as e:  # noqa: BLE001 - an answer that does not run yet: no reading, say why
        print(f"no reading: the answer's call raised {type(e).__name__}: {str(e)[:300]}")
        return EXIT_FAILED
    if not readings:
        print("no reading: the benchmark has no candidate call of this answer")
        return EXIT_FAILED
    for r in readings:
        print(format_reading(r))
    met, text, evidence = goals.judge(args.workshop, readings[0])
    print(f"Performance step: {text}: {_step_word(met)} ({evidence})")
    if args.json:
        write_json_atomic(
            args.json,
            {
                "workshop": args.workshop,
                "file": str(path),
                "step_met": met,
                "step": text,
                "step_evidence": evidence,
                "shape": shape["name"],
                "dtype": dtype,
                "candidates": [name for name, _ in calls],  # every one, read or not (--limit)
                "readings": [r.as_dict() for r in readings if r.compiles],
                "not_compiled": [r.as_dict() for r in readings if not r.compiles],
            },
        )
    return EXIT_FAILED if any(not r.compiles for r in readings) else 0


if __name__ == "__main__":
    sys.exit(main())
