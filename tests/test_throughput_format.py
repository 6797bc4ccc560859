"""One throughput formatter: the CLI's table and the app's timings panel show a row's
achieved rate the same way (checks.benchmark.statistics.fmt_throughput)."""

import pytest

from checks.benchmark import rows as rowlib, tables
from checks.benchmark.statistics import add_throughput, fmt_throughput
from tui import benchmark_child

CEILINGS = {"copy_gbps": 4000.0, "bf16_matmul_tflops": 800.0}
GEMM = {"bytes": 3 * 2 * 4096 * 4096, "flops": 2 * 4096**3}  # compute sets the floor
SOFTMAX = {"bytes": 2 * 4 * 1024 * 1024, "flops": None}
ATTENTION_SMALL = {"bytes": 4 * 128 * 64 * 2, "flops": 4 * 128 * 128 * 64}  # memory sets it


def _row(work, median_us, ceilings=CEILINGS):
    row = rowlib.new_row("op", {"name": "s", "role": "comparison"}, "fp16", "v", "candidate")
    row["median_us"] = median_us
    return add_throughput(row, work, ceilings)


def _cli_cell(row) -> str:
    return tables.table_rows([row])[0][tables.HEADERS.index("achieved")]


@pytest.mark.parametrize(
    "row, shown",
    [
        (_row(GEMM, 250.0), "549.8 TFLOP/s"),  # both rates known: the compute-bound one
        (_row(SOFTMAX, 3.0), "2796 GB/s"),
        (_row(ATTENTION_SMALL, 4.0), "16 GB/s"),  # both known, memory-bound: GB/s
        (_row(GEMM, 250.0, ceilings={}), "403 GB/s"),  # no ceilings, so no bound: GB/s
        ({"tflops": 312.25}, "312.2 TFLOP/s"),  # an older file's row: only the field it has
        ({"gbps": 1234.4, "tflops": None}, "1234 GB/s"),
    ],
)
def test_the_cli_and_the_app_format_a_row_the_same_way(row, shown):
    full = dict(rowlib.new_row("op", None, "fp16", "v", "candidate"), **row)
    assert _cli_cell(full) == benchmark_child.fmt_rate(full) == fmt_throughput(full) == shown


@pytest.mark.parametrize(
    "row", [{}, {"gbps": None, "tflops": None}, {"gbps": float("nan")}, {"gbps": "fast"}]
)
def test_an_unknown_rate_is_each_one_s_missing_mark(row):
    full = dict(rowlib.new_row("op", None, "fp16", "v", "candidate"), **row)
    assert _cli_cell(full) == "-"
    assert benchmark_child.fmt_rate(full) == benchmark_child.MISSING
