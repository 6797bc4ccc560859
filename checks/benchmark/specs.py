"""Which operations are benchmarked, and their spec modules.

An operation is benchmarked when its workshop is in the catalog
(``workshops.catalog.workshops()``), runs on the GPU, and has a spec module
``checks/benchmark/shapes/<workshop id>.py``.  Nothing else lists them: a new GPU workshop
with a spec is benchmarked, in catalog order, with no change here.

A spec module describes one op's work; the harness does the timing.  It must define
``SHAPES`` (dicts with ``name`` and ``role``: "comparison" or "roofline"), ``DTYPES``
(the first is the default), ``make_inputs(shape, dtype, device, seed)``,
``oracle(inputs, shape)`` (float64), ``work(shape, dtype)`` (``bytes``, ``flops``) and
``variants(mod, inputs, shape)``.  Optional: ``TOLERANCE_SCALE`` (times the dtype's
relative-error threshold in checks/judging/tolerances.py), ``TARGETS``,
``REFERENCE_COURSE``, ``REFERENCE_COURSE_CAUSAL`` and ``EVENTS_PER_CALL_FACTOR`` (see
targets.py).

The problem is defined once: ``oracle`` adapts the workshop's named-check oracle
(``checks/judging/cases/<workshop id>.py``) to the spec's inputs, passing the inputs'
device so the float64 reference is computed where the inputs are.

``variants`` returns the same list for a learner's module and the reference answer, so
both are measured the same way.  Each spec ends it with
``kernels.with_cached_handle(variants, config)``: beside the candidate that calls the
wrapper with its defaults, a twin whose launches go through cached compiled-kernel
handles, so the rows show what Triton's per-call dispatch costs (kernels.py).

Listing the ops imports neither torch nor the spec modules.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Optional

PACKAGE = "checks.benchmark.shapes"
FOLDER = Path(__file__).resolve().parent / "shapes"
REQUIRED = ("SHAPES", "DTYPES", "make_inputs", "oracle", "work", "variants")


def benchmarked_ops(folder: Optional[Path] = None) -> list:
    """Ids of the GPU workshops that have a benchmark spec, in catalog order."""
    from workshops import catalog

    folder = FOLDER if folder is None else Path(folder)
    return [w.id for w in catalog.workshops() if w.gpu and (folder / f"{w.id}.py").is_file()]


def load_spec(op: str):
    """The op's spec module, ``checks/benchmark/shapes/<op>.py``."""
    return importlib.import_module(f"{PACKAGE}.{op}")


def spec_problem(op: str, loader=None) -> Optional[str]:
    """Why ``op`` cannot be benchmarked, or None."""
    try:
        spec = (loader or load_spec)(op)
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith(PACKAGE):
            return f"no benchmark spec yet (checks/benchmark/shapes/{op}.py)"
        return f"its spec cannot be imported ({e})"
    except Exception as e:  # noqa: BLE001
        return f"its spec cannot be imported ({type(e).__name__}: {e})"
    missing = [n for n in REQUIRED if not hasattr(spec, n)]
    return f"its spec lacks {', '.join(missing)}" if missing else None


def tolerance_scale(spec) -> float:
    return float(getattr(spec, "TOLERANCE_SCALE", 1.0))
