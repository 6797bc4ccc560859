"""Errors point to the learner's line: a file that does not import is one record with
its file and line (the app shows it as one panel), and an error inside a kernel names
the kernel's own line, not the line that launched it."""

from checks.judging.engine import run_checks


def test_a_syntax_error_is_one_record_with_its_line(tmp_path):
    p = tmp_path / "ex.py"
    p.write_text("def summarize(values):\n    return (\n")
    (rec,) = run_checks("online_normalizer", p)
    assert (rec.id, rec.status) == ("load", "error")
    assert "line 2" in rec.message and rec.details == {"file": str(p), "line": 2}


def test_an_error_at_import_time_names_the_learners_line(tmp_path):
    p = tmp_path / "ex.py"
    p.write_text("import math\n\nLIMIT = math.sqrt(-1)\n")
    (rec,) = run_checks("online_normalizer", p)
    assert rec.status == "error" and "ValueError" in rec.message
    assert rec.details["line"] == 3 and "line 3" in rec.message


KERNEL_FILE = """import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * undefined_scale, mask=offs < n)


def softmax(x, *, num_warps=4):
    out = torch.empty_like(x)
    scale_kernel[(1,)](x, out, x.numel(), BLOCK=64)
    return out
"""


def test_an_error_inside_a_kernel_names_the_kernels_line_not_the_launch(tmp_path):
    p = tmp_path / "ex.py"
    p.write_text(KERNEL_FILE)
    (rec,) = run_checks("strided_softmax", p, interpret=True, only=["basic"])
    assert rec.status == "error" and "undefined_scale" in rec.message
    assert "line 10, in scale_kernel" in rec.message, rec.message


def test_a_triton_compilation_error_is_placed_on_the_kernels_line(tmp_path):
    # On a GPU, Triton's compiler reports the failing node by its line within the
    # kernel's source; the engine turns that into the file's line.
    import ast

    from triton.compiler.errors import CompilationError

    from checks.judging.engine import where_in_file

    p = tmp_path / "ex.py"
    p.write_text(KERNEL_FILE)
    src = KERNEL_FILE[KERNEL_FILE.index("def scale_kernel") :].split("\n\n\n")[0]
    node = ast.parse("x * undefined_scale").body[0]
    node.lineno, node.col_offset = 4, 30  # the tl.store line; the def is line 1
    try:
        try:
            raise NameError("undefined_scale is not defined")
        except NameError as e:
            raise CompilationError(src, node, str(e)) from e
    except CompilationError as e:
        where = where_in_file(e, p)
    assert where == " (ex.py, line 10, in kernel scale_kernel)"


def test_a_file_that_is_not_utf8_says_so_without_a_line(tmp_path):
    p = tmp_path / "ex.py"
    p.write_bytes(b"\xff\xfe def summarize(values):\n")
    (rec,) = run_checks("online_normalizer", p)
    assert (rec.id, rec.status) == ("load", "error")
    assert "line None" not in rec.message and "save the file as UTF-8" in rec.message


def test_a_contract_name_that_is_not_a_function_is_one_clear_record(tmp_path):
    p = tmp_path / "ex.py"
    p.write_text("import math\n\nsoftmax = 3\n")
    (rec,) = run_checks("strided_softmax", p, interpret=True)
    assert (rec.id, rec.status) == ("load", "error")
    assert "softmax is 3 (of type int, line 3), not a function" in rec.message
    assert rec.details["line"] == 3
    assert "def softmax(...)" in rec.message
