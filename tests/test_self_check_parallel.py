"""The self-check runs its files side by side, at most the pool size at once, and reports
them in file order whatever order they finish in."""

import threading
import time
from types import SimpleNamespace

import checks.running as running
from checks.authoring import named_mistakes, self_check
from checks.judging.records import Record
from workshops import catalog


class _Out:
    def __init__(self):
        self.lines = []

    def line(self, text, style=""):
        self.lines.append(text)


class _FakeWorker:
    def kill(self):
        pass

    def alive(self):
        return True


class _FakePool:
    def __init__(self, size=1):
        pass

    def take(self, preload, workshop="", n=None):
        return [_FakeWorker()]

    def prime(self, preload, workshop=""):
        return []

    def close(self):
        pass


def test_files_run_side_by_side_and_are_reported_in_file_order(monkeypatch):
    w = catalog.get("online_normalizer")
    order = [w.solution, w.starter, *w.wrong_versions()]
    lock = threading.Lock()
    now = {"running": 0, "most": 0}
    started = []

    class FakeRun:
        def __init__(self, workshop, path, **kwargs):
            self.path, self.only = path, kwargs.get("only")

        def cancel(self):
            pass

        def run(self):
            with lock:
                now["running"] += 1
                now["most"] = max(now["most"], now["running"])
                started.append(self.path)
            # the earlier a file is listed, the later it finishes
            time.sleep(0.05 * (len(order) - order.index(self.path)))
            with lock:
                now["running"] -= 1
            if self.path == w.solution:
                status = "pass"
            elif self.path == w.starter:
                status = "todo"
            else:
                status = "fail"
            ids = self.only or ["one"]
            named = named_mistakes(w).get(self.path.name)  # a kept wrong answer names its mistake
            details = {"mistake": {"id": named}} if named and status == "fail" else {}
            return [Record(w.id, i, i, status, details=details) for i in ids]

    monkeypatch.setattr(running, "ChildRun", FakeRun)
    monkeypatch.setattr(running, "WorkerPool", _FakePool)
    monkeypatch.setenv("KERNEL_COURSE_POOL", "2")
    out = _Out()
    code = self_check([w], SimpleNamespace(interpret=False, timeout=None, json=None), out)
    assert code == 0, out.lines
    assert now["most"] == 2  # two at once, never more
    reported = [line for line in out.lines if " exit " in line]
    assert [line.split()[2].split(":")[0] for line in reported] == [
        str(p.relative_to(w.folder.parent)) for p in order
    ]
    assert out.lines[-1] == f"{len(order)} of {len(order)} course files behave as expected."


def test_the_self_check_runs_each_right_answer_of_another_design_and_expects_it_to_pass(monkeypatch):
    w = catalog.get("strided_softmax")
    right = w.right_versions()
    assert right
    refused = right[0]

    class FakeRun:
        def __init__(self, workshop, path, **kwargs):
            self.path, self.only = path, kwargs.get("only")

        def cancel(self):
            pass

        def run(self):
            if self.path == w.starter:
                return [Record(w.id, "one", "one", "todo")]
            if self.path.parent.name == "wrong":
                named = named_mistakes(w).get(self.path.name)
                details = {"mistake": {"id": named}} if named else {}
                return [Record(w.id, i, i, "fail", details=details) for i in self.only]
            status = "fail" if self.path == refused else "pass"  # one design refused
            return [Record(w.id, "one", "one", status)]

    monkeypatch.setattr(running, "ChildRun", FakeRun)
    monkeypatch.setattr(running, "WorkerPool", _FakePool)
    out = _Out()
    code = self_check([w], SimpleNamespace(interpret=True, timeout=None, json=None), out)
    assert code == 1
    lines = {line.split()[2].rstrip(":"): line for line in out.lines if " exit " in line}
    for path in right:
        line = lines[str(path.relative_to(w.folder.parent))]
        assert "(another design passes)" in line
        assert line.startswith("  BAD" if path == refused else "  ok ")
