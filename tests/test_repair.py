"""The repair search: the error model proposes the edit that undoes a learner's one-line
mistake, with a sentence naming its mechanism; the search finds it, verifies it with every
check, never writes the learner's file, and says so when nothing is found."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from checks.judging.engine import run_checks
from checks.repair import error_model
from checks.repair.search import find_repair
from checks.repair.variants import apply, valid_variants

REPO = Path(__file__).resolve().parent.parent


def _solution(w: str) -> str:
    return (REPO / "workshops" / w / "solution.py").read_text(encoding="utf-8")


def _mistake(w: str, right: str, wrong: str) -> str:
    source = _solution(w)
    assert source.count(right) == 1, right
    return source.replace(right, wrong)


GEMM_K_SHORT = ("for k in range(0, tl.cdiv(K, BLOCK_K)):", "for k in range(0, tl.cdiv(K, BLOCK_K) - 1):")
GEMM_OVERWRITE = ("acc = tl.dot(a, b, acc)", "acc = tl.dot(a, b)")
GEMM_NO_ADVANCE = ("        b_ptrs += BLOCK_K * stride_bk\n", "")
GEMM_FP16_ACC = (
    "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
    "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)",
)
GEMM_FP16_LINE = _solution("fused_gemm").splitlines().index("    " + GEMM_FP16_ACC[0]) + 1
ATTN_M_ZERO = ('m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)', "m_i = tl.zeros([BLOCK_M], tl.float32)")
ATTN_NO_LOG2E = ("alpha = tl.exp2(m_i - m_new)", "alpha = tl.exp(m_i - m_new)")
ATTN_NO_SQRT = ("qk_scale = (1.0 / math.sqrt(d)) * LOG2_E", "qk_scale = (1.0 / d) * LOG2_E")
ATTN_TWO_SQRT = (
    "qk_scale = (1.0 / math.sqrt(d)) * LOG2_E",
    "qk_scale = (1.0 / math.sqrt(math.sqrt(d))) * LOG2_E",
)


@pytest.mark.parametrize(
    "workshop, change, kind, words",
    [
        (
            "fused_gemm",
            GEMM_K_SHORT,
            "extra-operand",
            "stops one pass early, so the last tile never reaches `acc`",
        ),
        ("fused_gemm", GEMM_OVERWRITE, "overwrite", "overwrites `acc` on every pass"),
        ("fused_gemm", GEMM_NO_ADVANCE, "pointer-advance", "never advances `b_ptrs`"),
        ("fused_gemm", GEMM_FP16_ACC, "dtype", "passed to tl.dot as its accumulator"),
        (
            "fused_gemm",
            ("group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)", "group_size_m = GROUP_M"),
            "last-group",
            "but the last group holds only the `num_pid_m - first_pid_m` rows left",
        ),
        (
            "fused_gemm",
            ("row_ok[:, None] & (offs_k[None, :] < k_left)", "row_ok[:, None] & (offs_k[None, :] < K)"),
            "mask-bound",
            "by `k_left`, which moves with it: `offs_k` counts from the current tile",
        ),
        ("streaming_attention", ATTN_M_ZERO, "start-value", "starts at 0 where it must start at -inf"),
        (
            "streaming_attention",
            ATTN_NO_SQRT,
            "square-root",
            "divides by `d` where the formula divides by its square root",
        ),
        ("streaming_attention", ATTN_TWO_SQRT, "square-root", "takes the square root of `math.sqrt(d)`"),
        (
            "online_normalizer",
            ("m = max(m_left, m_right)", "m = min(m_left, m_right)"),
            "min-max",
            "takes `min`",
        ),
    ],
)
def test_the_error_model_undoes_the_mistake_and_names_its_mechanism(workshop, change, kind, words):
    """Among the candidates of the mistaken file is one of the named kind whose edit gives
    back the reference answer's program, and its sentence names the mechanism."""
    import ast

    wrong = _mistake(workshop, *change)
    target = ast.dump(ast.parse(_solution(workshop)))
    # the function the mistake is in (the candidates elsewhere cannot give the answer back)
    line = next(
        i for i, (a, b) in enumerate(zip(wrong.splitlines(), _solution(workshop).splitlines()), 1) if a != b
    )
    function = next(
        fn.name
        for fn in ast.parse(wrong).body
        if isinstance(fn, ast.FunctionDef) and fn.lineno <= line <= fn.end_lineno
    )
    undoing = [
        (c, text)
        for c, text in valid_variants(
            wrong, [c for c in error_model.candidates(wrong) if c.function == function and c.kind == kind]
        )
        if ast.dump(ast.parse(text)) == target
    ]
    assert undoing, "no candidate gives the reference answer back"
    assert any(c.kind == kind and words in c.says for c, _ in undoing), [(c.kind, c.says) for c, _ in undoing]


GRID_IN_THE_WRONG_SIZE = """
import triton
import triton.language as tl


@triton.jit
def kernel(c_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    tl.store(c_ptr + tl.program_id(0), 1.0)


def launch(c, M, N):
    BLOCK_M, BLOCK_N = 32, 64
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_M),)
    kernel[grid](c, M, N, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
"""


def test_a_grid_counting_tiles_with_the_other_tile_size_is_said_as_the_grid():
    """The same swap of sizes reads differently in a grid: the programs launched, not a bound."""
    says = [c.says for c in error_model.candidates(GRID_IN_THE_WRONG_SIZE) if c.kind == "same-kind-name"]
    assert any(
        s.startswith("the grid counts tiles with `BLOCK_M` where `BLOCK_N` belongs")
        and "some tiles no program" in s
        for s in says
    ), says


def test_a_fp16_accumulator_tl_dot_adds_into_is_told_apart_from_one_added_to():
    """``tl.dot(a, b, acc)`` refuses a 16-bit ``acc``; ``acc += tl.dot(...)`` rounds each partial sum."""
    into = _mistake("fused_gemm", *GEMM_FP16_ACC)
    added = into.replace("acc = tl.dot(a, b, acc)", "acc += tl.dot(a, b).to(tl.float16)")
    for source, words in ((into, "passed to tl.dot as its accumulator"), (added, "rounds to 16 bits")):
        says = [
            c.says for c in error_model.candidates(source) if c.kind == "dtype" and c.line == GEMM_FP16_LINE
        ]
        assert any(words in s for s in says), says


def test_same_kind_names():
    assert error_model.same_kind("a_ptrs", "b_ptrs")
    assert error_model.same_kind("stride_am", "stride_ak")
    assert error_model.same_kind("pid_m", "pid_n")
    assert error_model.same_kind("M", "N")
    assert not error_model.same_kind("M", "acc")
    assert not error_model.same_kind("offs_m", "row_ok")


def test_a_change_that_routes_a_check_around_a_kernel_is_not_a_fix():
    from checks.repair.search import _same_kernels

    before = {"basic": ["rows_kernel"], "transpose": ["tiles_kernel"]}
    assert _same_kernels(before, {"basic": ["rows_kernel"], "transpose": ["tiles_kernel", "rows_kernel"]})
    assert not _same_kernels(before, {"basic": ["rows_kernel"], "transpose": ["rows_kernel"]})
    # a validation that now raises before launching (an inverted shape test fixed) is no routing
    assert _same_kernels({"rejects-shape": ["attention_kernel"]}, {"rejects-shape": []})


def test_apply_refuses_overlapping_edits():
    import ast

    from checks.mutation.operators import Edit

    tree = ast.parse("x = a + b\n")
    node = tree.body[0].value
    with pytest.raises(ValueError):
        apply("x = a + b\n", (Edit(node, "a"), Edit(node.left, "c")))


def _verify(workshop: str, source: str, tmp_path: Path) -> list:
    path = tmp_path / "repaired.py"
    path.write_text(source, encoding="utf-8")
    return [r for r in run_checks(workshop, path, interpret=True) if r.status not in ("pass", "skipped")]


SOFTMAX_ROW_FACTOR = ("out_addrs = out_ptr + row * n_cols + cols", "out_addrs = out_ptr + row + cols")


@pytest.mark.parametrize(
    "workshop, change, words",
    [
        ("fused_gemm", GEMM_K_SHORT, "stops one pass early"),
        # routing every call to the other kernel also passes every check; the search must
        # not call that a fix (each check still launches the kernels it launched before)
        ("strided_softmax", SOFTMAX_ROW_FACTOR, "`row` is missing its factor `n_cols`"),
    ],
)
def test_the_search_finds_a_verified_repair_and_leaves_the_file_alone(workshop, change, words, tmp_path):
    wrong = _mistake(workshop, *change)
    path = tmp_path / f"{workshop}.py"
    path.write_text(wrong, encoding="utf-8")
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    repair = find_repair(workshop, path, interpret=True, budget=120, workers=2)
    assert repair["status"] == "found", repair
    assert words in repair["says"]
    assert repair["says"].startswith(f"line {repair['line']}: ")
    assert change[1].strip() in repair["before"]
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before  # never written
    # what is shown passes every check when applied (verified again, independently)
    fixed = wrong.replace(repair["before"], repair["after"])
    assert fixed != wrong
    assert _verify(workshop, fixed, tmp_path) == []


def test_a_passing_file_has_nothing_to_repair(tmp_path):
    path = tmp_path / "right.py"
    path.write_text(_solution("strided_softmax"), encoding="utf-8")
    repair = find_repair("strided_softmax", path, interpret=True, budget=60, workers=1)
    assert repair["status"] == "not-applicable"
    assert "nothing to repair" in repair["note"]


def test_a_mistake_beyond_one_or_two_edits_is_said_plainly(tmp_path):
    """The K tail left unmasked needs a new mask term in two loads: no single edit of the
    model makes it pass, and the search says so instead of showing a change."""
    path = tmp_path / "k_tail.py"
    path.write_bytes((REPO / "workshops/fused_gemm/wrong/k_tail_unmasked.py").read_bytes())
    repair = find_repair("fused_gemm", path, interpret=True, budget=5, workers=2, pairs=False)
    assert repair["status"] in ("none", "budget")
    assert repair["says"] == "" and repair["after"] == ""
    assert "no change" in repair["note"]


def test_the_command_line_streams_json_lines_and_refuses_bad_arguments(tmp_path):
    """The protocol the app reads, on the CPU workshop (its checks take milliseconds)."""
    path = tmp_path / "merge.py"
    path.write_text(
        _mistake(
            "online_normalizer", "scale_right = math.exp(m_right - m)", "scale_right = math.exp(m - m_right)"
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "checks.repair",
            "online_normalizer",
            "--file",
            str(path),
            "--jsonl",
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["event"] == "begin" and events[-1]["event"] == "result"
    assert any(e["event"] == "progress" for e in events)
    assert events[-1]["repair"]["status"] == "found"
    assert "takes its operands the other way round" in events[-1]["repair"]["says"]
    for args, word in (
        (["fused_gemm", "--file", str(tmp_path / "none.py")], "--file"),
        (["no_such", "--file", str(path)], "workshop"),
        (["fused_gemm", "--file", str(path), "--budget", "0"], "--budget"),
        (["fused_gemm", "--file", str(path), "--records", str(tmp_path / "none.json")], "--records"),
    ):
        bad = subprocess.run(
            [sys.executable, "-m", "checks.repair", *args], capture_output=True, text=True, cwd=REPO
        )
        assert bad.returncode == 64 and word in bad.stderr, (args, bad.stderr)


def test_started_before_the_verdict_the_search_waits_for_its_records_on_stdin(tmp_path):
    """--records-from-stdin (the app's search started with the run): the workers start, the
    records come on one line of input and the search starts from them; the end of input
    without records (the run passed) stops it with nothing said."""

    path = tmp_path / "merge.py"
    path.write_text(
        _mistake(
            "online_normalizer", "scale_right = math.exp(m_right - m)", "scale_right = math.exp(m - m_right)"
        ),
        encoding="utf-8",
    )
    records = [r.to_dict() for r in run_checks("online_normalizer", path)]
    assert any(r["status"] == "fail" for r in records)
    command = [sys.executable, "-m", "checks.repair", "online_normalizer", "--file", str(path)]
    command += ["--jsonl", "--workers", "2", "--records-from-stdin"]
    done = subprocess.run(
        command,
        input=json.dumps({"records": records}) + "\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])["repair"]
    assert result["status"] == "found" and "the other way round" in result["says"]
    stopped = subprocess.run(command, input="", capture_output=True, text=True, cwd=REPO, timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout.splitlines()[-1])["repair"]["status"] == "cancelled"
    both = subprocess.run(
        command + ["--records", str(path)], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert both.returncode == 64 and "--records-from-stdin" in both.stderr


def test_a_worker_whose_cuda_context_a_candidate_broke_exits_after_answering(tmp_path):
    """On a GPU an illegal address leaves the process's CUDA context unusable: the worker
    answers for that candidate, then exits, so the next candidate gets a fresh one."""
    from checks.judging.engine import cases_for
    from checks.repair.warm import Worker as _Worker

    broken = _solution("online_normalizer").replace(
        "    m = max(values)",
        '    raise RuntimeError("CUDA error: an illegal memory access was encountered")',
    )
    path = tmp_path / "broken.py"
    path.write_text(broken, encoding="utf-8")
    worker = _Worker(False, [], tmp_path / "stderr.txt")
    try:
        checks = [c.id for c in cases_for("online_normalizer")]
        got = worker.run({"n": 1, "workshop": "online_normalizer", "file": str(path), "checks": checks}, 60)
        assert got is not None and any("CUDA error" in m for _, _, m in got["statuses"])
        assert worker.proc.wait(timeout=30) == 0
    finally:
        worker.stop()


@pytest.mark.parametrize(
    "change, kind, words",
    [
        (
            (
                "g_offsets = rows[:, None] * g_stride_row + cols[None, :] * g_stride_col",
                "g_offsets = rows[:, None] * y_stride_row + cols[None, :] * y_stride_col",
            ),
            "foreign-strides",
            "`g_ptr`'s addresses are built with `y`'s strides",
        ),
        (
            (
                "dx_offsets = rows[:, None] * n_cols + cols[None, :]",
                "dx_offsets = rows[:, None] * y_stride_row + cols[None, :]",
            ),
            "foreign-strides",
            "`dx` is a fresh tensor of its own: its rows are `n_cols` elements apart",
        ),
        (("dot = tl.sum(y * g, axis=1)", "dot = tl.sum(g, axis=1)"), "missing-weight", "weighted by `y`"),
        (
            ("dx = y * (g - dot[:, None])", "dx = g - dot[:, None]"),
            "missing-weight",
            "missing the factor `y`",
        ),
        (
            ("        y,\n        grad_output,\n", "        grad_output,\n        y,\n"),
            "exchanged-tensors",
            "passes `grad_output` and `y` in the other order",
        ),
        (  # a mistake nobody listed, tried from the command line: a shape error, then "no change"
            ("dx = y * (g - dot[:, None])", "dx = y * (g - dot[None, :])"),
            "broadcast-axis",
            "lays `dot` out as a row, one value per column, where it holds one value per row",
        ),
    ],
)
def test_the_error_model_undoes_mistakes_of_which_tensor(change, kind, words):
    """Mistakes a learner made in the softmax backward trial that the model missed: another
    tensor's strides, the weight y left out of the formula, two tensors launched in the
    other order; each has a candidate that gives the reference back, named by mechanism."""
    test_the_error_model_undoes_the_mistake_and_names_its_mechanism("softmax_backward", change, kind, words)


def test_an_address_without_a_term_the_files_other_addresses_have():
    """A learner's split softmax re-read its row as ``x_ptr + cols``: the row term that the
    store's address has is offered back, in the function's own names."""
    source = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def copy_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):\n"
        "    row = tl.program_id(0)\n"
        "    cols = tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + cols, mask=cols < n_cols)\n"
        "    tl.store(out_ptr + row * n_cols + cols, x, mask=cols < n_cols)\n"
    )
    fixed = source.replace("tl.load(x_ptr + cols", "tl.load(x_ptr + row * n_cols + cols")
    got = [
        c
        for c, text in valid_variants(
            source, [c for c in error_model.candidates(source) if c.kind == "missing-term"]
        )
        if text == fixed
    ]
    assert got and got[0].line == 9, got
    assert "leaves out the term `row * n_cols`" in got[0].says


def test_exp_of_the_raw_values_gets_the_maximum_subtracted():
    """The kept wrong answer that computes ``tl.exp(x)`` with no maximum at all (a step left
    out, not a term): the model offers the row's maximum subtracted in place, along the row
    or along a tile's axis 1, and a maximum the file computes where it has one."""
    source = (REPO / "workshops/strided_softmax/wrong/max_not_subtracted.py").read_text(encoding="utf-8")
    offered = [c for c in error_model.candidates(source) if c.kind == "max-not-subtracted"]
    texts = {c.edits[0].text for c in offered}
    assert {"tl.exp(x - tl.max(x, axis=0))", "tl.exp(x - tl.max(x, axis=1)[:, None])"} <= texts, texts
    assert all("overflows float32" in c.says for c in offered)
    computed = source.replace(
        "numerators = tl.exp(x)", "row_max = tl.max(x, axis=0)\n    numerators = tl.exp(x)"
    )
    assert computed != source
    texts = {c.edits[0].text for c in error_model.candidates(computed) if c.kind == "max-not-subtracted"}
    assert "tl.exp(x - row_max)" in texts, texts
    # a maximum the kernel loads (a split softmax's last pass reads the row's m from scratch)
    loaded = source.replace(
        "numerators = tl.exp(x)", "m = tl.load(stats_ptr + row)\n    numerators = tl.exp(x)"
    )
    said = {c.edits[0].text: c.says for c in error_model.candidates(loaded) if c.kind == "max-not-subtracted"}
    assert "is not measured against the maximum `m` the kernel has" in said.get("tl.exp(x - m)", ""), said


# A streaming-attention kernel in one loop, as learners write it (the reference answer keeps
# its steps in a helper): the loop's running state, its bounds and its masks.
ONE_LOOP_ATTENTION = """
import triton
import triton.language as tl


@triton.jit
def kernel(Q, K, V, Out, N, qk_scale, stride_qn, stride_qd, stride_kn, stride_kd, stride_vn, stride_vd,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m[:, None] < N
    q = tl.load(Q + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd, mask=row_ok, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    hi = N
    if CAUSAL:
        hi = tl.minimum(N, (start_m + 1) * BLOCK_M)
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        key_ok = offs_n[:, None] < N
        k = tl.load(K + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd, mask=key_ok, other=0.0)
        v = tl.load(V + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd, mask=key_ok, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where(offs_n[None, :] < N, s, float("-inf"))
        if CAUSAL:
            s = tl.where(offs_n[None, :] <= offs_m[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(Out + offs_m[:, None] * HEAD_DIM + offs_d[None, :], out, mask=row_ok)
"""


@pytest.mark.parametrize(
    "right, wrong, kind, words",
    [
        (
            "acc = acc * alpha[:, None] + tl.dot",
            "acc = acc + tl.dot",
            "missing-rescale",
            "`acc` is carried over the loop without the rescale `alpha` that `l_i` gets",
        ),
        (
            "out = acc / l_i[:, None]",
            "out = acc",
            "unused-denominator",
            "`l_i`, the running sum the loop carries, is never used after it",
        ),
        (
            "hi = tl.minimum(N, (start_m + 1) * BLOCK_M)",
            "hi = tl.minimum(N, start_m * BLOCK_M)",
            "tile-end",
            "the loop stops at `start_m * BLOCK_M`, where tile `start_m` starts",
        ),
        (
            "offs_n[None, :] <= offs_m[:, None]",
            "offs_n[None, :] <= start_m * BLOCK_M",
            "tile-start",
            "the first index of the tile, where each one's own index `offs_m` belongs",
        ),
        (
            'm_i = tl.full([BLOCK_M], float("-inf"), tl.float32)',
            "m_i = tl.full([BLOCK_M], 0.0, tl.float32)",
            "start-value",
            "`m_i` starts at 0 where it must start at -inf",
        ),
        (
            's = tl.where(offs_n[None, :] < N, s, float("-inf"))',
            "s = tl.where(offs_n[None, :] < N, s, 0.0)",
            "padding",
            "take 0.0, so they count in a maximum",
        ),
        (
            "V + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd",
            "V + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd",
            "foreign-strides",
            "`V`'s addresses are built with `k`'s strides",
        ),
    ],
)
def test_one_line_mistakes_of_a_loops_state_bounds_and_masks_are_undone(right, wrong, kind, words):
    """Mistakes a learner's trial of one-loop attention showed unreached: each has a candidate
    of its kind that gives the right kernel back, said with its mechanism."""

    _undone(ONE_LOOP_ATTENTION, right, wrong, kind, words)


# A split softmax of three kernels as a learner writes it: partial statistics per chunk into a
# float32 scratch, their merge per row, the normalization pass.
THREE_PASS_SOFTMAX = """
import torch
import triton
import triton.language as tl


@triton.jit
def stats(x_ptr, partial_ptr, n_cols, num_tiles, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    tile = tl.program_id(1)
    cols = tile * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
    m = tl.max(x, axis=0)
    tl.store(partial_ptr + (row * num_tiles + tile) * 2, m)
    tl.store(partial_ptr + (row * num_tiles + tile) * 2 + 1, tl.sum(tl.exp(x - m), axis=0))


@triton.jit
def merge(partial_ptr, stats_ptr, num_tiles, BLOCK_T: tl.constexpr):
    row = tl.program_id(0)
    t = tl.arange(0, BLOCK_T)
    m_t = tl.load(partial_ptr + (row * num_tiles + t) * 2, mask=t < num_tiles, other=float("-inf"))
    l_t = tl.load(partial_ptr + (row * num_tiles + t) * 2 + 1, mask=t < num_tiles, other=0.0)
    m = tl.max(m_t, axis=0)
    tl.store(stats_ptr + row * 2, m)
    tl.store(stats_ptr + row * 2 + 1, tl.sum(l_t * tl.exp(m_t - m), axis=0))


@triton.jit
def normalize(x_ptr, stats_ptr, out_ptr, n_cols, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * CHUNK + tl.arange(0, CHUNK)
    m = tl.load(stats_ptr + row * 2)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
    l = tl.load(stats_ptr + row * 2 + 1)
    tl.store(out_ptr + row * n_cols + cols, tl.exp(x - m) / l, mask=cols < n_cols)


def softmax(x, chunk_size=1024):
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    num_tiles = triton.cdiv(n_cols, chunk_size)
    partial = torch.empty((n_rows, num_tiles, 2), dtype=torch.float32, device=x.device)
    row_stats = torch.empty((n_rows, 2), dtype=torch.float32, device=x.device)
    stats[(n_rows, num_tiles)](x, partial, n_cols, num_tiles, CHUNK=chunk_size)
    merge[(n_rows,)](partial, row_stats, num_tiles, BLOCK_T=triton.next_power_of_2(num_tiles))
    normalize[(n_rows, num_tiles)](x, row_stats, out, n_cols, CHUNK=chunk_size)
    return out
"""


@pytest.mark.parametrize(
    "right, wrong, kind, words",
    [
        (
            "tl.sum(l_t * tl.exp(m_t - m), axis=0)",
            "tl.sum(l_t, axis=0)",
            "merge-rescale",
            "adds the partial sums `l_t` as they are, but each was measured against its own maximum",
        ),
        (
            "tl.store(out_ptr + row * n_cols + cols, tl.exp(x - m) / l",
            "tl.store(out_ptr + row * n_cols + cols, tl.exp(x) / l",
            "max-not-subtracted",
            "is not measured against the maximum `m` the kernel has",
        ),
        (
            "num_tiles = triton.cdiv(n_cols, chunk_size)",
            "num_tiles = n_cols // chunk_size",
            "floor-division",
            "rounds down, so a last, partial block is never counted",
        ),
        (
            "partial = torch.empty((n_rows, num_tiles, 2), dtype=torch.float32",
            "partial = torch.empty((n_rows, num_tiles, 2), dtype=x.dtype",
            "dtype",
            "allocates `partial` in `x.dtype`, the input's dtype",
        ),
        (
            "tl.store(partial_ptr + (row * num_tiles + tile) * 2, m)",
            "tl.store(partial_ptr + row * num_tiles + tile * 2, m)",
            "precedence",
            "`* 2` scales only `tile` where the whole `row * num_tiles + tile` is meant",
        ),
        (
            'tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))\n    l =',
            'tl.load(x_ptr + row * CHUNK + cols, mask=cols < n_cols, other=float("-inf"))\n    l =',
            "other-term",
            "has the term `row * CHUNK` where your other address of `x_ptr`",
        ),
    ],
)
def test_one_line_mistakes_of_a_split_softmax_are_undone(right, wrong, kind, words):
    """Mistakes a learner's trial of split softmax showed unreached: each has a candidate of
    its kind that gives the right program back, said with its mechanism."""

    _undone(THREE_PASS_SOFTMAX, right, wrong, kind, words)


def test_a_running_sum_kept_when_the_maximum_grows_gets_the_maximums_rescale():
    """The kept wrong answer whose tiled pass adds to ``l`` without rescaling it (no other
    carried value is rescaled there to copy from): the factor comes from the running
    maximum's own update, ``m_new = tl.maximum(m, ...)``."""
    source = (REPO / "workshops/strided_softmax/wrong/tiled_stale_denominator.py").read_text(encoding="utf-8")
    said = {c.edits[0].text: c.says for c in error_model.candidates(source) if c.kind == "missing-rescale"}
    fixed = "l = l * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[:, None]), axis=1)"
    assert "measured against the old maximum when the running maximum grows" in said.get(fixed, ""), said


def _undone(program: str, right: str, wrong: str, kind: str, words: str) -> None:
    """``program`` with ``right`` written ``wrong`` has a candidate of ``kind`` that gives
    ``program`` back, said with ``words``."""
    import ast

    assert program.count(right) == 1, right
    source = program.replace(right, wrong)
    target = ast.dump(ast.parse(program))
    undoing = [
        c
        for c, text in valid_variants(source, [c for c in error_model.candidates(source) if c.kind == kind])
        if ast.dump(ast.parse(text)) == target
    ]
    assert any(words in c.says for c in undoing), [(c.kind, c.says) for c in undoing]
