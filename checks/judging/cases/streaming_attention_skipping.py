"""The capstone of streaming attention: ``skip_future_tiles``.  Both settings must give the
oracle's answer; with it on, no program may load a key or value tile wholly after its
diagonal.  Triton's interpreter records every load (checks.judging.oob.observing_loads), so
there the skipping itself is proven; a GPU run shows launches, not loads, and says so."""

from typing import Any

import torch

from checks.judging.case import CheckFailed, Context, Unavailable, check, collect
from checks.judging.cases.streaming_attention import has_option, make_qkv, run_attention
from checks.judging.tensors import expect_rejects


def _rows_touched(addrs, t) -> "torch.Tensor":
    """The rows of the contiguous [N, D] tensor ``t`` that the addresses fall in (others dropped)."""
    start = t.data_ptr()
    row_bytes = t.shape[1] * t.element_size()
    offsets = torch.from_numpy(addrs.astype("int64")) - start
    inside = (offsets >= 0) & (offsets < t.shape[0] * row_bytes)
    return offsets[inside] // row_bytes


def _future_tile_loads(mod, q, k, v, block_n):
    """Run causal attention with skip_future_tiles=True in Triton's interpreter, recording
    every load; the loads of k or v by a program that lie wholly after its last query row
    (the last row of q it loaded), as (program id, its query rows, tensor, key rows)."""
    from checks.judging import oob

    loads = []
    with oob.observing_loads(lambda addrs, elem, pid: loads.append((pid, addrs))):
        run_attention(mod, q, k, v, causal=True, block_n=block_n, skip_future_tiles=True)
    query_rows: dict = {}
    for pid, addrs in loads:
        rows = _rows_touched(addrs, q)
        if rows.numel():
            lo, hi = query_rows.get(pid, (int(rows.min()), int(rows.max())))
            query_rows[pid] = (min(lo, int(rows.min())), max(hi, int(rows.max())))
    future = []
    for pid, addrs in loads:
        if pid not in query_rows:
            continue  # a program that read no query row has no diagonal to judge by
        for name, t in (("k", k), ("v", v)):
            rows = _rows_touched(addrs, t)
            if rows.numel() and int(rows.min()) > query_rows[pid][1]:
                future.append((pid, query_rows[pid], name, (int(rows.min()), int(rows.max()))))
    return future


@check(
    "skip-future-tiles",
    "skip_future_tiles True and False both match the oracle; with True no program loads a "
    "key tile past its diagonal (interpreter)",
    why="stopping the key loop at the diagonal must change only the time, not the answer, "
    "and a flag that is accepted but ignored skips nothing",
    section="Skipping future tiles (the capstone)",
    cost=2,
)
def skip_future_tiles(mod: Any, ctx: Context) -> str | None:
    if not has_option(mod, "skip_future_tiles"):
        raise Unavailable("attention() has no skip_future_tiles option (the lesson's capstone)")
    q, k, v = make_qkv(ctx, 150, 32)
    future_loads: dict = {}  # block_n -> the future-tile loads of the causal, skipping call
    for skip in (True, False):
        for causal in (False, True):
            # skip_future_tiles=False at one block_n per causal: the answer is the same
            # whatever the tile, and each call with a new tile compiles a variant of its own
            for block_n in (32, 64) if skip else ((32,) if causal else (64,)):
                if ctx.interpret and skip and causal:
                    # The same call with its loads recorded (run once, not twice): judged
                    # after every answer and the rejections, in the order of a GPU run.
                    future_loads[block_n] = _future_tile_loads(mod, q, k, v, block_n)
                else:
                    run_attention(mod, q, k, v, causal=causal, block_n=block_n, skip_future_tiles=skip)
    for bad in (1, "no", None):
        expect_rejects(
            lambda: mod.attention(q, k, v, causal=True, skip_future_tiles=bad),
            (TypeError,),
            ["skip_future_tiles"],
            f"skip_future_tiles={bad!r}",
        )
    if not ctx.interpret:
        # A GPU run shows launches, not loads: the answer is checked, the skipping is not.
        ctx.details["unproven"] = "that future key tiles are skipped (seen only in Triton's interpreter)"
        return (
            "outputs match the oracle with skip_future_tiles True and False; whether future "
            "tiles are skipped is seen only in Triton's interpreter, which records each "
            "program's loads (not checked on this GPU)"
        )
    for block_n in (32, 64):
        future = future_loads[block_n]
        if future:
            pid, (first, last), name, (lo, hi) = future[0]
            programs = sorted({f[0] for f in future})
            raise CheckFailed(
                f"causal, block_n={block_n}, skip_future_tiles=True: program {pid}, which owns "
                f"query rows {first}..{last}, loaded {name} rows {lo}..{hi}, a tile wholly after "
                f"its last query row ({len(future)} such load(s) by {len(programs)} program(s)); "
                f"with skip_future_tiles=True each query block's key loop must stop at its diagonal",
                {
                    "block_n": block_n,
                    "program_id": list(pid),
                    "query_rows": [first, last],
                    "tensor": name,
                    "key_rows": [lo, hi],
                    "future_loads": len(future),
                    "programs": [list(p) for p in programs],
                },
            )
        ctx.details[f"block_n={block_n}"] = "no program loaded a key tile after its diagonal"
    return "no program loaded a key or value tile wholly after its last query row"


CASES = collect(globals())
