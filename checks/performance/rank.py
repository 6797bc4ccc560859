"""``python -m checks.performance.rank --json OUT``: on a GPU, does the readings' predicted
order of the variants match the measured one?

For each GPU workshop: the reference answer's benchmark candidates and each kept slow
answer's default call, at the reading's shape.  The predictions come from readings made
in child processes in the interpreter (in parallel); the times are device times on this
GPU (a CUDA graph of the call replayed, timed with CUDA events).  The JSON holds, per
workshop and pooled over all of them, the predicted and measured orders and Spearman's
rank correlation.  Without a GPU it refuses (exit 3); ``--fake-timer`` (tests) times
nothing and takes the predictions as the measurement.
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

REPO = Path(__file__).resolve().parents[2]
MAX_VARIANTS = 4  # of the reference's candidates per op: the whole run stays near two minutes


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


def predict(op: str, path: Path, every: bool) -> list:
    """[(variant, predicted seconds, causes)] from a reading in a child (interpreter)."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.json"
        cmd = [sys.executable, "-m", "checks.performance", op, "--file", str(path), "--json", str(out)]
        subprocess.run(
            cmd + (["--all-variants", "--limit", str(MAX_VARIANTS)] if every else []),
            capture_output=True,
            text=True,
            env=interpreter.interpreter_env(True),
            timeout=600,
            cwd=REPO,
        )
        data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {"readings": []}
    return [(r["variant"], r["predicted_us"] * 1e-6, r["causes"]) for r in data["readings"]]


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
    """variant name -> measured seconds, for ``path``'s candidate calls of ``op``."""
    from checks.performance import problems
    from checks.performance.__main__ import load_module

    prob = problems.problem(op)
    shape, dtype = problems.READING_SHAPES[op]
    import torch

    prob["inputs"] = prob["spec"].make_inputs(shape, getattr(torch, problems.DTYPES[dtype]), "cuda", 0)
    calls = dict(problems.candidate_calls(prob, load_module(path)))
    return {v: device_time(calls[v]) for v in variants if v in calls}


def rank_all(ops: list, timer: Optional[Callable[[str, Path, list], dict]], jobs: int = 8) -> dict:
    """Predicted and measured order per op and pooled, with Spearman's rho (``timer``
    None: the predictions stand in for the times)."""
    work = [(op, label, path, every) for op in ops for label, path, every in answers(op)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        predicted = list(pool.map(lambda w: predict(w[0], w[2], w[3]), work))
    result: dict = {"ops": {}, "pooled": {}}
    pooled_p: list = []
    pooled_m: list = []
    for op in ops:
        points = []
        for (o, label, path, _), preds in zip(work, predicted):
            if o != op or not preds:
                continue
            names = [v for v, _, _ in preds]
            measured = timer(op, path, names) if timer else {v: t for v, t, _ in preds}
            for variant, p_s, causes in preds:
                if variant in measured:
                    points.append(
                        {
                            "answer": label,
                            "variant": variant,
                            "predicted_us": p_s * 1e6,
                            "measured_us": measured[variant] * 1e6,
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


def main(argv=None) -> int:
    p = UsageParser(prog="python -m checks.performance.rank", description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, metavar="OUT", required=True, help="where to write the orders")
    p.add_argument("--op", action="append", metavar="WORKSHOP", help="only this workshop (repeatable)")
    p.add_argument("--fake-timer", action="store_true", help="tests: take the predictions as the times")
    args = p.parse_args(argv)
    from checks.performance import problems

    ops = args.op or problems.ops()
    unknown = [o for o in ops if o not in problems.READING_SHAPES]
    if unknown:
        p.error(f"--op: no reading for {', '.join(unknown)}")
    if args.fake_timer:
        timer = None
    else:
        import torch

        if not torch.cuda.is_available():
            print("python -m checks.performance.rank: needs a CUDA GPU (--fake-timer for tests)")
            return EXIT_UNAVAILABLE
        timer = gpu_timer
    result = rank_all(ops, timer)
    write_json_atomic(args.json, result)
    for op, r in result["ops"].items():
        rho = r["spearman"]
        print(f"{op}: Spearman {'-' if rho is None else f'{rho:.2f}'} over {len(r['points'])} variants")
    rho = result["pooled"]["spearman"]
    print(
        f"pooled: Spearman {'-' if rho is None else f'{rho:.2f}'} over {result['pooled']['points']} variants"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
