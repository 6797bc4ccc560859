"""The latency benchmark's figures: medians and spreads per workshop, scenario and path,
the ratios between paths, the targets met or missed, and the printed table
(``python -m tui.latency`` measures; this module only reads its rows).  Standard
library only."""

from __future__ import annotations

import statistics

from workshops import catalog

# On a GPU, after a kernel edit: the last verdict, the first, the speed-up over a fresh process,
# and the last timing row the app shows after the pass (with --benchmarks).
TARGETS = {"last_s": 2.0, "first_s": 0.7, "ratio": 5.0, "bench_last_row_s": 3.0}
# Without a GPU, after a kernel edit: the interpreter's first verdict, and its last with the
# checks spread over every core (set for a 2-core laptop; more cores end sooner).
TARGETS_INTERPRETED = {"first_s": 1.0, "last_s": 3.0}


def _spread(values: list) -> dict:
    return {
        "median": round(statistics.median(values), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def _target(value: float, limit: float, higher_is_better: bool = False) -> dict:
    met = value >= limit if higher_is_better else value <= limit
    missed = 0.0 if met else (limit - value if higher_is_better else value - limit)
    return {"limit": limit, "value": round(value, 4), "met": met, "missed_by": round(missed, 4)}


def verdict_complete(run: dict) -> bool:
    """A measured run whose answer passed: the warm path finished its run with no
    failing check, the fresh process exited 0 (2: a TODO, for a starter)."""
    if "exit_code" in run:
        return run["exit_code"] in (0, 2)
    if "outcome" in run:
        return run["outcome"] == "done" and not set(run.get("statuses") or ()) & {"fail", "error"}
    return True


def summarize(rows: list, gpu: bool) -> list:
    out = []
    keys = sorted(
        {(r["workshop"], r["scenario"], r["path"]) for r in rows},
        key=lambda k: (k[0], k[1], ("warm", "sharded", "fresh").index(k[2])),
    )
    for wid, scen, mode in keys:
        rs = [r for r in rows if (r["workshop"], r["scenario"], r["path"]) == (wid, scen, mode)]
        ran = [r for r in rs if r.get("ran") and "last_s" in r and verdict_complete(r)]
        row = {
            "workshop": wid,
            "scenario": scen,
            "path": mode,
            "n": len(rs),
            "runs_started": sum(bool(r.get("ran")) for r in rs),
            # a run that crashed or failed measured something else than a verdict
            "runs_failed": sum(bool(r.get("ran")) and "last_s" in r and not verdict_complete(r) for r in rs),
        }
        noticed = [r for r in rs if "noticed" in r]  # a save that changed nothing: skipped, no run
        if noticed:
            row["noticed"] = sum(bool(r["noticed"]) for r in noticed)
            seconds = [r["notice_s"] for r in noticed if r["noticed"]]
            if seconds:
                row["notice_s"] = _spread(seconds)
        if ran:
            row["first_s"] = _spread([r["first_s"] for r in ran])
            row["last_s"] = _spread([r["last_s"] for r in ran])
            for key in ("bench_first_row_s", "bench_last_row_s", "bench_s"):
                benched = [r[key] for r in ran if r.get(key) is not None and r.get("bench_rows")]
                if benched:
                    row[key] = _spread(benched)
        out.append(row)
    for row in out:
        if row["path"] not in ("warm", "sharded") or "last_s" not in row:
            continue
        found = [r.get("variants") for r in rows if r["workshop"] == row["workshop"] and r.get("variants")]
        if found:
            row["variants"] = max(found)
        fresh = next(
            (
                r
                for r in out
                if (r["workshop"], r["scenario"], r["path"]) == (row["workshop"], row["scenario"], "fresh")
                and "last_s" in r
            ),
            None,
        )
        if fresh:
            row["ratio_fresh_over_warm"] = {
                k: round(fresh[f"{k}_s"]["median"] / max(row[f"{k}_s"]["median"], 1e-9), 2)
                for k in ("first", "last")
            }
        if row["path"] == "warm":
            sharded = next(
                (
                    r
                    for r in out
                    if (r["workshop"], r["scenario"], r["path"])
                    == (row["workshop"], row["scenario"], "sharded")
                    and "last_s" in r
                ),
                None,
            )
            if sharded:
                row["ratio_sharded_over_warm"] = {
                    k: round(sharded[f"{k}_s"]["median"] / max(row[f"{k}_s"]["median"], 1e-9), 2)
                    for k in ("first", "last")
                }
        if catalog.get(row["workshop"]).gpu and row["scenario"] == "kernel edit" and row["path"] == "warm":
            if gpu:
                t = {
                    "applies": True,
                    "why": "a CUDA GPU, after a kernel edit",
                    "last_s": _target(row["last_s"]["median"], TARGETS["last_s"]),
                    "first_s": _target(row["first_s"]["median"], TARGETS["first_s"]),
                }
                if fresh:
                    t["ratio"] = _target(row["ratio_fresh_over_warm"]["last"], TARGETS["ratio"], True)
                if "bench_last_row_s" in row:
                    t["bench_last_row_s"] = _target(
                        row["bench_last_row_s"]["median"], TARGETS["bench_last_row_s"]
                    )
            else:
                t = {
                    "applies": True,
                    "why": "no CUDA GPU: Triton's interpreter, the checks spread over every core",
                    "last_s": _target(row["last_s"]["median"], TARGETS_INTERPRETED["last_s"]),
                    "first_s": _target(row["first_s"]["median"], TARGETS_INTERPRETED["first_s"]),
                }
            t["met"] = all(v["met"] for k, v in t.items() if isinstance(v, dict))
            row["targets"] = t
    return out


def timing_cells(r: dict) -> str:
    """The first and last medians and the last's range, 35 characters; a row without
    them says why in words (a skipped save's notice, or 'not measured'), never 'nan'."""
    first, last = r.get("first_s"), r.get("last_s")
    if first and last:
        rng = f"{last['min']:.2f}-{last['max']:.2f}"
        return f"{first['median']:>10.3f} {last['median']:>9.3f} {rng:>14}"
    if "noticed" in r:
        if r["noticed"] and "notice_s" in r:
            said = f"no run: skipped in {r['notice_s']['median']:.3f} s"
        else:
            said = "no run, and not seen as skipped"
    else:
        failed = r.get("runs_failed", 0)
        said = f"not measured ({failed} failed)" if failed else "not measured"
    return f"{said:>35}"


def print_table(table: list) -> None:
    print(
        f"{'workshop':<20} {'scenario':<15} {'path':<6} {'runs':>4} {'first med':>10} "
        f"{'last med':>9} {'last min-max':>14} {'fresh/warm':>10} {'targets':>8}"
    )
    for r in table:
        t = r.get("targets")
        mark = "" if not t else ("n/a" if not t["applies"] else ("met" if t["met"] else "MISSED"))
        print(
            f"{r['workshop']:<20} {r['scenario']:<15} {r['path']:<6} {r['runs_started']:>4} "
            f"{timing_cells(r)} {r.get('ratio_fresh_over_warm', {}).get('last', ''):>10} {mark:>8}"
        )
