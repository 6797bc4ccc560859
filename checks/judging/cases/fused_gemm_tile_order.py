"""The grouped tile sweep of I3, proven store by store: each program of the learner's
kernel must store the output tile that the lesson's ``tile_of(pid, num_pid_m,
num_pid_n, group_m)`` gives it (workshops/fused_gemm/solution.py defines the mapping;
the learner's own ``tile_of`` is not the contract, their kernel's stores are).

Triton's interpreter runs every ``tl.store`` in Python: a listener of
checks.judging.launches hears each one with the id of the program that made it, and
the addresses it wrote say which rows and columns of the output that program owns.  A
kernel that walks the tiles row-major and ignores ``group_m`` writes every element
right, so no numeric check can tell it from the grouped order; its stores can.  On a
GPU stores are not seen: there the check compares the numbers and says that the order
is proven only in the interpreter (``details["unproven"]``).
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable

import numpy as np

from checks.judging import launches
from checks.judging.case import CheckFailed, Context, check, collect
from checks.judging.cases.fused_gemm import expect_matmul, gemm_operands

SECTION = "Who owns which tile"

# (M, N, K, tile_m, group_m): few programs each (the interpreter pays per program), a
# short last super-row at every group_m > 1, and at least two tile columns at the
# reference's BLOCK_N of 64, so row-major, column-major and grouped orders all differ.
CALLS = (
    (70, 100, 16, 16, 1),  # 5 x 2 tiles: group_m = 1 is the row-major order
    (70, 100, 16, 16, 4),  # 5 x 2 tiles: a group of 4 tile rows, then a group of 1
    (70, 100, 16, 16, 8),  # 5 x 2 tiles in one short group of 8: walk down all five rows
    (70, 130, 16, 32, 4),  # 3 x 3 tiles in one short group of 4 (tile_m = 32)
)


def lesson_tile_of() -> Callable:
    """The lesson's pid -> tile mapping, from the reference answer (plain Python)."""
    from workshops.fused_gemm.solution import tile_of

    return tile_of


class TileStores(launches.Listener):
    """Every store of this thread's interpreted launches: (launch number, the program's
    linear id, the grid's program count, the addresses its active lanes wrote)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.launch = -1
        self.stores: list = []

    def around_launch(self, launch: Any, proceed: Callable[[], Any]) -> Any:
        if threading.get_ident() == self.thread and launch.depth == 0:
            self.launch += 1
        return proceed()

    def stored(self, access: Any) -> None:
        if threading.get_ident() != self.thread or access.kind != "store":
            return
        pid = tuple(access.program_id) + (0, 0, 0)
        grid = tuple(launches.interpreted_grid()) + (1, 1, 1)
        linear = pid[0] + grid[0] * (pid[1] + grid[1] * pid[2])
        self.stores.append((self.launch, linear, grid[0] * grid[1] * grid[2], np.array(access.addrs)))


def tiles_stored(stores: list, out: Any, tile_m: int) -> tuple:
    """Which tiles of the contiguous output ``out`` each program stored, in the order it
    first stored them: ({program: [(tile row, tile column), ...]}, programs in the grid,
    (tile height, tile width), the launches that stored into ``out``).  The tile height
    is ``tile_m`` (the contract's BLOCK_M); the width is the widest run of columns one
    store wrote (the learner's BLOCK_N)."""
    M, N = out.shape
    elem, base = out.element_size(), out.data_ptr()
    end = base + M * N * elem
    pieces, programs, seen_launches, width = [], 0, set(), 1
    for launch, pid, count, addrs in stores:
        addrs = addrs.astype(np.int64)
        inside = addrs[(addrs >= base) & (addrs < end)]
        if inside.size == 0:
            continue
        offsets = (inside - base) // elem
        rows, cols = offsets // N, offsets % N
        width = max(width, int(cols.max() - cols.min()) + 1)
        pieces.append((pid, rows, cols))
        programs = max(programs, count)
        seen_launches.add(launch)
    owned: dict = {}
    for pid, rows, cols in pieces:
        tiles = owned.setdefault(pid, [])
        keys = np.stack([rows // tile_m, cols // width], axis=1)
        _, first = np.unique(keys, axis=0, return_index=True)
        for i in sorted(first.tolist()):
            tile = (int(keys[i, 0]), int(keys[i, 1]))
            if tile not in tiles:
                tiles.append(tile)
    return owned, programs, (tile_m, width), seen_launches


def order_problem(owned: dict, programs: int, shape: tuple, tile: tuple, group_m: int, tile_of: Callable):
    """(message, details) when a program stored other tiles than the lesson's order gives
    it, else None.  A grid of fewer programs than tiles (each program looping over tiles
    pid, pid + programs, ...) is judged by the same mapping."""
    M, N = shape
    h, w = tile
    nm, nn = math.ceil(M / h), math.ceil(N / w)
    total = nm * nn
    want = {
        p: [tuple(tile_of(t, nm, nn, group_m)) for t in range(p, total, programs)] for p in range(programs)
    }
    wrong = sorted(p for p in range(programs) if owned.get(p, []) != want[p])
    if not wrong:
        return None
    p = wrong[0]
    got_first = owned.get(p, [None])[0]
    row_major = all(owned.get(q, [None])[0] == (q // nn, q % nn) for q in range(min(programs, total)))
    said = (
        f"{nm} tile rows x {nn} tile columns of {h}x{w}: "
        f"{len(wrong)} of {programs} programs stored another tile than the lesson's grouped order "
        f"gives them; program {p} stored tile {got_first}, and tile_of({p}, {nm}, {nn}, {group_m}) "
        f"is {want[p][0] if want[p] else None}"
    )
    if row_major and group_m > 1:
        said += (
            ". Your kernel walks the tiles row-major (pid_m = pid // num_pid_n, pid_n = pid % num_pid_n) "
            "whatever group_m is: every element is right, but the programs that run at the same time "
            "read few panels of A and many of B, where the grouped order reads a squarer block of both"
        )
    said += ". Map pid to its tile with the same arithmetic as tile_of, GROUP_M included"
    details = {
        "group_m": group_m,
        "tiles": [nm, nn],
        "tile_shape": [h, w],
        "stored": {str(q): [list(t) for t in owned.get(q, [])] for q in range(min(programs, 16))},
        "expected": {str(q): [list(t) for t in want[q]] for q in range(min(programs, 16))},
        "row_major": row_major,
    }
    return said, details


@check(
    "tile-order",
    "each program stores the tile tile_of(pid, ...) gives it, for group_m 1/4/8 (seen in the interpreter)",
    why=(
        "a kernel that walks the tiles row-major and ignores group_m writes every element right; only "
        "which program stored which tile shows that the kernel uses the grouped order the lesson asks for"
    ),
    section=SECTION,
    cost=2,
)
def tile_order(mod: Any, ctx: Context) -> str:
    tile_of = lesson_tile_of()
    for M, N, K, tile_m, group_m in CALLS:
        a, b, bias = gemm_operands(ctx, M, N, K, scale=0.3, bias_offset=4.0)
        what = f"{M}x{N}x{K} (MxNxK), tile_m={tile_m}, group_m={group_m}"
        if not ctx.interpret:
            expect_matmul(
                ctx, mod.matmul_bias_relu(a, b, bias, tile_m=tile_m, group_m=group_m), a, b, bias, what
            )
            continue
        with launches.listening(TileStores()) as heard:
            got = mod.matmul_bias_relu(a, b, bias, tile_m=tile_m, group_m=group_m)
        expect_matmul(ctx, got, a, b, bias, what)
        owned, programs, tile, stored_by = tiles_stored(heard.stores, got, tile_m)
        if len(stored_by) != 1:
            raise CheckFailed(
                f"{what}: {len(stored_by)} launches stored into the output; the lesson's design is one "
                f"launch in which each program stores its own tile, so the tile order cannot be read"
            )
        problem = order_problem(owned, programs, (M, N), tile, group_m, tile_of)
        if problem is not None:
            raise CheckFailed(f"{what}: {problem[0]}", problem[1])
    if not ctx.interpret:
        ctx.details["unproven"] = "which program stored which tile (seen only in Triton's interpreter)"
        return (
            "outputs match the oracle for group_m 1/4/8; which program stores which tile is seen only "
            "in Triton's interpreter, which records each program's stores (not checked on this GPU)"
        )
    return f"every program stored the tile tile_of gives it ({len(CALLS)} grids, group_m 1/4/8)"


CASES = collect(globals())
