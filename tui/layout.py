"""The workshop screen's layout by terminal size, and lesson-heading helpers.

compact (under 100 columns or 30 rows): lesson above results, the timings table folded
to its status line, the file path on one line; normal: lesson and results side by side
(the results wider while they have the focus: results_columns);
wide (160 columns and more): the lesson's contents beside it, where the text keeps TEXT_MIN
columns (elsewhere t shows them, in the lesson's place when they do not fit beside it)."""

from __future__ import annotations

import re

SIZE_CLASSES = ("-compact", "-normal", "-wide")
COMPACT_W, COMPACT_H, WIDE_W = 100, 30, 160
RESULTS_MIN = 56  # the results side's least width in the normal layout: ids and messages
# a toast's width, its most in % of the screen's, and side by side (the normal layout),
# where it stays over the lesson (at least 44% of the screen): app.tcss
TOAST_W, TOAST_SHARE, TOAST_SHARE_NORMAL = 60, 60, 44
# the toasts' rack keeps a vertical scrollbar's room (Textual's ToastRack: overflow-y
# scroll): a toast's share is of the screen's width less this
TOAST_RACK_SCROLLBAR = 2
TOAST_EDGES = 3  # a toast's padding (one a side) and its coloured edge
# side by side while the results have the focus, the lesson keeps a third (results_columns)
TOAST_SHARE_RESULTS = 33

# WorkshopScreen's rules by size class (part of its DEFAULT_CSS)
SIZE_CSS = """
WorkshopScreen.-compact #banner, WorkshopScreen.-compact #file-info {
    height: 1;
    text-wrap: nowrap;
    text-overflow: ellipsis;  /* one line: too long for the terminal, it ends in … */
}
WorkshopScreen.-compact #body { layout: vertical; }
/* compact: the part with the focus gets the room, the other keeps a strip */
WorkshopScreen.-compact #left { width: 1fr; height: 1fr; }
WorkshopScreen.-compact #right { width: 1fr; height: 9; border-left: none; border-top: tall $primary 30%; }
WorkshopScreen.-compact.-results-focus #left { height: 5; }
WorkshopScreen.-compact.-results-focus #right { height: 1fr; }
/* the strip beside a focused lesson: the file, the outcome and the next step (a line each),
   the run's status and the first rows */
WorkshopScreen.-compact ResultsPanel { min-height: 4; }
WorkshopScreen.-compact #completion { max-height: 2; text-wrap: nowrap; text-overflow: ellipsis; }
WorkshopScreen.-compact.-results-focus #completion { max-height: 4; text-wrap: wrap; }
/* the rows need the room (the path shows again with the lesson) */
WorkshopScreen.-compact.-results-focus #file-info { display: none; }
WorkshopScreen.-compact.-results-focus #record-detail { display: block; max-height: 2; border-top: none; }
/* its two lines (CompletionPanel), wrapped, while the results have the room */
WorkshopScreen.-compact #completion { border-top: none; border-bottom: none; }
WorkshopScreen.-compact #record-detail { display: none; }
/* the repair line (tui.widgets.repair): every row for its words */
WorkshopScreen.-compact RepairLine { border-top: none; }
WorkshopScreen.cpu TimingsPanel { display: none; }  /* a CPU workshop has no kernel to time */
/* small terminals: the status line; results keep the room */
WorkshopScreen.-compact TimingsPanel { max-height: 3; }
WorkshopScreen.-compact #timings, WorkshopScreen.-compact #timings-legend { display: none; }
/* nothing can be timed without a CUDA GPU: the banner's one line says so instead */
WorkshopScreen.interpreted TimingsPanel { display: none; }
/* ...but b reads a passing run's performance there (predicted, not timed) */
WorkshopScreen.interpreted.-perf-read TimingsPanel { display: block; }
/* a reading: its rule and status line beside a focused lesson; beside the focused results,
   2 lines of it (the table keeps its rows); focused itself (Tab reaches it), 6 lines: the
   panel's height is set and the reading takes what its rule and status line leave, so
   its last line scrolls into view */
WorkshopScreen.-compact.-perf-read TimingsPanel { max-height: 2; }
WorkshopScreen.-compact.-perf-read.-results-focus TimingsPanel { max-height: 7; }
WorkshopScreen.-compact.-perf-read.-results-focus TimingsPanel.read { height: 4; max-height: 4; }
WorkshopScreen.-compact.-perf-read.-reading-focus TimingsPanel.read { height: 8; max-height: 8; }
WorkshopScreen.-compact.-results-focus #timings-reading-box { height: 1fr; max-height: 8; }
WorkshopScreen.-normal TimingsPanel { max-height: 9; }
WorkshopScreen.-normal #timings-reading-box { max-height: 7; }
/* the results table needs room for the check ids and their messages (tui.widgets.results) */
WorkshopScreen.-normal #left, WorkshopScreen.-normal #right { width: 1fr; }
WorkshopScreen.-normal #right { min-width: RESULTS_MIN; }
WorkshopScreen.-wide #left { width: 5fr; }
WorkshopScreen.-wide #right { width: 3fr; }
""".replace("RESULTS_MIN", str(RESULTS_MIN))


def lesson_columns(width: int, size: str) -> int:
    """About how wide the lesson side is in a terminal ``width`` columns wide (SIZE_CSS)."""
    if size == "-compact":
        return width
    if size == "-wide":
        return width * 5 // 8
    return width - max(RESULTS_MIN, width // 2)


# Side by side, while the results have the focus, their Message column gets at least
# MESSAGE_GOAL columns at 100 (more on wider terminals, up to MESSAGE_GOAL_MOST).
MESSAGE_GOAL, MESSAGE_GOAL_MOST = 28, 60


def message_goal(width: int) -> int:
    """The Message column's goal in a terminal ``width`` columns wide: 28 at 100, 40 at
    120, 3 more every 5 columns, at most MESSAGE_GOAL_MOST."""
    return min(MESSAGE_GOAL_MOST, MESSAGE_GOAL + max(0, width - COMPACT_W) * 3 // 5)


def results_columns(width: int, size: str, need: int) -> int:
    """The results side's columns while it has the focus (side by side): what it
    ``need``s, never less than beside a focused lesson, and leaving the lesson a third
    of the width (half from WIDE_W columns, where its contents may sit beside it)."""
    usual = width - lesson_columns(width, size)
    lesson_least = width // 2 if size == "-wide" else width // 3
    return max(usual, min(need, width - lesson_least))


def size_class(width: int, height: int) -> str:
    if width < COMPACT_W or height < COMPACT_H:
        return "-compact"
    return "-wide" if width >= WIDE_W else "-normal"


def headings(markdown: str) -> list:
    """[(level, title)] of the ATX headings outside code blocks."""
    out, fence = [], False
    for line in (markdown or "").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            continue
        m = re.match(r"(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m and not fence:
            out.append((len(m.group(1)), m.group(2)))
    return out


def contents_width(markdown: str, cap: int = 60) -> int:
    """Columns the table of contents needs for its longest entry: the tree's guides
    (4 a level below the first), the numeral, the title, padding and scrollbar; at
    most ``cap``."""
    need = max((4 * (level - 1) + 3 + len(title) for level, title in headings(markdown)), default=20)
    return max(16, min(need + 4, cap))


TEXT_MIN = 60  # columns of text a document keeps beside its contents column
VIEWER_EDGES = 2 + 4  # a document viewer's scrollbar and its text's padding (Textual's Markdown)


def contents_fits(width: int, contents: int) -> bool:
    """Whether a contents column of ``contents`` columns leaves the text room to read in
    a viewer ``width`` columns wide."""
    return width - contents - VIEWER_EDGES >= TEXT_MIN


def _words(text: str) -> set:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def find_heading(table_of_contents, section: str):
    """The block id of the heading that names ``section`` (exactly, then by words)."""
    if not section or not table_of_contents:
        return None
    want = section.strip().lower()
    for _level, label, block_id in table_of_contents:
        if str(label).strip().lower() == want:
            return block_id
    for _level, label, block_id in table_of_contents:
        if want in str(label).lower() or str(label).lower() in want:
            return block_id
    words = _words(section)
    best = max(table_of_contents, key=lambda t: len(words & _words(str(t[1]))))
    return best[2] if words & _words(str(best[1])) else None


def short_path(path) -> str:
    """A path with the home folder written ``~`` (the workspace line fits 80 columns)."""
    from pathlib import Path

    path, home = Path(path), Path.home()
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


def file_line(path, width: int, missing: bool = False) -> str:
    """The workshop's line about the learner's file in ``width`` columns (0: unknown):
    a folder too long for it loses its start (…), never the file's name."""
    from pathlib import Path

    path = Path(path)
    head, tail = (
        ("Your file ", " is missing: r restores the starter")
        if missing
        else (
            "Your file: ",
            " (checks re-run on every save)",
        )
    )
    folder, name = short_path(path.parent), path.name
    full = f"{head}{folder}/{name}{tail}"
    if width <= 0 or len(full) <= width:
        return full
    room = width - len(head) - len(name) - len(tail) - 2  # "…" and "/"
    if room >= 4:
        return f"{head}…{folder[-room:]}/{name}{tail}"
    short = f"{head}{name}{tail}"
    return short if len(short) <= width or missing else f"{head}{name}"  # missing: r, above all


def toast_columns(screen_width: int, size: str = "", results_focus: bool = False) -> int:
    """Columns of text in a toast on a screen of ``size`` class: its width (its share of
    the rack's, which is the screen's less a scrollbar, rounded down) less its padding
    and its coloured edge.  A column more than the toast has would break a path's name."""
    share = TOAST_SHARE_NORMAL if size == "-normal" else TOAST_SHARE
    if size == "-normal" and results_focus:
        share = TOAST_SHARE_RESULTS
    rack = screen_width - TOAST_RACK_SCROLLBAR
    return max(20, min(TOAST_W, rack * share // 100) - TOAST_EDGES)


def toast_path(path, screen_size, base=None, results_focus: bool = False) -> str:
    """``path`` for a toast on a screen of ``screen_size`` (width, height): path_lines
    to the toast's width (narrower side by side while the results have the focus)."""
    width, height = screen_size
    return path_lines(path, toast_columns(width, size_class(width, height), results_focus), base)


def _name_pieces(name: str, width: int) -> list:
    """``name`` whole where it fits a line, else in pieces that end after a - or _."""
    if len(name) <= width:
        return [name]
    return [bit for bit in re.split(r"(?<=[-_])", name) if bit]


def path_lines(path, width: int, base=None) -> str:
    """``path`` as a toast shows it: relative to ``base`` when inside it (else with ~ for
    the home folder), in lines of at most ``width`` broken after a slash, never inside a
    folder's or a file's name (a name longer than a line gets a line of its own, broken
    after a - or _ where it is longer than a whole line)."""
    from pathlib import Path

    path = Path(path)
    text = ""
    if base is not None:
        try:
            text = str(path.relative_to(Path(base)))
        except ValueError:
            text = ""
    text = text or short_path(path)
    pieces = [part + "/" for part in text.split("/")[:-1]] + [text.split("/")[-1]]
    lines = [""]
    for piece in pieces:
        bits = _name_pieces(piece, width)
        for i, bit in enumerate(bits):
            # a name in pieces starts a line of its own
            if lines[-1] and (len(lines[-1]) + len(bit) > width or (i == 0 and len(bits) > 1)):
                lines.append("")
            lines[-1] += bit
    return "\n".join(lines)
