"""Tile shapes that do not fit are said in plain words: the line where they met, the two
shapes, and the earlier line of the kernel that made the odd one (checks.judging.shape_errors),
with Triton's own words after.  In the interpreter (conftest), and in compiled mode through
Triton's front end for sm_90 in a child process (no GPU needed)."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from checks.judging import shape_errors
from checks.judging.engine import load_exercise, run_checks

REPO = Path(__file__).resolve().parent.parent
SOLUTION = REPO / "workshops" / "softmax_backward" / "solution.py"
RIGHT = "dot = tl.sum(y * g, axis=1)"

# Two small kernels with the shapes wrong: two aranges on one axis, a wide value stored
# through narrow pointers.
KERNELS = """\
import triton
import triton.language as tl


@triton.jit
def two_aranges(x_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[:, None])
    tl.store(x_ptr + rows, x)


@triton.jit
def wide_store(x_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :])
    tl.store(x_ptr + cols, x)


@triton.jit
def wrong_axis(x_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :]).to(tl.float32)
    s = tl.sum(x, axis=0)
    tl.store(x_ptr + rows[:, None] * C + cols[None, :], x - s[:, None])
"""


def _line_of(text: str, words: str) -> int:
    return next(i + 1 for i, line in enumerate(text.splitlines()) if words in line)


def test_wrong_reduction_axis_names_the_line_that_made_the_odd_shape(tmp_path):
    text = SOLUTION.read_text()
    assert text.count(RIGHT) == 1
    path = tmp_path / "wrong_axis.py"
    path.write_text(text.replace(RIGHT, "dot = tl.sum(y * g, axis=0)"))
    rec = run_checks("softmax_backward", path, interpret=True, only=["worked-example"])[0]
    met, made = _line_of(text, "dx = y * (g - dot[:, None])"), _line_of(text, RIGHT)
    assert rec.status == "error"
    first, origin, triton_words = rec.message.splitlines()[:3]
    # a 1x2 input: 16 rows per program, a tile 2 wide
    assert first == (
        f"Shape mismatch on line {met} of wrong_axis.py (in _softmax_backward_kernel): `g - dot[:, None]` "
        "combines shapes (16, 2) and (2, 1); along axis 0 they have 16 and 2, and sizes combine only "
        "when they are equal or one of them is 1."
    )
    assert origin == (
        f"`dot` comes from line {made}, `tl.sum(y * g, axis=0)`: reducing along axis 0 leaves one value "
        "per column (shape (2,)), where this line needs one per row (16); axis=1 leaves one per row."
    )
    assert triton_words.startswith(f"Triton's words: InterpreterError (wrong_axis.py, line {met}, ")
    assert "Cannot make_shape_compatible: incompatible dimensions at index 0: 16 and 2" in triton_words


def _said(path: Path, kernel: str) -> str:
    import torch

    mod = load_exercise(path)
    try:
        getattr(mod, kernel)[(1,)](torch.zeros(16 * 64), 16, 64)
    except Exception as e:  # noqa: BLE001 - the error is what is tested
        return shape_errors.plain(e, path, "TRITON")
    raise AssertionError(f"{kernel} ran")


def test_both_aranges_and_a_store_through_narrow_pointers(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    lines = _said(path, "two_aranges").splitlines()
    assert lines[0].endswith(
        "`x_ptr + rows[:, None] * C + cols[:, None]` combines shapes (16, 1) and (64, 1); along axis 0 "
        "they have 16 and 64, and sizes combine only when they are equal or one of them is 1."
    )
    assert lines[1:] == [
        "`rows` comes from line 7, `tl.arange(0, R)`: it holds 16 values (shape (16,)), where this line "
        "needs 64 along axis 0.",
        "`cols` comes from line 8, `tl.arange(0, C)`: it holds 64 values (shape (64,)), where this line "
        "needs 16 along axis 0.",
        "Triton's words: TRITON",
    ]
    lines = _said(path, "wide_store").splitlines()
    assert lines[0] == (
        "Shape mismatch on line 18 of kernels.py (in wide_store): `tl.store(x_ptr + cols, x)` stores a "
        "value of shape (16, 64) through pointers of shape (64,): the value is spread to the pointers' "
        "shape, never the pointers to the value's."
    )
    assert (
        "`x` comes from line 17, `tl.load(x_ptr + rows[:, None] * C + cols[None, :])`: a load has "
        in lines[2]
    )


def test_other_errors_keep_their_message(tmp_path):
    assert (
        shape_errors.plain(ValueError("nothing about shapes"), tmp_path / "x.py", "as it was") == "as it was"
    )
    assert shape_errors.plain(ValueError("Cannot make_shape_compatible"), None, "as it was") == "as it was"


COMPILED = """
import sys
from pathlib import Path
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from checks.judging import shape_errors

path = Path(sys.argv[1])
sys.path.insert(0, str(path.parent))
import kernels

signature = {"x_ptr": "*fp32", "R": "constexpr", "C": "constexpr"}
try:
    triton.compile(
        ASTSource(fn=kernels.wrong_axis, signature=signature, constexprs={"R": 16, "C": 64}),
        target=GPUTarget("cuda", 90, 32),
    )
except triton.CompilationError as e:
    print(shape_errors.plain(e, path, "TRITON"))
"""


def test_compiled_mode_says_the_same(tmp_path):
    """The compiler's error (a CompilationError pointing at the kernel's node) gives the
    same sentences: the shapes of the names from the code generator's scope."""
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO)
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(COMPILED), str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "Shape mismatch on line 27 of kernels.py (in wrong_axis): `x - s[:, None]` combines shapes "
        "(16, 64) and (64, 1); along axis 0 they have 16 and 64, and sizes combine only when they are "
        "equal or one of them is 1.",
        "`s` comes from line 26, `tl.sum(x, axis=0)`: reducing along axis 0 leaves one value per column "
        "(shape (64,)), where this line needs one per row (16); axis=1 leaves one per row.",
        "Triton's words: TRITON",
    ]
