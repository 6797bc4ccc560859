"""Named checks for I3, GEMM with bias and ReLU: ``matmul_bias_relu(a, b, bias, *, group_m, tile_m)``.

The oracle is relu(a @ b + bias) in float64, from the very fp16/bf16 values the kernel
reads, on the inputs' device (on a GPU a float64 product of 4100x72 by 72x4000 takes
microseconds there and about 0.3 s on one CPU thread).  Numbers are compared with
checks.judging.tensors.assert_close (the dtype's tolerance, widened with K for long dot
products, see _k_scale).  Two checks compare exactly: their values are built so that
every correct intermediate is exact in fp32 and the answer is exactly representable in
16 bits, so any error at all is a bug.

bf16 checks need a GPU: Triton's interpreter does not support bf16 tl.dot and returns
silently wrong products instead of raising.
"""

from typing import Any

import torch

from checks.judging.case import CheckFailed, Context, check, collect
from checks.judging.tensors import (
    assert_close,
    assert_not_alias,
    expect_rejects,
    expect_tensor,
    poisoned_allocator,
)

FP16, BF16 = torch.float16, torch.bfloat16
BF16_REASON = "bf16 tl.dot is unsupported in Triton's interpreter"
GROUPS = (1, 4, 8)
TILES = (16, 32, 64)


# --- helpers -------------------------------------------------------------------------


def gemm_operands(ctx, M, N, K, dtype=FP16, *, scale=1.0, bias_scale=1.0, bias_offset=0.0):
    """A[M, K], B[K, N], bias[N] drawn from ONE seeded CPU stream, then moved to ctx.device.

    (checks.judging.tensors.randn reseeds on every call, so three operands drawn with it in one
    check would repeat the same numbers; this is the same recipe with a shared stream.)"""
    g = ctx.torch_generator()
    a = torch.randn(M, K, generator=g, dtype=torch.float64) * scale
    b = torch.randn(K, N, generator=g, dtype=torch.float64) * scale
    bias = torch.randn(N, generator=g, dtype=torch.float64) * bias_scale + bias_offset
    return tuple(t.to(dtype).to(ctx.device) for t in (a, b, bias))


def gemm_oracle(
    a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, device: "torch.device | str | None" = None
) -> torch.Tensor:
    """relu(a @ b + bias) in float64 on ``device`` (default: the inputs' own): no rounding
    at all before the compare.  Computed after the learner's call, right before the
    compare, so no kernel of theirs runs while it sits on the GPU."""
    device = a.device if device is None else device
    a64, b64, bias64 = (t.detach().to(device, torch.float64) for t in (a, b, bias))
    return torch.relu(a64 @ b64 + bias64)


def _k_scale(K):
    # fp32 accumulation error grows with the length of each dot product (about K ulps of
    # fp32 in the worst case), while the dtype's tolerance is set by the final 16-bit
    # rounding.  Up to K = 512 the rounding dominates; past it, widen in proportion to K.
    return max(1.0, K / 512)


def _poisoned_call(ctx, fn, shape, dtype):
    """Call fn() right after freeing a block of the output's size filled with POISON.

    The caching allocator tends to hand that block straight back to the wrapper's
    torch.empty, so output elements the kernel never writes still read POISON and the
    mismatch report counts them as unwritten.  (On the CPU, malloc may or may not reuse
    it; the checks that rely on this also make every correct output nonzero.)"""
    poisoned_allocator((max(1, shape[0] * shape[1]),), dtype, ctx.device)
    return fn()


def expect_matmul(ctx, got, a, b, bias, what, *, scale=None):
    M, K = a.shape
    N = b.shape[1]
    expect_tensor(got, shape=(M, N), dtype=a.dtype, device=ctx.device, name=what)
    assert_close(
        got, gemm_oracle(a, b, bias), dtype=a.dtype, name=what, scale=_k_scale(K) if scale is None else scale
    )


def run_gemm(ctx, mod, M, N, K, dtype=FP16, *, poison=True, **options):
    a, b, bias = gemm_operands(ctx, M, N, K, dtype)
    call = lambda: mod.matmul_bias_relu(a, b, bias, **options)
    got = _poisoned_call(ctx, call, (M, N), dtype) if poison else call()
    opts = ", ".join(f"{k}={v}" for k, v in options.items())
    expect_matmul(
        ctx, got, a, b, bias, f"{M}x{N}x{K} (MxNxK) {str(dtype)[6:]}" + (f", {opts}" if opts else "")
    )
    return got


def _exact_epilogue_operands(ctx, dtype, M=19, N=37, K=2):
    """Values where one rounding and two roundings give different 16-bit answers.

    Row i of A is [base, odd_i] and B is all ones, so acc[i, j] = base + odd_i exactly in
    fp32 (base = 2048 for fp16, 256 for bf16: just past the last power of two where every
    integer is representable, so base + odd is NOT representable in 16 bits).  bias_j =
    -base + c_j with c_j in {0, 1, 2, 3, -8}.  The contract's answer relu(odd_i + c_j) is a
    small integer, exact in 16 bits.  Casting acc first rounds base + odd_i to base +
    odd_i +/- 1 and the answer moves by 1.

    With a longer K (past any BLOCK_K) the -base moves to A's last column and bias_j = c_j:
    the partial sums pass base + odd_i, the final sum is odd_i again.  A 16-bit accumulator
    rounds the partial sum, and the answer moves by 1; a cast after the loop does not."""
    base = 2048.0 if dtype == FP16 else 256.0
    odd = torch.tensor([2.0 * (i % 8) + 1.0 for i in range(M)], dtype=torch.float64)
    a = torch.zeros(M, K, dtype=torch.float64)
    a[:, 0], a[:, 1] = base, odd
    b = torch.ones(K, N, dtype=torch.float64)
    c = torch.tensor([(0.0, 1.0, 2.0, 3.0, -8.0)[j % 5] for j in range(N)], dtype=torch.float64)
    bias = -base + c
    if K > 2:
        a[:, -1], bias = -base, c
    return tuple(t.to(dtype).to(ctx.device) for t in (a, b, bias))


def check_exact_epilogue(ctx, mod, dtype):
    # The long K first: an fp16 accumulator fails there, a cast before the epilogue does not,
    # so a failure of either call names its own mistake (checks.judging.mistakes.fused_gemm).
    for K, what in ((256, "partial sums base + odd, then -base"), (2, "acc = base + odd, bias = -base + c")):
        a, b, bias = _exact_epilogue_operands(ctx, dtype, K=K)
        got = _poisoned_call(ctx, lambda: mod.matmul_bias_relu(a, b, bias), (a.shape[0], b.shape[1]), dtype)
        # scale=0: every correct intermediate is exact and the answer is representable, so
        # the only acceptable error is none (a double rounding is off by exactly 1).
        expect_matmul(ctx, got, a, b, bias, f"{what} ({str(dtype)[6:]}, K={K})", scale=0.0)


def expect_rejection(fn, exc, name, what):
    words = [f"{name}:", f"'{name}'", f"`{name}`", f"{name} "]
    return expect_rejects(fn, (exc,), words, what)


def half_tensor(ctx, *shape, dtype=FP16):
    return torch.ones(*shape, dtype=dtype, device=ctx.device)


# --- the operation ----------------------------------------------------------------------


@check(
    "basic-fp16",
    "fp16, 20x24 output from K=16, default options",
    why="the first end-to-end answer: tile loads, one tl.dot, bias along columns, ReLU, store",
    section="The operation and its contract",
    cost=1,
    properties=("ragged",),
)
def basic_fp16(mod, ctx):
    run_gemm(ctx, mod, 20, 24, 16)


@check(
    "worked-tile-map",
    "tile_of: with 3x2 tiles and GROUP=2, pids 4 and 5 own tiles (2,0) and (2,1)",
    why=(
        "the lesson's worked map: the last super-row holds fewer tile rows than GROUP, and its "
        "pids must still land on tiles that exist"
    ),
    section="Who owns which tile",
    cost=1,
)
def worked_tile_map(mod, ctx):
    tile_of = getattr(mod, "tile_of", None)
    if tile_of is None:
        raise CheckFailed(
            "your module has no tile_of(pid, num_pid_m, num_pid_n, group_m) helper; "
            "keep the starter's helper, with the same pid -> tile arithmetic as your "
            "kernel, so the worked example can be checked on the CPU"
        )

    def tile(pid, nm, nn, g):
        got = tile_of(pid, nm, nn, g)
        try:
            return (int(got[0]), int(got[1]))
        except (TypeError, IndexError, ValueError):
            raise CheckFailed(
                f"tile_of({pid}, {nm}, {nn}, {g}) should return (pid_m, pid_n), got {got!r}"
            ) from None

    # The lesson's worked answer, and the whole grouped order around it.
    order = [tile(p, 3, 2, 2) for p in range(6)]
    want = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]
    if order[4:] != want[4:]:
        raise CheckFailed(
            f"with 3 tile rows, 2 tile columns and GROUP=2, pids 4 and 5 should own "
            f"(2, 0) and (2, 1); tile_of gives {order[4]} and {order[5]}",
            {"got": order, "expected": want},
        )
    if order != want:
        raise CheckFailed(
            f"grouped order for 3x2 tiles, GROUP=2: got {order}, expected {want} "
            f"(walk down the group's tile rows, then step one column right)",
            {"got": order, "expected": want},
        )
    # Every program owns exactly one tile and every tile has one owner, partial groups included.
    for nm, nn, g in (
        (3, 2, 4),
        (6, 3, 4),
        (6, 3, 8),
        (5, 7, 1),
        (1, 1, 8),
        (9, 4, 8),
        (10, 3, 4),
        (17, 2, 8),
    ):
        tiles = [tile(p, nm, nn, g) for p in range(nm * nn)]
        bad = [t for t in tiles if not (0 <= t[0] < nm and 0 <= t[1] < nn)]
        missing = sorted(set((i, j) for i in range(nm) for j in range(nn)) - set(tiles))
        if bad or missing or len(set(tiles)) != len(tiles):
            raise CheckFailed(
                f"{nm} tile rows x {nn} tile columns, group_m={g}: pids map to "
                f"nonexistent tiles {bad[:4]}; tiles never owned {missing[:4]}",
                {"tiles": tiles[:64]},
            )
    return "pids 4/5 -> (2,0)/(2,1); one owner per tile for 8 grid shapes"


@check(
    "epilogue-one-rounding",
    "fp16: bias added to the fp32 accumulator, ONE cast at the end (exact)",
    why=(
        "the answer here is exact only with one rounding: the bias added to the fp32 accumulator, "
        "the sum cast once"
    ),
    section="The epilogue: one rounding",
    cost=1,
)
def epilogue_one_rounding(mod, ctx):
    check_exact_epilogue(ctx, mod, FP16)


@check(
    "k-zero",
    "K=0: every row is relu(bias), written by the call into a fresh output",
    why="an empty K loop leaves the accumulator at zero, but the epilogue and the store must still run",
    section="Zero dimensions",
    cost=1,
)
def k_zero(mod, ctx):
    for M, N, opts in ((5, 40, {}), (37, 70, dict(tile_m=16, group_m=8))):
        a, b, bias = gemm_operands(ctx, M, N, 0, bias_offset=0.25)
        got = _poisoned_call(ctx, lambda: mod.matmul_bias_relu(a, b, bias, **opts), (M, N), FP16)
        expect_matmul(ctx, got, a, b, bias, f"{M}x{N}x0 (MxNxK)")
        assert_not_alias(got, a, b, bias, names=("a", "b", "bias"))


@check(
    "empty-m-n",
    "M=0 or N=0 returns an empty [M, N] output (K=0 included)",
    why="a zero-size grid is not a launch; the wrapper must return the empty result itself",
    section="Zero dimensions",
    cost=1,
)
def empty_m_n(mod, ctx):
    for M, N, K in ((0, 7, 5), (6, 0, 5), (0, 0, 3), (0, 9, 0), (4, 0, 0), (0, 0, 0)):
        a, b, bias = gemm_operands(ctx, M, N, K)
        got = mod.matmul_bias_relu(a, b, bias)
        expect_tensor(got, shape=(M, N), dtype=FP16, device=ctx.device, name=f"{M}x{N}x{K} (MxNxK)")


@check(
    "tiny-shapes",
    "1x1x1, one row, one column and K=1",
    why="a block far larger than the problem must be masked in every direction",
    section="The K loop and its masks",
    cost=1,
    properties=("ragged",),
)
def tiny_shapes(mod, ctx):
    for M, N, K in ((1, 1, 1), (1, 17, 3), (17, 1, 5), (2, 3, 1)):
        run_gemm(ctx, mod, M, N, K, tile_m=16)


@check(
    "ragged-tails",
    "M, N and K that are not multiples of any block (127x65x33 and more)",
    why="an unmasked tail in M, N or K reads past the end and adds garbage into the accumulator",
    section="The K loop and its masks",
    cost=2,
    properties=("ragged",),
)
def ragged_tails(mod, ctx):
    for M, N, K in ((127, 65, 33), (33, 17, 70), (65, 129, 17)):
        run_gemm(ctx, mod, M, N, K)


@check(
    "partial-group",
    "tile-row counts that are not a multiple of group_m: every tile written",
    why=("the last super-row is shorter than group_m: every one of its tiles must still get a program"),
    section="Who owns which tile",
    cost=3,
)
def partial_group(mod, ctx):
    # Small products plus a bias offset of 4: every correct output is >= ~2, so an
    # unwritten element stands out even if the allocator handed back zeros.
    cases = (
        (70, 100, 16, 32, 4),  # 3 tile rows x 2 tile columns: the lesson's example with group 4
        (91, 150, 24, 16, 4),  # 6 tile rows: full group of 4, then a group of 2
        (91, 150, 24, 16, 8),  # 6 tile rows in one short group of 8
        (91, 150, 24, 32, 8),
    )  # 3 tile rows, group 8
    for M, N, K, tile_m, group_m in cases:
        a, b, bias = gemm_operands(ctx, M, N, K, scale=0.3, bias_offset=4.0)
        got = _poisoned_call(
            ctx, lambda: mod.matmul_bias_relu(a, b, bias, tile_m=tile_m, group_m=group_m), (M, N), FP16
        )
        expect_matmul(ctx, got, a, b, bias, f"{M}x{N}x{K} (MxNxK), tile_m={tile_m}, group_m={group_m}")


@check(
    "group-invariance",
    "group_m changes only the launch order: outputs identical bit for bit",
    why="each tile is computed by the same code whoever owns it; a difference means a tile was "
    "lost or duplicated",
    section="Who owns which tile",
    cost=2,
)
def group_invariance(mod, ctx):
    M, N, K = 91, 150, 24
    a, b, bias = gemm_operands(ctx, M, N, K)
    for tile_m in (16, 32):
        outs = {g: mod.matmul_bias_relu(a, b, bias, group_m=g, tile_m=tile_m) for g in GROUPS}
        expect_matmul(ctx, outs[1], a, b, bias, f"{M}x{N}x{K}, tile_m={tile_m}, group_m=1")
        for g in (4, 8):
            if not torch.equal(outs[g], outs[1]):
                diff = outs[g] != outs[1]
                raise CheckFailed(
                    f"tile_m={tile_m}: group_m={g} differs from group_m=1 in "
                    f"{int(diff.sum())} of {diff.numel()} elements (rows "
                    f"{diff.any(1).nonzero().flatten().tolist()[:8]}...)"
                )


@check(
    "options-sweep",
    "every group_m (1/4/8) with every tile_m (16/32/64, and 128 if accepted)",
    why="an option value that compiles a different kernel can break masks or tile arithmetic on its own",
    section="The operation and its contract",
    cost=3,
)
def options_sweep(mod: Any, ctx: Context) -> str:
    # Tails in M, N and K at every tile_m, two tile rows or more up to tile_m 64 and a
    # short last group at every group_m > 1 (5 tile rows of 16: groups of 4 and 1), in
    # as few programs as that allows: the interpreter pays per program.
    M, N, K = 70, 90, 40
    tiles = list(TILES)
    try:  # tile_m=128 is an optional extra (the wide Hopper tile); test it if accepted
        mod.matmul_bias_relu(*gemm_operands(ctx, 1, 1, 1), tile_m=128)
        tiles.append(128)
    except (TypeError, ValueError):
        pass
    for tile_m in tiles:
        for group_m in GROUPS:
            run_gemm(ctx, mod, M, N, K, tile_m=tile_m, group_m=group_m, poison=False)
    return f"tile_m {tiles} x group_m {list(GROUPS)}"


@check(
    "long-k",
    "K=700: many K steps and a tail, fp32 accumulation",
    why=("many K steps and a tail: the sum must include every step and keep fp32 precision over all of them"),
    section="Tolerances",
    cost=2,
    properties=("ragged",),
)
def long_k(mod, ctx):
    run_gemm(ctx, mod, 9, 20, 700)
    run_gemm(ctx, mod, 33, 70, 1000, tile_m=64)


@check(
    "large-values",
    "bias of +/-1000 and one isolated large element of A",
    why=(
        "large magnitudes: a bias of +/-1000 decides the sign of every output, and the "
        "accumulator must hold large sums"
    ),
    section="The epilogue: one rounding",
    cost=2,
    properties=("large-magnitudes",),
)
def large_values(mod, ctx):
    M, N, K = 40, 50, 47  # K not a multiple of 16: the variant of the ragged checks
    a, b, _ = gemm_operands(ctx, M, N, K, scale=8.0)
    a[3, 5] = 1000.0  # one row dominated by a single element
    signs = torch.tensor([1.0 if j % 2 == 0 else -1.0 for j in range(N)], dtype=torch.float64)
    bias = (1000.0 * signs).to(FP16).to(ctx.device)  # alternate columns: +1000, -1000
    got = _poisoned_call(ctx, lambda: mod.matmul_bias_relu(a, b, bias), (M, N), FP16)
    expect_matmul(ctx, got, a, b, bias, "40x50x47, |A@B| ~ 450 with a 1000 in A[3, 5], bias +/-1000")


@check(
    "wide-tiles",
    "512x384x1000 with the widest tile and group 8 (fp16; 200x384x1000 in the interpreter)",
    why="large tiles and many K steps use another kernel variant; masks and tail must hold there too",
    section="Measure it",
    cost=4,
)
def wide_tiles(mod: Any, ctx: Context) -> None:
    tile_m = 64
    try:
        mod.matmul_bias_relu(*gemm_operands(ctx, 1, 1, 1), tile_m=128)
        tile_m = 128
    except (TypeError, ValueError):
        pass
    M, N, K = wide_tiles_shape(ctx.interpret)
    run_gemm(ctx, mod, M, N, K, tile_m=tile_m, group_m=8)


def wide_tiles_shape(interpret: bool) -> tuple[int, int, int]:
    """(M, N, K) of wide-tiles.  The interpreter pays per program and per K step: 200 rows
    are two tile rows of 128 (the second short) where 512 are four, with the same tile
    columns and the same 16 K steps and K tail, in half the interpreted steps."""
    return (200, 384, 1000) if interpret else (512, 384, 1000)


# --- layouts, inputs and outputs -----------------------------------------------------------


@check(
    "offset-views",
    "contiguous views that start inside their storage (offset pointers)",
    why="the kernel must use each tensor's own data pointer, which already includes the offset",
    section="The wrapper",
    cost=1,
)
def offset_views(mod, ctx):
    M, N, K = 30, 45, 20
    a_base, b_base, bias_base = gemm_operands(ctx, M + 5, N, K + 4)
    # Offsets of 7, 2N and 5 elements: the pointers are not even 16-byte aligned.
    a = a_base.reshape(-1)[7 : 7 + M * K].view(M, K)
    b = b_base[2 : 2 + K]
    bias = torch.cat([bias_base, bias_base[:5]])[5 : 5 + N]
    assert all(t.is_contiguous() and t.storage_offset() > 0 for t in (a, b, bias))
    got = mod.matmul_bias_relu(a, b, bias)
    expect_matmul(ctx, got, a, b, bias, "views with storage offsets")


@check(
    "inputs-unchanged",
    "a, b and bias are unchanged after the call",
    why="a kernel that writes its epilogue into an input destroys the caller's data",
    section="The wrapper",
    cost=1,
)
def inputs_unchanged(mod, ctx):
    a, b, bias = gemm_operands(ctx, 40, 33, 20)
    before = [t.clone() for t in (a, b, bias)]
    mod.matmul_bias_relu(a, b, bias, tile_m=16)
    for name, t, t0 in zip(("a", "b", "bias"), (a, b, bias), before):
        if not torch.equal(t, t0):
            raise CheckFailed(f"{name} was modified by the call")


@check(
    "fresh-output",
    "the output is a fresh contiguous tensor, new on every call",
    why="returning a view of an input, or reusing one cached buffer, breaks callers that keep results",
    section="The wrapper",
    cost=1,
)
def fresh_output(mod, ctx):
    a, b, bias = gemm_operands(ctx, 20, 36, 12)
    first = mod.matmul_bias_relu(a, b, bias)
    second = mod.matmul_bias_relu(a, b, bias)
    for got in (first, second):
        expect_tensor(got, shape=(20, 36), dtype=FP16, device=ctx.device)
        assert_not_alias(got, a, b, bias, names=("a", "b", "bias"))
    if first.untyped_storage().data_ptr() == second.untyped_storage().data_ptr():
        raise CheckFailed("two calls returned the same storage; allocate a new output per call")
    if not torch.equal(first, second):
        raise CheckFailed("two calls with the same inputs returned different values")
    if first.requires_grad:
        raise CheckFailed("the output requires grad; these kernels register no backward")


# --- rejections (the wrapper's validation; the starter already has it) ------------------------


# --- GPU only ----------------------------------------------------------------------------


CASES = collect(globals())
