"""The repair search of the workshop screen, as a mixin of WorkshopScreen: after a run
that failed because a check failed or errored, ``python -m checks.repair`` looks for the
smallest change of the learner's file that makes every check pass
(tui.repair_child.RepairSearch, a child process of its own), the line under the results
says how far it got and then what it found (tui.widgets.repair.RepairLine), and f shows
the change (tui.screens.repair.RepairScreen).

A search belongs to one run (its generation) and the content that run checked: a new run,
leaving the screen or quitting kills it at once, and what arrives of an older run is
dropped, so a repair is never shown for other content than the one it was found for."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from textual.message import Message

from checks.repair import standby_wanted
from tui import repair_child
from tui.host import course_app
from tui.messages import RepairFinished, RepairProgress
from tui.screens.repair import RepairScreen
from tui.widgets.repair import RepairLine

if TYPE_CHECKING:
    from textual.screen import Screen

    from checks.running import End, RunSession
    from workshops.catalog import Workshop

    _Host = Screen[None]  # mypy checks the mixin as the screen it is mixed into
else:
    _Host = object


class RepairUpdate(Message):
    """A message of the repair search, posted from its reading thread to the screen."""

    def __init__(self, event: repair_child.RepairEvent) -> None:
        super().__init__()
        self.event = event


class WorkshopRepair(_Host):
    """Needs from the screen: workshop, path, controller, interpret."""

    workshop: Workshop
    path: Path
    controller: Optional[RunSession]
    interpret: bool
    # the search going on (None: none), and what the last search of the current run found:
    # {"generation", "content_hash", "repair"} once it ended with a repair, else None
    repair_search: Optional[repair_child.RepairSearch] = None
    repair_result: Optional[dict] = None

    def repair_standby(self, content_hash: Optional[str], generation: Optional[int]) -> None:
        """A run of the checks began: on a machine with cores to spare, its search starts
        now and waits for the run's records, so that its workers are warm by the verdict
        (checks.repair.standby_wanted)."""
        if (
            self.controller is None
            or not content_hash
            or generation is None
            or not course_app(self).repair_enabled
            or not standby_wanted(self.workshop.gpu)
            or not repair_child.available()
        ):
            return
        self.cancel_repair()
        self.repair_search = self._search(content_hash, generation, None)
        self.repair_search.start()

    def repair_after(self, message: End, records: list) -> None:
        """A run ended (its records): search for a repair if it failed in a way one can fix
        (the search started with the run is given them; it is stopped when there is none)."""
        standby = self.repair_search
        ready = (
            standby is not None
            and standby.waiting
            and standby.generation == message.generation
            and standby.content_hash == message.content_hash
        )
        if not ready:
            self.cancel_repair()
        if (
            self.controller is None
            or not course_app(self).repair_enabled
            or not message.content_hash
            or message.generation is None
            or not repair_child.wanted(str(message.outcome), records)
            or not repair_child.available()
        ):
            self.cancel_repair()
            return
        given = [r.to_dict() for r in records]
        if ready and standby is not None:
            standby.give(given)
        else:
            self.repair_search = self._search(message.content_hash, message.generation, given)
            self.repair_search.start()
        self.query_one(RepairLine).searching()

    def _search(self, content_hash: str, generation: int, records: Optional[list]):
        return repair_child.RepairSearch(
            self.workshop.id,
            self.path,
            content_hash,
            generation,
            course_app(self).workspace,
            on_event=self._post_repair,
            interpret=self.interpret,
            records=records,
        )

    def _post_repair(self, event: repair_child.RepairEvent) -> None:
        self.post_message(RepairUpdate(event))  # from the search's thread

    def cancel_repair(self) -> None:
        """Kill the search, if one runs, and forget what the last one said (a new run, or
        the screen closing)."""
        search, self.repair_search = self.repair_search, None
        if search is not None:
            search.cancel()
        if self.repair_result is not None:
            self.repair_result = None
            self.refresh_bindings()
        for line in self.query(RepairLine):  # none once the screen is taken down
            line.hide()

    def _current_search(self, event: repair_child.RepairEvent) -> bool:
        search = self.repair_search
        return (
            search is not None
            and self.controller is not None
            and self.controller.is_current(event.generation)
            and search.generation == event.generation
            and search.content_hash == event.content_hash
        )

    def on_repair_update(self, update: RepairUpdate) -> None:
        event = update.event
        if not self._current_search(event):
            return  # of an older run, or of a search cancelled since: never shown
        if self.repair_search is not None and self.repair_search.waiting:
            if isinstance(event, RepairFinished):  # it ended before its run did: the run's end
                self.repair_search = None  # starts another
            return
        line = self.query_one(RepairLine)
        if isinstance(event, RepairProgress):
            line.searching(event.tried, event.candidates)
            return
        assert isinstance(event, RepairFinished)
        self.repair_search = None
        repair = event.repair
        if repair is not None:
            self.repair_result = {
                "generation": event.generation,
                "content_hash": event.content_hash,
                "repair": repair,
            }
        if repair is not None and repair.get("status") == "found":
            line.found(repair)
        elif repair is not None and repair.get("status") in ("none", "budget", "reproduced"):
            line.nothing(repair)
        elif repair is None and event.error:
            line.nothing(None, event.error)
        else:  # nothing to say: the file changed, the search did not apply
            line.hide()
        self.refresh_bindings()

    def repair_for(self, content_hash: str | None) -> Optional[dict]:
        """The last search's repair (its result's dict) when it was for ``content_hash``."""
        r = self.repair_result
        return r["repair"] if r is not None and content_hash and r["content_hash"] == content_hash else None

    @property
    def repair_found(self) -> Optional[dict]:
        """The found repair of the current run, else None (f shows it)."""
        r = self.repair_result
        if r is None or self.controller is None or not self.controller.is_current(r["generation"]):
            return None
        return r["repair"] if r["repair"].get("status") == "found" else None

    def action_show_repair(self) -> None:
        repair = self.repair_found
        if repair is not None:
            self.app.push_screen(RepairScreen(repair))
