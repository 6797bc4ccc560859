"""The save-to-verdict latency benchmark runs (reports timings; asserts none)."""
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_latency_benchmark_runs_and_reports(tmp_path, capsys):
    out = tmp_path / "lat.json"
    r = subprocess.run([sys.executable, "-m", "tui.latency", "--workshops", "online_normalizer,strided_softmax",
                        "--repeats", "1", "--output", str(out)], cwd=REPO, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(out.read_text())
    assert data["schema"] == "kernel-course/latency"
    rows = {(s["workshop"], s["scenario"], s["path"]): s for s in data["summary"]}
    for wid, scen in (("online_normalizer", "edit"), ("strided_softmax", "kernel edit")):
        for path in ("warm", "fresh"):
            row = rows[(wid, scen, path)]
            assert row["runs_started"] == 1 and row["first_median_s"] <= row["last_median_s"]
    # a save that changes nothing starts no run
    assert rows[("online_normalizer", "unchanged save", "warm")]["runs_started"] == 0
    # every measured run produced verdicts for all the workshop's checks
    for run in data["runs"]:
        if run.get("ran") and run["path"] == "warm":
            assert run["checks"] > 5 and "pass" in run["statuses"]
    with capsys.disabled():
        print("\n" + r.stdout.strip())
