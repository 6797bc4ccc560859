"""Timings: the learner's benchmark rows beside the committed reference rows, with a bar
chart of the medians in the table itself (Rich's Bar renderable in a DataTable cell)."""
from __future__ import annotations

from rich.bar import Bar
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from tui import bench

BAR_WIDTH = 16


class TimingsPanel(Vertical):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.results: list = []        # the learner's rows from the last benchmark
        self.reference: list = []      # committed reference rows
        self.reference_source = None

    def compose(self) -> ComposeResult:
        yield Static("", id="timings-status")
        yield DataTable(id="timings", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        t = self.query_one("#timings", DataTable)
        for label, key in (("Run", "run"), ("Variant", "variant"), ("Shape", "shape"),
                           ("Median µs", "median"), ("", "bar"), ("p20/p80 µs", "spread"),
                           ("Speedup", "speedup"), ("Throughput", "rate"), ("Of ceiling", "fraction")):
            t.add_column(label, key=key, width=BAR_WIDTH if key == "bar" else None)
        self._render_rows()

    def set_status(self, text: str, cls: str = "") -> None:
        st = self.query_one("#timings-status", Static)
        st.set_classes(cls)
        st.update(text)

    def set_reference(self, rows: list, source=None) -> None:
        self.reference, self.reference_source = list(rows), source
        if self.is_mounted:
            self._render_rows()

    def set_results(self, rows: list) -> None:
        self.results = list(rows)
        self._render_rows()

    def _labelled(self) -> list:
        return ([("yours", r) for r in self.results] + [("reference", r) for r in self.reference])

    def _render_rows(self) -> None:
        t = self.query_one("#timings", DataTable)
        t.clear()
        rows = self._labelled()
        self.set_class(not rows, "empty")
        top = max((m for m in (bench.median(r) for _, r in rows) if m is not None), default=None)
        for i, (who, r) in enumerate(rows):
            shape = " ".join(str(x) for x in (r.get("shape", ""), r.get("dtype", "")) if x)
            variant = str(r.get("variant", "?"))
            if r.get("role"):
                variant += f" ({r['role']})"
            t.add_row(Text(who, style="bold" if who == "yours" else "dim"), variant, shape,
                      bench.fmt_median(r), self.bar(bench.median(r), top, who),
                      bench.fmt_spread(r), bench.fmt_speedup(r.get("speedup")), bench.fmt_rate(r),
                      bench.fmt_fraction(r.get("fraction_of_ceiling")), key=f"{who}-{i}")

    @staticmethod
    def bar(value, top, who: str = "yours"):
        """The median as a Rich bar, scaled to the slowest row (shorter is faster)."""
        if value is None or not top:
            return Text("unavailable", style="dim")
        return Bar(size=top, begin=0, end=value, width=BAR_WIDTH,
                   color="green" if who == "yours" else "grey50")
