"""Markdown for lessons, hints, explanations and help, with code blocks that never hide
text: a code line wider than the pane folds onto the next line, which starts with
``↪`` under the line's own indentation, so nothing is cut and nothing needs scrolling.
Table cells fold a word too long for their column the same way (without the mark), and
a table's columns are sized by their content (table_columns): a short cell such as
``(4, 6)`` is never split over two lines while the table has room for it."""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Markdown, MarkdownViewer, Tree
from textual.widgets.markdown import MarkdownFence, MarkdownTableOfContents

from tui.host import closed

MORE = "↪ "  # starts the rest of a code line too wide for the pane
SHORT_CELL = 12  # a cell this short is kept on one line: "(4, 6)", "1 + 6r + 2c"
CELL_PAD = 2  # a table cell's padding, both sides together


def table_columns(headers: list, rows: list, width: int) -> list:
    """The widths (padding included) of a table's columns in ``width`` cells, one
    keyline between and around them: each column gets at least its longest word (a
    short cell counts whole), then the room left is shared in proportion to what each
    still wants for its longest cell; narrower than the minimums, every column shrinks
    in proportion (the cells fold)."""
    columns = list(zip(*([headers] + [list(r) + [""] * (len(headers) - len(r)) for r in rows])))
    if not columns:
        return []
    least, most = [], []
    for cells in columns:
        texts = [str(c) for c in cells]
        body = texts[1:]
        words = [len(w) for t in texts for w in t.split()]
        whole = [len(t) for t in body if len(t) <= SHORT_CELL]
        least.append(max(words + whole + [1]) + CELL_PAD)
        most.append(max([len(t) for t in texts] + [1]) + CELL_PAD)
    room = width - (len(columns) + 1)
    if sum(most) <= room:
        return most
    if sum(least) > room:
        return [max(CELL_PAD + 1, w * room // sum(least)) for w in least]
    spare, wants = room - sum(least), [m - n for m, n in zip(most, least)]
    out = [n + spare * w // sum(wants) for n, w in zip(least, wants)]
    for i in sorted(range(len(out)), key=lambda i: wants[i], reverse=True)[: room - sum(out)]:
        out[i] += 1  # what the rounding left, to the columns that want the most
    return out


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


def _plain(cells) -> list:
    return [getattr(c, "plain", str(c)) for c in cells]


class CourseMarkdown(Markdown):
    # a table cell folds a word too long for its column rather than cut it with …
    DEFAULT_CSS = """
    CourseMarkdown MarkdownTableContent > .cell { text-overflow: fold; }
    """
    BLOCKS = {**Markdown.BLOCKS, "fence": FoldedFence, "code_block": FoldedFence}

    def on_resize(self, event) -> None:
        self.call_after_refresh(self.fit_tables)

    def on_markdown_table_of_contents_updated(self, event) -> None:
        self.call_after_refresh(self.fit_tables)  # the document's blocks are in place

    def fit_tables(self) -> None:
        """Size each table's columns for its width now (table_columns)."""
        for table in self.query("MarkdownTableContent"):  # Textual's table body: headers, rows
            if table.size.width and hasattr(table, "headers") and hasattr(table, "rows"):
                rows = [_plain(r) for r in table.rows]
                widths = table_columns(_plain(table.headers), rows, table.size.width)
                spec = " ".join(map(str, widths))
                if widths and str(table.styles.grid_columns) != spec:
                    table.styles.grid_columns = spec


class CourseViewer(MarkdownViewer):
    """A MarkdownViewer whose document is a CourseMarkdown.  Its contents show beside
    the text, or, where the text would not keep room to be read, alone in its place
    (``show_contents(True, alone=True)``): choosing an entry then shows the text at it.
    The text keeps its place (keep_place) when its contents show or hide beside it, and
    when they hide it: the block at the top of the view is there again after."""

    DEFAULT_CSS = """
    /* an entry too long for the column is cut rather than scrolled to: a horizontal
       scrollbar's thumb showed as a stray block under the entries */
    CourseViewer MarkdownTableOfContents Tree { overflow-x: hidden; }
    """

    class ContentsClosed(Message):
        """The contents shown alone closed on the learner's choice of an entry."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._document = CourseMarkdown()
        self._document.can_focus = True
        self._contents = MarkdownTableOfContents(self._document)
        self.contents_columns = 0  # the contents column's width beside the text (0: Textual's)
        self.hidden_place: tuple = (None, 0.0)  # the text's place while the contents hide it
        self._settling: object = None  # the latest settle(): an older one's timers stop

    def compose(self):
        yield self._document
        yield self._contents

    # held, not queried: a timer or a handler that runs after the viewer was removed
    # (its screen closed at once) finds them, and finds them detached
    @property
    def document(self) -> Markdown:
        return self._document

    @property
    def table_of_contents(self) -> MarkdownTableOfContents:
        return self._contents

    @property
    def contents_alone(self) -> bool:
        return self.has_class("-contents-alone")

    # --- the text's place ---
    def place(self) -> tuple:
        """(block, fraction): the block of the text at the top of the view and how far
        into it the view starts; (None, 0.0) at the top, or while the text is hidden."""
        document = self.document
        if not document.display or self.scroll_y < 1:
            return None, 0.0
        for block in document.children:
            region = block.virtual_region  # within the document, which starts the view
            if region.bottom > self.scroll_y:
                return block, (self.scroll_y - region.y) / max(region.height, 1)
        return None, 0.0

    def restore_place(self, place: tuple) -> None:
        block, into = place
        if block is None or closed(self) or not block.is_attached or not self.document.display:
            return
        region = block.virtual_region
        self.scroll_to(y=region.y + round(into * region.height), animate=False)

    # A new width reflows the text over more than one refresh (its blocks measure
    # themselves in turn), so one scroll after the next refresh can land on a layout that
    # is still changing: the place is shown again while the layout settles.
    SETTLE_S = (0.25, 0.6)

    def settle(self, place: tuple) -> None:
        """Show ``place`` (block, fraction) at the top once the text is laid out, and
        again while its layout settles (a newer settle or keep_place takes over)."""
        if place[0] is None:
            return
        token = self._settling = object()

        def show() -> None:
            if self._settling is token:
                self.restore_place(place)

        self.call_after_refresh(show)
        for delay in self.SETTLE_S:
            self.set_timer(delay, show)

    def keep_place(self, change: Callable[[], object]) -> None:
        """Make a change of layout (``change()``, e.g. the text's width) that keeps the
        text's place: the same block at the top once the text is laid out again."""
        place = self.place()
        change()
        self.settle(place)

    # --- the contents ---
    def show_contents(self, show: bool, alone: bool = False) -> None:
        alone = show and alone
        if self.show_table_of_contents == show and alone == self.contents_alone:
            return
        place = self.hidden_place if self.contents_alone else self.place()
        if self.show_table_of_contents != show:
            self.show_table_of_contents = show
        if alone != self.contents_alone:
            self.set_class(alone, "-contents-alone")
            self.document.display = not alone
            toc = self.table_of_contents
            toc.styles.width = "1fr" if alone else (self.contents_columns or None)
            toc.styles.max_width = "100%" if alone else None
            if alone:
                toc.query_one(Tree).focus()
        if alone:
            self.hidden_place = place  # the text comes back there (t again)
        else:
            self.hidden_place = (None, 0.0)
            self.settle(place)

    def on_markdown_table_of_contents_selected(self, message: Markdown.TableOfContentsSelected) -> None:
        if not self.contents_alone:
            return  # Textual's handler scrolls the text beside the contents
        self.hidden_place = (None, 0.0)  # the text shows at the chosen entry instead
        self.show_contents(False)
        self.document.focus(scroll_visible=False)
        self.settle((self.document.query_one(f"#{message.block_id}"), 0.0))
        self.post_message(self.ContentsClosed())
