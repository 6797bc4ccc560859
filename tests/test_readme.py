"""The README's figures are generated, not typed: its latency table is the one the
committed JSON files it names give."""

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _latency_table():
    spec = importlib.util.spec_from_file_location("latency_table", REPO / "results" / "latency_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readme_latency_table_is_generated_from_the_committed_json():
    shown, generated = _latency_table().readme_table((REPO / "README.md").read_text(encoding="utf-8"))
    assert shown == generated, "run: python results/latency_table.py --readme README.md"
    assert generated.count("\n") >= 3


def test_readme_names_the_two_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert "bash scripts/setup.sh && .venv/bin/python -m tui" in text
    assert "bash scripts/setup.sh && .venv/bin/python -m pytest -q" in text
