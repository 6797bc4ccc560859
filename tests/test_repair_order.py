"""The search's order and its stopping: a change that makes a line look like a line of the
course's right answers is tried first (a learner's own names do not hide it), a find
returns without waiting for the tries still in flight, and a stopped pool of workers
leaves no process behind and starts none."""

import ast
import threading
import time
from pathlib import Path

from checks.repair import error_model, likeness
from checks.repair.schedule import drain as _drain
from checks.repair.variants import everywhere, rank, valid_variants
from checks.repair.warm import Pool

REPO = Path(__file__).resolve().parent.parent


def _position(source: str, right: str, like) -> int:
    singles = error_model.candidates(source)
    variants = valid_variants(source, rank(singles + everywhere(source, singles), [], source, like))
    want = ast.dump(ast.parse(right))
    return next(i + 1 for i, (_, text) in enumerate(variants) if ast.dump(ast.parse(text)) == want)


def test_lines_compare_as_python_writes_them_and_as_their_shape():
    assert likeness.plain("    offs = rows[:, None] * n_cols + (cols[None, :])  # x") == (
        "offs = rows[:, None] * n_cols + cols[None, :]"
    )
    assert likeness.plain("    for k in range(0, K, BLOCK_K):") == "for k in range(0, K, BLOCK_K):"
    assert likeness.plain("        + (h * stride_kh)") == "_ + h * stride_kh"
    assert likeness.skeleton("o = r[:, None] * n + c") == likeness.skeleton(
        "offs = rows[:, None] * n_cols + cols"
    )
    assert likeness.skeleton("x = tl.exp(a)") != likeness.skeleton("x = tl.exp2(a)")


def test_the_undo_of_a_mistake_in_the_solution_goes_first():
    """A line of the solution with `-` for `+`: without the likeness its undo is far down the
    order; with it, first (the fixed line is the solution's own)."""
    w = "softmax_backward"
    right = (REPO / "workshops" / w / "solution.py").read_text(encoding="utf-8")
    line = "dx_offsets = rows[:, None] * n_cols + cols[None, :]"
    assert right.count(line) == 1
    wrong = right.replace(line, line.replace("+ cols", "- cols"))
    before = _position(wrong, right, lambda c: 1.0)
    after = _position(wrong, right, likeness.factor(wrong, likeness.known_lines(w)))
    assert after == 1 and before > 20, (before, after)


def test_a_learner_s_own_names_still_match_the_shape():
    """The solution's lines renamed (a learner's own names) and one mistake: the shape of
    the fixed line is a right answer's, so its undo still moves up the order."""
    w = "softmax_backward"
    right = (REPO / "workshops" / w / "solution.py").read_text(encoding="utf-8")
    for old, new in (("n_cols", "n_c"), ("rows", "r_idx"), ("cols", "c_idx")):
        right = right.replace(old, new)
    line = "dx_offsets = r_idx[:, None] * n_c + c_idx[None, :]"
    assert right.count(line) == 1
    wrong = right.replace(line, line.replace("+ c_idx", "- c_idx"))
    assert line not in likeness.known_lines(w)[0]
    before = _position(wrong, right, lambda c: 1.0)
    after = _position(wrong, right, likeness.factor(wrong, likeness.known_lines(w)))
    assert after < before / 4, (before, after)


def test_a_find_returns_without_waiting_for_the_tries_in_flight():
    found = threading.Event()

    def attempt(cand, text):
        if cand == 0:
            found.set()
        else:
            time.sleep(5)

    t = time.monotonic()
    _drain([(i, "") for i in range(4)], attempt, 4, found.is_set, wait_in_flight=False)
    assert time.monotonic() - t < 2


def test_every_variant_is_tried_when_nothing_stops_the_search():
    tried = []
    _drain([(i, "") for i in range(20)], lambda c, _: tried.append(c), 3, lambda: False)
    assert sorted(tried) == list(range(20))


def test_a_stopped_pool_ends_its_workers_at_once_and_starts_none(tmp_path):
    """A candidate that hangs at import is in flight when the pool stops: ``stop()`` ends it
    at once, the ``ask`` answers None, and no worker takes its place."""
    hang = tmp_path / "hang.py"
    hang.write_text("import time\ntime.sleep(120)\n", encoding="utf-8")
    pool = Pool(True, tmp_path, [str(tmp_path)], 1)
    answers: list = []
    job = {"workshop": "online_normalizer", "file": str(hang), "checks": ["worked-merge"], "seed": 0}
    asking = threading.Thread(target=lambda: answers.append(pool.ask(job, 100)), daemon=True)
    asking.start()
    time.sleep(1.0)
    t = time.monotonic()
    pool.stop()
    asking.join(timeout=15)
    assert time.monotonic() - t < 15 and answers == [None]
    time.sleep(1.0)
    assert len(pool.made) == 1 and all(w.proc.poll() is not None for w in pool.made)
    assert pool.ask(job, 5) is None  # a stopped pool takes no more jobs


def test_in_the_interpreter_the_screening_of_a_likely_fix_is_its_verification(tmp_path, monkeypatch):
    """A change that passes the cheapest failing check runs every check in slices on every
    worker at once, compiling its kernels for sm_90 too: no second run of the suite."""
    from checks.judging.engine import cases_for
    from checks.repair import search, warm

    store = "tl.store(out_addrs, probs.to(out_ptr.dtype.element_ty), mask=in_row)"
    reference = (REPO / "workshops/strided_softmax/solution.py").read_text(encoding="utf-8")
    mistaken = reference.replace(store, store.replace(", mask=in_row", ""))
    path = tmp_path / "strided_softmax.py"
    path.write_text(mistaken, encoding="utf-8")
    asked: list = []  # (the file's text, its checks, compiled for sm_90 too)

    class Recording(warm.Pool):
        def ask(self, job, limit):
            asked.append(
                (Path(job["file"]).read_text(encoding="utf-8"), list(job["checks"]), job["gpu_compile"])
            )
            return super().ask(job, limit)

    monkeypatch.setattr(search, "Pool", Recording)
    repair = search.find_repair("strided_softmax", path, interpret=True, budget=240, workers=2)
    assert repair["status"] == "found" and "mask=in_row" in repair["after"], repair
    fixed = [(checks, compiled) for text, checks, compiled in asked if text == reference]
    everything = sorted(c.id for c in cases_for("strided_softmax"))
    sliced = [checks for checks, compiled in fixed if compiled]
    assert len(sliced) == 2 and sorted(c for s in sliced for c in s) == everything, fixed
    assert [checks for checks, compiled in fixed if not compiled] == [[repair_first(asked, mistaken)]]


def repair_first(asked: list, mistaken: str) -> str:
    """The one check the first try of any change ran: the cheapest failing one."""
    firsts = {checks[0] for text, checks, _ in asked if text != mistaken and len(checks) == 1}
    assert len(firsts) == 1, firsts
    return firsts.pop()


def _gemm_with(right: str, wrong: str) -> str:
    source = (REPO / "workshops" / "fused_gemm" / "solution.py").read_text(encoding="utf-8")
    assert source.count(right) == 1, right
    return source.replace(right, wrong)


def test_no_candidate_makes_a_tile_larger_or_renames_every_read():
    """A tile size without its cap (or with max for min, or another size's name) lets one
    tile hold the whole problem, which hides a K loop's fault instead of fixing it; a name
    replaced at every read changes its value, not a use: the search proposes neither. A
    launch passing one size for another (``block_n=block_m``) is still undone."""
    source = (REPO / "workshops" / "fused_gemm" / "solution.py").read_text(encoding="utf-8")
    singles = error_model.candidates(source)
    sizes = [i + 1 for i, line in enumerate(source.splitlines()) if line.strip().startswith("block_k =")]
    assert sizes
    larger = [
        c
        for c in singles
        if c.line in sizes and ("caps" in c.says or c.kind in ("min-max", "same-kind-name"))
    ]
    tiles = larger  # a floor dropped (max(16, ...)) makes a tile smaller: that stays a candidate
    assert not tiles, [c.says for c in tiles]
    launch = "BLOCK_K=block_k,"
    assert source.count(launch) == 1
    crossed = source.replace(launch, "BLOCK_K=block_n,")
    line = next(i + 1 for i, x in enumerate(crossed.splitlines()) if "BLOCK_K=block_n," in x)
    undo = [c for c in error_model.candidates(crossed) if c.line == line and c.kind == "same-kind-name"]
    assert [c.edits[0].text for c in undo] == ["block_k"], [c.says for c in undo]
    for c in everywhere(source, singles):
        if c.kind == "same-kind-name" and len({e.node.id for e in c.edits}) == 1:  # one name, many places
            name = c.edits[0].node.id
            assert len(c.edits) < source.count(name) - 1, c.says  # some read of it is left


def test_a_tile_shape_computed_in_a_helper_is_never_made_larger():
    """``block_c = min(4096 // block_r, next_power_of_2(n_cols))`` in a helper that returns
    the tiled path's shape: without the cap, one tile holds a whole test row and the tiled
    path's fault (a row maximum from the first tile only) goes unseen; it passed every
    check and was shown as the repair of that kept wrong answer, first without the cap,
    then without the divisor `block_r`."""
    source = (REPO / "workshops" / "strided_softmax" / "wrong" / "max_from_first_tile.py").read_text(
        encoding="utf-8"
    )
    line = next(i + 1 for i, x in enumerate(source.splitlines()) if x.strip().startswith("block_c = min("))
    on_line = [c for c in error_model.candidates(source) if c.line == line]
    assert not on_line, [c.says for c in on_line]  # no cap, divisor or constant dropped there


def test_both_axes_rounded_down_are_one_candidate():
    """``(M // tile_m) * (N // block_n)``: no single edit fixes the grid, one candidate
    rounds up on both axes."""
    source = _gemm_with(
        "num_tiles = cdiv(M, tile_m) * cdiv(N, block_n)", "num_tiles = (M // tile_m) * (N // block_n)"
    )
    singles = error_model.candidates(source)
    both = [c for c in everywhere(source, singles) if c.kind == "floor-division" and len(c.edits) == 2]
    assert len(both) == 1 and "(and so does `N // block_n` on the same line)" in both[0].says, both
    fixed = valid_variants(source, both)[0][1]
    right = (REPO / "workshops" / "fused_gemm" / "solution.py").read_text(encoding="utf-8")
    assert ast.dump(ast.parse(fixed)) == ast.dump(ast.parse(right))


def test_one_axis_named_for_the_other_twice_on_a_line_is_one_candidate():
    """``bias_ptr + offs_m, mask=row_ok`` style: a learner who takes the rows for the columns
    names both the offsets and the mask of the wrong axis; one candidate replaces both."""
    from checks.repair.program import same_kind

    assert same_kind("rows", "cols") and same_kind("row", "col") and not same_kind("rows", "col")
    source = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def k(bias_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):\n"
        "    rows = tl.arange(0, BLOCK)\n    cols = tl.arange(0, BLOCK)\n"
        "    row_ok = rows < n_rows\n    col_ok = cols < n_cols\n"
        "    b = tl.load(bias_ptr + rows, mask=row_ok, other=0.0)\n"
        "    where = out_ptr + rows[:, None] * n_cols + cols[None, :]\n"
        "    tl.store(where, b[None, :], mask=row_ok[:, None] & col_ok[None, :])\n"
    )
    singles = error_model.candidates(source)
    both = [c for c in everywhere(source, singles) if c.line == 11 and len(c.edits) == 2]
    assert [c.says for c in both] == [
        "uses `rows` where `cols` belongs, so that dimension of the tile takes the other dimension's "
        "offsets (and, on the same line, `row_ok` for `col_ok`)"
    ]
    fixed = valid_variants(source, both)[0][1]
    assert "tl.load(bias_ptr + cols, mask=col_ok, other=0.0)" in fixed


def test_a_pointer_never_advanced_is_found_with_a_learners_short_stride_names():
    """``s_bk`` for ``stride_bk``: the strides of an address are the names that multiply its
    offsets, whatever they are called."""
    source = (REPO / "workshops" / "fused_gemm" / "solution.py").read_text(encoding="utf-8")
    source = source.replace("stride_", "s_").replace("        b_ptrs += BLOCK_K * s_bk\n", "")
    steps = [
        c.edits[0].text.split("\n")[-1].strip()
        for c in error_model.candidates(source)
        if c.kind == "pointer-advance"
    ]
    assert "b_ptrs += BLOCK_K * s_bk" in steps, steps


def test_a_value_used_for_another_value_is_undone():
    """``1.0 / row_max`` for ``1.0 / denominator``: two values the kernel computed, of no
    kind the names tell; the candidate that reads the other one is there and says so."""
    right = (REPO / "workshops" / "strided_softmax" / "solution.py").read_text(encoding="utf-8")
    line = "probs = numerators * (1.0 / denominator)"
    assert right.count(line) == 1
    source = right.replace(line, "probs = numerators * (1.0 / row_max)")
    undo = [
        c
        for c in error_model.candidates(source)
        if c.kind == "other-value" and (c.edits[0].node.id, c.edits[0].text) == ("row_max", "denominator")
    ]
    assert [c.says for c in undo] == ["uses `row_max` where the value `denominator` belongs"]
    fixed = valid_variants(source, undo)[0][1]
    assert ast.dump(ast.parse(fixed)) == ast.dump(ast.parse(right))
