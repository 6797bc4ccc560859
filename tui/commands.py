"""Command-palette commands (ctrl+p): open a workshop, run checks, toggle benchmarks,
export, reset, hints, explanation, help."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from tui.host import course_app
from workshops import catalog


class CourseCommands(Provider):
    def _commands(self) -> list:
        """(title, help, callback) for the screen the palette was opened from."""
        from tui.screens.workshop import WorkshopScreen

        app = course_app(self)
        out = []
        screen = self.screen
        if isinstance(screen, WorkshopScreen):
            out += [("Run checks", "re-run the checks on your file now", screen.action_run_checks)]
            if screen.timeable:  # a kernel, and a CUDA GPU to time it on
                out.append(
                    (
                        "Toggle benchmarks",
                        "time your kernel when the checks pass (b)",
                        screen.action_toggle_bench,
                    )
                )
                out.append(
                    (
                        "Time every shape and dtype",
                        "the roofline shapes and every dtype too, not only the comparison shapes (B)",
                        screen.action_bench_everything,
                    )
                )
            elif screen.workshop.gpu:  # no GPU: the reading of a passing run instead
                out.append(
                    (
                        "Read performance",
                        "predict your speed on an H200 and name the biggest loss (b; b again hides it)",
                        screen.action_toggle_bench,
                    )
                )
            if screen.passed and screen.next_up:
                nxt = screen.next_up[0]
                out.append(
                    (
                        f"Next workshop {nxt.code} {nxt.title}",
                        "every check passes here (n)",
                        screen.action_next_workshop,
                    )
                )
            out += [
                (
                    "Export results as JSON",
                    "write the checks (and timings) to a JSON file in your exports folder (o)",
                    screen.action_export,
                ),
                (
                    "Show failure details",
                    "everything the highlighted check said (enter)",
                    screen.action_failure,
                ),
                (
                    "Reset exercise",
                    "restore the starter, after backing up your file (r)",
                    screen.action_reset,
                ),
                ("Reveal next hint", "one tier at a time (h)", screen.action_hint),
                ("Show explanation", "the answer explained (x)", screen.action_explain),
                ("Edit exercise", "open your file in $EDITOR (e)", screen.action_edit),
                ("Back to workshops", "the list of workshops (escape)", screen.action_back),
            ]
        for w in catalog.workshops():
            out.append(
                (
                    f"Open workshop {w.code} {w.title}",
                    f"{w.id} ({w.level}, {w.device})",
                    partial(app.open_workshop, w.id),
                )
            )
        out.append(("Help", "keys and commands (?)", app.action_help))
        return out

    async def discover(self) -> Hits:
        for title, help_text, callback in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, text=title, help=help_text)
