"""Check, then time, every variant of one op: the per-op runner.

For each selected shape and dtype the spec makes inputs, the float64 oracle and the
variants; each variant is called once and compared with the oracle (a learner's
candidate through the provenance check: its answer must come from a Triton kernel of
the learner's file), then -- only if it passed -- called a few more times to keep
compilation and autotuning out of the timing (the first of those calls records the
Triton kernels it launched, see kernels.py), then timed by each timer.

The timed calls are witnessed too (see timed_calls.py): they rotate between two input sets
(the second made with another seed, its own oracle), each call's inputs marked as
changed; the last output of each set is compared with its oracle after timing; and a
learner's candidate must launch a kernel of its file on the timed stream in every
timed call, and give right answers when its inputs' values change in place (a memo
keyed on the storage alone does not), or it is refused by name.  A row faster than a
ceiling measured on this card allows is refused as impossible (statistics.impossible).

Each timer samples until the median's 95 % interval is narrow enough or its time cap
is spent (measuring.py); a per-call timer that times a loop of calls has its own cost
per call measured on an empty candidate with the same rotation and taken off.  Each
row records the bytes its rotation goes through against the L2; with ``aa`` every
variant is timed a second time right after the first, and the row says how far the
two disagree.  ``on_row`` receives each row as soon as it is finished.

Never raises for a variant's failure: a crash, a TODO, a wrong result, a refused
candidate or a failed timing is that variant's row.  A sticky CUDA error (an illegal
address) stops everything after it, each row saying why.  Takes its timers, device
and synchronisation as arguments, so the tests drive it on a CPU.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import time
from pathlib import Path
from typing import Any, Callable, Optional

from checks.benchmark.kernels import first_view
from checks.benchmark.measuring import Timing
from checks.benchmark.planned import planned_shapes, stable_seed
from checks.benchmark.rows import new_row
from checks.benchmark.specs import tolerance_scale
from checks.benchmark.statistics import (
    IMPOSSIBLE,
    add_speedups,
    add_throughput,
    finite,
    impossible,
)
from checks.benchmark.timed_calls import CACHED_OUTPUT, SKIPS_WORK, TimedCall, counting_launches, skipped_work

NOT_OWN_KERNEL = "not-own-kernel"


def compare(out, ref, dtype: str, tol: float) -> tuple:
    """(max_abs_error, rel_error, ok, message) of a variant's output against the oracle."""
    import torch

    if not isinstance(out, torch.Tensor):
        return None, None, False, f"returned {type(out).__name__}, not a tensor"
    if tuple(out.shape) != tuple(ref.shape):
        return None, None, False, f"output shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    got = out.detach().to(device=ref.device, dtype=torch.float64)
    ref = ref.to(torch.float64)
    diff = got - ref
    bad = int((~torch.isfinite(got)).sum())
    max_abs = float(diff.abs().max()) if diff.numel() else 0.0
    ref_norm = float(torch.linalg.vector_norm(ref)) if ref.numel() else 0.0
    diff_norm = float(torch.linalg.vector_norm(diff)) if diff.numel() else 0.0
    rel = diff_norm / ref_norm if ref_norm > 0 else (0.0 if diff_norm == 0 else math.inf)
    if bad:
        return max_abs, rel, False, f"{bad} non-finite output element(s)"
    if not rel <= tol:
        return (
            max_abs,
            rel,
            False,
            (f"wrong result: relative error {rel:.3g} > {tol:.3g} ({dtype}); max abs error {max_abs:.3g}"),
        )
    return max_abs, rel, True, ""


def classify(exc: BaseException, path: Optional[Path]) -> tuple:
    """(status, message) for an exception a variant raised: the learner's own
    NotImplementedError is a TODO; anything else is a failure."""
    from checks.judging import shape_errors
    from checks.judging.engine import raised_in, where_in_file

    where = where_in_file(exc, path) if path else ""
    if isinstance(exc, NotImplementedError) and path is not None and raised_in(exc, path):
        return "todo", f"TODO: {exc}" if str(exc) else "TODO: not implemented yet"
    if isinstance(exc, NotImplementedError):
        return "failed", f"NotImplementedError raised by a library, not your TODO{where}: {exc}"
    said = f"{type(exc).__name__}{where}: {str(exc).strip()[:2000]}"
    return "failed", shape_errors.plain(exc, path, said) if path else said


class _Witness:
    """The correctness call of a learner's candidate, through checks.judging.provenance (imported
    only when a learner's file is benchmarked)."""

    def __init__(self, path: Path, allowed_ops=()):
        from checks.judging import provenance

        self.provenance, self.path = provenance, str(path)
        params = inspect.signature(provenance.witnessed_call).parameters
        self.kwargs = {}
        if allowed_ops and "allowed" in params and hasattr(provenance, "allowed_ops"):
            self.kwargs["allowed"] = provenance.allowed_ops(allowed_ops)
        self.named = "fn_name" in params

    def call(self, fn: Callable, variant: str):
        kw = dict(self.kwargs, **({"fn_name": f"variant {variant!r}"} if self.named else {}))
        return self.provenance.witnessed_call(self.path, fn, **kw)

    def refused(self, exc: BaseException) -> bool:
        return isinstance(exc, self.provenance.NotOwnKernel)


def _new_row(*args: Any, **kwargs: Any) -> dict:
    """A new row (rows.BenchRow's fields) as a plain dict, filled in place below."""
    return dict(new_row(*args, **kwargs))


def _broken_row(op, shape, dname, variant, role, broken, scale, config=None) -> dict:
    row = _new_row(op, shape, dname, variant, role, config, tolerance_scale=scale)
    row.update(status="failed", message=f"not run: an earlier CUDA error broke this process ({broken})")
    return row


def run_op(
    op: str,
    spec,
    mod,
    path: Optional[Path],
    *,
    dtypes: list,
    timers: dict,
    shapes: str = "all",
    sweep: bool = True,
    ceilings: Optional[dict] = None,
    device: str = "cuda",
    sync: Callable = lambda: None,
    warm_calls: int = 3,
    seed: int = 0,
    log: Callable = lambda s: None,
    load_error: Optional[str] = None,
    learner: bool = False,
    allowed_ops=(),
    inspect_kernels: Optional[Callable] = None,
    l2_bytes: Optional[int] = None,
    cache: str = "warm",
    aa: bool = False,
    on_row: Optional[Callable[[dict], None]] = None,
    clock: Callable[[], float] = time.perf_counter,
) -> list:
    """Check and time every variant of ``spec`` for the selected shapes and dtypes.

    ``mod`` is the module loaded from ``path``; ``learner`` says it is a learner's file
    (its candidates go through the provenance check).  ``timers``: {"graph": timer}
    and/or {"events": timer}, each a ``RoundTimer`` or a plain ``timer(fn) -> samples
    in ms``; ``sync`` waits for the device; ``inspect_kernels(fn) -> [kernel facts]``
    makes one call and reports its Triton kernels (None: not recorded).  ``l2_bytes``
    and ``cache`` ("warm"/"cold") say what a row's working set is measured against;
    ``aa`` times every variant twice; ``sweep`` False keeps only the first view's variants
    (kernels.first_view: the wrapper's defaults and PyTorch's rows); ``on_row(row)`` is
    called with each row once it is finished (before speedups, which need the whole
    group); ``clock`` measures the timers' caps.  Returns result rows, speedups filled in."""
    import torch

    dmap = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    scale = tolerance_scale(spec)
    if load_error is not None:
        row = _new_row(op, None, None, "(load)", "candidate")
        row.update(status="failed", message=load_error)
        if on_row is not None:
            on_row(row)
        return [row]
    if not timers:
        raise ValueError("run_op needs at least one timer")
    witness = _Witness(path, allowed_ops) if (learner and path is not None) else None
    rows: list = []

    def finished(row: dict) -> None:
        log(progress(row))
        if on_row is not None:
            on_row(row)

    if l2_bytes is None and device == "cuda":  # a warm row that fits the L2 is judged against it
        from checks.benchmark import timing as card

        l2_bytes = card.l2_bytes()
    timing = Timing(timers, clock, l2_bytes, cache, aa)
    broken = None  # a sticky CUDA error: nothing after it can run in this process
    for shape in planned_shapes(spec, shapes):  # the comparison rows first
        for dname in dtypes:
            timing.harness_seen = {}  # a new shape and dtype: new input sets
            if broken:
                rows.append(_broken_row(op, shape, dname, "(variants)", "candidate", broken, scale))
                finished(rows[-1])
                continue
            inputs = ref = variants = alt = None
            try:
                inputs = spec.make_inputs(
                    shape, dmap[dname], device, stable_seed(op, shape["name"], dname, seed)
                )
                ref = spec.oracle(inputs, shape)
                work = spec.work(shape, dmap[dname])
                variants = spec.variants(mod, inputs, shape)
                if not sweep:
                    variants = first_view(variants)
                alt = _other_inputs(
                    spec, mod, shape, dmap[dname], device, stable_seed(op, shape["name"], dname, seed + 1)
                )
            except KeyboardInterrupt:
                raise
            except BaseException as e:  # noqa: BLE001 - the spec or the module broke; record it
                status, msg = classify(e, path)
                broken = broken or cuda_broken(device)
                row = _new_row(op, shape, dname, "(variants)", "candidate", tolerance_scale=scale)
                row.update(
                    status=status,
                    message=f"could not set up this shape: {msg}" if status == "failed" else msg,
                )
                rows.append(row)
                finished(row)
                continue
            for v in variants:
                name, role = str(v.get("name", "?")), v.get("role", "candidate")
                if broken:
                    rows.append(_broken_row(op, shape, dname, name, role, broken, scale, v.get("config")))
                    finished(rows[-1])
                    continue
                row = _new_row(op, shape, dname, name, role, v.get("config"), tolerance_scale=scale)
                rows.append(row)
                broken = _run_variant(
                    row,
                    v["fn"],
                    ref,
                    _Sets(inputs, ref, alt, name),
                    dname,
                    work,
                    path=path,
                    timing=timing,
                    ceilings=ceilings,
                    sync=sync,
                    warm_calls=warm_calls,
                    device=device,
                    witness=witness if row["role"] == "candidate" else None,
                    inspect_kernels=inspect_kernels,
                )
                finished(row)
            del inputs, ref, variants, alt
            if device == "cuda" and not broken:
                try:
                    torch.cuda.empty_cache()
                except Exception as e:  # noqa: BLE001 - a sticky error surfaced here
                    broken = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return add_speedups(rows)


def _tensors(inputs) -> list:
    import torch

    values = (
        inputs.values() if isinstance(inputs, dict) else inputs if isinstance(inputs, (list, tuple)) else []
    )
    return [t for t in values if isinstance(t, torch.Tensor)]


def _other_inputs(spec, mod, shape, dtype, device, seed) -> Optional[tuple]:
    """(inputs, oracle, {variant name: fn}) of a second input set, or None when the
    spec cannot make one (its inputs are then timed alone)."""
    try:
        inputs = spec.make_inputs(shape, dtype, device, seed)
        ref = spec.oracle(inputs, shape)
        fns = {str(v.get("name", "?")): v["fn"] for v in spec.variants(mod, inputs, shape)}
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - the first set already showed what fails; time it alone
        return None
    return inputs, ref, fns


class _Sets:
    """The input sets one variant is timed on: the checked one and, when there is one,
    a second with other values."""

    def __init__(self, inputs, ref, alt, name: str):
        self.inputs, self.refs, self.fns_alt = [inputs], [ref], []
        if alt is not None and name in alt[2]:
            self.inputs.append(alt[0])
            self.refs.append(alt[1])
            self.fns_alt.append(alt[2][name])

    def timed(self, fn) -> TimedCall:
        return TimedCall([fn] + self.fns_alt, [_tensors(i) for i in self.inputs])


def _check_timed_outputs(row: dict, timed: TimedCall, sets: _Sets, dname: str) -> Optional[str]:
    """Why the timed calls' last outputs are not the oracle's answers, or None."""
    for k, out in enumerate(timed.outputs):
        if out is None:
            continue
        _, _, ok, msg = compare(out, sets.refs[k], dname, row["tolerance"])
        if not ok:
            return f"input set {k + 1} of {len(timed.outputs)}: {msg}"
    return None


def _changed_values_problem(row: dict, timed: TimedCall, sets: _Sets, dname: str, sync) -> Optional[str]:
    """Give set 1's buffers set 2's values in place, call once, compare with set 2's
    oracle, then put set 1's values back: a memo keyed on the storage returns the old
    answer.  Untimed; None when right (or when there is no second set)."""
    if len(timed.fns) < 2:
        return None
    a, b = _tensors(sets.inputs[0]), _tensors(sets.inputs[1])
    if len(a) != len(b) or any(x.shape != y.shape or x.dtype != y.dtype for x, y in zip(a, b)):
        return None
    saved = [x.clone() for x in a]
    try:
        try:
            for x, y in zip(a, b):
                x.copy_(y)
        except RuntimeError:  # e.g. an expanded (stride-0) input cannot be written in place
            return None
        out = timed.fns[0]()
        sync()
        _, _, ok, msg = compare(out, sets.refs[1], dname, row["tolerance"])
        return None if ok else msg
    finally:
        for x, y in zip(a, saved):
            x.copy_(y)
        sync()


def _refuse(row: dict, refused: str, message: str) -> None:
    """Failed, named; its timings stay in the row as evidence, out of every comparison."""
    row.update(status="failed", refused=refused, message=f"refused: {refused}: {message}")


def _run_variant(
    row: dict,
    fn: Callable,
    ref,
    sets: _Sets,
    dname: str,
    work: dict,
    *,
    path,
    timing: Timing,
    ceilings,
    sync,
    warm_calls: int,
    device: str,
    witness: Optional[_Witness],
    inspect_kernels: Optional[Callable],
) -> Optional[str]:
    """Check and time one variant into ``row``; the sticky CUDA error it left, or None."""
    try:
        out = witness.call(fn, row["variant"]) if witness is not None else fn()
        sync()
        max_abs, rel, ok, msg = compare(out, ref, dname, row["tolerance"])
        del out
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - any crash is this variant's verdict
        if witness is not None and witness.refused(e):
            row.update(
                status="failed", refused=NOT_OWN_KERNEL, message=f"not timed: {getattr(e, 'message', str(e))}"
            )
            return None
        status, msg = classify(e, path)
        row.update(status=status, message=msg)
        return cuda_broken(device)
    row.update(max_abs_error=finite(max_abs), rel_error=finite(rel))
    if not ok:
        row.update(status="failed", message=msg)
        return None
    timed, counter = sets.timed(fn), None
    for attempt in (1, 2):
        try:
            for i in range(warm_calls):  # compilation and autotuning stay out
                if i == 0 and attempt == 1 and inspect_kernels is not None:
                    row["kernels"] = inspect_kernels(fn)
                else:
                    fn()
            sync()
            harness_us = timing.harness(timed)
            guard = counting_launches(path, timed, device) if witness is not None else None
            with guard if guard is not None else contextlib.nullcontext() as counter:
                measured = timing.measure(timed)
            sync()
            timing.fill(row, measured, harness_us, timed)
            skipped = skipped_work(timed, counter) if counter is not None else None
            stale = _check_timed_outputs(row, timed, sets, dname)
            if skipped is None and stale is None and witness is not None:
                changed = _changed_values_problem(row, timed, sets, dname, sync)
                if changed is not None:
                    stale = (
                        f"after its inputs' values changed in place, the call returned {changed}: "
                        f"an output kept from an earlier call"
                    )
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001
            skipped = skipped_work(timed, counter) if counter is not None else None
            if skipped is not None:  # e.g. a side-stream launch a graph capture cannot take
                _refuse(row, SKIPS_WORK, skipped)
                return cuda_broken(device)
            broken = cuda_broken(device)
            if attempt == 1 and broken is None:
                # A capture that an earlier variant left invalidated can fail the next one
                # once; a variant that truly cannot be timed fails the second time too.
                counter = None
                continue
            status, msg = classify(e, path)
            row.update(status="failed", message=f"timing failed: {msg}")
            return broken
        break
    if skipped is not None:
        _refuse(row, SKIPS_WORK, skipped)
        return None
    if stale is not None:
        if witness is not None:
            _refuse(row, CACHED_OUTPUT, f"the timed calls are not its work: {stale}")
        else:
            row.update(status="failed", message=f"timed calls gave wrong results: {stale}")
        return None
    add_throughput(row, work, ceilings or {})
    limit = impossible(row, ceilings or {})
    if limit is not None:
        _refuse(row, IMPOSSIBLE, limit)
    return None


def cuda_broken(device: str) -> Optional[str]:
    """The sticky CUDA error left by a crash (an illegal address, say), or None."""
    if device != "cuda":
        return None
    import torch

    try:
        torch.cuda.synchronize()
        return None
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def progress(row: dict) -> str:
    head = f"  {row['op']} {row['shape']} {row['dtype'] or ''} {row['variant']} [{row['role']}]"
    if row["status"] == "ok":
        extra = ""
        if row.get("host_us") is not None:
            extra = f", per call {row['per_call_us']:.2f} us" + (
                " (launch-bound)" if row.get("launch_bound") else ""
            )
        sure = ""
        if finite(row.get("rel_half_width")) is not None:
            sure = f" +-{row['rel_half_width']:.1%}" + (
                " (not sure yet)" if row.get("converged") is False else ""
            )
        return f"{head}: {row['median_us']:.2f} us{sure}{extra} (rel err {row['rel_error']:.1e})"
    return f"{head}: {row['status'].upper()} {row['message'].splitlines()[0] if row['message'] else ''}"
