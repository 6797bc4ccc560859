"""Property-based tests of every GPU wrapper's metadata validation (reference answers,
in Triton's interpreter on the CPU).

Invalid metadata must raise TypeError (wrong type or dtype) or ValueError (shape,
stride, option, device, requires_grad, size limits) whose message names the argument --
never a crash, never a silent result.  Valid random inputs must match float64 oracles.
"""

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from checks.judging.engine import load_exercise
from workshops import catalog

TRIED = {"n": 0}
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
VALID_SETTINGS = settings(
    max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _solution(workshop_id):
    return load_exercise(catalog.get(workshop_id).solution)


def expect_rejected(fn, exc, names):
    TRIED["n"] += 1
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    assert any(n in msg for n in names), f"message does not name {names}: {msg!r}"


BAD_FLOAT_DTYPES = st.sampled_from(
    [torch.float64, torch.int32, torch.int64, torch.int8, torch.bool, torch.complex64]
)
NOT_TENSORS = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=False),
    st.lists(st.floats(allow_nan=False), min_size=1, max_size=3),
    st.text(max_size=3),
)
BAD_INT_OPTIONS = st.one_of(st.integers(-64, 300), st.sampled_from([1, 2, 3, 5, 7, 12, 128, 4096 * 3]))
NON_INT_OPTIONS = st.one_of(
    st.floats(allow_nan=False), st.text(max_size=3), st.none(), st.just(True), st.just(False)
)


def rows_cols(max_cols=64):
    return st.tuples(st.integers(1, 5), st.integers(1, max_cols))


# --- strided softmax and softmax backward (2D, any strides) ---


@SETTINGS
@given(bad=NOT_TENSORS)
def test_softmax_rejects_non_tensors(bad):
    mod = _solution("strided_softmax")
    expect_rejected(lambda: mod.softmax(bad), TypeError, ["x"])


@SETTINGS
@given(dtype=BAD_FLOAT_DTYPES, shape=rows_cols())
def test_softmax_rejects_bad_dtypes(dtype, shape):
    mod = _solution("strided_softmax")
    x = torch.zeros(shape, dtype=dtype)
    expect_rejected(lambda: mod.softmax(x), TypeError, ["x"])


@SETTINGS
@given(ndim=st.sampled_from([0, 1, 3, 4]))
def test_softmax_rejects_bad_rank(ndim):
    mod = _solution("strided_softmax")
    x = torch.randn([3] * ndim) if ndim else torch.randn(())
    expect_rejected(lambda: mod.softmax(x), ValueError, ["x"])


@SETTINGS
@given(rows=st.integers(1, 3), cols=st.sampled_from([0, 8193, 10000]))
def test_softmax_rejects_widths_past_the_limit(rows, cols):
    mod = _solution("strided_softmax")
    x = torch.randn(rows, cols)
    expect_rejected(lambda: mod.softmax(x), ValueError, ["x"])


@SETTINGS
@given(w=BAD_INT_OPTIONS.filter(lambda v: v not in (4, 8)))
def test_softmax_rejects_bad_num_warps(w):
    mod = _solution("strided_softmax")
    expect_rejected(lambda: mod.softmax(torch.randn(2, 8), num_warps=w), ValueError, ["num_warps"])


@SETTINGS
@given(w=NON_INT_OPTIONS)
def test_softmax_rejects_non_int_num_warps(w):
    mod = _solution("strided_softmax")
    expect_rejected(lambda: mod.softmax(torch.randn(2, 8), num_warps=w), TypeError, ["num_warps"])


def test_softmax_rejects_requires_grad_and_meta_device():
    mod = _solution("strided_softmax")
    x = torch.randn(2, 8, requires_grad=True)
    expect_rejected(lambda: mod.softmax(x), ValueError, ["x"])
    with torch.no_grad():
        mod.softmax(x)  # allowed when autograd is off
    expect_rejected(lambda: mod.softmax(torch.empty(2, 8, device="meta")), ValueError, ["x"])


@SETTINGS
@given(shape=rows_cols(), other=rows_cols())
def test_backward_rejects_mismatched_shapes(shape, other):
    if shape == other:
        return
    mod = _solution("softmax_backward")
    y, g = torch.rand(shape), torch.randn(other)
    expect_rejected(lambda: mod.backward(y, g), ValueError, ["grad_output", "y"])


@SETTINGS
@given(dt=st.sampled_from([torch.float16, torch.bfloat16]))
def test_backward_rejects_mismatched_dtypes(dt):
    mod = _solution("softmax_backward")
    y, g = torch.rand(2, 8), torch.randn(2, 8).to(dt)
    expect_rejected(lambda: mod.backward(y, g), TypeError, ["grad_output", "y"])


@SETTINGS
@given(bad=NOT_TENSORS, w=BAD_INT_OPTIONS.filter(lambda v: v not in (4, 8)))
def test_backward_rejects_non_tensors_and_bad_warps(bad, w):
    mod = _solution("softmax_backward")
    expect_rejected(lambda: mod.backward(bad, torch.randn(2, 8)), TypeError, ["y"])
    expect_rejected(lambda: mod.backward(torch.rand(2, 8), bad), TypeError, ["grad_output"])
    expect_rejected(
        lambda: mod.backward(torch.rand(2, 8), torch.rand(2, 8), num_warps=w), ValueError, ["num_warps"]
    )


# --- fused GEMM ---


@SETTINGS
@given(m=st.integers(1, 8), n=st.integers(1, 8), k=st.integers(1, 8), dk=st.integers(1, 3))
def test_gemm_rejects_mismatched_inner_dims(m, n, k, dk):
    mod = _solution("fused_gemm")
    a = torch.randn(m, k).half()
    b = torch.randn(k + dk, n).half()
    bias = torch.randn(n).half()
    expect_rejected(lambda: mod.matmul_bias_relu(a, b, bias), ValueError, ["b", "a"])
    b_ok = torch.randn(k, n).half()
    bias_bad = torch.randn(n + dk).half()
    expect_rejected(lambda: mod.matmul_bias_relu(a, b_ok, bias_bad), ValueError, ["bias"])


@SETTINGS
@given(dtype=st.sampled_from([torch.float32, torch.float64, torch.int32]))
def test_gemm_rejects_unsupported_dtypes(dtype):
    mod = _solution("fused_gemm")
    a, b, bias = torch.zeros(4, 4, dtype=dtype), torch.zeros(4, 4, dtype=dtype), torch.zeros(4, dtype=dtype)
    expect_rejected(lambda: mod.matmul_bias_relu(a, b, bias), TypeError, ["a"])


@SETTINGS
@given(
    g=BAD_INT_OPTIONS.filter(lambda v: v not in (1, 4, 8)),
    t=BAD_INT_OPTIONS.filter(lambda v: v not in (16, 32, 64, 128)),
)
def test_gemm_rejects_bad_options(g, t):
    mod = _solution("fused_gemm")
    a, b, bias = torch.randn(4, 4).half(), torch.randn(4, 4).half(), torch.randn(4).half()
    expect_rejected(lambda: mod.matmul_bias_relu(a, b, bias, group_m=g), ValueError, ["group_m"])
    expect_rejected(lambda: mod.matmul_bias_relu(a, b, bias, tile_m=t), ValueError, ["tile_m"])


def test_gemm_rejects_non_contiguous_and_mixed_dtypes():
    mod = _solution("fused_gemm")
    a, b, bias = torch.randn(8, 4).half(), torch.randn(4, 8).half(), torch.randn(8).half()
    expect_rejected(lambda: mod.matmul_bias_relu(a.t().contiguous().t(), b, bias), ValueError, ["a"])
    expect_rejected(lambda: mod.matmul_bias_relu(a, b.t().contiguous().t(), bias), ValueError, ["b"])
    expect_rejected(lambda: mod.matmul_bias_relu(a, b.bfloat16(), bias), TypeError, ["b"])


# --- split softmax ---


@SETTINGS
@given(c=BAD_INT_OPTIONS.filter(lambda v: v not in (256, 1024, 4096)))
def test_split_rejects_bad_chunk_sizes(c):
    mod = _solution("split_softmax")
    expect_rejected(lambda: mod.softmax(torch.randn(2, 8), chunk_size=c), ValueError, ["chunk_size"])


@SETTINGS
@given(cols=st.sampled_from([0, 131073]))
def test_split_rejects_widths_past_the_limit(cols):
    mod = _solution("split_softmax")
    expect_rejected(lambda: mod.softmax(torch.empty(1, cols)), ValueError, ["x"])


def test_split_rejects_non_contiguous():
    mod = _solution("split_softmax")
    expect_rejected(lambda: mod.softmax(torch.randn(8, 4).t()), ValueError, ["x"])


# --- streaming attention ---


@SETTINGS
@given(causal=st.one_of(st.integers(), st.text(max_size=3), st.none(), st.floats(allow_nan=False)))
def test_attention_rejects_non_bool_causal(causal):
    mod = _solution("streaming_attention")
    q = torch.randn(4, 16).half()
    expect_rejected(lambda: mod.attention(q, q, q, causal=causal), TypeError, ["causal"])


@SETTINGS
@given(d=st.integers(1, 130).filter(lambda v: v not in (16, 32, 64)))
def test_attention_rejects_unsupported_head_dims(d):
    mod = _solution("streaming_attention")
    q = torch.randn(4, d).half()
    expect_rejected(lambda: mod.attention(q, q, q), ValueError, ["q"])


@SETTINGS
@given(n=st.integers(1, 6), dn=st.integers(1, 3), bn=BAD_INT_OPTIONS.filter(lambda v: v not in (32, 64)))
def test_attention_rejects_mismatches_and_bad_block(n, dn, bn):
    mod = _solution("streaming_attention")
    q = torch.randn(n, 16).half()
    k = torch.randn(n + dn, 16).half()
    expect_rejected(lambda: mod.attention(q, k, k), ValueError, ["k", "q"])
    expect_rejected(lambda: mod.attention(q, q, q.float()), TypeError, ["v", "q"])
    expect_rejected(lambda: mod.attention(q, q, q, block_n=bn), ValueError, ["block_n"])


def test_attention_rejects_too_long_and_fp32():
    mod = _solution("streaming_attention")
    q = torch.empty(2049, 16).half()
    expect_rejected(lambda: mod.attention(q, q, q), ValueError, ["q"])
    f = torch.randn(4, 16)
    expect_rejected(lambda: mod.attention(f, f, f), TypeError, ["q"])


# --- valid random inputs match float64 oracles ---


def _softmax64(x):
    return torch.softmax(x.double(), dim=-1)


@VALID_SETTINGS
@given(
    shape=rows_cols(70),
    transpose=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float16]),
    seed=st.integers(0, 2**31 - 1),
)
def test_softmax_valid_inputs_match_oracle(shape, transpose, dtype, seed):
    mod = _solution("strided_softmax")
    g = torch.Generator().manual_seed(seed)
    r, c = shape
    x = (torch.randn(c, r, generator=g).t() if transpose else torch.randn(r, c, generator=g)).to(dtype)
    got = mod.softmax(x)
    tol = 1e-5 if dtype == torch.float32 else 2e-3
    torch.testing.assert_close(got.double(), _softmax64(x), atol=tol, rtol=tol * 10)


@VALID_SETTINGS
@given(
    rows=st.integers(1, 3),
    cols=st.integers(1, 3000),
    chunk=st.sampled_from([256, 1024]),
    seed=st.integers(0, 2**31 - 1),
)
def test_split_valid_inputs_match_oracle(rows, cols, chunk, seed):
    mod = _solution("split_softmax")
    x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)) * 10
    got = mod.softmax(x, chunk_size=chunk)
    torch.testing.assert_close(got.double(), _softmax64(x), atol=1e-6, rtol=1e-4)


@VALID_SETTINGS
@given(
    n=st.integers(1, 70), d=st.sampled_from([16, 32]), causal=st.booleans(), seed=st.integers(0, 2**31 - 1)
)
def test_attention_valid_inputs_match_oracle(n, d, causal, seed):
    mod = _solution("streaming_attention")
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(n, d, generator=g).half() for _ in range(3))
    got = mod.attention(q, k, v, causal=causal)
    s = (q.double() @ k.double().t()) / math.sqrt(d)
    if causal:
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    want = torch.softmax(s, dim=-1) @ v.double()
    torch.testing.assert_close(got.double(), want, atol=2e-2, rtol=2e-2)


@VALID_SETTINGS
@given(m=st.integers(0, 40), n=st.integers(0, 40), k=st.integers(0, 40), seed=st.integers(0, 2**31 - 1))
def test_gemm_valid_inputs_match_oracle(m, n, k, seed):
    mod = _solution("fused_gemm")
    g = torch.Generator().manual_seed(seed)
    a, b, bias = (
        torch.randn(m, k, generator=g).half(),
        torch.randn(k, n, generator=g).half(),
        torch.randn(n, generator=g).half(),
    )
    got = mod.matmul_bias_relu(a, b, bias)
    want = torch.relu(a.double() @ b.double() + bias.double())
    torch.testing.assert_close(got.double(), want, atol=2e-2, rtol=1e-2)
