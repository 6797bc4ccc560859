"""Textual's footer, fitted to its width: where the keys do not all fit, whole entries
are left out, least important first, never one cut mid-word (at 100 columns the
workshop screen's footer ended in ``es▏``).  Every key still works; ``?`` lists them."""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from textual.widget import Widget
from textual.widgets import Footer

# A FooterKey's columns beyond its key and its description (Textual's Footer CSS, not
# compact): a space either side of the key, one after the description; the palette's
# key also has a padding column at its right and a border at its left.
KEY_EDGES, PALETTE_EDGES = 3, 2


def is_key(widget: Widget) -> bool:
    """A key's entry (Textual's FooterKey, not a public name): its key, its words."""
    return hasattr(widget, "key_display") and hasattr(widget, "description")


def key_columns(key: Any) -> int:
    """The columns the entry ``key`` (is_key) takes in the footer."""
    edges = KEY_EDGES + (PALETTE_EDGES if key.has_class("-command-palette") else 0)
    return cell_len(key.key_display) + cell_len(key.description) + edges


def keys_that_fit(widths: list, width: int, drop_order: list) -> set:
    """The indexes of the entries to show: all of them where their ``widths`` add up
    to at most ``width``, else the entries named by ``drop_order`` (indexes, least
    important first) left out one by one, then the rightmost, until the rest fit."""
    shown = set(range(len(widths)))
    order = [i for i in drop_order if i in shown] + [i for i in reversed(range(len(widths)))]
    for i in order:
        if sum(widths[j] for j in shown) <= width:
            break
        shown.discard(i)
    return shown


class CourseFooter(Footer):
    """A Footer that shows the entries that fit its width.  ``drop_first``: actions,
    least important first, whose entries go first where not all fit (the palette's key,
    at the right, always stays)."""

    def __init__(self, drop_first: tuple = (), **kwargs) -> None:
        super().__init__(**kwargs)
        self.drop_first = tuple(drop_first)
        self.composed_width = 0

    def compose(self):
        widgets = list(super().compose())
        width = self.size.width or self.app.size.width
        self.composed_width = width
        keys = [w for w in widgets if is_key(w) and not w.has_class("-command-palette")]
        palette = sum(key_columns(w) for w in widgets if is_key(w) and w not in keys)
        actions = [getattr(k, "action", "") for k in keys]
        drop = [actions.index(a) for a in self.drop_first if a in actions]
        shown = keys_that_fit([key_columns(k) for k in keys], width - palette, drop)
        hidden = {id(k) for i, k in enumerate(keys) if i not in shown}
        yield from (w for w in widgets if id(w) not in hidden)

    def on_resize(self, event) -> None:
        if event.size.width != self.composed_width:
            self.call_after_refresh(self.recompose)
