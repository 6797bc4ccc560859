"""A2 split softmax: the classic mistakes, each a float64 oracle of the wrong computation."""

from __future__ import annotations

from typing import Optional

import torch

from checks.judging.mistakes import Call, Mistake, Variants, quantities as named
from checks.judging.mistakes.compare import F64, Partial, agrees as _agrees, as64, rounded

KERNEL_1 = "Kernel 1: partial statistics"
KERNEL_2 = "Kernel 2: the rescaled merge"
NOT_CONCATENATED = "Why local probabilities cannot be concatenated"
OWNERSHIP = "Tile ownership and masks"
SCRATCH = "Worked example: scratch for 4x32769"
CONTRACT = "The contract"

DEFAULT_CHUNK = 1024
MAX_ELEMENTS = 1 << 22  # a larger call is not diagnosed (its oracles would take too long)


def _input(call: Call) -> Optional[tuple]:
    """(x as float64, chunk_size) of a softmax call, or None."""
    x = call.argument(0, "x")
    chunk = call.argument(1, "chunk_size", DEFAULT_CHUNK)
    if call.function != "softmax" or not isinstance(x, torch.Tensor) or x.dim() != 2:
        return None
    if not isinstance(chunk, int) or chunk <= 0 or x.numel() > MAX_ELEMENTS or x.shape[1] == 0:
        return None
    return as64(x), chunk


def chunk_stats(x64: torch.Tensor, chunk: int, padding: float = float("-inf")) -> tuple:
    """Per chunk of ``chunk`` columns: (m_i, l_i), each [rows, T], with the ragged last
    chunk padded with ``padding`` (which takes part in the max and the sum)."""
    rows, n = x64.shape
    tiles = -(-n // chunk)
    padded = torch.full((rows, tiles * chunk), padding, dtype=F64)
    padded[:, :n] = x64
    padded = padded.reshape(rows, tiles, chunk)
    m = padded.amax(dim=2)
    return m, torch.exp(padded - m[:, :, None]).sum(dim=2)


def merged(m: torch.Tensor, l: torch.Tensor) -> tuple:
    """The rescaled merge of per-chunk (m_i, l_i): the row's (m, l), each [rows, 1]."""
    row_max = m.amax(dim=1, keepdim=True)
    return row_max, (l * torch.exp(m - row_max)).sum(dim=1, keepdim=True)


def right(call: Call):
    if call.function == "scratch_bytes":
        rows, n, chunk = (call.argument(i, name) for i, name in enumerate(("M", "N", "chunk_size")))
        if not all(isinstance(v, int) and v >= 0 for v in (rows, n, chunk)) or not chunk:
            return None
        return 8 * rows * (-(-n // chunk) + 1)
    found = _input(call)
    return None if found is None else torch.softmax(found[0], dim=-1)


def agrees(call: Call, expected) -> bool:
    if call.function == "scratch_bytes":
        return type(call.result) is int and call.result == expected
    return _agrees(call.result, expected)


SOFTMAX_FUNCTIONS = ("softmax",)


def quantities(call: Call) -> list:
    found = _input(call)
    return [] if found is None else named.softmax_rows(found[0])


def _local_normalization(call: Call):
    found = _input(call)
    if found is None:
        return None
    x64, chunk = found
    m, l = chunk_stats(x64, chunk)
    cols = torch.arange(x64.shape[1]) // chunk
    return torch.exp(x64 - m[:, cols]) / l[:, cols]


def _merge_without_rescale(call: Call):
    found = _input(call)
    if found is None:
        return None
    x64, chunk = found
    m, l = chunk_stats(x64, chunk)
    return torch.exp(x64 - m.amax(dim=1, keepdim=True)) / l.sum(dim=1, keepdim=True)


def _zero_padding(call: Call):
    found = _input(call)
    if found is None or found[0].shape[1] % found[1] == 0:
        return None
    x64, chunk = found
    row_max, row_sum = merged(*chunk_stats(x64, chunk, padding=0.0))
    return torch.exp(x64 - row_max) / row_sum


def _zero_padding_in_merge(call: Call):
    """Kernel 2 loads the T chunk pairs into a power-of-two block with padding m = 0 (not
    -inf): the row maximum is max(0, m), and with every chunk far below 0 the fp32 weights
    exp(m_t - 0) underflow, so l = 0 and the row is 0 / 0."""
    found = _input(call)
    if found is None:
        return None
    x64, chunk = found
    tiles = -(-x64.shape[1] // chunk)
    if 1 << (tiles - 1).bit_length() == tiles:
        return None  # no padding lanes
    m, l = chunk_stats(x64, chunk)
    row_max = m.amax(dim=1, keepdim=True).clamp_min(0.0)
    f32 = torch.float32
    weights = torch.exp((m - row_max).to(f32)).to(F64)
    row_sum = (l * weights).sum(dim=1, keepdim=True)
    return torch.exp((x64 - row_max).to(f32)).to(F64) / row_sum


def _floor_chunk_count(call: Call):
    found = _input(call)
    if found is None or found[0].shape[1] % found[1] == 0 or found[0].shape[1] < found[1]:
        return None
    x64, chunk = found
    whole = (x64.shape[1] // chunk) * chunk
    row_max, row_sum = merged(*chunk_stats(x64[:, :whole], chunk))
    known = (torch.arange(x64.shape[1]) < whole)[None, :].expand(x64.shape)
    return Partial(torch.exp(x64 - row_max) / row_sum, known)


def _floor_scratch(call: Call):
    if call.function != "scratch_bytes":
        return None
    rows, n, chunk = (call.argument(i, name) for i, name in enumerate(("M", "N", "chunk_size")))
    if not all(isinstance(v, int) and v >= 0 for v in (rows, n, chunk)) or not chunk or n % chunk == 0:
        return None
    return Variants([8 * rows * (n // chunk + 1), 8 * rows * (n // chunk)])


def _scratch_without_merged_pair(call: Call):
    if call.function != "scratch_bytes":
        return None
    rows, n, chunk = (call.argument(i, name) for i, name in enumerate(("M", "N", "chunk_size")))
    if not all(isinstance(v, int) and v >= 0 for v in (rows, n, chunk)) or not chunk or not rows:
        return None
    return 8 * rows * -(-n // chunk)


def _half_through_fp16(call: Call):
    found = _input(call)
    x = call.argument(0, "x")
    if found is None or x.dtype != torch.bfloat16:
        return None
    return torch.softmax(rounded(found[0], torch.float16), dim=-1)


def _statistics_in_fp16(call: Call):
    """Kernel 1 stores each chunk's (m_i, l_i) in fp16 scratch, and kernel 2 the row's
    merged (m, l): each rounded to fp16 (inf past 65,504), the merge reading the rounded
    pairs.  Not for bf16 input: there a chunk maximum is a bf16 value, which fp16 holds
    exactly unless it overflows, and an overflow looks the same as loading the logits
    through fp16 (half-through-fp16 names both)."""
    found = _input(call)
    if found is None or call.argument(0, "x").dtype == torch.bfloat16:
        return None
    x64, chunk = found
    m, l = chunk_stats(x64, chunk)
    row_max, row_sum = merged(rounded(m, torch.float16), rounded(l, torch.float16))
    return torch.exp(x64 - rounded(row_max, torch.float16)) / rounded(row_sum, torch.float16)


def _merge_takes_max(call: Call):
    """Kernel 2 reduces the rescaled chunk denominators with a max instead of a sum."""
    found = _input(call)
    if found is None or found[0].shape[1] <= found[1]:
        return None  # one chunk: the max of one term is the sum
    x64, chunk = found
    m, l = chunk_stats(x64, chunk)
    row_max = m.amax(dim=1, keepdim=True)
    return torch.exp(x64 - row_max) / (l * torch.exp(m - row_max)).amax(dim=1, keepdim=True)


def _stats_exp2(call: Call):
    """Kernel 1 sums exp2(x - m_i) where kernels 2 and 3 work in base e."""
    found = _input(call)
    if found is None:
        return None
    x64, chunk = found
    rows, n = x64.shape
    tiles = -(-n // chunk)
    padded = torch.full((rows, tiles * chunk), float("-inf"), dtype=F64)
    padded[:, :n] = x64
    padded = padded.reshape(rows, tiles, chunk)
    m = padded.amax(dim=2)
    l = torch.exp2(padded - m[:, :, None]).sum(dim=2)
    row_max, row_sum = merged(m, l)
    return torch.exp(x64 - row_max) / row_sum


def _stats_swapped(call: Call):
    """Kernel 1 stores (l_i, m_i) where kernel 2 reads (m_i, l_i)."""
    found = _input(call)
    if found is None:
        return None
    x64, chunk = found
    m, l = chunk_stats(x64, chunk)
    row_max, row_sum = merged(l, m)
    return torch.exp(x64 - row_max) / row_sum


FLOOR_WHY = (
    "T = N // chunk_size drops the ragged last chunk: its logits never reach the merge and its "
    "outputs are never written; the count must round up, T = cdiv(N, chunk_size)"
)

MISTAKES = [
    Mistake(
        id="local-normalization",
        function="softmax",
        sentence="Your kernel normalizes each chunk by its own (m, l) instead of the row's merged (m, l).",
        where="kernel 3: every chunk must use the row's merged max and denominator from kernel 2",
        section=NOT_CONCATENATED,
        why=(
            "each chunk's local softmax sums to 1, so a row of T chunks sums to T; the row's maximum and "
            "denominator are known only after every chunk is summarized and merged"
        ),
        oracle=_local_normalization,
    ),
    Mistake(
        id="merge-without-rescale",
        function="softmax",
        sentence="Your merge adds the chunks' denominators without rescaling them to the row's maximum.",
        where="kernel 2: l = sum(l_i * exp(m_i - m)), not sum(l_i)",
        section=KERNEL_2,
        why=(
            "each l_i is measured relative to its own chunk's maximum m_i; added raw, the sum mixes units "
            "and is right only when every chunk has the same maximum"
        ),
        oracle=_merge_without_rescale,
    ),
    Mistake(
        id="merge-takes-max",
        function="softmax",
        sentence="Your merge takes the largest of the rescaled chunk denominators instead of their sum.",
        where="kernel 2: l = tl.sum(l_i * exp(m_i - m)), not tl.max",
        section=KERNEL_2,
        why="the row's denominator counts every chunk's exponentials: the largest chunk's share alone is "
        "too small, so every probability of the row comes out too large",
        oracle=_merge_takes_max,
    ),
    Mistake(
        id="stats-in-base-2",
        function="softmax",
        sentence="Your partial-stats kernel sums exp2(x - m_i), while the merge and the normalization "
        "work in base e.",
        where="kernel 1: l_i = sum(exp(x - m_i)), or every kernel in base 2 (with x scaled by log2(e))",
        section=KERNEL_1,
        why="2^(x - m) is not e^(x - m): the chunk sums are measured in another unit than the numerators "
        "kernel 3 divides by them",
        oracle=_stats_exp2,
    ),
    Mistake(
        id="stats-swapped",
        function="softmax",
        sentence="Your partial-stats kernel stores each chunk's pair as (l_i, m_i); the merge reads "
        "(m_i, l_i).",
        where="kernel 1's stores and kernel 2's loads: the same slot for m (first) and for l (second)",
        section=KERNEL_1,
        why="the merge takes sums for maxima and maxima for sums: a chunk's maximum can be negative, so the "
        "row's denominator can even come out negative",
        oracle=_stats_swapped,
    ),
    Mistake(
        id="zero-padding-in-stats",
        function="softmax",
        sentence="Your partial-stats kernel pads the ragged last chunk with 0.0 instead of -inf.",
        where="kernel 1's load: other=float('-inf') for the lanes past the row's end",
        section=KERNEL_1,
        why=(
            "padding lanes take part in the chunk's max and sum: each adds exp(0 - m) to l, and for "
            "negative logits the padding 0.0 even becomes the maximum; exp(-inf) = 0 adds nothing"
        ),
        oracle=_zero_padding,
    ),
    Mistake(
        id="zero-padding-in-merge",
        function="softmax",
        sentence="Your merge kernel pads the chunk maxima with 0.0 instead of -inf.",
        where="kernel 2's load of the T chunk pairs: other=float('-inf') for m past the T-th lane",
        section=KERNEL_2,
        why=(
            "the padding lanes take part in the row's max: for a row whose logits are all far below 0 "
            "the maximum becomes 0, every weight exp(m_t - 0) underflows, and l is 0"
        ),
        oracle=_zero_padding_in_merge,
    ),
    Mistake(
        id="floor-chunk-count",
        function="softmax",
        sentence=(
            "Your chunk count rounds down (N // chunk_size), so the ragged last chunk is never launched."
        ),
        where="the wrapper: T = cdiv(N, chunk_size) chunks",
        section=OWNERSHIP,
        why=FLOOR_WHY,
        oracle=_floor_chunk_count,
    ),
    Mistake(
        id="floor-chunk-count",
        function="scratch_bytes",
        sentence="Your scratch size counts N // chunk_size chunks, rounding down.",
        where="scratch_bytes: T = ceil(N / chunk_size), then 8 * M * (T + 1) bytes",
        section=SCRATCH,
        why=FLOOR_WHY,
        oracle=_floor_scratch,
    ),
    Mistake(
        id="no-merged-pair",
        function="scratch_bytes",
        sentence="Your scratch size leaves out the merged (m, l) pair: it counts only the T chunk pairs.",
        where="scratch_bytes: 8 * M * (T + 1) bytes, T chunk pairs and one merged pair per row",
        section=SCRATCH,
        why=(
            "kernel 2 writes each row's merged (m, l) into the scratch after the T chunk pairs, and "
            "kernel 3 reads it from there: without its 8 bytes per row the scratch is too small"
        ),
        oracle=_scratch_without_merged_pair,
    ),
    Mistake(
        id="half-through-fp16",
        function="softmax",
        sentence="Your kernel passes bf16 values through fp16: the logits as they load, or the (m, l) pairs.",
        where=(
            "the loads: convert the loaded values straight to fp32 (.to(tl.float32)); the scratch: "
            "store the (m, l) pairs in fp32"
        ),
        section=CONTRACT,
        why=(
            "bf16 logits past 65,504 become inf in fp16, and so do the chunk maxima among them: the row "
            "turns into NaN"
        ),
        oracle=_half_through_fp16,
    ),
    Mistake(
        id="statistics-in-fp16",
        function="softmax",
        sentence="Your kernels store the (m, l) pairs in fp16 scratch; they must be fp32.",
        where="the scratch: torch.empty(..., dtype=torch.float32), and kernels 1 and 2 store fp32 values",
        section=KERNEL_1,
        why=(
            "a chunk maximum of fp32 logits is not an fp16 value: near 1000 fp16 moves it by up to 0.25 "
            "while l_i was measured against the exact one, so the merge weighs the chunk up to exp(0.25) "
            "wrongly; past 65,504 the maximum is inf and the row NaN"
        ),
        oracle=_statistics_in_fp16,
    ),
]
