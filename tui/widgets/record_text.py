"""How one check record reads: the status word, a one-line summary for the table, and
the whole story (message, where it hung, the map of wrong elements, why it matters,
the lesson section) for the failure view.  Rich text only; no widgets."""

from __future__ import annotations

import re

from rich.text import Text

from checks.judging import Status, map_scale_text, outcome_of, plural

_STYLE = {
    Status.PASS: "bold green",
    Status.FAIL: "bold red",
    Status.TODO: "bold yellow",
    Status.ERROR: "bold magenta",
    Status.SKIPPED: "dim",
    Status.NOT_RUN: "dim",
}
# A record's status word and style, and the app's own states of a row not yet finished.
STATUS_STYLE = {
    **{s.value: (s.word, style) for s, style in _STYLE.items()},
    "pending": ("·", "dim"),
    "running": ("RUN", "bold cyan"),
}
MAP_TITLE = "Where the output is wrong (rows down, columns across; # = wrong, . = right):"
# facts of checks/judging/tensors.py mismatch_report worth a line of their own, in this order
FACTS = (
    ("mismatched", "wrong elements"),
    ("total", "elements in all"),
    ("unwritten", "never written (still hold the poison value)"),
    ("nan", "NaN"),
    ("inf", "Inf"),
    ("rows_affected", "rows with a wrong element"),
    ("cols_affected", "columns with a wrong element"),
    ("worst_index", "worst element at"),
    ("worst_got", "its value"),
    ("worst_expected", "expected"),
    ("max_abs_error", "largest absolute error"),
)


# a row whose status changed since the last run: a mark after its status word
CHANGE_MARK = {"newly passing": ("▲", "bold green"), "newly failing": ("▼", "bold red")}


def status_cell(status: str, change: str = "") -> Text:
    """The status word, and ``change``'s mark after it ("FAIL ▼": newly failing)."""
    word, style = STATUS_STYLE.get(status, (status.upper(), ""))
    text = Text(word, style=style)
    if change in CHANGE_MARK:
        mark, mark_style = CHANGE_MARK[change]
        text.append(" " if len(word) < 7 else "")
        text.append(mark, style=mark_style)
    return text


def first_line(text: str, width: int) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    width = max(width, 2)
    return line if len(line) <= width else line[: width - 1] + "…"


def tally_line(records: list) -> str:
    """'failed · 9/11 passed, 1 failed, 1 error' -- the run's outcome word (the one the
    banner, the list, the CLI and the export use), then its counts, worst news included."""
    n = len(records)
    count = lambda *s: sum(r.status in s for r in records)
    parts = [f"{count('pass')}/{n} passed"]
    for k, label in (
        (count("fail"), "failed"),
        (count("error"), plural(count("error"), "error").split(" ", 1)[1]),
        (count("todo"), "TODO"),
        (count("skipped"), "unavailable here"),
        (count("not run"), "not run"),
    ):
        if k:
            parts.append(f"{k} {label}")
    return f"{outcome_of(records)} · " + ", ".join(parts)


def details_of(rec) -> dict:
    return rec.details if isinstance(getattr(rec, "details", None), dict) else {}


def stuck_at(rec) -> str:
    """'exercise.py:12 in merge' when a timeout record says where the code was stuck."""
    where = details_of(rec).get("stuck_at")
    if not isinstance(where, dict) or not where.get("file"):
        return ""
    text = f"{where['file'].rsplit('/', 1)[-1]}:{where.get('line', '?')}"
    if where.get("function"):
        text += f" in {where['function']}"
    return text


def is_timeout(rec) -> bool:
    return rec.status == "error" and (rec.message or "").startswith("timed out")


def summary(rec) -> str:
    """The table's one-line message: a timeout says where and after how long."""
    if is_timeout(rec):
        where = stuck_at(rec)
        secs = f" after {rec.seconds:.1f} s" if getattr(rec, "seconds", 0) else ""
        if where:
            return f"timed out{secs} at {where}"
        seen = (rec.details or {}).get("launches") if isinstance(rec.details, dict) else None
        if isinstance(seen, dict) and seen.get("kernel"):
            return f"timed out{secs}: {seen.get('count', 0):,} launches of {seen['kernel']}"
        return f"timed out{secs}: an infinite loop, or far too slow"
    return first_line(rec.message, 10_000)


def is_crash(rec) -> bool:
    return rec.status == "error" and (rec.message or "").startswith("crashed")


def stuck_line(rec) -> str:
    """Where a timed-out check was stuck: the record's details, else its message's
    "stuck at FILE, line N, in F"."""
    where = stuck_at(rec)
    if where:
        return where
    m = re.search(r"stuck at ([^,;\n]+), line (\d+)(?:, in (\w+))?", rec.message or "")
    if not m:
        return ""
    return f"{m.group(1)}:{m.group(2)}" + (f" in {m.group(3)}" if m.group(3) else "")


WHY_TIMEOUT = (
    "A check that runs past the time limit is stopped before it can compare your answer, so "
    "nothing is known about its correctness. Usually a loop that never ends (a while condition "
    "that never changes, a loop bound or step computed wrong) or far more work than the check "
    "needs: without a CUDA GPU, Triton's interpreter runs a kernel thousands of times slower, so "
    "a grid or a block far larger than the inputs shows here too."
)
WHY_CRASH = (
    "The process running your code died, so the check could not finish. In a kernel this is "
    "usually a load or store outside the tensors (a missing mask, a wrong stride or offset); "
    "the last output on stderr, below, often names it."
)
WHY_NOT_RUN = "This check never ran: the run ended before it (a check that timed out or crashed)."
WHY_LOAD = "Your file could not be imported, so no check could run; the message names the line."
WHY_ERROR = (
    "Your code raised an exception before the check could compare its answer; the message "
    "names the exception and the traceback, below, the line."
)


def reading(rec) -> tuple:
    """(why it matters, the lesson section to read, where to look) of a record.

    A failure diagnosed as a known mistake (details["mistake"]) is explained by that
    mistake; a timeout, a crash, an error or a check that never ran by what it means
    (never by the check's paragraph about correct answers, and with no lesson section:
    the check's section is about what it verifies); any other record by its own why
    and section."""
    mistake = details_of(rec).get("mistake")
    if isinstance(mistake, dict):
        return (
            str(mistake.get("why") or rec.why or ""),
            str(mistake.get("section") or rec.section or ""),
            str(mistake.get("where") or ""),
        )
    if is_timeout(rec):
        where = stuck_line(rec)
        if where:
            return f"{WHY_TIMEOUT} It was stuck at {where} when the limit ran out: start there.", "", ""
        return WHY_TIMEOUT, "", ""
    if is_crash(rec):
        return WHY_CRASH, "", ""
    if rec.status == "not run":
        return WHY_NOT_RUN, "", ""
    if rec.status == "error":
        return (WHY_LOAD if rec.id == "load" else WHY_ERROR), "", ""
    return rec.why or "", rec.section or "", ""


def lesson_section(rec) -> str:
    """The lesson section a record points at ("" for none)."""
    return reading(rec)[1]


def source_line(rec) -> str:
    """'line 3' of a load error (a syntax error names the file and line)."""
    m = re.search(r"line (\d+)", rec.message or "")
    return f"line {m.group(1)}" if m else ""


def story(rec, change: str = "") -> Text:
    """Everything a record says, for the failure view."""
    word, style = STATUS_STYLE.get(rec.status, (rec.status.upper(), ""))
    text = Text.assemble((word, style), "  ", (rec.label or rec.id, "bold"), (f"  ({rec.id})\n", "dim"))
    if change:
        text.append(f"{change} since the last run\n", style="bold")
    secs = getattr(rec, "seconds", 0.0) or 0.0
    if secs >= 0.005:
        text.append(f"took {secs:.2f} s\n", style="dim")
    where = stuck_at(rec)
    if where:
        text.append("\nStuck at ", style="bold")
        text.append(f"{where}", style="bold yellow")
        text.append(" when the time limit ran out.\n")
    if rec.message:
        text.append("\n")
        text.append(rec.message.rstrip() + "\n")
    d = details_of(rec)
    facts = [(label, d[k]) for k, label in FACTS if k in d and d[k] not in (None, 0, [], "")]
    if facts:
        text.append("\n")
        for label, value in facts:
            text.append(f"  {label}: ", style="dim")
            text.append(f"{_fmt(value)}\n")
    if d.get("map"):
        text.append("\n" + MAP_TITLE + "\n", style="bold")
        if isinstance(d.get("map_scale"), dict):
            text.append(f"  ({map_scale_text(d['map_scale'])})\n", style="dim")
        for row in d["map"]:
            text.append("  ")
            for ch in row:
                text.append(ch, style="bold red" if ch == "#" else "green")
            text.append("\n")
    if d.get("first_mismatches"):
        text.append("\nFirst wrong elements:\n", style="bold")
        for m in d["first_mismatches"][:8]:
            text.append(
                f"  at {m.get('index')}: got {_fmt(m.get('got'))}, expected {_fmt(m.get('expected'))}\n"
            )
    why, section, where_to_look = reading(rec)
    if where_to_look:
        text.append("\nWhere to look: ", style="bold")
        text.append(where_to_look.strip() + "\n")
    if why:
        text.append("\nWhy it matters: ", style="bold")
        text.append(why.strip() + "\n", style="italic")
    if section:
        text.append("\nLesson section: ", style="bold")
        text.append(section + "\n")
    for key, title in (
        ("traceback", "Traceback"),
        ("stderr_tail", "Last output on stderr"),
        ("stdout_tail", "Last output on stdout"),
    ):
        if isinstance(d.get(key), str) and d[key].strip():
            text.append(f"\n{title}:\n", style="bold")
            text.append(d[key].rstrip() + "\n", style="dim")
    return text


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
