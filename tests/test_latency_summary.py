"""The latency table's rows say what was measured: a save that changed nothing shows how soon
it was seen and skipped, a row with no verdict says 'not measured'; never 'nan'."""

from tui.latency_summary import print_table, summarize, timing_cells


def _run(path, first, last, scenario="edit", repeat=0):
    return {
        "workshop": "online_normalizer",
        "scenario": scenario,
        "path": path,
        "repeat": repeat,
        "ran": True,
        "outcome": "done",
        "statuses": ["pass"],
        "first_s": first,
        "last_s": last,
    }


def _unchanged(noticed=True, notice_s=0.042):
    return {
        "workshop": "online_normalizer",
        "scenario": "unchanged save",
        "path": "warm",
        "repeat": 0,
        "ran": False,
        "noticed": noticed,
        "notice_s": notice_s,
    }


def _table(rows, capsys) -> dict:
    summary = summarize(rows, gpu=False)
    print_table(summary)
    lines = capsys.readouterr().out.splitlines()
    return {tuple(line.split()[:2]): line for line in lines[1:]}, summary


def test_an_unchanged_save_row_says_it_was_skipped_and_how_soon_not_nan(capsys):
    rows = [_run("warm", 0.1, 0.4), _run("warm", 0.2, 0.5, repeat=1), _unchanged()]
    printed, summary = _table(rows, capsys)
    unchanged = next(r for r in summary if r["scenario"] == "unchanged save")
    assert unchanged["runs_started"] == 0 and unchanged["noticed"] == 1
    assert unchanged["notice_s"]["median"] == 0.042
    line = printed[("online_normalizer", "unchanged")]
    assert "nan" not in line and "no run: skipped in 0.042 s" in line
    assert "0.150" in printed[("online_normalizer", "edit")]  # the measured row keeps its figures


def test_a_save_not_seen_as_skipped_says_so():
    row = summarize([_unchanged(noticed=False, notice_s=5.0)], gpu=False)[0]
    assert "notice_s" not in row
    assert timing_cells(row).strip() == "no run, and not seen as skipped"


def test_a_row_whose_runs_all_failed_is_not_measured(capsys):
    failed = dict(_run("warm", 0.1, 0.4), outcome="done", statuses=["fail"])
    printed, summary = _table([failed], capsys)
    assert "first_s" not in summary[0] and summary[0]["runs_failed"] == 1
    line = printed[("online_normalizer", "edit")]
    assert "nan" not in line and "not measured (1 failed)" in line


def test_every_cell_block_is_as_wide_as_the_measured_one():
    measured = {"first_s": {"median": 0.1}, "last_s": {"median": 0.4, "min": 0.3, "max": 0.5}}
    widths = {
        len(timing_cells(r))
        for r in (measured, {"noticed": 1, "notice_s": {"median": 0.01}}, {"runs_failed": 0}, {"noticed": 0})
    }
    assert widths == {35}
