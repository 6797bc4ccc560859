"""Named quantities of the GPU workshops' problems, for relations (imports torch).

A factor between a wrong result and the right one that equals one of these is named
(checks.judging.relations.Quantity): "equal to the row's sum of exp(x - max): the
division by that sum is missing".
"""

from __future__ import annotations

import math

import torch

from checks.judging.relations import Quantity


def softmax_rows(x64: torch.Tensor) -> list:
    """Per row of a softmax's input (float64, 2D): its sum l of exp(x - max), l squared,
    exp of its max and its sum of exp(x)."""
    if x64.dim() != 2 or x64.shape[1] == 0 or not bool(torch.isfinite(x64).all()):
        return []
    m = x64.amax(dim=1, keepdim=True)
    l = torch.exp(x64 - m).sum(dim=1)
    out = [
        Quantity(
            "the row's sum of exp(x - max)",
            "row",
            l.numpy(),
            missing="the division by that sum is missing",
            extra="the row is divided by its sum twice",
        )
    ]
    out.append(
        Quantity(
            "the square of the row's sum of exp(x - max)",
            "row",
            (l * l).numpy(),
            missing="the row is multiplied by its sum where it should be divided by it",
        )
    )
    top = torch.exp(m.squeeze(1))
    if bool(torch.isfinite(top).all()) and bool((top > 0).all()):
        out.append(
            Quantity(
                "exp of the row's max",
                "row",
                top.numpy(),
                missing="the numerator is exp(x) where the sum used exp(x - max): subtract the "
                "same max in both",
                extra="the numerator and the sum disagree on the max: the sum was taken over "
                "exp(x) without subtracting it (or the numerator subtracts it twice)",
            )
        )
    raw = l * top
    if bool(torch.isfinite(raw).all()):
        out.append(
            Quantity(
                "the row's sum of exp(x)",
                "row",
                raw.numpy(),
                missing="the division by the row's sum is missing",
            )
        )
    return out


def attention(q64: torch.Tensor, k64: torch.Tensor, causal: bool) -> list:
    """sqrt(D) and, per query row, the softmax's sum l of exp(score - max)."""
    d = q64.shape[-1]
    out = [
        Quantity(
            "sqrt(D)",
            "all",
            math.sqrt(d),
            missing="the scores are not scaled by 1/sqrt(D) where they should be, or scaled twice",
            extra="the scale 1/sqrt(D) is applied to the output too",
        )
    ]
    s = q64 @ k64.transpose(-1, -2) / math.sqrt(d)
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    l = torch.exp(s - s.amax(dim=-1, keepdim=True)).sum(dim=-1)
    out.append(
        Quantity(
            "the row's sum l of exp(score - max)",
            "row",
            l.reshape(-1).numpy(),
            missing="the final division by l is missing",
            extra="the output is divided by l twice",
        )
    )
    return out
