"""Each call of the learner's wrapper that ``python -m checks.benchmark ARGV`` will time,
once, in the order it times them (:func:`planned_calls`), from the command line's own plan.

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

from checks.benchmark.planned import calls_of, planned_shapes, stable_seed, torch_dtype


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
                    calls = calls_of(spec.variants(mod, inputs, shape), args.variants == "all")
                except Exception:  # noqa: BLE001 - the run reports this shape's problem itself
                    continue
                for v in calls:
                    yield f"{op} {shape['name']} {dname} {v.get('name', '?')}", v["fn"]
                del inputs, calls
