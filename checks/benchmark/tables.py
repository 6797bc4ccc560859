"""Printed tables of a run: one row per variant, with Rich when it is importable and
aligned plain text otherwise; then the target verdicts.  Pure Python."""

from __future__ import annotations

import os
import sys
from typing import IO, Optional

from checks.benchmark import row_text
from checks.benchmark.rows import row_status

COLUMNS = row_text.CLI_COLUMNS
HEADERS = row_text.headers(COLUMNS)


def table_rows(rows: list) -> list:
    """The printed columns of one op's rows (strings)."""
    return [row_text.cells(r, COLUMNS) for r in rows]


def _style(row: dict) -> Optional[str]:
    status = row_status(row)
    return None if status == "ok" else ("red" if status == "failed" else "yellow")


def print_table(title: str, rows: list, stream: Optional[IO[str]] = None) -> None:
    """A Rich table when Rich is importable, else aligned plain text."""
    stream = stream or sys.stdout
    body = table_rows(rows)
    try:
        from rich.console import Console
        from rich.table import Table

        rich = True
    except ImportError:
        rich = False
    if rich:
        tty = stream.isatty() and not os.environ.get("NO_COLOR")
        console = Console(file=stream, width=None if tty else 200, no_color=not tty, highlight=False)
        t = Table(title=title, title_justify="left")
        for key, h in zip(COLUMNS, HEADERS):
            t.add_column(h, justify="right" if key in row_text.NUMERIC else "left")
        for row, line in zip(rows, body):
            t.add_row(*line, style=_style(row))
        console.print(t)
    else:
        widths = [max([len(h)] + [len(l[i]) for l in body]) for i, h in enumerate(HEADERS)]
        print(title, file=stream)
        print("  ".join(h.ljust(w) for h, w in zip(HEADERS, widths)), file=stream)
        for l in body:
            print("  ".join(c.ljust(w) for c, w in zip(l, widths)), file=stream)
    if row_text.has_interval(rows):
        print(row_text.INTERVAL_NOTE, file=stream)


def print_targets(targets: list, stream: Optional[IO[str]] = None) -> None:
    stream = stream or sys.stdout
    if not targets:
        return
    print("Targets:", file=stream)
    for t in targets:
        m = "-" if t["measured"] is None else f"{t['measured']:.3g}"
        word = "n/a   " if t["met"] is None else ("met   " if t["met"] else "MISSED")
        print(
            f"  {word} {t['op']}: {t['what']} (measured {m} {t['comparison']} {t['target']} {t['unit']})"
            + (f"; {t['note']}" if t["met"] is None and t.get("note") else ""),
            file=stream,
        )
