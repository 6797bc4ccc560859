"""The card's ceilings (copy bandwidth, bf16 matmul rate), measured once per card and kept.

Measuring them takes several seconds (a 1 GiB copy, a bf16 8192^3 matmul), so a run
reuses the ones measured before on the same card with the same software.  They are
kept in a JSON file (by default ``ceilings.json`` in the workspace's state folder, see
checks/workspace.py), one entry per card key: the GPU's name, its UUID and PCI bus id
where torch gives them, the driver, CUDA, torch and triton versions.  Any change of
these measures them again.  A ``--quick`` measurement serves quick runs only; a
measurement that failed (a ceiling None) is not kept.

Standard library only: the measuring function is passed in.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Optional

from checks.json_files import write_json_atomic

FILE_NAME = "ceilings.json"
SCHEMA = "kernel-course/ceilings"
KEY_FIELDS = ("gpu_name", "gpu_uuid", "pci_bus_id", "driver", "cuda", "torch", "triton")
CEILING_FIELDS = ("copy_gbps", "bf16_matmul_tflops")


def card_key(environment: dict) -> dict:
    """What the ceilings were measured on, from the run's environment."""
    return {k: environment.get(k) for k in KEY_FIELDS}


def default_path(workspace: Optional[Path] = None) -> Path:
    from checks import workspace as ws

    return ws.state_dir(Path(workspace) if workspace else ws.default_workspace()) / FILE_NAME


def load_entries(path: Path) -> list:
    """The entries of a ceilings file; [] when it is missing or not one (it is then
    rewritten on the next measurement)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return []
    entries = data.get("entries")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def usable(ceilings: dict) -> bool:
    """Both ceilings measured, as positive numbers, with no errors."""
    ok = all(
        isinstance(ceilings.get(k), (int, float))
        and not isinstance(ceilings.get(k), bool)
        and ceilings[k] > 0
        for k in CEILING_FIELDS
    )
    return ok and not ceilings.get("errors")


def find(entries: list, key: dict, quick: bool) -> Optional[dict]:
    """The kept entry for this card, or None; a full run does not take a quick one."""
    for e in entries:
        if e.get("card") == key and isinstance(e.get("ceilings"), dict) and usable(e["ceilings"]):
            if quick or not e.get("quick"):
                return e
    return None


def ceilings_for(
    path: Path,
    environment: dict,
    measure: Callable[[], dict],
    *,
    quick: bool = False,
    remeasure: bool = False,
    now: Callable[[], str] = lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"),
) -> dict:
    """The ceilings for this run: the kept ones for this card, else ``measure()``'s
    (kept when usable, atomically, replacing this card's older entry).  The result
    says where they came from: ``cached`` (bool), ``measured_at``, ``cache_file``."""
    path = Path(path)
    key = card_key(environment)
    entries = load_entries(path)
    kept = None if remeasure else find(entries, key, quick)
    if kept is not None:
        return dict(kept["ceilings"], cached=True, measured_at=kept.get("measured_at"), cache_file=str(path))
    measured = dict(measure())
    stamp = now()
    out = dict(measured, cached=False, measured_at=stamp, cache_file=str(path))
    if usable(measured):
        entry = {"card": key, "quick": bool(quick), "measured_at": stamp, "ceilings": measured}
        others = [e for e in entries if e.get("card") != key]
        try:
            write_json_atomic(path, {"schema": SCHEMA, "version": 1, "entries": others + [entry]})
        except OSError as e:  # not kept: the next run measures again
            out["cache_error"] = f"{type(e).__name__}: {e}"
    return out
