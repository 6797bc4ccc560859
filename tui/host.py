"""What the screens and commands use of the app beyond Textual's ``App``.

Textual types ``self.app`` as ``App[object]``.  The screens sit below ``tui.app`` in
the layers (pyproject.toml), so they name this protocol instead of ``CourseApp``;
``tui.app`` has mypy check that ``CourseApp`` provides it.

    course_app(self).workspace      # in a screen, a widget or a command provider
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Protocol, cast

if TYPE_CHECKING:
    from textual.app import App

    from checks.running import CompilePool


class CourseHost(Protocol):
    workspace: Path
    poll: bool
    bench_enabled: bool
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
