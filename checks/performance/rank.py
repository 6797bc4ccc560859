"""``python -m checks.performance.rank --json OUT``: on a GPU, does the readings' predicted
order of the variants match the measured one?

For each GPU workshop: the reference answer's benchmark candidates and each kept slow
answer's default call, at the reading's shape.  The predictions come from readings made
in child processes in the interpreter (in parallel); the times are device times on this
GPU (a CUDA graph of the call replayed, timed with CUDA events).  The JSON holds, per
workshop and pooled over all of them, the predicted and measured orders and Spearman's
rank correlation.  Every variant it could not read (the reading's child failed, or a
kernel does not compile for sm_90) or could not time is listed with why, in the JSON
(``missing``) and on stdout, and the exit code is then 1: a correlation over what was left
says nothing of what was dropped.  Without a GPU it refuses (exit 3); when Triton's
interpreter cannot run here (numpy 2.4 or newer with Triton 3.6) it says so before trying
(exit 4); ``--fake-timer`` (tests) times nothing and takes the predictions as the
measurement.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Optional

from checks import interpreter
from checks.command_line import EXIT_UNAVAILABLE, UsageParser
from checks.json_files import write_json_atomic
from checks.performance import environment

REPO = Path(__file__).resolve().parents[2]
MAX_VARIANTS = 4  # of the reference's candidates per op, by default (0: every one)


def ranks(values: list) -> list:
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: list, b: list) -> Optional[float]:
    """Spearman's rank correlation of two equal-length lists (None: fewer than 2, or constant)."""
    if len(a) != len(b) or len(a) < 2:
        return None
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return None if va == 0 or vb == 0 else cov / (va * vb)


def answers(op: str) -> list:
    """[(label, file, every candidate?)]: the reference's candidates, each slow answer's default."""
    folder = REPO / "workshops" / op
    out = [("reference", folder / "solution.py", True)]
    out += [(f"slow/{p.stem}", p, False) for p in sorted((folder / "slow").glob("*.py"))]
    return out


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def predict(op: str, path: Path, every: bool, max_variants: int = MAX_VARIANTS) -> tuple:
    """([(variant, predicted seconds, causes)], [(variant or "" for the whole answer, why it
    has no prediction)], [the candidates not read: past the first ``max_variants``]) from a
    reading in a child (interpreter)."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.json"
        cmd = [sys.executable, "-m", "checks.performance", op, "--file", str(path), "--json", str(out)]
        try:
            done = subprocess.run(
                cmd
                + (["--all-variants"] if every else [])
                + (["--limit", str(max_variants)] if every and max_variants else []),
                capture_output=True,
                text=True,
                env=interpreter.interpreter_env(True),
                timeout=600,
                cwd=REPO,
            )
        except subprocess.TimeoutExpired:
            return [], [("", "the reading took over 600 s")], []
        data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    readings = [(r["variant"], r["predicted_us"] * 1e-6, r["causes"]) for r in data.get("readings", [])]
    missing = [
        (
            r["variant"],
            "; ".join(f"{e['kernel']} does not compile for sm_90: {e['error']}" for e in r["compile_errors"]),
        )
        for r in data.get("not_compiled", [])
    ]
    if not readings and not missing:
        said = _last_line(done.stdout) or _last_line(done.stderr) or "no output"
        missing.append(("", f"the reading exited with {done.returncode}: {said}"))
    seen = {v for v, *_ in readings} | {v for v, _ in missing}
    return readings, missing, [v for v in data.get("candidates", []) if v not in seen]


def device_time(call: Callable[[], object], reps: int = 50) -> float:
    """Seconds per call on the GPU: a CUDA graph of ``call`` replayed ``reps`` times (the
    best of 5 rounds); a call that cannot be captured is timed as back-to-back calls."""
    import torch

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    step: Callable[[], object] = call
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(torch.cuda.Stream()):
            with torch.cuda.graph(graph):
                call()
        torch.cuda.synchronize()
        step = graph.replay
    except Exception:  # noqa: BLE001 - not capturable: per-call time is the next best
        torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(5):
        start.record()
        for _ in range(reps):
            step()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3 / reps)
    return best


def gpu_timer(op: str, path: Path, variants: list) -> dict:
    """variant name -> measured seconds, or why it was not timed (a str), for ``path``'s
    candidate calls of ``op``."""
    from checks.performance import problems
    from checks.performance.__main__ import load_module

    prob = problems.problem(op)
    shape, dtype = problems.READING_SHAPES[op]
    import torch

    prob["inputs"] = prob["spec"].make_inputs(shape, getattr(torch, problems.DTYPES[dtype]), "cuda", 0)
    calls = dict(problems.candidate_calls(prob, load_module(path)))
    out: dict = {}
    for v in variants:
        if v not in calls:
            out[v] = "the benchmark has no such candidate on the GPU"
            continue
        try:
            out[v] = device_time(calls[v])
        except Exception as e:  # noqa: BLE001 - one variant that does not run: say why, time the rest
            out[v] = f"timing raised {type(e).__name__}: {str(e)[:200]}"
    return out


def rank_all(
    ops: list,
    timer: Optional[Callable[[str, Path, list], dict]],
    jobs: int = 8,
    max_variants: int = MAX_VARIANTS,
) -> dict:
    """Predicted and measured order per op and pooled, with Spearman's rho (``timer``
    None: the predictions stand in for the times), every variant left out with why
    (``missing``), and the candidates not read past ``max_variants`` (``limited``)."""
    work = [(op, label, path, every) for op in ops for label, path, every in answers(op)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        predicted = list(pool.map(lambda w: predict(w[0], w[2], w[3], max_variants), work))
    result: dict = {"ops": {}, "pooled": {}, "missing": [], "limited": []}
    pooled_p: list = []
    pooled_m: list = []
    for op in ops:
        points = []
        for (o, label, path, _), (preds, unread, limited) in zip(work, predicted):
            if o != op:
                continue
            for variant, why in unread:
                result["missing"].append({"op": op, "answer": label, "variant": variant, "why": why})
            result["limited"] += [{"op": op, "answer": label, "variant": v} for v in limited]
            if not preds:
                continue
            names = [v for v, _, _ in preds]
            try:
                measured = timer(op, path, names) if timer else {v: t for v, t, _ in preds}
            except Exception as e:  # noqa: BLE001 - an answer that cannot be timed: every variant says why
                measured = {v: f"timing raised {type(e).__name__}: {str(e)[:200]}" for v in names}
            for variant, p_s, causes in preds:
                m_s = measured.get(variant, "the timer returned no time for it")
                if isinstance(m_s, str):
                    why = f"read, not timed: {m_s}"
                    result["missing"].append({"op": op, "answer": label, "variant": variant, "why": why})
                    continue
                points.append(
                    {
                        "answer": label,
                        "variant": variant,
                        "predicted_us": p_s * 1e6,
                        "measured_us": m_s * 1e6,
                        "causes": causes,
                    }
                )
        p = [x["predicted_us"] for x in points]
        m = [x["measured_us"] for x in points]
        name = lambda x: f"{x['answer']}: {x['variant']}"
        result["ops"][op] = {
            "points": points,
            "predicted_order": [name(points[i]) for i in sorted(range(len(p)), key=p.__getitem__)],
            "measured_order": [name(points[i]) for i in sorted(range(len(m)), key=m.__getitem__)],
            "spearman": spearman(p, m),
        }
        # pooled: each op's times relative to its reference's first candidate
        base_p = p[0] if p else 1.0
        base_m = m[0] if m else 1.0
        pooled_p += [x / base_p for x in p]
        pooled_m += [x / base_m for x in m]
    result["pooled"] = {
        "points": len(pooled_p),
        "spearman": spearman(pooled_p, pooled_m),
        "what": "every op's times relative to its reference's default call",
    }
    return result


def missing_lines(result: dict) -> list:
    """One line per variant left out of the orders, with why."""
    return [
        f"  {x['op']}: {x['answer']}"
        + (f": {x['variant']}" if x["variant"] else " (every variant)")
        + f": {x['why']}"
        for x in result["missing"]
    ]


def main(argv=None) -> int:
    p = UsageParser(prog="python -m checks.performance.rank", description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, metavar="OUT", required=True, help="where to write the orders")
    p.add_argument("--op", action="append", metavar="WORKSHOP", help="only this workshop (repeatable)")
    p.add_argument(
        "--max-variants",
        type=int,
        default=MAX_VARIANTS,
        metavar="N",
        help=f"read the first N candidates of each reference (default {MAX_VARIANTS}; 0: every one)",
    )
    p.add_argument("--fake-timer", action="store_true", help="tests: take the predictions as the times")
    args = p.parse_args(argv)
    from checks.performance import problems

    ops = args.op or problems.ops()
    unknown = [o for o in ops if o not in problems.READING_SHAPES]
    if unknown:
        p.error(f"--op: no reading for {', '.join(unknown)}")
    problem = environment.interpreter_problem()
    if problem:
        print(f"python -m checks.performance.rank: no readings: {problem}")
        return environment.EXIT_ENVIRONMENT
    if args.fake_timer:
        timer = None
    else:
        import torch

        if not torch.cuda.is_available():
            print("python -m checks.performance.rank: needs a CUDA GPU (--fake-timer for tests)")
            return EXIT_UNAVAILABLE
        timer = gpu_timer
    result = rank_all(ops, timer, max_variants=args.max_variants)
    write_json_atomic(args.json, result)
    for op, r in result["ops"].items():
        rho = r["spearman"]
        left = sum(x["op"] == op for x in result["missing"])
        print(
            f"{op}: Spearman {'-' if rho is None else f'{rho:.2f}'} over {len(r['points'])} variants"
            + (f" ({left} left out, below)" if left else "")
        )
    rho = result["pooled"]["spearman"]
    print(
        f"pooled: Spearman {'-' if rho is None else f'{rho:.2f}'} over {result['pooled']['points']} variants"
    )
    if result["limited"]:
        names = ", ".join(f"{x['op']}: {x['answer']}: {x['variant']}" for x in result["limited"])
        print(
            f"not read, by choice ({len(result['limited'])}, past the first {args.max_variants} candidates "
            f"of a reference; --max-variants 0 reads every one): {names}"
        )
    if result["missing"]:
        print(f"left out of the orders above ({len(result['missing'])}): not read or not timed:")
        print("\n".join(missing_lines(result)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
