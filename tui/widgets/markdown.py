"""Markdown for lessons, hints, explanations and help, with code blocks that never hide
text: a code line wider than the pane folds onto the next line, which starts with
``↪`` under the line's own indentation, so nothing is cut and nothing needs scrolling.
Table cells fold a word too long for their column the same way (without the mark)."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Markdown, MarkdownViewer
from textual.widgets.markdown import MarkdownFence, MarkdownTableOfContents

MORE = "↪ "  # starts the rest of a code line too wide for the pane


def _pieces(line: Content, first: int, rest: int) -> list:
    """``line`` cut into pieces of at most ``first`` then ``rest`` characters, each cut
    after a space where one falls in the second half of the piece."""
    out, text, start, width = [], line.plain, 0, first
    while len(text) - start > width:
        end = start + width
        space = text.rfind(" ", start + width // 2, end)
        end = space + 1 if space > 0 else end
        out.append(line[start:end])
        start, width = end, rest
    out.append(line[start:])
    return out


def fold_code(code: Content, width: int) -> list:
    """The lines of ``code`` folded to ``width`` cells; a continuation starts with MORE,
    indented as far as the line it continues."""
    width = max(width, 8)
    out = []
    for line in code.split("\n"):
        if line.cell_length <= width:
            out.append(line)
            continue
        indent = min(len(line.plain) - len(line.plain.lstrip(" ")), width // 2)
        head, *tail = _pieces(line, width, max(width - indent - len(MORE), 4))
        out.append(head)
        out += [Content.assemble(" " * indent, (MORE, "dim"), piece) for piece in tail]
    return out


class FoldedCode(Widget):
    """A code block's highlighted text, folded to the widget's width."""

    DEFAULT_CSS = """
    FoldedCode { width: 1fr; height: auto; padding: 1 2; text-wrap: nowrap; }
    """

    def __init__(self, code: Content, **kwargs) -> None:
        super().__init__(**kwargs)
        self.code = code

    def update(self, code: Content) -> None:
        self.code = code
        self.refresh(layout=True)

    def lines(self, width: int) -> list:
        return fold_code(self.code, width)

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.lines(width))

    def render(self) -> Content:
        return Content("\n").join(self.lines(self.content_size.width))


class FoldedFence(MarkdownFence):
    DEFAULT_CSS = """
    FoldedFence { overflow: hidden hidden; }
    """

    def _highlighted(self) -> Content:
        return self.highlight(
            self.code, self.lexer, ansi=self.app.native_ansi_color, dark=self.app.current_theme.dark
        )

    def compose(self):
        yield FoldedCode(self._highlighted(), classes="code-content")

    def set_content(self, content: Content) -> None:
        for code in self.query(FoldedCode):
            code.update(content)


class CourseMarkdown(Markdown):
    # a table cell folds a word too long for its column rather than cut it with …
    DEFAULT_CSS = """
    CourseMarkdown MarkdownTableContent > .cell { text-overflow: fold; }
    """
    BLOCKS = {**Markdown.BLOCKS, "fence": FoldedFence, "code_block": FoldedFence}


class CourseViewer(MarkdownViewer):
    """A MarkdownViewer whose document is a CourseMarkdown."""

    def compose(self):
        markdown = CourseMarkdown()
        markdown.can_focus = True
        yield markdown
        yield MarkdownTableOfContents(markdown)
