"""Guard bands: inputs sit inside a buffer of NaN, so reading past an input fails a
check on the GPU as well (there the interpreter's out-of-bounds detector is absent).
Simulated here with a Triton kernel handed a view that starts one element too far (the
interpreter's detector accepts it: every read stays inside the view it was given)."""

import textwrap

import torch

from checks.judging.engine import run_checks
from checks.judging.tensors import GUARD_ELEMENTS, guard_intact, guarded


def test_guarded_copy_keeps_values_strides_and_alignment():
    t = torch.randn(5, 7).t()
    g = guarded(t)
    assert torch.equal(g, t) and g.stride() == t.stride() and g.shape == t.shape
    assert g.data_ptr() % 16 == 0
    assert g.storage_offset() == GUARD_ELEMENTS
    assert guard_intact(g)
    storage = torch.empty(0).set_(g.untyped_storage())
    storage[GUARD_ELEMENTS + 35] = 0.0  # one element past the end
    assert not guard_intact(g)


def test_a_read_past_the_input_fails_the_check(tmp_path, monkeypatch):
    monkeypatch.setenv("CHECKS_GUARD_BANDS", "1")
    off_by_one = tmp_path / "off_by_one.py"
    off_by_one.write_text(
        textwrap.dedent("""
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def rows_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            cols = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=-float("inf"))
            e = tl.exp(x - tl.max(x, axis=0))
            tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)

        def softmax(x, *, num_warps=4):
            # reads each row shifted by one element: the last row's last read is past the end
            shifted = torch.as_strided(x, x.shape, x.stride(), x.storage_offset() + 1)
            out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
            rows_kernel[(x.shape[0],)](shifted, out, x.shape[1], x.stride(0),
                                       BLOCK=triton.next_power_of_2(x.shape[1]))
            return out
    """)
    )
    records = {r.id: r for r in run_checks("strided_softmax", off_by_one, interpret=True, only=["basic"])}
    rec = records["basic"]
    assert rec.status == "fail"
    assert rec.details["nan"] > 0, rec.message


def test_the_gpu_pass_test_agrees_with_the_full_report_on_every_kind_of_value():
    # On a GPU a comparison first asks the device whether every element is within
    # tolerance and skips the report when so; that test must call nothing a pass that
    # the report would fail (NaN, Inf, the poison, one element just out of tolerance).
    from checks.judging.tensors import POISON, _matches_on_device, mismatch_report, tolerance

    tol = tolerance(torch.float16, 1.0)
    expected = torch.linspace(-3, 3, 60, dtype=torch.float64).reshape(6, 10)
    just_out = tol["atol"] + tol["rtol"] * 3.0 + 1e-3
    outcomes = []
    for value in (None, float("nan"), float("inf"), float(POISON), "just out", "within"):
        got = expected.to(torch.float16).clone()
        if value == "just out":
            got[5, 9] += just_out
        elif value == "within":
            got[5, 9] += 0.5 * tol["atol"]
        elif value is not None:
            got[5, 9] = value
        report = mismatch_report(got, expected, **tol)
        assert _matches_on_device(got, expected, **tol) == (report is None), (value, report)
        outcomes.append(report is None)
    assert outcomes == [True, False, False, False, False, True]
    assert not _matches_on_device(torch.zeros(2, 3), torch.zeros(3, 2, dtype=torch.float64), **tol)
