"""The answer's explanation, on its own screen (escape goes back).  Its contents column
shows only where the text keeps room to be read (tui.layout.contents_fits);
``t`` shows or hides it at any size."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header

from tui import layout
from tui.host import closed, once_open
from tui.widgets.markdown import CourseViewer


class ExplanationScreen(Screen[None]):
    AUTO_FOCUS = "#explanation CourseMarkdown"  # the arrows scroll the text
    BINDINGS = [
        Binding("escape,x", "close", "Back", id="explanation-close"),
        Binding("t", "toggle_contents", "Contents", id="explanation-contents"),
    ]

    def __init__(self, workshop, **kwargs) -> None:
        super().__init__(**kwargs)
        self.workshop = workshop
        self.toc_choice: bool | None = None  # the learner's t, over the size's default
        self.toc_width = layout.contents_width(workshop.explanation)

    def compose(self) -> ComposeResult:
        yield Header()
        text = self.workshop.explanation or "_This workshop has no explanation yet._"
        yield CourseViewer(text, show_table_of_contents=False, id="explanation")
        yield Footer()

    @property
    def viewer(self) -> CourseViewer:
        return self.query_one("#explanation", CourseViewer)

    def on_mount(self) -> None:
        if closed(self):
            return
        self.sub_title = f"{self.workshop.code} {self.workshop.title}: the answer explained"
        self.viewer.contents_columns = self.toc_width
        self.viewer.table_of_contents.styles.width = self.toc_width
        self.apply_size(self.app.size.width)

    def on_resize(self, event) -> None:
        self.apply_size(event.size.width)

    def apply_size(self, width: int) -> None:
        if closed(self):
            return
        fits = layout.contents_fits(width, self.toc_width)
        show = self.toc_choice if self.toc_choice is not None else fits
        self.viewer.show_contents(show, alone=not fits)  # alone: in the text's place

    def action_toggle_contents(self) -> None:
        self.toc_choice = not self.viewer.show_table_of_contents
        self.apply_size(self.app.size.width)
        if not self.toc_choice:
            self.viewer.document.focus(scroll_visible=False)

    def on_course_viewer_contents_closed(self, event: CourseViewer.ContentsClosed) -> None:
        self.toc_choice = None  # an entry was chosen: back to what the size shows

    def action_close(self) -> None:
        once_open(self, lambda: self.dismiss(None))
