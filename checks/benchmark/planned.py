"""What a benchmark run will call, without timing or judging anything: the shapes it
selects (the runner's own choice, :func:`planned_shapes`) and, for a command line of
``python -m checks.benchmark``, each call of the learner's wrapper it will time, once
(:func:`planned_calls`).

The app's benchmark worker calls each planned call once while Triton's compiles are
skipped (see checks/running/discovery.py): the kernel variants those calls ask for are
then known before the first row is timed, and the app's compile pool compiles them in
parallel.  The inputs are made as the runner makes them (same spec, shapes, dtypes,
variants), so the calls specialize as the timed ones will; nothing here is compared with
an oracle or timed, and only the learner's candidates are called (PyTorch's baselines
and peers compile no kernel of the learner's file).
"""

from __future__ import annotations

from typing import Any, Callable, Generator

from checks.benchmark.kernels import CACHED_HANDLE, first_view


def planned_shapes(spec: Any, shapes: str) -> list:
    """The spec's shapes a run with ``--shapes shapes`` measures, in the order it measures
    them: the comparison shapes first."""
    selected = [s for s in spec.SHAPES if shapes == "all" or s.get("role") == shapes]
    selected.sort(key=lambda s: s.get("role") != "comparison")
    return selected


def torch_dtype(name: str) -> Any:
    """The torch dtype of a benchmark dtype name (fp32, fp16, bf16)."""
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


def _calls_of(variants: list, sweep: bool) -> list:
    """The learner's candidates among a shape's variants, as the run keeps them; a
    cached-handle twin calls the same wrapper as its candidate and is left out."""
    kept = variants if sweep else first_view(variants)
    return [
        v
        for v in kept
        if v.get("role", "candidate") == "candidate"
        and (v.get("config") or {}).get("launch") != CACHED_HANDLE
        and callable(v.get("fn"))
    ]


def planned_calls(
    argv: list, keep_going: Callable[[], bool] = lambda: True
) -> Generator[tuple[str, Callable[[], Any]], None, None]:
    """(label, call) for each call of a learner's candidate that ``python -m
    checks.benchmark ARGV`` will time, in the order it times them; nothing when the
    command would time nothing (``--list``, no CUDA GPU).  The inputs of a shape and
    dtype live until the next one is made, and none is made once ``keep_going()`` is
    False (the caller's time is up).  Raises what parsing the arguments raises
    (SystemExit, cli.UsageError); a shape whose inputs or variants cannot be made, or an
    op whose file does not load, is passed over (the run itself reports it)."""
    from checks.benchmark import cli
    from checks.benchmark.runner import stable_seed
    from checks.judging.engine import LoadError, load_exercise

    args = cli.build_parser().parse_args(argv)
    cli.validate(args)
    if args.list or cli.cuda_problem() is not None:
        return
    plan, _ = cli.plan_ops(args)
    for op, spec, dtypes, path in plan:
        try:
            mod = load_exercise(path)
        except LoadError:
            continue
        for shape in planned_shapes(spec, args.shapes):
            for dname in dtypes:
                if not keep_going():
                    return
                try:
                    seed = stable_seed(op, shape["name"], dname)
                    inputs = spec.make_inputs(shape, torch_dtype(dname), cli.DEVICE, seed)
                    calls = _calls_of(spec.variants(mod, inputs, shape), args.variants == "all")
                except Exception:  # noqa: BLE001 - the run reports this shape's problem itself
                    continue
                for v in calls:
                    yield f"{op} {shape['name']} {dname} {v.get('name', '?')}", v["fn"]
                del inputs, calls
