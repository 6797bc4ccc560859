"""The learner's own kernel must do the work: unit tests of checks.judging.provenance and of the
base seed, in Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET)."""

import textwrap

import pytest
import torch

from checks.judging import provenance
from checks.judging.case import Context, parse_seed, seed_for
from checks.judging.engine import base_seed, load_exercise, run_checks

KERNEL = """
import torch
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=mask), mask=mask)


def launch(x, out):
    double_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
"""


def _module(tmp_path, body, name="mine.py"):
    path = tmp_path / name
    path.write_text(KERNEL + textwrap.dedent(body))
    return load_exercise(path), path


def _verdict(mod, path, fn="double"):
    """The not-own-kernel message of one call, or None (an Unwritten failure is the kernel's own)."""
    x = torch.arange(100, dtype=torch.float32)
    try:
        provenance.witnessed_call(path, getattr(mod, fn), x, fn_name=fn)
    except provenance.NotOwnKernel as e:
        assert e.details["verdict"] in ("not-own-kernel", "no-launch")
        return e.message
    except provenance.Unwritten:
        return None
    return None


def test_own_kernel_writing_the_output_passes(tmp_path):
    mod, path = _module(
        tmp_path,
        """
        def double(x):
            out = torch.empty_like(x)
            launch(x.contiguous(), out)
            return out.view(10, 10).t()          # a view of the written buffer is fine
        """,
    )
    assert _verdict(mod, path) is None


def test_pytorch_compute_is_named_with_the_op_and_the_line(tmp_path):
    mod, path = _module(
        tmp_path,
        """
        def double(x):
            out = torch.empty_like(x)
            launch(x, out)
            out.copy_(x * 2)                     # the kernel ran, then PyTorch overwrote it
            return out
        """,
    )
    msg = _verdict(mod, path)
    line = (
        path.read_text()
        .splitlines()
        .index("    out.copy_(x * 2)                     # the kernel ran, then PyTorch overwrote it")
        + 1
    )
    assert msg and "aten::mul" in msg and f"your file, line {line}" in msg


def test_a_returned_tensor_no_launch_wrote_is_rejected(tmp_path):
    mod, path = _module(
        tmp_path,
        """
        def double(x):
            out = torch.empty_like(x)
            launch(x, out)
            return out.clone()                   # a copy the kernel never saw
        """,
    )
    msg = _verdict(mod, path)
    assert msg and "none of your kernel launches" in msg and "double_kernel" in msg


def test_a_kernel_from_another_file_is_named_with_its_file(tmp_path):
    _module(tmp_path, "", name="helper_kernels.py")
    path = tmp_path / "mine.py"
    path.write_text(
        textwrap.dedent(
            """
        import sys, torch
        sys.path.insert(0, %r)
        from helper_kernels import launch

        def double(x):
            out = torch.empty_like(x)
            launch(x, out)
            return out
        """
            % str(tmp_path)
        )
    )
    msg = _verdict(load_exercise(path), path)
    assert msg and "double_kernel from" in msg and "helper_kernels.py" in msg


def test_no_launch_at_all_is_rejected_and_an_empty_result_needs_none(tmp_path):
    mod, path = _module(
        tmp_path,
        """
        def double(x):
            return torch.empty(0) if x.numel() == 0 else torch.empty_like(x)
        """,
    )
    assert "without launching any Triton kernel" in _verdict(mod, path)
    assert provenance.witnessed_call(path, mod.double, torch.empty(0)).numel() == 0


def test_a_skipped_launch_is_its_own_kind_not_someone_elses_work(tmp_path):
    """An early return taken for a shape with elements launches nothing and computes nothing:
    the failure says so, and never that another computation did the work."""
    from checks.judging import failure_kinds

    mod, path = _module(
        tmp_path,
        """
        def double(x):
            return torch.empty_like(x)  # the launch sat behind a condition that was never true
        """,
    )
    with pytest.raises(provenance.NotOwnKernel) as raised:
        provenance.witnessed_call(path, mod.double, torch.ones(4))
    assert raised.value.details["verdict"] == failure_kinds.NO_LAUNCH
    assert "early" in raised.value.message
    why, _ = failure_kinds.KINDS[failure_kinds.NO_LAUNCH]
    assert "PyTorch" not in why and "without launching" in why


def test_a_dtype_cast_is_compute_but_a_same_dtype_copy_is_layout(tmp_path):
    mod, path = _module(
        tmp_path,
        """
        def double(x):
            out = torch.empty_like(x)
            launch(x.to(torch.float16).float(), out)
            return out
        """,
    )
    assert "aten::_to_copy" in _verdict(mod, path)


def test_launches_are_watched_only_during_a_witnessed_call(tmp_path):
    from triton.runtime.interpreter import InterpretedFunction

    before = InterpretedFunction.run
    mod, path = _module(
        tmp_path,
        """
        def double(x):
            out = torch.empty_like(x)
            launch(x, out)
            return out
        """,
    )
    provenance.witnessed_call(path, mod.double, torch.ones(8))
    assert InterpretedFunction.run is before


def test_engine_wraps_the_contract_functions_of_gpu_workshops(tmp_path):
    # A file that answers strided softmax with PyTorch fails own-kernel by name.
    path = tmp_path / "strided.py"
    path.write_text("import torch\n\ndef softmax(x, *, num_warps=4):\n    return torch.softmax(x, dim=-1)\n")
    (rec,) = run_checks("strided_softmax", path, interpret=True, only=["own-kernel"])
    assert rec.status == "fail" and "aten::_softmax" in rec.message and "line 4" in rec.message


def test_seed_is_stable_mixed_and_validated(monkeypatch):
    assert seed_for("basic") == seed_for("basic", 0) == Context("basic").seed
    assert seed_for("basic", 7) == Context("basic", base_seed=7).seed
    assert seed_for("basic", 7) != seed_for("basic") and seed_for("basic", 7) != seed_for("basic", 8)
    assert seed_for("basic", 7) == int.from_bytes(
        __import__("hashlib").sha256(b"7:basic").digest()[:4], "little"
    )  # same on every machine
    for bad in ("-1", "x", "1.5", str(2**63)):
        with pytest.raises(ValueError, match="--seed"):
            parse_seed(bad)
    monkeypatch.setenv("KERNEL_COURSE_SEED", "11")
    assert base_seed() == 11 and base_seed(5) == 5
    monkeypatch.setenv("KERNEL_COURSE_SEED", "eleven")
    with pytest.raises(ValueError, match="KERNEL_COURSE_SEED"):
        base_seed()


def test_a_seed_changes_the_inputs_and_is_recorded(monkeypatch):
    monkeypatch.delenv("KERNEL_COURSE_SEED", raising=False)
    a = Context("basic").torch_generator()
    b = Context("basic", base_seed=3).torch_generator()
    assert not torch.equal(torch.randn(5, generator=a), torch.randn(5, generator=b))
    from workshops import catalog

    recs = run_checks("online_normalizer", catalog.get("online_normalizer").solution, seed=3)
    assert recs and all(r.seed == 3 and r.status == "pass" for r in recs)


def test_autotuned_and_heuristic_kernels_count_as_the_learners_own(tmp_path):
    # What Triton does inside a launch (an autotuner timing configs with PyTorch ops, a
    # heuristic, the interpreter moving tensors) is not the learner's PyTorch compute.
    path = tmp_path / "tuned.py"
    path.write_text(
        textwrap.dedent("""
        import torch
        import triton
        import triton.language as tl


        @triton.autotune(configs=[triton.Config({}, num_warps=4)], key=["n"])
        @triton.heuristics({"BLOCK": lambda a: triton.next_power_of_2(int(torch.tensor(a["n"]).sum()))})
        @triton.jit
        def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


        def double(x):
            out = torch.empty_like(x)
            double_kernel[(1,)](x, out, x.numel())
            return out
        """)
    )
    mod = load_exercise(path)
    x = torch.arange(10, dtype=torch.float32)
    with provenance.witnessing(path) as w:
        got = mod.double(x)
    assert torch.equal(got, 2 * x)
    assert [l.kernel for l in w.launches] == ["double_kernel"] and w.torch_ops == []
    assert provenance.verdict(w, "double", got) is None


def test_values_computed_on_the_host_are_named_in_the_learners_words(tmp_path):
    # the contract: wrappers never read values; an answer made in Python and wrapped in
    # torch.tensor is not a kernel's, even if a kernel is then handed the tensor
    mod, path = _module(
        tmp_path,
        """
        def double(x):
            values = [2 * v for v in x.tolist()]
            out = torch.tensor(values, dtype=x.dtype)
            launch(x, out)
            return out
        """,
    )
    msg = _verdict(mod, path)
    assert msg and "torch.tensor(...) from Python values" in msg


# --- in the interpreter: every returned element was stored by a kernel of the file ----

NO_STORE = """

@triton.jit
def peek_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < 0)  # no lane
"""


def test_an_output_written_through_a_numpy_view_is_rejected_naming_the_line(tmp_path):
    mod, path = _module(
        tmp_path,
        NO_STORE
        + """
def double(x):
    out = torch.empty_like(x)
    out.numpy()[...] = 2 * x.numpy()
    peek_kernel[(1,)](x, out, x.numel(), BLOCK=16)
    return out
""",
    )
    msg = _verdict(mod, path)
    line = path.read_text().splitlines().index("    out.numpy()[...] = 2 * x.numpy()") + 1
    assert msg and "100 of 100 elements were never stored by a kernel of yours" in msg
    assert "(first: [0], [1], [2])" in msg
    assert f".numpy() (your file, line {line})" in msg
    assert 'section "Your kernel, not PyTorch"' in msg


def test_masked_lanes_are_not_stores_and_the_elements_left_as_allocated_are_named(tmp_path):
    mod, path = _module(
        tmp_path,
        """
        def double(x):
            out = torch.zeros_like(x)
            launch(x[:60], out)                    # the kernel stores 60 of 100 elements
            return out
        """,
    )
    assert _verdict(mod, path) is None  # the kernel's own work, with a bug in what it covers
    with pytest.raises(provenance.Unwritten) as caught:
        provenance.witnessed_call(path, mod.double, torch.arange(100, dtype=torch.float32), fn_name="double")
    msg = caught.value.message
    assert "with 40 of 100 elements that no program of your kernels stored" in msg
    assert "elements 60-99" in msg and "double_kernel on grid (1,) = 1 program" in msg
    assert caught.value.details["first_unwritten"] == [[60], [61], [62]]


def test_values_overwritten_after_the_kernel_stored_them_are_rejected(tmp_path):
    mod, path = _module(
        tmp_path,
        """
        def double(x):
            out = torch.empty_like(x)
            launch(x, out)
            tmp = torch.empty_like(x)
            launch(out, tmp)
            out.copy_(tmp)                       # a same-dtype copy is an allowed op, not a store
            return out
        """,
    )
    msg = _verdict(mod, path)
    assert msg and "99 hold values other than your kernel stored there (first: [1]" in msg  # 4 * 0 == 2 * 0
    assert "aten::copy_ (your file, line" in msg and "never stored" not in msg


def test_a_store_by_a_kernel_of_another_file_does_not_count(tmp_path):
    _module(tmp_path, "", name="helper_kernels.py")
    path = tmp_path / "mine.py"
    path.write_text(
        KERNEL.replace("double_kernel", "mine_kernel").replace("def launch", "def own_launch")
        + textwrap.dedent(
            f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from helper_kernels import launch

        def double(x):
            out = torch.empty_like(x)
            own_launch(x, torch.empty_like(x))     # a kernel of this file runs, elsewhere
            launch(x, out)                         # the output is stored by a borrowed kernel
            own_launch(out[:0], out[:0])           # ...and one is given the output, storing nothing
            return out
        """
        )
    )
    msg = _verdict(load_exercise(path), path)
    assert msg and "100 of 100 elements were never stored by a kernel of yours" in msg


def test_the_input_returned_unchanged_is_named(tmp_path):
    # No contract lets a function return its input: outputs are fresh.  Said plainly.
    mod, path = _module(
        tmp_path,
        NO_STORE
        + """
def double(x):
    peek_kernel[(1,)](x, x, x.numel(), BLOCK=16)
    return x
""",
    )
    msg = _verdict(mod, path)
    assert msg and "it is the memory of an argument, returned without your kernel writing it" in msg


def test_zero_size_outputs_need_no_store_and_others_beside_them_still_do(tmp_path):
    mod, path = _module(
        tmp_path,
        NO_STORE
        + """
def pair(x):
    out = torch.empty_like(x)
    launch(x, out)
    return out[:0], out                       # an empty view beside the stored output


def pair_unstored(x):
    out = torch.empty_like(x)
    peek_kernel[(1,)](x, out, x.numel(), BLOCK=16)
    return torch.empty(0, 3), out
""",
    )
    x = torch.arange(100, dtype=torch.float32)
    empty, got = provenance.witnessed_call(path, mod.pair, x)
    assert empty.numel() == 0 and torch.equal(got, 2 * x)
    # a kernel given the output whose mask lets no lane through: its own bug, not another's work
    with pytest.raises(provenance.Unwritten, match="with 100 of 100 elements that no program"):
        provenance.witnessed_call(path, mod.pair_unstored, x)


def test_without_the_interpreter_stores_are_not_judged():
    # On a GPU the witness sees launches, not stores: a launch given the output suffices.
    out = torch.empty(4)
    w = provenance.Witness(learner_file="mine.py")
    w.launches.append(provenance.Launch("k", "mine.py", {out.untyped_storage().data_ptr()}))
    assert w.stores is None and provenance.verdict(w, "f", out) is None


# --- values read on the host and only copied by a kernel of the file -------------------

COPY = """

@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def copy(src, out):
    copy_kernel[(triton.cdiv(src.numel(), 64),)](src, out, src.numel(), BLOCK=64)
"""


@pytest.mark.parametrize(
    "compute, how",
    [
        # NumPy computes into a scratch tensor through a view; the kernel copies it
        ("scratch.numpy()[...] = 2 * x.numpy()", ".numpy()"),
        ("scratch.numpy()[...] = 2 * np.asarray(x)", "np.asarray(tensor)"),
        # Python floats read with .tolist(), written one by one with fill_ (an allowed op)
        ("[scratch[i].fill_(2 * v) for i, v in enumerate(x.tolist())]", ".tolist()"),
    ],
    ids=["numpy-view", "asarray", "tolist-fill"],
)
def test_values_read_on_the_host_and_copied_by_a_kernel_are_rejected(tmp_path, compute, how):
    mod, path = _module(
        tmp_path,
        COPY
        + f"""
import numpy as np


def double(x):
    scratch = torch.empty_like(x)
    {compute}
    out = torch.empty_like(x)
    copy(scratch, out)
    return out
""",
    )
    x = torch.arange(100, dtype=torch.float32)
    assert torch.equal(mod.double(x), 2 * x)  # the answer is right, and a kernel stored it
    line = path.read_text().splitlines().index(f"    {compute}") + 1
    msg = _verdict(mod, path)
    assert msg and f"read tensor values on the host: {how} (your file, line {line})" in msg, msg
    assert "Your kernel, not PyTorch" in msg


def test_a_kernel_that_computes_from_a_scratch_copy_of_the_input_passes(tmp_path):
    # copying the input on the device (an allowed, same-dtype copy) reads nothing on the host
    mod, path = _module(
        tmp_path,
        COPY
        + """

def double(x):
    staged = torch.empty_like(x)
    copy(x, staged)
    out = torch.empty_like(x)
    launch(staged, out)
    return out
""",
    )
    assert _verdict(mod, path) is None
