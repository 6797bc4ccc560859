"""On a GPU, beside the measured time: what a benchmark row says about the loss, in the
reading's words: the share of the copy or FLOP ceiling reached, and host time per call
against device time when the host is the bottleneck.

Standard library only: a row is a dict of checks.benchmark.rows.BenchRow's fields.
"""

from __future__ import annotations


def _number(row: dict, key: str):
    value = row.get(key)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def sentences(row: dict) -> list:
    """[sentence]: the ceiling reached, and launch-bound when the host time dominates."""
    out = []
    fraction = _number(row, "fraction_of_ceiling")
    if fraction is not None:
        ceiling = "FLOP" if row.get("bound") == "compute" else "copy"
        out.append(f"reaches {fraction:.0%} of the {ceiling} ceiling")
    host, device = _number(row, "host_us"), _number(row, "device_us")
    per_call = _number(row, "per_call_us")
    if row.get("launch_bound") is True and host is not None and device is not None:
        out.append(
            f"launch-bound: {host:.0f} us per call on the host, {device:.0f} us on the GPU; "
            "fewer launches per call (or a CUDA graph) save more than a faster kernel"
        )
    elif per_call is not None and device is not None and host is not None:
        out.append(f"{per_call:.1f} us per call, {device:.1f} us of it on the GPU")
    return out
