"""The lessons' performance steps: one per GPU workshop, checked by the reading of the
wrapper's default call (``python -m checks <workshop> --perf`` says met or not met).

Each goal is a sentence for the lesson and a test on a :class:`Reading`; the evidence
comes back with the verdict, so a learner without a GPU sees what to change.  A reading
whose kernel does not compile for sm_90 meets no step (the compiler's words are the
evidence); a step the compile decides (tensor cores, spills) is not judged without the
compile's facts (met is None).
"""

from __future__ import annotations

from typing import Callable, Optional

from checks.performance.reading import Reading


def _sectors_ok(r: Reading) -> tuple:
    bad = [f for f in r.findings if f.cause == "sectors" and f.loss_s >= 0.05 * r.predicted_s]
    return (not bad, bad[0].sentence if bad else "every load and store touches the fewest sectors it can")


def _once(r: Reading) -> tuple:
    extra = r.moved_bytes / r.min_bytes if r.min_bytes else 0.0
    return extra <= 1.1, r.traffic


def _fills(r: Reading) -> tuple:
    return r.programs >= 132, f"{r.programs} programs for 132 SMs"


def _tensor_cores(r: Reading) -> tuple:
    bad = [f for f in r.findings if f.cause == "no-tensor-cores"]
    return (not bad, bad[0].sentence if bad else "tl.dot runs on the tensor cores (mma/wgmma in the PTX)")


def _no_spills(r: Reading) -> tuple:
    bad = [f for f in r.findings if f.cause == "spills"]
    return (not bad, bad[0].sentence if bad else "no register spills")


GOALS: dict = {
    "strided_softmax": (
        "on the transposed 1024x1024 input, bring the loads of x to the ideal sectors per request "
        "(4 for fp32)",
        _sectors_ok,
    ),
    "softmax_backward": (
        "read y and g once and write dx once (each byte moved once)",
        _once,
    ),
    "split_softmax": ("on a 4x131072 input, run at least 132 programs, one per SM", _fills),
    "fused_gemm": ("run the products on the tensor cores (mma/wgmma in the compiled kernel)", _tensor_cores),
    "streaming_attention": ("keep every tile in registers (no spills)", _no_spills),
}


NEEDS_COMPILE = frozenset((_tensor_cores, _no_spills))  # tests that read the compile's facts


def goal_of(op: str) -> tuple:
    """(the goal's sentence, its test) for ``op``."""
    return GOALS[op]


def judge(op: str, r: Reading) -> tuple:
    """(met: True, False or None when it cannot be judged, the goal's sentence, the evidence)."""
    text, test = GOALS[op]
    if r.compile_errors:
        kernel, words = r.compile_errors[0]
        return False, text, f"{kernel} does not compile for sm_90: {words}"
    if r.no_facts and test in NEEDS_COMPILE:
        return None, text, f"not judged: {r.no_facts}"
    test_fn: Callable = test
    met, evidence = test_fn(r)
    verdict: Optional[bool] = bool(met)
    return verdict, text, evidence
