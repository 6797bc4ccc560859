"""Pieces shared by every GPU workshop's guard checks (``checks/judging/cases/<id>_guards.py``):
the checks that a pass cannot be had without the learner's own kernel, at a scale and
in value ranges where shortcuts show.

Every call of a contract function during any check is witnessed (see
checks.judging.provenance and checks.judging.engine.witnessed); the "own-kernel" check of each
workshop calls each code path once, first in the order, so a PyTorch stand-in or a
borrowed kernel is named at once with the op and the line.
"""

import functools
from typing import Any, Callable

import torch

from checks.judging.case import CheckFailed, check
from checks.judging.failure_kinds import OWN_KERNEL_WHY, SECTION_OWN
from checks.judging.provenance import Unwritten

OWN_KERNEL_ID = "own-kernel"


def own_kernel_check(label: str) -> Callable[[Callable[[Any, Any], Any]], Callable[[Any, Any], Any]]:
    """Decorator for a workshop's "own-kernel" check, the same in every GPU workshop but for
    its label and body: first in the order (cost 0, so the first verdict comes at once),
    in the lesson's section on whose kernel ran, its body wrapped by :func:`own_work`.
    The body calls each code path of the contract once, small."""

    def wrap(body: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        return check(OWN_KERNEL_ID, label, why=OWN_KERNEL_WHY, section=SECTION_OWN, cost=0)(own_work(body))

    return wrap


def own_work(body):
    """The body of a workshop's own-kernel check: it passes when the learner's kernels did
    the work they did.  Elements that no program stored and nothing else wrote are an
    addressing bug (checks.judging.provenance.Unwritten), not someone else's work: the
    checks that compare values report them, with the grid and a map; this one does not."""

    @functools.wraps(body)
    def run(mod, ctx):
        try:
            return body(mod, ctx)
        except Unwritten as e:
            return (
                f"your kernels computed the output, but {e.details.get('never_stored')} of its "
                f"{e.details.get('total')} elements were stored by no program: the checks that "
                f"compare values say where"
            )
        except CheckFailed as e:
            if "mismatched" not in e.details:  # not your kernel, out of bounds, a bad shape...
                raise
            # Wrong values are the numeric checks' to explain; whose kernel ran is this one's.
            return (
                f"your kernel computed the output (its values are wrong: "
                f"{e.details['mismatched']} of {e.details['total']} elements; the checks that "
                f"follow say where)"
            )

    return run


# More programs than any small constant a grid might be capped at (a learner's
# "grid = (min(rows, 1024),)"), yet cheap: rows of a few elements.
MANY_PROGRAMS_INTERPRETER = 300
MANY_PROGRAMS_GPU = 70_000  # also past 65,535, the CUDA limit of grid axes 1 and 2

FP16_MAX = 65504.0
FP16_SMALLEST_NORMAL = 2.0**-14  # 6.1e-5


def many(ctx) -> int:
    return MANY_PROGRAMS_GPU if ctx.device == "cuda" else MANY_PROGRAMS_INTERPRETER


def beyond_fp16(shape, *, ctx, offset=70_000.0, step=512.0) -> torch.Tensor:
    """bf16 values past fp16's largest finite value (65504), exactly representable in bf16
    (its spacing there is 512): ``offset + step * k`` with small random integers k.  A
    round trip through fp16 turns every one of them into inf."""
    g = ctx.torch_generator()
    k = torch.randint(0, 4, shape, generator=g).to(torch.float64)
    return (offset + step * k).to(torch.bfloat16).to(ctx.device)


def fp16_fine_steps(shape, *, ctx, base=1500.0) -> torch.Tensor:
    """fp16 values near 1500, one apart (fp16's spacing there is 1, bf16's is 8): a
    round trip through bf16 merges up to eight neighbours into one value."""
    g = ctx.torch_generator()
    k = torch.randint(0, 12, shape, generator=g).to(torch.float64)
    return (base + k).to(torch.float16).to(ctx.device)


def assert_close_relative(got, expected64: torch.Tensor, *, dtype, name: str, device: str):
    """Like checks.judging.tensors.assert_close, but relative only: for answers far below 1, where
    the dtype's absolute tolerance would accept any value at all."""
    from checks.judging.case import CheckFailed
    from checks.judging.tensors import describe, expect_tensor, mismatch_report, tolerance

    expect_tensor(got, shape=expected64.shape, dtype=dtype, device=device, name=name)
    facts = mismatch_report(got, expected64, atol=1e-30, rtol=tolerance(dtype)["rtol"])
    if facts is not None:
        raise CheckFailed(f"{name}: {describe(facts)}", facts)
