"""The workshop screen's keys for the learner's file, as a mixin of WorkshopScreen:
e (edit: the file in $VISUAL or $EDITOR, the app suspended meanwhile), r (reset: the
starter back, after a confirm, the file backed up first) and o (export: the last run's
results written by tui.export, in a thread).

Each re-run after an edit or a reset goes through the check loop (tui.run_loop)."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.app import SuspendNotSupported

from checks import workspace as ws
from checks.running import RunRecords
from tui import export
from tui.host import course_app
from tui.screens.confirm import ConfirmScreen
from tui.widgets.results import ResultsPanel

if TYPE_CHECKING:
    from textual.screen import Screen

    from workshops.catalog import Workshop

    _Host = Screen[None]  # mypy checks the mixin as the screen it is mixed into
else:
    _Host = object


class WorkshopFileKeys(_Host):
    """Needs from the screen: workshop, path, interpret, last (the records of the last
    finished run, None before one), bench_rows, last_export, toast_path(), request_run()
    and repair_for()."""

    # the screen's attributes (annotations only: WorkshopScreen sets them)
    workshop: Workshop
    path: Path
    interpret: bool
    last: RunRecords | None
    bench_rows: dict
    last_export: Path | None

    if TYPE_CHECKING:

        def toast_path(self, path, inside: bool = True) -> str: ...  # the screen's

        def request_run(self, force: bool = False) -> bool: ...  # tui.run_loop's

        def repair_for(self, content_hash: str | None) -> dict | None: ...  # workshop_repair's

    # --- edit and reset ---
    def action_edit(self) -> None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            self.notify(
                "$EDITOR is not set. Open your file in any editor:\n"
                + self.toast_path(self.path, inside=False),
                title="No editor",
                severity="warning",
                timeout=15,
            )
            return
        cmd = shlex.split(editor, posix=os.name != "nt") + [str(self.path)]
        try:
            with self.app.suspend():
                subprocess.run(cmd, check=False)
        except SuspendNotSupported:
            self.notify(
                "This terminal cannot hand over to an editor; edit\n"
                + self.toast_path(self.path, inside=False),
                severity="warning",
                timeout=15,
            )
            return
        except OSError as e:
            self.notify(f"could not start {editor!r}: {e}", severity="error", timeout=15)
            return
        self.request_run()

    def action_reset(self) -> None:
        def answered(yes: bool | None) -> None:
            if not yes:
                return
            try:
                path, saved = ws.reset(self.workshop, course_app(self).workspace)
            except OSError as e:
                self.notify(f"reset failed: {e}", severity="error")
                return
            where = (
                f"your previous file is saved beside your workspace as\n{self.toast_path(saved)}"
                if saved
                else "there was no file to back up."
            )
            self.notify(f"Restored the starter; your best result is kept; {where}", title="Reset", timeout=15)
            self.request_run()

        self.app.push_screen(
            ConfirmScreen(
                f"Reset {self.path.name} to the starter?\nYour current file is backed up first.", yes="Reset"
            ),
            answered,
        )

    # --- export ---
    def export_payload(self) -> dict | None:
        digest = self.last.content_hash if self.last is not None else None
        return export.payload(
            self.workshop,
            self.path,
            self.last,
            self.bench_rows,
            self.interpret,
            repair=self.repair_for(digest),
        )

    def action_export(self) -> None:
        panel = self.query_one(ResultsPanel)
        if self.last is not None and (not panel.outcome or panel.digest != self.last.content_hash):
            self.notify(  # the last results are of an older save: not exported as the file's
                "Your latest save is being checked; export once its checks finish.", severity="warning"
            )
            return
        data = self.export_payload()
        if data is None:
            self.notify("Nothing to export yet: wait for the checks to finish.", severity="warning")
            return
        self._export_worker(data)

    @work(thread=True, group="export", exit_on_error=False)
    def _export_worker(self, data: dict) -> None:
        try:
            path = export.write(Path(course_app(self).results_dir), data)
        except OSError as e:
            self.app.call_from_thread(self.notify, f"export failed: {e}", severity="error")
            return
        self.last_export = path
        app = course_app(self)
        if Path(app.results_dir) == export.default_export_dir(app.workspace):
            where = f"beside your workspace to\n{self.toast_path(path)}"
        else:  # --export-dir: the folder the learner named
            where = f"to\n{self.toast_path(path, inside=False)}"
        self.app.call_from_thread(
            self.notify,
            f"Results ({data['outcome']}) written {where}",
            title="Exported",
            timeout=10,
        )
