"""I3 fused GEMM: the classic mistakes, each a float64 oracle of the wrong computation.

Besides the contract's ``matmul_bias_relu``, the starter's ``tile_of(pid, num_pid_m,
num_pid_n, group_m)`` helper is recorded too: the worked tile map checks it."""

from __future__ import annotations

from typing import Optional

import torch

from checks.judging.mistakes import Call, Mistake, Variants
from checks.judging.mistakes.compare import F64, Partial, agrees as _agrees, as64, rounded

OWNERSHIP = "Who owns which tile"
K_LOOP = "The K loop and its masks"
EPILOGUE = "The epilogue: one rounding"
CONTRACT = "The operation and its contract"

ALSO_RECORDED = ("tile_of",)
MAX_WORK = 1 << 28  # M * N * K above this: not diagnosed (its oracles would take too long)
BLOCK_N_CHOICES = (16, 32, 64, 128, 256)  # plausible BLOCK_N values of a learner's launch
BLOCK_K_CHOICES = (16, 32, 64)
MAX_TILES = 1 << 14  # the fixed-group oracle walks the pids in Python


class _Operands:
    def __init__(self, call: Call):
        a, b, bias = (call.argument(i, name) for i, name in enumerate(("a", "b", "bias")))
        self.dtype = a.dtype
        self.a, self.b, self.bias = as64(a), as64(b), as64(bias)
        self.m, self.k = self.a.shape
        self.n = self.b.shape[1]
        self.group_m = call.kwargs.get("group_m", 4)
        self.tile_m = call.kwargs.get("tile_m", 32)

    def product(self) -> torch.Tensor:
        return self.a @ self.b


def _operands(call: Call) -> Optional[_Operands]:
    if call.function != "matmul_bias_relu":
        return None
    a, b, bias = (call.argument(i, name) for i, name in enumerate(("a", "b", "bias")))
    if not all(isinstance(t, torch.Tensor) for t in (a, b, bias)):
        return None
    if (
        a.dim() != 2
        or b.dim() != 2
        or bias.dim() != 1
        or a.shape[1] != b.shape[0]
        or bias.shape[0] != b.shape[1]
    ):
        return None
    if a.shape[0] * a.shape[1] * b.shape[1] > MAX_WORK:
        return None
    return _Operands(call)


def tile_of(pid: int, num_pid_m: int, num_pid_n: int, group_m: int, *, fixed_group: bool = False) -> tuple:
    """The tile (pid_m, pid_n) of program ``pid`` in the grouped order; ``fixed_group``:
    the last super-row assumed to hold group_m tile rows like the others."""
    in_group = group_m * num_pid_n
    first_pid_m = (pid // in_group) * group_m
    height = group_m if fixed_group else min(num_pid_m - first_pid_m, group_m)
    local = pid % in_group
    return first_pid_m + local % height, local // height


def _tile_of_args(call: Call) -> Optional[tuple]:
    args = tuple(
        call.argument(i, name) for i, name in enumerate(("pid", "num_pid_m", "num_pid_n", "group_m"))
    )
    if not all(isinstance(v, int) and v >= 0 for v in args) or not all(args[1:]):
        return None
    return args


def right(call: Call):
    if call.function == "tile_of":
        args = _tile_of_args(call)
        return None if args is None else tile_of(*args)
    found = _operands(call)
    return None if found is None else torch.relu(found.product() + found.bias)


def agrees(call: Call, expected) -> bool:
    if call.function == "tile_of":
        try:
            return (int(call.result[0]), int(call.result[1])) == expected
        except (TypeError, IndexError, ValueError):
            return False
    k = call.argument(0, "a").shape[1]
    return _agrees(call.result, expected, scale=max(1.0, k / 512))  # as the checks widen it for long K


def _bias_by_row(call: Call):
    found = _operands(call)
    if found is None or found.m == found.n == 1:
        return None
    by_row = torch.zeros(found.m, dtype=F64)
    rows = min(found.m, found.n)
    by_row[:rows] = found.bias[:rows]  # bias[offs_m], masked with offs_m < N
    return torch.relu(found.product() + by_row[:, None])


def _bias_subtracted(call: Call):
    found = _operands(call)
    return None if found is None else torch.relu(found.product() - found.bias)


def _one_bias_element(call: Call):
    found = _operands(call)
    if found is None or found.n < 2:
        return None
    return torch.relu(found.product() + found.bias[0])


def _cast_before_epilogue(call: Call):
    found = _operands(call)
    if found is None:
        return None
    return torch.relu(rounded(rounded(found.product(), found.dtype) + found.bias, found.dtype))


def _relu_before_bias(call: Call):
    found = _operands(call)
    return None if found is None else torch.relu(found.product()) + found.bias


def _relu_forgotten(call: Call):
    found = _operands(call)
    return None if found is None else found.product() + found.bias


def _fp16_accumulator(call: Call):
    found = _operands(call)
    if found is None or found.dtype != torch.float16 or found.k == 0:
        return None
    candidates = Variants()
    for block_k in (b for b in BLOCK_K_CHOICES if b < found.k):  # one step of K: one rounding, no sum
        acc = torch.zeros(found.m, found.n, dtype=F64)
        for start in range(0, found.k, block_k):
            step = found.a[:, start : start + block_k] @ found.b[start : start + block_k]
            acc = rounded(acc + rounded(step, torch.float16), torch.float16)
        candidates.append(torch.relu(acc + found.bias))
    # On a GPU, tl.dot(..., out_dtype=tl.float16) chains the tensor cores' 16-deep steps
    # through an fp16 accumulator: each exact step is added, then the sum rounded, so an
    # overflow stays inf instead of meeting a -inf block and turning NaN. Offered only
    # where it overflows: below that the blocks above already say what fp16 rounding does.
    acc = torch.zeros(found.m, found.n, dtype=F64)
    for start in range(0, found.k, 16):
        acc = rounded(acc + found.a[:, start : start + 16] @ found.b[start : start + 16], torch.float16)
    if not bool(torch.isfinite(acc).all()):
        candidates.append(torch.relu(acc + found.bias))
    return candidates


def _through_fp16(call: Call):
    found = _operands(call)
    if found is None or found.dtype != torch.bfloat16:
        return None
    return rounded(rounded(torch.relu(found.product() + found.bias), torch.float16), torch.bfloat16)


def _tiles_reached(call: Call, fixed_group: bool = False, swapped: bool = False):
    """The right values on the tiles a wrong tile map still reaches (``fixed_group``: the
    last super-row assumed full; ``swapped``: pid_m and pid_n exchanged); the tiles it
    never reaches are undetermined (never written), and a result right on one of them
    was not made by this map."""
    found = _operands(call)
    if found is None or not isinstance(found.group_m, int) or not isinstance(found.tile_m, int):
        return None
    if found.m == 0 or found.n == 0 or found.group_m <= 0 or found.tile_m <= 0:
        return None
    expected = torch.relu(found.product() + found.bias)
    num_pid_m = -(-found.m // found.tile_m)
    if (fixed_group and num_pid_m % found.group_m == 0) or num_pid_m * -(-found.n // 16) > MAX_TILES:
        return None  # every group full: the mistake changes nothing (or too many tiles to walk)
    candidates = Variants()
    for block_n in BLOCK_N_CHOICES:
        num_pid_n = -(-found.n // block_n)
        if call.programs is not None and call.programs != num_pid_m * num_pid_n:
            continue  # the mistake launches one program per tile of this width: another grid is another bug
        known = torch.zeros(found.m, found.n, dtype=torch.bool)
        for pid in range(num_pid_m * num_pid_n):
            pid_m, pid_n = tile_of(pid, num_pid_m, num_pid_n, found.group_m, fixed_group=fixed_group)
            pid_m, pid_n = (pid_n, pid_m) if swapped else (pid_m, pid_n)
            rows = slice(pid_m * found.tile_m, (pid_m + 1) * found.tile_m)
            known[rows, pid_n * block_n : (pid_n + 1) * block_n] = True
        missed = [
            (slice(r, r + found.tile_m), slice(c, c + block_n))
            for r in range(0, found.m, found.tile_m)
            for c in range(0, found.n, block_n)
            if not bool(known[r, c])
        ]
        if missed and not any(_right_on(call.result, expected, tile) for tile in missed):
            candidates.append(Partial(expected, known))
    return candidates


def _right_on(got, expected: torch.Tensor, tile: tuple) -> bool:
    return (
        isinstance(got, torch.Tensor) and got.shape == expected.shape and _agrees(got[tile], expected[tile])
    )


def _fixed_group_tiles(call: Call):
    return _tiles_reached(call, fixed_group=True)


def _swapped_tiles(call: Call):
    return _tiles_reached(call, swapped=True)


def _fixed_group_tile_of(call: Call):
    args = _tile_of_args(call)
    return None if args is None else tile_of(*args, fixed_group=True)


FIXED_GROUP = dict(
    id="fixed-group-size",
    sentence="Your tile map assumes every super-row holds group_m tile rows; the last one may be shorter.",
    where="the pid -> tile map: group_size_m = min(num_pid_m - first_pid_m, GROUP_M)",
    section=OWNERSHIP,
    why=(
        "in a short last group the pids are spread over group_m rows: some land on tile rows past M "
        "(their stores are masked away) and the group's right-hand tiles are never written"
    ),
)

MISTAKES = [
    Mistake(function="tile_of", oracle=_fixed_group_tile_of, **FIXED_GROUP),
    Mistake(
        id="bias-by-row",
        function="matmul_bias_relu",
        sentence="Your kernel indexes the bias by the tile's rows (offs_m) instead of its columns (offs_n).",
        where="the epilogue: bias = load(bias_ptr + offs_n), broadcast as bias[None, :]",
        section=EPILOGUE,
        why="bias has one value per output column; indexed by rows it adds the wrong value to every row",
        oracle=_bias_by_row,
    ),
    Mistake(
        id="bias-subtracted",
        function="matmul_bias_relu",
        sentence="Your kernel subtracts the bias instead of adding it.",
        where="the epilogue: acc + bias[None, :]",
        section=EPILOGUE,
        why="the contract is relu(a @ b + bias): with the sign flipped every output moves by twice the bias",
        oracle=_bias_subtracted,
    ),
    Mistake(
        id="one-bias-element",
        function="matmul_bias_relu",
        sentence="Your kernel adds the same bias element to every column.",
        where="the epilogue's bias load: bias_ptr + offs_n, one element per output column",
        section=EPILOGUE,
        why=(
            "bias has one value per output column; an offset that does not step with offs_n reads "
            "one element for all"
        ),
        oracle=_one_bias_element,
    ),
    Mistake(
        id="cast-before-epilogue",
        function="matmul_bias_relu",
        sentence=(
            "Your kernel rounds the product to 16 bits before the bias is added: a cast of the "
            "accumulator before the epilogue, or an accumulator kept in 16 bits (tl.zeros(..., "
            "dtype=tl.float16) or tl.dot(..., out_dtype=tl.float16)), which rounds the same way when "
            "the K loop runs one step."
        ),
        where=(
            "the accumulator and the epilogue: acc = tl.zeros(..., dtype=tl.float32) with tl.dot's "
            "default fp32 out_dtype, the bias and ReLU applied to it in fp32, one cast when storing"
        ),
        section=EPILOGUE,
        why=(
            "that rounds twice, and the second rounding comes after information is gone: acc = 2049 "
            "becomes 2048 in fp16, so with bias -2048 the answer 1 turns into 0; an fp16 accumulator "
            "over a single K step rounds exactly as a cast does"
        ),
        oracle=_cast_before_epilogue,
    ),
    Mistake(
        id="relu-before-bias",
        function="matmul_bias_relu",
        sentence="Your kernel applies ReLU before adding the bias; the contract is relu(acc + bias).",
        where="the epilogue: value = max(acc + bias[None, :], 0)",
        section=EPILOGUE,
        why=(
            "relu(acc) + bias is a different function: negative products are clipped before the bias moves "
            "them"
        ),
        oracle=_relu_before_bias,
    ),
    Mistake(
        id="relu-forgotten",
        function="matmul_bias_relu",
        sentence="Your kernel leaves out the ReLU: negative values must become 0.",
        where="the epilogue: value = max(acc + bias[None, :], 0)",
        section=EPILOGUE,
        why="every element below zero stays negative instead of 0",
        oracle=_relu_forgotten,
    ),
    Mistake(
        id="fp16-accumulator",
        function="matmul_bias_relu",
        sentence="Your kernel accumulates the dot products in fp16 instead of fp32.",
        where="the K loop: acc = tl.zeros(..., dtype=tl.float32) and acc = tl.dot(a, b, acc)",
        section=K_LOOP,
        why=(
            "fp16 stops at 65,504: partial sums past it overflow to inf even when the final answer is "
            "small, and every step rounds the running sum to 11 bits"
        ),
        oracle=_fp16_accumulator,
    ),
    Mistake(
        id="bf16-through-fp16",
        function="matmul_bias_relu",
        sentence="Your kernel rounds the result through fp16 before storing bf16.",
        where="the store: cast the fp32 value straight to the output's dtype (c_ptr.dtype.element_ty)",
        section=CONTRACT,
        why="fp16 stops at 65,504 and loses values below 6e-5 that bf16 keeps",
        oracle=_through_fp16,
    ),
    Mistake(function="matmul_bias_relu", oracle=_fixed_group_tiles, **FIXED_GROUP),
    Mistake(
        id="tile-indices-swapped",
        function="matmul_bias_relu",
        sentence="Your kernel exchanges pid_m and pid_n: the index meant for the tile's row picks its "
        "column, and the other way round.",
        where="the pid -> tile map: pid_m = first_pid_m + local % group_size_m, "
        "pid_n = local // group_size_m",
        section=OWNERSHIP,
        why=(
            "each program still computes a right tile, but of the wrong place: where the tile rows and "
            "tile columns differ in number, some programs land past the output (their stores are masked "
            "away) and some tiles are never written"
        ),
        oracle=_swapped_tiles,
    ),
]
