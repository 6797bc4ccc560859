"""The workshop screen's layout, as a mixin of WorkshopScreen: the size classes
(tui.layout), the results side's width while the results have the focus, the lesson's
table of contents (t), zoom (z), and moving the lesson to a section.

The lesson keeps its place through every change of its width or of what is shown
beside it (CourseViewer.keep_place): the block at the top of the view stays there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Markdown, Static, TabbedContent

from tui import layout
from tui.host import closed
from tui.widgets.hints import HintsPanel
from tui.widgets.markdown import CourseViewer
from tui.widgets.repair import RepairLine
from tui.widgets.results import ResultsPanel, table_columns
from tui.widgets.timings import TimingsPanel

if TYPE_CHECKING:
    from textual.screen import Screen

    from workshops.catalog import Workshop

    _Host = Screen[None]  # mypy checks the mixin as the screen it is mixed into
else:
    _Host = object

RIGHT_EDGE = 1  # the results side's border at its left (WorkshopScreen's CSS)
# Without a CUDA GPU this line stands for the timings panel: nothing here can be timed.
BANNER = "No CUDA GPU here: Triton's interpreter runs your kernels (slow); timings need a CUDA GPU"
BANNER_SHORT = "No CUDA GPU: the interpreter runs your kernels (slow); timings need one"


class WorkshopLayout(_Host):
    """Needs from the screen: workshop, controller, interpret, toc_choice,
    results_width (None until the results side is given a width) and _timings_idle()."""

    workshop: Workshop
    toc_choice: bool | None
    interpret: bool
    results_width: int | None

    if TYPE_CHECKING:

        @property
        def controller(self) -> object: ...

        def _timings_idle(self) -> None: ...

        def file_info_changed(self) -> None: ...

    @property
    def lesson(self) -> CourseViewer:
        return self.query_one("#lesson", CourseViewer)

    def on_resize(self, event) -> None:
        self.apply_size(event.size.width, event.size.height)

    def apply_size(self, width: int, height: int) -> None:
        if closed(self):  # a resize handled after the screen closed
            return
        size = layout.size_class(width, height)
        was = self.has_class(size)
        for name in layout.SIZE_CLASSES:
            self.set_class(name == size, name)
        if not was and self.controller is not None and not self.query_one(TimingsPanel).results:
            self._timings_idle()  # what it promises depends on the size
        if self.interpret:
            self.query_one("#banner", Static).update(BANNER if width >= len(BANNER) + 2 else BANNER_SHORT)
        # the contents beside the lesson where the lesson keeps room to be read; shown
        # with t where it would not, they take the lesson's place until an entry is chosen
        fits = layout.contents_fits(
            layout.lesson_columns(width, size), layout.contents_width(self.workshop.lesson)
        )
        show = self.toc_choice if self.toc_choice is not None else (fits and size == "-wide")
        self.lesson.show_contents(show, alone=not fits)
        self.fit_sides()

    def on_descendant_focus(self, event) -> None:
        # the part with the focus gets the room: in compact, the height (SIZE_CSS
        # -results-focus); side by side, the results get the width their messages want
        right = self.query("#right")  # none while the screen closes
        timings = self.query(TimingsPanel)
        focused = self.focused
        sides = ([right.first()] if right else []) + ([timings.first()] if timings else [])
        inside = focused is not None and any(side in focused.ancestors_with_self for side in sides)
        # compact, with a performance reading: the reading or the results table gets its height
        reading = focused is not None and bool(timings) and timings.first() in focused.ancestors_with_self
        self.set_class(reading, "-reading-focus")
        if inside != self.has_class("-results-focus"):
            self.set_class(inside, "-results-focus")
            self.fit_sides()

    def fit_sides(self) -> None:
        """Side by side, while the results have the focus: the results side as wide as
        its table wants (every check id whole, the Message column layout.message_goal),
        within what the lesson keeps (layout.results_columns); else the size's split."""
        if closed(self) or not self.query("#right"):
            return
        self.call_after_refresh(self.file_info_changed)  # the file's line, for its new width
        for line in self.query(RepairLine):  # its lines: a strip of them while the lesson has the room
            self.call_after_refresh(line.refit)
        right = self.query_one("#right")
        width, height = self.app.size
        size = layout.size_class(width, height)
        columns = None
        if size != "-compact" and self.has_class("-results-focus") and self.maximized is None:
            need = RIGHT_EDGE + table_columns(
                self.query_one(ResultsPanel).longest_id(), layout.message_goal(width)
            )
            columns = layout.results_columns(width, size, need)
        if columns != self.results_width:
            self.results_width = columns
            self.lesson.keep_place(lambda: setattr(right.styles, "width", columns))

    def watch_maximized(self) -> None:
        self.fit_sides()  # zoomed, the part takes the whole screen: no width of its own

    def set_focus(self, widget, scroll_visible: bool = True, from_app_focus: bool = False) -> None:
        # A long document that takes focus keeps its place (Textual would scroll its top
        # into view: tabbing back to the lesson jumped to the top).
        if isinstance(widget, Markdown) or isinstance(widget, HintsPanel):
            scroll_visible = False
        super().set_focus(widget, scroll_visible=scroll_visible, from_app_focus=from_app_focus)

    def goto_section(self, section: str) -> bool:
        """Show the lesson at the heading that best matches ``section``."""
        self.query_one(TabbedContent).active = "lesson-tab"
        viewer = self.lesson
        block_id = layout.find_heading(viewer.document.table_of_contents, section)
        if block_id is None:
            self.notify(f"The lesson has no section called {section!r}.", severity="warning")
            return False
        block = viewer.document.query_one(f"#{block_id}")
        viewer.document.focus(scroll_visible=False)
        # the lesson tab may have been hidden until now, and its width changes with the
        # focus (keep_place then keeps the old place): the section, once laid out, wins
        self.call_after_refresh(viewer.settle, (block, 0.0))
        return True

    def action_toggle_contents(self) -> None:
        viewer = self.lesson
        self.toc_choice = not viewer.show_table_of_contents
        self.query_one(TabbedContent).active = "lesson-tab"
        self.apply_size(self.app.size.width, self.app.size.height)
        toc = viewer.table_of_contents
        focused = self.focused
        if focused is None or (not self.toc_choice and focused in toc.walk_children(with_self=True)):
            viewer.document.focus(scroll_visible=False)  # never leave nothing focused

    def on_course_viewer_contents_closed(self, event: CourseViewer.ContentsClosed) -> None:
        self.toc_choice = None  # an entry was chosen: back to what the size shows

    def action_zoom(self) -> None:
        """Give the whole screen to the panel with the focus (again: back)."""
        if self.maximized is not None:
            self.minimize()
            return
        focused = self.focused
        for pid in ("#left", "#right"):
            part = self.query_one(pid)
            if focused is not None and (focused is part or part in focused.ancestors):
                self.maximized = part
                return
        self.maximized = self.query_one("#right")
