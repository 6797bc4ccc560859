"""``python -m checks regrade``: a synthetic cohort through an embedded Dask cluster of two
CPU workers, each verdict checked against what a single ``python -m checks`` run gives;
faults (a hang, a crash, a segfault, a kill of its group, of its check process and of its
Dask worker, memory, a flood of output) each get their own verdict and change no other
learner's; an interrupted regrade resumes and skips what is done.

Most learners submit the CPU workshop (online_normalizer: a fraction of a second each);
two submit interpreted GPU workshop files (a PyTorch stand-in and a wrong kernel, a few
seconds each).
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from checks.judging.records import Record, outcome_of
from checks.regrade import execution, verdicts
from checks.regrade.cli import build_parser, main as regrade_main
from checks.regrade.submissions import discover

# The cohort is graded on CPU workers, GPU workshops interpreted, on any machine.
pytestmark = pytest.mark.usefixtures("no_gpu")

REPO = Path(__file__).resolve().parent.parent
WORKSHOPS = REPO / "workshops"
SOLUTION = (WORKSHOPS / "online_normalizer" / "solution.py").read_text(encoding="utf-8")
SEED = 7

# --- the faults, each an online_normalizer file ---
HANG = SOLUTION + "\n\ndef merge(a, b):\n    while True:\n        pass\n"
SYNTAX_ERROR = "def merge(a, b:\n    return a\n"
EXITS = "import os\n\nos._exit(3)\n"
SEGFAULT = "import ctypes\n\nctypes.string_at(0)\n"
KILLS_ITS_GROUP = "import os\nimport signal\n\nos.killpg(0, signal.SIGKILL)\n"
KILLS_ITS_CHECK_PROCESS = "import os\nimport signal\n\nos.kill(os.getppid(), signal.SIGKILL)\n"
EXHAUSTS_MEMORY = "_hog = bytearray(4 << 30)\n" + SOLUTION
FLOODS_OUTPUT = "import sys\n\nfor _ in range(300):\n    sys.stdout.write('x' * 65535 + '\\n')\n\n" + SOLUTION
# Walks up to the Dask worker process (a multiprocessing child) and kills it; outside a
# Dask worker it finds none and is an ordinary right answer.
KILLS_ITS_WORKER = (
    "import os\nimport signal\n\n\n"
    "def _ancestors(pid):\n"
    "    while pid > 1:\n"
    "        with open(f'/proc/{pid}/stat') as f:\n"
    "            pid = int(f.read().rsplit(')', 1)[1].split()[1])\n"
    "        yield pid\n\n\n"
    "for _pid in _ancestors(os.getpid()):\n"
    "    with open(f'/proc/{_pid}/cmdline', 'rb') as f:\n"
    "        if b'spawn_main' in f.read():\n"
    "            os.kill(_pid, signal.SIGKILL)\n"
    "            break\n\n" + SOLUTION
)


def write(root: Path, learner: str, name: str, text: str) -> Path:
    p = root / learner / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def copy(root: Path, learner: str, workshop: str, source: Path) -> Path:
    return write(root, learner, f"{workshop}.py", source.read_text(encoding="utf-8"))


def regrade(*args, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "checks", "regrade", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def single_run(workshop: str, path: Path, out: Path, seed: int, timeout: float) -> tuple:
    """(exit code, records or None) of one ``python -m checks`` run, as a learner runs it."""
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "checks", workshop, "--file", str(path), "--json", str(out)]
    r = subprocess.run(
        cmd + ["--seed", str(seed), "--timeout", str(timeout)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout + 120,
    )
    if not out.exists():
        return r.returncode, None
    return r.returncode, [Record.from_dict(d) for d in json.loads(out.read_text())["records"]]


def learner_results(report: Path, learner: str) -> dict:
    return json.loads((report / "learners" / f"{learner}.json").read_text())["workshops"]


def statuses(records) -> dict:
    """check id -> status, from records as dicts (a report) or Records (a single run)."""
    as_dicts = (r if isinstance(r, dict) else r.to_dict() for r in records)
    return {d["id"]: str(d["status"]) for d in as_dicts}


# --- a cohort of right, wrong and stand-in answers ---

COHORT = {
    ("alice", "online_normalizer"): WORKSHOPS / "online_normalizer" / "solution.py",
    ("bob", "online_normalizer"): WORKSHOPS / "online_normalizer" / "wrong" / "raw_denominator.py",
    ("carol", "online_normalizer"): WORKSHOPS / "online_normalizer" / "wrong" / "empty_nan.py",
    ("dave", "online_normalizer"): WORKSHOPS / "online_normalizer" / "starter.py",
    ("erin", "strided_softmax"): WORKSHOPS / "strided_softmax" / "wrong" / "torch_fallback.py",
    ("fay", "softmax_backward"): WORKSHOPS / "softmax_backward" / "wrong" / "unit_column_stride.py",
}


def grade_cohort(root: Path) -> tuple:
    subs = root / "submissions"
    for (learner, workshop), source in COHORT.items():
        copy(subs, learner, workshop, source)
    write(subs, "alice", "A1.py", SOLUTION)  # a workshop's code, not its id
    write(subs, "alice", "notes.txt", "my notes\n")
    write(subs, "bob", "Online_Normalizer.py", SOLUTION)
    write(subs, ".", "README.md", "stray\n")  # not in a learner's folder
    report = root / "report"
    r = regrade(subs, "--seed", SEED, "--report", report, "--workers", 2)
    return subs, report, r


def test_a_cohort_through_two_cpu_workers(tmp_path):
    """One regrade, checked three ways (one test, so a parallel run grades it once)."""
    graded = grade_cohort(tmp_path)
    every_verdict_is_the_single_runs(*graded, tmp_path)
    files_that_name_no_workshop_are_reported_not_guessed(*graded)
    the_reports_agree_and_carry_seed_commit_and_machine(*graded)


def every_verdict_is_the_single_runs(subs: Path, report: Path, r, tmp_path: Path) -> None:
    # every submission graded, but alice/A1.py and the stray files were not: exit status 1
    assert r.returncode == 1, r.stdout + r.stderr
    assert "4 files not graded (listed above): exit status 1" in r.stdout
    assert "embedded Dask LocalCluster: 2 CPU workers" in r.stdout
    for (learner, workshop), _ in COHORT.items():
        got = learner_results(report, learner)[workshop]
        code, records = single_run(
            workshop, subs / learner / f"{workshop}.py", tmp_path / "one.json", SEED, 120
        )
        assert records is not None
        assert got["exit_code"] == code, (learner, workshop)
        assert got["outcome"] == str(outcome_of(records)), (learner, workshop)
        assert got["failing"] == [x.id for x in records if x.status in ("fail", "error")]
        assert statuses(got["records"]) == statuses(records), (learner, workshop)
        assert got["seed"] == SEED and all(rec["seed"] == SEED for rec in got["records"])
    expected = {
        "alice": "passed",
        "bob": "failed",
        "carol": "failed",
        "dave": "incomplete",
        "erin": "failed",
        "fay": "failed",
    }
    assert {k[0]: learner_results(report, k[0])[k[1]]["outcome"] for k in COHORT} == expected
    assert "worked-merge" in learner_results(report, "bob")["online_normalizer"]["failing"]
    assert "empty-empty" in learner_results(report, "carol")["online_normalizer"]["failing"]
    erin = learner_results(report, "erin")["strided_softmax"]
    assert erin["mode"] == "interpreter" and erin["failing"][0] == "own-kernel"  # the PyTorch stand-in
    fay = learner_results(report, "fay")["softmax_backward"]  # a wrong kernel: its meta.json's checks
    meta = json.loads((WORKSHOPS / "softmax_backward" / "meta.json").read_text())
    assert set(meta["wrong_answers"]["unit_column_stride.py"]) <= set(fay["failing"])
    assert "own-kernel" not in fay["failing"]


def files_that_name_no_workshop_are_reported_not_guessed(subs: Path, report: Path, r) -> None:
    cohort_json = json.loads((report / "cohort.json").read_text())
    reasons = {(u["learner"], u["file"]): u["reason"] for u in cohort_json["not_graded_files"]}
    assert set(reasons) == {("alice", "A1.py"), ("alice", "notes.txt"), ("bob", "Online_Normalizer.py"),
                            ("", "README.md")}  # fmt: skip
    assert "rename it online_normalizer.py" in reasons[("alice", "A1.py")]
    assert "lower case" in reasons[("bob", "Online_Normalizer.py")]
    assert "not in a learner's folder" in reasons[("", "README.md")]
    assert "not graded: alice/A1.py" in r.stdout
    alice = json.loads((report / "learners" / "alice.json").read_text())
    assert {u["file"] for u in alice["not_graded_files"]} == {"A1.py", "notes.txt"}
    assert set(alice["workshops"]) == {"online_normalizer"}


def the_reports_agree_and_carry_seed_commit_and_machine(subs: Path, report: Path, r) -> None:
    data = json.loads((report / "cohort.json").read_text())
    assert data["seed"] == SEED and data["complete"] and data["pending"] == 0
    assert data["commit"] and data["machine"]["cpus"] >= 1 and data["cluster"]["workers"] == 2
    by_key = {(x["learner"], x["workshop"]): x for x in data["results"]}
    assert set(by_key) == set(COHORT)
    for key, x in by_key.items():
        assert x["sha256"] == learner_results(report, key[0])[key[1]]["sha256"]
    rows = list(csv.DictReader((report / "cohort.csv").open(encoding="utf-8")))
    graded = {(row["learner"], row["workshop"]): row for row in rows if row["workshop"]}
    assert {k: v["outcome"] for k, v in graded.items()} == {k: x["outcome"] for k, x in by_key.items()}
    assert (
        graded[("bob", "online_normalizer")]["failing"].split()
        == by_key[("bob", "online_normalizer")]["failing"]
    )
    md = (report / "cohort.md").read_text()
    assert f"- seed: {SEED}" in md and f"- commit: {data['commit']}" in md
    assert "| learner | strided_softmax | softmax_backward | online_normalizer |" in md
    assert "| dave | - | - | incomplete |" in md
    assert "| bob | - | - | failed: worked-merge" in md
    assert "## Files not graded" in md and "A1.py" in md


# --- faults: each its own verdict, none touching another's ---

FAULTS = {
    "hang": (HANG, "failed", "timeout"),
    "syntax": (SYNTAX_ERROR, "failed", ""),
    "exits": (EXITS, "failed", "crashed"),
    "segfault": (SEGFAULT, "failed", "crashed"),
    "killpg": (KILLS_ITS_GROUP, "failed", "killed"),
    "killparent": (KILLS_ITS_CHECK_PROCESS, "failed", "killed"),
    "memory": (EXHAUSTS_MEMORY, "failed", "memory"),
    "flood": (FLOODS_OUTPUT, "passed", ""),
    "killworker": (KILLS_ITS_WORKER, verdicts.NOT_GRADED, "lost"),
    "zed": (SOLUTION, "passed", ""),  # a right answer among them
}
FAULT_TIMEOUT = 4


def grade_faults(root: Path) -> tuple:
    subs = root / "submissions"
    for learner, (text, _, _) in FAULTS.items():
        write(subs, learner, "online_normalizer.py", text)
    report = root / "report"
    args = ["--workers", 2, "--timeout", FAULT_TIMEOUT, "--memory-limit", 2]
    r = regrade(subs, "--seed", SEED, "--report", report, *args)
    return subs, report, r


def test_faults_through_two_cpu_workers(tmp_path):
    """One regrade of faulty files and a right one, checked three ways."""
    graded = grade_faults(tmp_path)
    each_fault_gets_a_verdict_saying_so(*graded)
    a_lost_worker_is_run_once_more_then_reported(*graded)
    faults_give_the_single_runs_verdicts_and_change_no_other(*graded, tmp_path)


def each_fault_gets_a_verdict_saying_so(subs: Path, report: Path, r) -> None:
    got = {learner: learner_results(report, learner)["online_normalizer"] for learner in FAULTS}
    assert {k: (v["outcome"], v["fault"]) for k, v in got.items()} == {
        k: (outcome, fault) for k, (_, outcome, fault) in FAULTS.items()
    }, r.stdout
    assert "stuck at online_normalizer.py" in got["hang"]["fault_detail"]
    assert "SIGSEGV" in got["segfault"]["fault_detail"]
    assert "exit code 3" in got["exits"]["fault_detail"]
    assert "MemoryError" in got["memory"]["fault_detail"]
    assert got["flood"]["failing"] == []
    assert got["syntax"]["failing"] == ["load"]
    assert got["killparent"]["records"] == [] and "SIGKILL" in got["killparent"]["fault_detail"]


def a_lost_worker_is_run_once_more_then_reported(subs: Path, report: Path, r) -> None:
    assert r.returncode == 1, r.stdout + r.stderr  # one submission could not be graded
    lost = learner_results(report, "killworker")["online_normalizer"]
    assert lost["attempts"] == 2 and "KilledWorker" in lost["fault_detail"]
    assert r.stdout.count("killworker/online_normalizer: KilledWorker") == 1
    assert "running it once more" in r.stdout
    assert "[10/10]" in r.stdout


def faults_give_the_single_runs_verdicts_and_change_no_other(
    subs: Path, report: Path, r, tmp_path: Path
) -> None:
    for learner in ("hang", "syntax", "exits", "segfault", "killpg", "killparent", "flood", "zed"):
        got = learner_results(report, learner)["online_normalizer"]
        path = subs / learner / "online_normalizer.py"
        code, records = single_run("online_normalizer", path, tmp_path / "one.json", SEED, FAULT_TIMEOUT)
        if records is None:  # the check process itself was killed: no records either way
            assert code < 0 and got["records"] == [], learner
            continue
        assert got["outcome"] == str(outcome_of(records)), learner
        assert statuses(got["records"]) == statuses(records), learner
        assert got["exit_code"] == code, learner
    # the right answer among the faults: the same verdict as alone, every check passed
    zed = learner_results(report, "zed")["online_normalizer"]
    assert set(statuses(zed["records"]).values()) == {"pass"}


# --- interrupted, then resumed ---


def _check_processes(seed: int) -> list:
    """Live processes of a regrade's checks with this seed (check processes and the
    workers they start)."""
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            if "checks" in cmd and p.environ().get("KERNEL_COURSE_SEED") == str(seed):
                if "regrade-" in p.environ().get("KERNEL_COURSE_WORKSPACE", ""):
                    found.append(p.info["pid"])
        except psutil.Error:
            continue
    return found


def test_an_interrupted_regrade_resumes_and_skips_what_is_done(tmp_path):
    seed = 7919  # this test's own: its processes are found by it
    subs = tmp_path / "submissions"
    for learner, source in (("ann", "solution.py"), ("ben", "wrong/empty_nan.py"), ("cy", "starter.py")):
        copy(subs, learner, "online_normalizer", WORKSHOPS / "online_normalizer" / source)
    write(subs, "hal", "online_normalizer.py", HANG)
    report = tmp_path / "report"
    cmd = [sys.executable, "-m", "checks", "regrade", str(subs), "--seed", str(seed), "--report", str(report)]
    proc = subprocess.Popen(
        cmd + ["--workers", "2", "--timeout", "120"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # ctrl+c must reach Python's handler even when this worker ignores SIGINT (a child
        # inherits an ignored signal, and Python then installs no KeyboardInterrupt for it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while len(list((report / "learners").glob("*.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _check_processes(seed), "the hang should be running now"
    proc.send_signal(signal.SIGINT)  # ctrl+c
    out, _ = proc.communicate(timeout=90)  # a loaded CI machine is slow to stop its workers
    assert proc.returncode == 130, out
    assert "interrupted: 3 of 4 graded" in out and "the same command resumes" in out
    time.sleep(0.5)
    assert _check_processes(seed) == [], "an interrupted regrade leaves no check running"
    before = {p.name: p.read_text() for p in (report / "learners").glob("*.json")}
    assert learner_results(report, "hal") == {}  # its file is there, its verdict is not
    del before["hal.json"]
    assert set(before) == {"ann.json", "ben.json", "cy.json"}
    interrupted = json.loads((report / "cohort.json").read_text())
    assert interrupted["pending"] == 1 and not interrupted["complete"]

    write(subs, "hal", "online_normalizer.py", SOLUTION)  # hal fixed the loop meanwhile
    r = regrade(*cmd[4:], "--workers", 2, "--timeout", 120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resuming: 3 already graded" in r.stdout and "[1/1] hal" in r.stdout
    for name, text in before.items():
        assert (report / "learners" / name).read_text() == text, f"{name} was graded again"
    assert learner_results(report, "hal")["online_normalizer"]["outcome"] == "passed"
    assert json.loads((report / "cohort.json").read_text())["complete"]

    again = regrade(*cmd[4:])
    assert again.returncode == 0 and "resuming: 4 already graded" in again.stdout
    assert "cluster:" not in again.stdout  # nothing left to do: no cluster started

    other_seed = regrade(str(subs), "--seed", seed + 1, "--report", report)
    assert other_seed.returncode == 64 and f"holds a regrade with seed {seed}" in other_seed.stderr


# --- other clusters ---


def test_a_running_scheduler_is_used_and_bench_says_it_needs_a_gpu(tmp_path):
    from distributed import LocalCluster

    subs = tmp_path / "submissions"
    copy(subs, "amy", "online_normalizer", WORKSHOPS / "online_normalizer" / "solution.py")
    report = tmp_path / "report"
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as running:
        address = running.scheduler_address
        r = regrade(subs, "--seed", SEED, "--report", report, "--scheduler", address, "--bench")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Dask scheduler {address}: 1 worker now, 0 holding a GPU resource" in r.stdout
    assert "--bench: no worker has a CUDA GPU" in r.stdout
    amy = learner_results(report, "amy")["online_normalizer"]
    assert amy["outcome"] == "passed" and amy["gpu"] is None and "bench" not in amy


def test_a_gpu_worker_gives_its_check_processes_its_gpu(tmp_path):
    """--gpus 0 on a machine without one: the worker holds GPU 0 as a resource and its
    check processes get CUDA_VISIBLE_DEVICES=0 (torch finds no GPU: the checks still run)."""
    subs = tmp_path / "submissions"
    copy(subs, "amy", "online_normalizer", WORKSHOPS / "online_normalizer" / "solution.py")
    report = tmp_path / "report"
    r = regrade(subs, "--seed", SEED, "--report", report, "--gpus", "0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 worker, one per GPU (0)" in r.stdout
    amy = learner_results(report, "amy")["online_normalizer"]
    assert amy["outcome"] == "passed" and amy["gpu"] == "0" and amy["worker"] == "0"
    assert amy["memory_limit_bytes"] == 8 << 30  # the CPU workshop's process touches no GPU


def test_per_gpu_puts_several_workers_on_one_gpu(tmp_path):
    """--gpus 0 --per-gpu 2: two workers share GPU 0 (each holds one GPU slot), so two
    submissions are checked on it at once, each process told CUDA_VISIBLE_DEVICES=0."""
    subs = tmp_path / "submissions"
    for who in ("amy", "bo"):
        copy(subs, who, "online_normalizer", WORKSHOPS / "online_normalizer" / "solution.py")
    report = tmp_path / "report"
    r = regrade(subs, "--seed", SEED, "--report", report, "--gpus", "0", "--per-gpu", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 workers, 2 per GPU (0)" in r.stdout
    seen = [learner_results(report, who)["online_normalizer"] for who in ("amy", "bo")]
    assert all(x["outcome"] == "passed" and x["gpu"] == "0" for x in seen)


# --- the parts, without a cluster ---


def test_files_listed_as_not_graded_make_the_exit_status_1(tmp_path, capsys):
    """As its help says: 1 when some file could not be graded, here a workshop's code for
    its id (the learner gets no grade until it is renamed)."""
    write(tmp_path / "subs", "amy", "A1.py", SOLUTION)
    code = regrade_main([str(tmp_path / "subs"), "--seed", "1", "--report", str(tmp_path / "report")])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "not graded: amy/A1.py" in out and "1 file not graded (listed above): exit status 1" in out
    assert "1 some not graded (a file naming no workshop" in " ".join(build_parser().format_help().split())


def test_discovery_finds_workspace_names_only(tmp_path):
    write(tmp_path, "amy", "fused_gemm.py", "x = 1\n")
    write(tmp_path, "amy", "fused_gemm (1).py", "x = 1\n")
    write(tmp_path, "amy", ".hidden.py", "x = 1\n")
    (tmp_path / "amy" / "__pycache__").mkdir()
    (tmp_path / "amy" / "old").mkdir()
    subs, unmatched = discover(tmp_path)
    assert [(s.learner, s.workshop) for s in subs] == [("amy", "fused_gemm")]
    assert {u.path.name for u in unmatched} == {"fused_gemm (1).py", "old"}
    with pytest.raises(NotADirectoryError):
        discover(tmp_path / "amy" / "fused_gemm.py")


@pytest.mark.parametrize(
    "args, named",
    [
        (["{subs}", "--report", "{report}"], "--seed"),
        (["{subs}", "--seed", "-1", "--report", "{report}"], "--seed"),
        (["{subs}", "--seed", "1", "--report", "{report}", "--timeout", "0"], "--timeout"),
        (["{subs}", "--seed", "1", "--report", "{report}", "--workers", "0"], "--workers"),
        (["{subs}", "--seed", "1", "--report", "{report}", "--gpus", "0,0"], "--gpus"),
        (["{subs}", "--seed", "1", "--report", "{report}", "--memory-limit", "-1"], "--memory-limit"),
        (["{subs}/nowhere", "--seed", "1", "--report", "{report}"], "SUBMISSIONS"),
        (["{subs}", "--seed", "1", "--report", "{subs}/amy/online_normalizer.py"], "--report"),
        (
            [
                "{subs}",
                "--seed",
                "1",
                "--report",
                "{report}",
                "--scheduler",
                "tcp://h:8786",
                "--workers",
                "2",
            ],
            "--scheduler",
        ),
        (["{subs}", "--seed", "1", "--report", "{report}", "--per-gpu", "0"], "--per-gpu"),
        (["{subs}", "--seed", "1", "--report", "{report}", "--repair", "-5"], "--repair"),
        (["{subs}", "--seed", "1", "--report", "{report}", "--per-gpu", "2", "--bench"], "--per-gpu"),
    ],  # fmt: skip
)
def test_bad_arguments_are_usage_errors_naming_the_argument(tmp_path, capsys, args, named):
    subs = tmp_path / "subs"
    write(subs, "amy", "online_normalizer.py", SOLUTION)
    argv = [a.format(subs=subs, report=tmp_path / "report") for a in args]
    try:
        code = regrade_main(argv)
    except SystemExit as e:  # argparse's own errors (a missing option) exit through the parser
        code = e.code
    assert code == 64
    assert named in capsys.readouterr().err
    assert not (tmp_path / "report").exists()


def test_a_runaway_process_tree_is_stopped_and_its_output_capped(tmp_path):
    """The time limit stops the process and what it started in a session of its own;
    a flood keeps only its first and last bytes."""
    marker = tmp_path / "grandchild-alive"
    grandchild = tmp_path / "grandchild.py"
    grandchild.write_text(f"import pathlib, time\ntime.sleep(2)\npathlib.Path({str(marker)!r}).touch()\n")
    script = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(grandchild)!r}], start_new_session=True)\n"
        "sys.stdout.write('start ' + 'x' * 300000 + ' end\\n')\n"
        "sys.stdout.flush()\n"
        "time.sleep(60)\n"
    )
    run = execution.run_limited([sys.executable, "-c", script], env=dict(os.environ), limit_s=1)
    assert run["timed_out"] and run["returncode"] is None and run["seconds"] < 10
    assert run["output"].startswith("start xxx") and run["output"].rstrip().endswith("end")
    assert (
        run["output_bytes"] > 300000
        and len(run["output"]) < execution.HEAD_BYTES + execution.TAIL_BYTES + 100
    )
    time.sleep(2.5)
    assert not marker.exists(), "the grandchild in its own session outlived the time limit"


def test_the_memory_limit_turns_a_runaway_allocation_into_memory_error():
    run = execution.run_limited(
        [sys.executable, "-c", "b = bytearray(3 << 30)"],
        env=dict(os.environ),
        limit_s=30,
        memory_bytes=1 << 30,
    )
    assert run["returncode"] == 1 and "MemoryError" in run["output"]


def test_the_readme_scale_table_is_the_committed_measurements():
    """The README's figures for the regrade are generated from the JSON it names."""
    from checks.regrade.measure import table_rows

    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### How it scales") :]
    named = re.search(r"results/[\w.-]+-regrade-scale\.json", section)
    assert named, "the scale section names its JSON"
    payload = json.loads((REPO / named[0]).read_text(encoding="utf-8"))
    rows = table_rows(payload)
    assert len(rows) >= 2 and all(row in section for row in rows), "\n".join(rows)


def test_verdicts_without_records_say_what_ended_the_run():
    killed = verdicts.without_records(-signal.SIGKILL, False, 10, "")
    assert (killed["outcome"], killed["fault"]) == ("failed", "killed")
    stuck = verdicts.without_records(None, True, 10, "")
    assert (stuck["outcome"], stuck["fault"]) == ("failed", "timeout")
    broken = verdicts.without_records(2, False, 10, "ModuleNotFoundError: No module named 'torch'\n")
    assert (broken["outcome"], broken["fault"]) == (verdicts.NOT_GRADED, "no records")
    assert "No module named 'torch'" in broken["fault_detail"]


def test_against_single_compares_the_regrade_with_one_by_one_runs(tmp_path):
    """The H200 evidence's tool, on the CPU workshop: every file's verdict (outcome and each
    check's status) from the regrade equals the command line's, and the JSON says so."""
    from checks.regrade import against_single

    out = tmp_path / "against.json"
    argv = [
        "--learners",
        "3",
        "--workshops",
        "online_normalizer",
        "--output",
        str(out),
        "--",
        "--workers",
        "1",
    ]
    assert against_single.main(argv) == 0
    data = json.loads(out.read_text())
    assert data["same_verdicts"] and not data["differ"]
    assert sorted(data["outcomes"].values()) == ["failed", "failed", "passed"]
    assert data["one_by_one"]["wall_s"] > 0 and data["regrade"]["wall_s"] > 0
    assert against_single.main(["--workshops", "nope"]) == 64
    assert against_single.cold_cache("/x")["TRITON_CACHE_DIR"] == "/x/triton-cache"  # each way its own


def test_a_regrade_with_repair_says_each_failing_files_smallest_fix(tmp_path):
    """--repair SECONDS: the single run's --repair for each file, its repair in the learner's
    JSON, the CSV and the cohort table; without it, no search."""
    wrong = SOLUTION.replace("scale_right = math.exp(m_right - m)", "scale_right = math.exp(m - m_right)")
    assert wrong != SOLUTION
    job = {
        "learner": "gus", "workshop": "online_normalizer", "source": wrong.encode(), "sha256": "",
        "seed": SEED, "timeout": 60.0, "memory_bytes": 0, "bench": False, "repair_s": 60.0,
    }  # fmt: skip
    result = execution.run_submission(job)
    assert result["outcome"] == "failed"
    assert "--repair" in result["command"]
    repair = result["repair"]
    assert repair["status"] == "found", repair
    assert repair["says"].startswith("line 33: `m - m_right` takes its operands the other way round")
    assert repair["after"].strip() == "scale_right = math.exp(m_right - m)"
    plain = execution.run_submission({**job, "repair_s": 0.0})
    assert "--repair" not in plain["command"] and "repair" not in plain
