"""Judging: is the learner's answer right, and did their own kernel compute it?

    case.py        a named check: id, label, inputs from its own seed, oracle, tolerance
    cases/         each workshop's checks (``<workshop>.py`` and its parts)
    tensors.py     comparing tensors with a float64 oracle; the map of wrong elements
    tolerances.py  how far an answer may be from its float64 oracle, per dtype (elementwise
                   for the checks, a relative norm for the benchmark)
    provenance.py  the witness: which kernels ran, which PyTorch ops computed values
    op_rules.py    the ops the witness allows, and how it names the rest
    stored.py      in the interpreter: which output bytes the learner's kernels stored
    oob.py         in the interpreter: loads and stores outside the tensors they belong to
    launches.py    Triton's launches, compiles and interpreter memory accesses, heard in one
                   place (the only module that hooks into Triton)
    engine.py      load an exercise, run its workshop's checks, one record per check
    records.py     the record of one check; what a run's records come to (outcome, progress)
    relations.py   what a wrong result's numbers hold to the right ones (negated, a factor...)
    properties.py  what a check's inputs exercise; what the failing checks share
    report.py      the printout of a run

Standard library at import time: torch and triton are imported by the checks that
need them, so the CPU workshop runs with the standard library alone.
"""

from checks.judging.properties import separating as separating_property
from checks.judging.records import (
    STATUSES,
    Outcome,
    Progress,
    Record,
    Status,
    change_since,
    outcome_line,
    outcome_of,
    plural,
    progress_of,
    ran_any,
)
from checks.judging.report import scale_text as map_scale_text

__all__ = [
    "STATUSES",
    "Outcome",
    "Progress",
    "Record",
    "Status",
    "change_since",
    "ran_any",
    "outcome_line",
    "outcome_of",
    "map_scale_text",
    "plural",
    "progress_of",
    "separating_property",
]
