"""Helpers of the readability tests: what a widget really draws, and the toasts on show."""

from __future__ import annotations

import re

from rich.text import Text
from textual.content import Content
from textual.geometry import Region

SIZES = [(80, 24), (120, 40)]
SIZE_IDS = ["80x24", "120x40"]


def drawn(widget) -> list:
    """The lines a widget draws (padding and border included), as plain text."""
    strips = widget.render_lines(Region(0, 0, *widget.outer_size))
    return ["".join(seg.text for seg in strip) for strip in strips]


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def source_text(widget):
    """The text a leaf widget means to show (a code block: its code), or None."""
    from tui.widgets.markdown import FoldedCode

    if isinstance(widget, FoldedCode):
        return widget.code.plain
    shown = widget.render()
    return shown.plain if isinstance(shown, (Content, Text)) else None


def lost_text(document) -> list:
    """[(widget class, its text)] for every leaf of a Markdown document whose drawn
    lines lack some of its characters (the fold mark ↪ does not count as text)."""
    from tui.widgets.markdown import MORE

    lost = []
    for w in document.walk_children():
        if w.children or not w.outer_size.area:
            continue
        src = source_text(w)
        if src is None:
            continue
        if squash("".join(drawn(w))).replace(MORE.strip(), "") != squash(src):
            lost.append((type(w).__name__, src[:120]))
    return lost


class Toasts:
    """The toasts an app has on show: every notify adds one, clear_notifications
    clears them (a test-side record through the app's public methods)."""

    def __init__(self, app):
        self.live: list = []
        notify, clear = app.notify, app.clear_notifications

        def recording_notify(message, *args, **kwargs):
            self.live.append((kwargs.get("title") or "", str(message)))
            return notify(message, *args, **kwargs)

        def recording_clear():
            self.live.clear()
            return clear()

        app.notify, app.clear_notifications = recording_notify, recording_clear

    def said(self) -> str:
        return " | ".join(f"{t}: {m}" for t, m in self.live)
