"""What the screens and commands use of the app beyond Textual's ``App``.

Textual types ``self.app`` as ``App[object]``.  The screens sit below ``tui.app`` in
the layers (pyproject.toml), so they name this protocol instead of ``CourseApp``;
``tui.app`` has mypy check that ``CourseApp`` provides it.

    course_app(self).workspace      # in a screen, a widget or a command provider
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Protocol, cast

if TYPE_CHECKING:
    from textual.app import App

    from checks.running import CompilePool


class CourseHost(Protocol):
    workspace: Path
    poll: bool
    bench_enabled: bool
    repair_enabled: bool
    results_dir: Path
    check_timeout: float

    @property
    def gpu(self) -> bool: ...

    def compile_pool(self) -> Optional[CompilePool]: ...

    def open_workshop(self, workshop_id: str) -> None: ...

    def action_help(self) -> None: ...


class _InApp(Protocol):
    @property
    def app(self) -> App[Any]: ...


def course_app(node: _InApp) -> CourseHost:
    """``node.app`` as the course's app: a screen's, widget's or command provider's."""
    return cast(CourseHost, node.app)


def closed(node: Any) -> bool:
    """The node was removed, or its screen closed, before a handler of it ran (keys at a
    quick pace close a screen while it opens): the handler has nothing left to update."""
    return not node.is_attached or node.screen not in node.app.screen_stack


def once_open(screen: Any, action: Callable[[], object]) -> None:
    """Run ``action`` (one that closes ``screen``) now if the screen has finished opening,
    else once it has: a key can close a screen before its parts are mounted, and Textual's
    own parts (the header, the lesson's viewer) fail when removed while they mount."""

    def run() -> None:  # not awaited: a screen cannot wait in its own handler for its close
        action()

    if screen.is_mounted:
        run()
    else:  # the screen handles its messages only after it has mounted
        screen.call_later(run)
