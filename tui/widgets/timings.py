"""Timings: the learner's benchmark rows beside the committed reference rows.

Each row's time is a bar in the table itself, drawn against what it should be compared
with, on one scale: the share of the slowest time at the same shape and dtype (rows of
one shape are compared; a 1000x larger shape does not flatten the small ones): ``R``
the reference answer's time for the same variant, ``B`` the PyTorch baseline's, ``|``
the roofline floor (the ceiling: no kernel can be faster).  The columns that do not
fit the panel's width fold away, least telling first (COLUMNS).  Beside it: the
spread, per-call time and host overhead (marked
launch-bound when the call is mostly host time), speedup, achieved throughput, fraction
of the ceiling and the first Triton kernel's registers, spills, warps, stages and shared
memory.  Compact: at most 8 lines tall; the table scrolls inside.

Once a benchmark is kept in the workshop's history (checks.benchmark.history), the
learner's candidate rows also show their change against the previous save and against
their best (beyond the noise or not), and a line above the table charts the last saves'
fastest candidate at the lesson's main shape.

Before the first benchmark of this app session the panel shows the workshop's last timed
save from that history (:meth:`TimingsPanel.load_past`), its rows labelled "last save"
(the file may have changed since), with its chart line, until a new benchmark's rows
replace them."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from rich.bar import Bar
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from checks.benchmark import history
from tui import benchmark_child
from tui.widgets.status import StatusLine

BAR_WIDTH = 16
MAX_LINES = 8  # the whole panel, so results and timings fit 80x24 together
LEGEND = (
    "bar: time against the slowest at that shape, shorter is faster · R reference · "
    "B baseline · | ceiling (roofline floor)"
)
# (header, key, priority): the columns in order; the lowest priority folds away first
COLUMNS = (
    ("Run", "run", 0),
    ("Variant", "variant", 0),
    ("Shape", "shape", 1),
    ("Median µs", "median", 0),
    ("", "bar", 0),
    ("p20/p80 µs", "spread", 6),
    ("Speedup", "speedup", 2),
    ("Throughput", "rate", 4),
    ("Of ceiling", "fraction", 3),
    ("Per call µs", "per_call", 7),
    ("Host µs", "host", 8),
    ("Kernel", "kernel", 5),
)
# shown after the bar once a row has an earlier save to compare with; the change against
# the last save folds after the shape (the rows of one save are told apart by variant)
CHANGE_COLUMNS = (("vs last", "vs_last", 0.75), ("vs best", "vs_best", 2))
MARKS = (("ceiling", "|", "red"), ("baseline", "B", "yellow"), ("reference", "R", "cyan"))
PAST = "last save"  # the Run cell of the rows of the last timed save, shown before a benchmark


def reading_text(payload: dict) -> Text:
    """The reading as the panel shows it: the performance step (met or not), then each
    variant with its biggest loss (or 'no large loss') and how its traffic compares."""
    text = Text()
    met = payload.get("step_met")  # None: not judged (a kernel the GPU compiler refused)
    word, style = (
        ("met", "bold green")
        if met
        else (("not judged", "bold red") if met is None else ("not met", "bold yellow"))
    )
    text.append(word, style=style)
    text.append(f" · performance step: {payload.get('step', '')}\n")
    for bad in payload.get("not_compiled") or []:
        said = "; ".join(
            f"{e.get('kernel', '')}: {e.get('error', '')}" for e in bad.get("compile_errors") or []
        )
        text.append(f"{bad.get('variant', '')} does not compile for the GPU: {said[:300]}\n", style="red")
    if not met and payload.get("step_evidence"):
        text.append(f"  {payload['step_evidence']}\n", style="dim")
    for r in payload.get("readings") or []:
        text.append(f"{r.get('variant', '')}", style="bold")
        text.append(f" (predicted {r.get('predicted_us', 0):.1f} µs on an H200): {r.get('headline', '')}\n")
        if r.get("traffic"):
            text.append(f"  {r['traffic']}\n", style="dim")
    text.append(
        f"read in the interpreter on {payload.get('shape', '')} {payload.get('dtype', '')}, "
        "compiled for the H200: predicted, not timed",
        style="dim",
    )
    return text


def _cell_len(cell) -> int:
    return BAR_WIDTH if isinstance(cell, MarkedBar) else len(str(cell))


def clip_variants(cells: list, width: int, least: int = 12) -> None:
    """Shorten long variant names (with an ellipsis) so that run, variant, median and
    the bar fit ``width`` together: the bar says more than the end of a long name."""
    if not cells:
        return
    headers = {key: len(header) for header, key, _ in COLUMNS}
    others = sum(
        max([headers[key]] + [_cell_len(c[key]) for c in cells]) + 2 for key in ("run", "median", "bar")
    )
    room = max(least, width - 2 - others - 2)
    for c in cells:
        name = c["variant"]
        if len(name) > room:
            c["variant"] = name[: room - 1].rstrip() + "…"


class MarkedBar(Bar):
    """A Rich bar of one time (``end``) on a scale of ``size``, with one-letter marks at
    the times it is compared with (``marks``: name -> µs)."""

    def __init__(self, size: float, end: float, marks: dict, width: int = BAR_WIDTH, color: str = "green"):
        super().__init__(size=size, begin=0, end=end, width=width, color=color)
        self.marks = dict(marks)

    def _column(self, value: float, width: int) -> int:
        return max(0, min(width - 1, int(round(value / self.size * width)) - 1))

    def cells(self, width: int = BAR_WIDTH) -> list:
        """(character, style) per column: the bar, then the marks over it."""
        filled = 0 if not self.size else int(round(min(self.end, self.size) / self.size * width))
        out = [
            ("█", self.style.color.name if self.style.color else "green") if i < filled else ("·", "grey35")
            for i in range(width)
        ]
        for name, char, colour in MARKS:
            value = self.marks.get(name)
            if value is not None and self.size:
                out[self._column(value, width)] = (char, f"bold {colour}")
        return out

    def __rich_console__(self, console, options):
        width = min(self.width or options.max_width, options.max_width)
        for char, style in self.cells(width):
            yield Segment(char, Style.parse(style))
        yield Segment.line()

    def plain(self, width: int = BAR_WIDTH) -> str:
        return "".join(c for c, _ in self.cells(width))


class TimingsPanel(Vertical):
    # MAX_LINES tall at most (the table scrolls inside), so results and timings fit
    # 80x24 together; the workshop screen folds it further by terminal size (tui.layout).
    DEFAULT_CSS = f"""
    TimingsPanel {{ height: auto; max-height: {MAX_LINES}; }}
    TimingsPanel #timings-status {{ height: auto; overflow: hidden hidden; }}
    TimingsPanel #timings-status.dim {{ color: $text-muted; }}
    TimingsPanel #timings-status.bad {{ color: $error; }}
    TimingsPanel #timings-status.good {{ color: $success; }}
    TimingsPanel #timings {{ height: auto; max-height: {MAX_LINES - 2}; }}
    TimingsPanel #timings-legend {{ color: $text-muted; padding: 0 1; height: 1; }}
    TimingsPanel #timings-chart {{ padding: 0 1; height: 1; display: none; }}
    TimingsPanel.charted #timings-chart {{ display: block; }}
    TimingsPanel.charted #timings {{ max-height: {MAX_LINES - 3}; }}
    TimingsPanel.empty #timings, TimingsPanel.empty #timings-legend {{ display: none; }}
    TimingsPanel #timings-reading-box {{ display: none; height: auto; max-height: {MAX_LINES - 2}; }}
    TimingsPanel #timings-reading {{ padding: 0 1; }}
    TimingsPanel.read #timings-reading-box {{ display: block; }}
    TimingsPanel.read #timings, TimingsPanel.read #timings-legend {{ display: none; }}
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.results: list = []  # the learner's rows from the last benchmark
        self.reference: list = []  # committed reference rows
        self.reference_source = None
        self.saves: list = []  # the workshop's timed saves (checks.benchmark.history.Save)
        self.saves_hash: Optional[str] = None  # the content the results are a save of
        self.results_run: object = None  # which run the streamed rows in results belong to
        self.past: Optional[history.Save] = None  # the last timed save, shown until results come
        self.reading: Optional[dict] = None  # without a GPU: the last performance reading shown
        self.reading_digest: Optional[str] = None  # the content hash of the save it reads

    def compose(self) -> ComposeResult:
        yield StatusLine(id="timings-status")
        yield Static("", id="timings-chart")
        yield Static(LEGEND, id="timings-legend")
        yield DataTable(id="timings", cursor_type="row", zebra_stripes=True)
        # Tab reaches the reading; taller than its room, it scrolls (z shows it whole).
        # Its room is the panel's less its status line and the screen's rule above it.
        with VerticalScroll(id="timings-reading-box"):
            yield Static("", id="timings-reading")

    def on_mount(self) -> None:
        self._render_rows()

    def on_resize(self, event) -> None:
        self._render_rows()

    def fitting_columns(self, cells: list, width: int, columns: tuple = COLUMNS) -> list:
        """The column keys that fit ``width``, in display order: each column's width is
        its widest cell or header; the lowest priority goes first (Host is kept early
        when a row is launch-bound: then it says the most)."""
        launch_bound = any("launch-bound" in str(row["host"]) for row in cells)
        need = {
            key: max([len(header)] + [_cell_len(row[key]) for row in cells]) + 2 for header, key, _ in columns
        }
        rank = {key: (0.5 if key == "host" and launch_bound else p) for _, key, p in columns}
        keep = [key for _, key, _ in columns]
        while len(keep) > 3 and sum(need[k] for k in keep) + 2 > width:
            keep.remove(max(keep, key=lambda k: (rank[k], keep.index(k))))
        return keep

    def set_status(self, text: str, look: str = "") -> None:
        line = self.query_one("#timings-status", StatusLine)
        line.text, line.look = text, look

    def set_reading(self, payload: dict, digest: Optional[str] = None) -> None:
        """Without a GPU: the performance reading of a passing run in place of the table,
        the lesson's step first, then a row per variant with its biggest loss under it."""
        self.reading, self.reading_digest = payload, digest
        self.query_one("#timings-reading", Static).update(reading_text(payload))
        self.add_class("read")

    def clear_reading(self) -> None:
        """The reading shown is of a save the file no longer holds: take it away."""
        self.reading = self.reading_digest = None
        self.query_one("#timings-reading", Static).update("")
        self.remove_class("read")

    def set_reference(self, rows: list, source=None) -> None:
        self.reference, self.reference_source = list(rows), source
        self._render_rows()

    def set_results(self, rows: list) -> None:
        """The learner's rows of a new benchmark (compared with the history once
        :meth:`record_save` or :meth:`set_history` says which save they are)."""
        self.results = list(rows)
        self.saves_hash = None
        self.past = None
        self._render_rows()

    def load_past(self, state_dir: Path, workshop_id: str) -> None:
        """Show the workshop's last timed save (its history read off the event loop)
        until a benchmark in this app session replaces it."""
        self._past_worker(Path(state_dir), workshop_id)

    @work(thread=True, group="history-past", exit_on_error=False)
    def _past_worker(self, state_dir: Path, workshop_id: str) -> None:
        saves = history.load(state_dir, workshop_id)
        if saves:
            self.app.call_from_thread(self.show_past, saves)

    def show_past(self, saves: list) -> None:
        """The last of ``saves`` (history.Save, oldest first) as the rows shown, labelled
        as a past save; nothing when a benchmark of this session is already shown."""
        if self.results or not saves:
            return
        self.past, self.saves = saves[-1], list(saves)
        self._render_rows()

    def mine(self) -> tuple[str, list, Optional[str]]:
        """(Run label, the learner's rows shown, the save they are or None): this
        session's benchmark, else the last timed save."""
        if self.results or self.past is None:
            return "yours", self.results, self.saves_hash
        return PAST, self.past.rows, self.past.content_hash

    def set_history(self, saves: list, content_hash: str) -> None:
        """The workshop's saves, the results being the save of ``content_hash``."""
        self.saves, self.saves_hash = list(saves), content_hash
        self._render_rows()

    def record_save(self, state_dir: Path, workshop_id: str, content_hash: str) -> None:
        """Keep the results as a save of ``content_hash`` in the workshop's history (off
        the event loop), then show them against the earlier saves."""
        self.saves_hash = None
        self._record_worker(Path(state_dir), workshop_id, content_hash, list(self.results))

    @work(thread=True, group="history", exit_on_error=False)
    def _record_worker(self, state_dir: Path, workshop_id: str, content_hash: str, rows: list) -> None:
        try:
            # timed only after every check of this content passed (RunLoop._maybe_bench)
            history.record_save(state_dir, workshop_id, content_hash, rows, passed=True)
            saves = history.load(state_dir, workshop_id)
        except OSError as e:
            self.app.call_from_thread(self.notify, f"timings history not saved: {e}", severity="warning")
            return
        self.app.call_from_thread(self._history_loaded, rows, saves, content_hash)

    def record_checks(self, state_dir: Path, workshop_id: str, content_hash: str, passed: bool) -> None:
        """A check run of ``content_hash`` ended: its timed saves keep whether it passed (a
        save whose checks fail is never the best), off the event loop."""
        self._checks_worker(Path(state_dir), workshop_id, content_hash, passed)

    @work(thread=True, group="history-checks", exit_on_error=False)
    def _checks_worker(self, state_dir: Path, workshop_id: str, content_hash: str, passed: bool) -> None:
        try:
            saves = history.record_checks(state_dir, workshop_id, content_hash, passed)
        except OSError:
            return  # the history is a nicety: the verdict itself is kept elsewhere
        self.app.call_from_thread(self._verdicts_loaded, saves)

    def _verdicts_loaded(self, saves: list) -> None:
        if self.saves:  # shown against a history: compare with the saves as they are now
            self.saves = list(saves)
            self._render_rows()

    def _history_loaded(self, rows: list, saves: list, content_hash: str) -> None:
        if rows == self.results:  # still the benchmark it was recorded for
            self.set_history(saves, content_hash)

    def changes(self) -> list:
        """Per learner's row: its history.Change, or None (not a candidate, or no history)."""
        _, rows, content_hash = self.mine()
        if content_hash is None:
            return [None] * len(rows)
        before = history.earlier(self.saves, content_hash)
        return [
            history.compare(r, before) if history.is_candidate(r) and history.is_timed(r) else None
            for r in rows
        ]

    def chart(self, width: int) -> str:
        """The line charting the last saves at the main case ("" without two saves)."""
        _, rows, content_hash = self.mine()
        if content_hash is None:
            return ""
        return history.chart_line(self.saves, history.main_case(rows), width)

    def add_result(self, row: dict, run: object = None) -> None:
        """One row of a benchmark still running; the first row of another ``run``
        replaces the rows shown before."""
        if run != self.results_run:
            self.results, self.results_run = [], run
            self.saves_hash = None  # compared with the history once the whole save is in
        self.past = None
        self.results = benchmark_child.with_row(self.results, row)
        self._render_rows()

    def _labelled(self) -> list:
        label, rows, _ = self.mine()
        return [(label, r) for r in rows] + [("reference", r) for r in self.reference]

    def legend(self) -> str:
        """The line under the table: what the bars mean, first which save a past one is."""
        if self.results or self.past is None:
            return LEGEND
        when = self.past.when[:16].replace("T", " ")
        return f"{PAST}: your last timed save ({when}), not yet this file's timings · {LEGEND}"

    def _render_rows(self) -> None:
        if not self.is_mounted:
            return
        t = self.query_one("#timings", DataTable)
        rows = self._labelled()
        _, own, _ = self.mine()
        self.query_one("#timings-legend", Static).update(self.legend())
        self.set_class(not rows, "empty")
        width = self.size.width or 80
        line = self.chart(width - 2)
        self.query_one("#timings-chart", Static).update(line)
        self.set_class(bool(line), "charted")
        changes = self.changes()
        marks = {
            i: (
                benchmark_child.markers(r, own, self.reference)
                if who != "reference"
                else benchmark_child.markers(r, self.reference, [])
            )
            for i, (who, r) in enumerate(rows)
        }
        tops: dict = {}  # (shape, dtype) -> the slowest time shown at it
        for i, (_, r) in enumerate(rows):
            case = (r.get("shape"), r.get("dtype"))
            times = [v for v in [benchmark_child.median(r), *marks[i].values()] if v is not None]
            tops[case] = max(times + [tops.get(case, 0.0)])
        cells = []
        for i, (who, r) in enumerate(rows):
            shape = " ".join(str(x) for x in (r.get("shape", ""), r.get("dtype", "")) if x)
            variant = str(r.get("variant", "?"))
            if r.get("role"):
                variant += f" ({r['role']})"
            host = benchmark_child.fmt_host(r)
            top = tops.get((r.get("shape"), r.get("dtype")))
            cells.append(
                {
                    "run": Text(who, style={"yours": "bold", PAST: "italic"}.get(who, "dim")),
                    "variant": variant,
                    "shape": shape,
                    "median": benchmark_child.fmt_median(r),
                    "bar": self.bar(benchmark_child.median(r), top, who, marks[i]),
                    "spread": benchmark_child.fmt_spread(r),
                    "speedup": benchmark_child.fmt_speedup(r.get("speedup")),
                    "rate": benchmark_child.fmt_rate(r),
                    "fraction": benchmark_child.fmt_fraction(r.get("fraction_of_ceiling")),
                    "per_call": benchmark_child.fmt_per_call(r),
                    "host": Text(host, style="yellow" if "launch-bound" in host else ""),
                    "kernel": benchmark_child.fmt_kernel(r),
                    **self.change_cells(changes[i] if who != "reference" else None),
                }
            )
        clip_variants(cells, width)
        shown = any(c is not None and c.last is not None for c in changes)
        columns = COLUMNS[:5] + CHANGE_COLUMNS + COLUMNS[5:] if shown else COLUMNS
        keep = self.fitting_columns(cells, width, columns)
        if shown and not {"vs_last", "vs_best"} <= set(keep):  # narrow: the changes in short words
            for i, (who, _) in enumerate(rows):
                cells[i].update(self.change_cells(changes[i] if who != "reference" else None, short=True))
            keep = self.fitting_columns(cells, width, columns)
        t.clear(columns=True)
        for header, key, _ in columns:
            if key in keep:
                t.add_column(header, key=key, width=BAR_WIDTH if key == "bar" else None)
        for i, row in enumerate(cells):
            t.add_row(*(row[k] for k in keep), key=f"{rows[i][0]}-{i}")

    @staticmethod
    def change_cells(change: Optional[history.Change], short: bool = False) -> dict:
        """The vs-last and vs-best cells: green when faster beyond the noise, red when
        slower beyond it, dim within it; empty for a row that is not the learner's kernel
        (``short``: the narrow form of history.fmt_delta)."""
        out = {}
        for key in ("last", "best"):
            delta = getattr(change, key) if change is not None else None
            if change is None:
                out[f"vs_{key}"] = Text("")
                continue
            look = "dim"
            if delta is not None and delta.beyond_noise:
                look = "green" if delta.ratio < 0 else "red"
            out[f"vs_{key}"] = Text(history.fmt_delta(delta, benchmark_child.MISSING, short), style=look)
        return out

    @staticmethod
    def bar(
        value: Optional[float], top: Optional[float], who: str = "yours", marks: Optional[dict] = None
    ) -> Text | MarkedBar:
        """The median as a bar with its comparison marks, scaled to ``top``: the
        slowest time shown at the row's shape and dtype (shorter is faster)."""
        if value is None or not top:
            return Text("unavailable", style="dim")
        return MarkedBar(
            size=top, end=value, marks=marks or {}, color="grey50" if who == "reference" else "green"
        )
