"""Adding a workshop is adding files: a seventh workshop, made in a copy of the course
from a workshop folder, its checks module and its benchmark spec, appears in the
command line's list, passes its self-check, is benchmarked and shows in the app's list
-- with no line of engine, app or test code changed."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NEW = "strided_softmax_again"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    for room in ("workshops", "checks", "tui"):
        shutil.copytree(REPO / room, root / room, ignore=shutil.ignore_patterns("__pycache__"))
    folder = root / "workshops" / NEW
    shutil.copytree(
        REPO / "workshops" / "strided_softmax", folder, ignore=shutil.ignore_patterns("__pycache__")
    )
    meta = json.loads((folder / "meta.json").read_text())
    meta.update(id=NEW, code="I4", title="Strided softmax, again")
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
    for name in ("solution.py", "starter.py", *(f"wrong/{p.name}" for p in (folder / "wrong").glob("*.py"))):
        p = folder / name  # the copies import their own folder, not the original
        p.write_text(p.read_text().replace("workshops.strided_softmax.", f"workshops.{NEW}."))
    # its checks: every check of strided softmax (all its parts), under the new id
    (root / "checks" / "judging" / "cases" / f"{NEW}.py").write_text(
        'from checks.judging.engine import cases_for\n\nCASES = cases_for("strided_softmax")\n'
    )
    (root / "checks" / "benchmark" / "shapes" / f"{NEW}.py").write_text(
        "from checks.benchmark.shapes.strided_softmax import *  # noqa: F401,F403\n"
    )
    return root


def run(course, *args, timeout=600):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    # the copy, not the installed checkout; other entries stay (a machine's extra packages)
    kept = [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != REPO.resolve()
    ]
    env["PYTHONPATH"] = os.pathsep.join([str(course), *kept])
    return subprocess.run(
        [sys.executable, *args], cwd=course, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_the_new_workshop_is_listed_and_checked(course):
    r = run(course, "-m", "checks", "--list")
    assert r.returncode == 0 and "I4" in r.stdout and NEW in r.stdout, r.stdout + r.stderr
    r = run(
        course,
        "-m",
        "checks",
        NEW,
        "--solution",
        "--interpret",
        "--check",
        "own-kernel",
        "--check",
        "transpose",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 checks passed; 0 failed" in r.stdout


def test_the_new_workshop_passes_the_authors_self_check(course):
    # The folder check plus the starter and one kept wrong answer (the full answer runs
    # above and, for the original, in tests/test_workshops.py).
    r = run(
        course,
        "-c",
        f"""
from checks.authoring import folder_problems, missed_catches
from checks.judging.engine import run_checks, use_interpreter
from workshops import catalog
use_interpreter()
w = catalog.get("{NEW}")
assert folder_problems(w) == [], folder_problems(w)
starter = run_checks(w.id, w.starter, interpret=True, only=["own-kernel", "rejects-type"])
assert [r.status for r in starter] == ["todo", "pass"], starter
ids = dict(w.wrong_answers)["torch_fallback.py"]
recs = run_checks(w.id, w.folder / "wrong" / "torch_fallback.py", interpret=True, only=ids)
assert missed_catches(w, "torch_fallback.py", recs) == [] and all(r.status == "fail" for r in recs)
print("ok", w.code, len(w.wrong_answers))
""",
    )
    assert r.returncode == 0 and r.stdout.startswith("ok I4"), r.stdout + r.stderr


def test_the_new_workshop_is_benchmarked(course):
    r = run(course, "-m", "checks.benchmark", "--list", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{NEW}: dtypes" in r.stdout


def test_the_new_workshop_is_in_the_apps_list(course):
    pytest.importorskip("textual")
    r = run(
        course,
        "-c",
        """
import asyncio
from tui.app import CourseApp
async def main():
    app = CourseApp(workspace=__import__("pathlib").Path("ws"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("#workshops")
        text = " ".join(str(table.get_row_at(i)) for i in range(table.row_count))
        print("I4" in text and "Strided softmax, again" in text)
asyncio.run(main())
""",
        timeout=180,
    )
    assert r.returncode == 0 and r.stdout.strip().endswith("True"), r.stdout + r.stderr
