"""Evidence is written compactly (no indentation), and the readers read the indented
files written before as they read the compact ones."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from checks.json_files import write_json_atomic
from tui import benchmark_child

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
# The newest benchmark file with both timings: small enough to copy, big enough to matter.
BENCH_FILE = "2026-12-03-cab4d8f-h200-both.json"


def test_the_json_writer_writes_one_compact_line(tmp_path):
    payload = {"samples_us": [1.25, 2.5], "nested": {"a": None, "b": [1, 2]}, "nan": float("nan")}
    path = write_json_atomic(tmp_path / "x.json", payload)
    text = path.read_text(encoding="utf-8")
    assert text.count("\n") == 1 and text.endswith("\n") and ": " not in text and ", " not in text
    back = json.loads(text)
    assert back["samples_us"] == [1.25, 2.5] and back["nested"] == payload["nested"]
    assert back["nan"] != back["nan"]  # NaN kept as NaN, as before


def test_committed_evidence_is_compact():
    """Every evidence file in results/ is one line: a clone does not carry whitespace."""
    indented = [
        p.name for p in sorted(RESULTS.glob("*.json")) if p.read_text(encoding="utf-8").count("\n") > 1
    ]
    assert not indented, f"indented evidence files (rewrite them compactly): {indented}"


def _indented_copy(src: Path, dst: Path) -> None:
    dst.write_text(json.dumps(json.loads(src.read_text(encoding="utf-8")), indent=2) + "\n", encoding="utf-8")


def test_the_app_reads_an_indented_and_a_compact_file_alike(tmp_path):
    compact, indented = tmp_path / "compact", tmp_path / "indented"
    compact.mkdir()
    indented.mkdir()
    shutil.copy(RESULTS / BENCH_FILE, compact / BENCH_FILE)
    _indented_copy(RESULTS / BENCH_FILE, indented / BENCH_FILE)
    for op in ("strided_softmax", "fused_gemm"):
        rows_c, _ = benchmark_child.load_reference(op, [compact])
        rows_i, _ = benchmark_child.load_reference(op, [indented])
        assert rows_c and rows_c == rows_i
        assert [benchmark_child.fmt_rate(r) for r in rows_c] == [benchmark_child.fmt_rate(r) for r in rows_i]


def test_summarize_reads_an_indented_and_a_compact_file_alike(tmp_path):
    outputs = []
    for kind in ("compact", "indented"):
        folder = tmp_path / kind / "results"  # the same relative paths in both summaries
        folder.mkdir(parents=True)
        if kind == "compact":
            shutil.copy(RESULTS / BENCH_FILE, folder / BENCH_FILE)
        else:
            _indented_copy(RESULTS / BENCH_FILE, folder / BENCH_FILE)
        out = tmp_path / kind / "SUMMARY.md"
        r = subprocess.run(
            [
                sys.executable,
                str(RESULTS / "summarize.py"),
                "--results",
                str(folder),
                "--output",
                str(out),
                "--charts",
                str(tmp_path / kind / "charts"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        outputs.append(out.read_text(encoding="utf-8"))
    assert outputs[0] == outputs[1] and "strided_softmax" in outputs[0]


def test_summarize_tables_the_aa_disagreement_and_the_harness_cost_a_file_recorded():
    sys.path.insert(0, str(RESULTS))
    import summarize

    aa = {
        "device": {"n": 4, "median": 0.001, "p90": 0.003, "worst": 0.004},
        "per_call": {"n": 4, "median": 0.02, "p90": 0.139, "worst": 0.359},
    }
    evidence = [("with-aa.json", {"aa": aa, "harness": {"n": 3, "median_us": 1.25}}), ("plain.json", {})]
    lines = summarize.aa_section(evidence)
    table = "\n".join(lines)
    assert "## A/A and harness cost" in table
    assert "| `with-aa.json` | 4 | 0.1 % | 0.3 % | 0.4 % | 4 | 2.0 % | 13.9 % | 35.9 % | 1.25 |" in table
    assert "plain.json" not in table
    assert summarize.aa_section([("plain.json", {})]) == []
