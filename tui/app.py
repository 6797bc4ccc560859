"""The kernel course's terminal app.

Imports only the engine's standard-library modules (workshops.catalog, checks.workspace,
checks.command_line, checks.json_files, checks.running.child, checks.judging.records) plus
Textual, Rich and watchfiles:
never torch or triton, so it starts at once and a crashing kernel cannot take it down.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from textual.app import App
from textual.binding import Binding

from checks import workspace as ws
from checks.doctor import gpu_present
from tui.commands import CourseCommands
from tui.screens.browse import BrowseScreen
from tui.screens.help import HelpScreen
from workshops import catalog

if TYPE_CHECKING:
    from checks.running import CompilePool
    from tui.host import CourseHost

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TIMEOUT = 120.0  # per run: interpreter runs are slow, infinite loops end


class CourseApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "Kernel course"
    COMMANDS = App.COMMANDS | {CourseCommands}
    BINDINGS = [
        Binding("question_mark", "help", "Help", id="help", key_display="?"),
    ]

    def __init__(
        self,
        workspace: Optional[Path] = None,
        open_workshop: Optional[str] = None,
        poll: bool = False,
        bench: bool = True,
        gpu: Optional[bool] = None,
        results_dir: Optional[Path] = None,
        check_timeout: float = DEFAULT_TIMEOUT,
        repair: bool = True,
    ):
        super().__init__()
        self.workspace = Path(workspace).expanduser().resolve() if workspace else ws.default_workspace()
        self.open_at_start = open_workshop
        self.poll = poll
        self.bench_enabled = bench
        # Detected here, before the event loop starts, without importing torch.
        self._gpu = gpu_present() if gpu is None else gpu
        # exports go beside the workspace's state folder, not into the course checkout
        from tui.export import default_export_dir

        self.results_dir = (
            Path(results_dir).expanduser().resolve() if results_dir else default_export_dir(self.workspace)
        )
        self.check_timeout = check_timeout
        # after a failing run, look for the smallest change that makes every check pass
        # (python -m checks.repair, tui.screens.workshop_repair)
        self.repair_enabled = repair
        self._compile_pool: Optional[CompilePool] = None  # started with the first GPU workshop, shared by all

    @property
    def gpu(self) -> bool:
        return self._gpu

    def compile_pool(self) -> Optional[CompilePool]:
        """The app's compile workers (checks/running/compile_pool.py), one pool for every
        workshop screen: started the first time a GPU workshop opens on a GPU, so
        opening another workshop does not start them again.  None: no GPU, or
        ``KERNEL_COURSE_COMPILERS=0``."""
        if self._compile_pool is None and self._gpu:
            from checks.running import CompilePool, compile_workers

            n = compile_workers()
            if n > 0:
                self._compile_pool = CompilePool(n)
        return self._compile_pool

    def get_default_screen(self) -> BrowseScreen:
        return BrowseScreen(id="browse")

    def on_mount(self) -> None:
        if self.open_at_start:
            self.open_workshop(self.open_at_start)

    def open_workshop(self, workshop_id: str) -> None:
        from tui.screens.workshop import WorkshopScreen

        try:
            w = catalog.get(workshop_id)
        except KeyError as e:
            self.notify(str(e).strip("'\""), severity="error")
            return
        top = self.screen
        if len(self.screen_stack) > 1 and not top.is_mounted:  # to be left, still opening
            top.call_later(self.open_workshop, workshop_id)  # once it has
            return
        # Leave whatever is open (another workshop, a dialog) and go back to the list first.
        while len(self.screen_stack) > 1 and not isinstance(self.screen, BrowseScreen):
            if isinstance(self.screen, WorkshopScreen) and self.screen.workshop.id == w.id:
                return
            self.pop_screen()
        self.push_screen(WorkshopScreen(w))  # no id: the last one may still be closing

    def action_show_help_panel(self) -> None:
        """The Keys panel (palette: Keys), on the current screen only; escape closes it."""
        for screen in self.screen_stack:
            if screen is not self.screen:
                screen.query("HelpPanel").remove()
        super().action_show_help_panel()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def on_unmount(self) -> None:
        # Screens close their controllers when they unmount; this catches any left over.
        from tui.screens.workshop import WorkshopScreen

        for screen in self.screen_stack:
            if isinstance(screen, WorkshopScreen):
                screen.shutdown()
        if self._compile_pool is not None:
            self._compile_pool.close()


if TYPE_CHECKING:

    def _provides_course_host(app: CourseApp) -> CourseHost:
        return app  # mypy: the app has everything the screens use through tui.host
