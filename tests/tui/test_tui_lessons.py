"""Every lesson, hint and explanation of every catalogued workshop renders as written:
no paragraphs run together (a formula meant as lines of its own, merged into the text
around it), every code block shown whole, in the app's own Markdown widget."""

from __future__ import annotations

import asyncio

from markdown_it import MarkdownIt

from workshops import catalog

# the online_normalizer merge derivation as it once was: an indented code block of one
# line, then two lines indented by two spaces that Markdown joins into one paragraph
RUN_TOGETHER = """Its denominator relative to `m` is

    sum over chunk 1 of exp(x - m) + sum over chunk 2 of exp(x - m)
  = exp(m1 - m) * sum exp(x - m1) + exp(m2 - m) * sum exp(x - m2)
  = l1 * exp(m1 - m) + l2 * exp(m2 - m)

The factor re-expresses a sum.
"""


def documents() -> list:
    """(name, markdown) of every lesson, hint tier and explanation, from the catalog."""
    out = []
    for w in catalog.workshops():
        out.append((f"{w.id}/lesson.md", w.lesson))
        out += [(f"{w.id}/hints.md#{i + 1}", h) for i, h in enumerate(w.hints)]
        out.append((f"{w.id}/explanation.md", w.explanation))
    return [(n, t) for n, t in out if t.strip()]


def run_together(markdown: str) -> list:
    """Lines of top-level paragraphs that were meant to stand alone: indented (an
    aligned formula or table Markdown flattens) or starting with '=' (a derivation)."""
    lines = markdown.splitlines()
    bad = []
    for tok in MarkdownIt("gfm-like").parse(markdown):
        if tok.type == "paragraph_open" and tok.level == 0 and tok.map:
            first, end = tok.map
            bad += [
                f"line {first + 1 + i}: {line.strip()}"
                for i, line in enumerate(lines[first:end])
                if (i and line.startswith("  ")) or line.lstrip().startswith("=")
            ]
    return bad


def test_the_detector_catches_a_run_together_derivation():
    assert run_together(RUN_TOGETHER), "a merged derivation went unnoticed"
    fenced = RUN_TOGETHER.replace("\n\n    sum", "\n\n```\n    sum").replace(
        "x - m2)\n  = l1 * exp(m1 - m) + l2 * exp(m2 - m)\n",
        "x - m2)\n  = l1 * exp(m1 - m) + l2 * exp(m2 - m)\n```\n",
    )
    assert run_together(fenced) == []


def test_every_lesson_and_hint_renders_as_written():
    from textual.app import App, ComposeResult
    from textual.widgets import Markdown
    from textual.widgets._markdown import MarkdownFence, MarkdownParagraph

    docs = documents()
    names = {n.split("/")[0] for n, _ in docs}
    assert names == {w.id for w in catalog.workshops()}  # every workshop, none missed
    problems = [f"{n}: {line}" for n, text in docs for line in run_together(text)]
    assert not problems, "paragraphs that run together:\n" + "\n".join(problems)

    class Render(App):
        def compose(self) -> ComposeResult:
            yield Markdown("", id="doc")

    async def body():
        app = Render()
        async with app.run_test(size=(100, 40)) as pilot:
            doc = app.query_one("#doc", Markdown)
            for name, text in docs:
                await doc.update(text)
                await pilot.pause()
                tokens = MarkdownIt("gfm-like").parse(text)
                fences = [
                    t.content.rstrip("\n")
                    for t in tokens
                    if t.type in ("fence", "code_block") and t.level == 0
                ]
                shown = [f.code.rstrip("\n") for f in doc.query(MarkdownFence) if f.parent is doc]
                assert shown == fences, f"{name}: code blocks differ"
                paragraphs = sum(t.type == "paragraph_open" and t.level == 0 for t in tokens)
                rendered = sum(1 for p in doc.query(MarkdownParagraph) if p.parent is doc)
                assert rendered == paragraphs, f"{name}: {rendered} paragraphs, {paragraphs} written"

    asyncio.run(body())
