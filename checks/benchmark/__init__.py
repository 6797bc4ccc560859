"""``python -m checks.benchmark``: time the GPU workshops' answers after correctness passes.

    python -m checks.benchmark --op strided_softmax                 # your file, both timings
    python -m checks.benchmark --op all --solution --timing graph   # the reference answers
    python -m checks.benchmark --op all --solution --timing events --dtype all

The ops are the GPU workshops of the catalog that have a spec module
``checks/benchmark/shapes/<op>.py`` (SHAPES, DTYPES, make_inputs, oracle, work, variants, and
the op's tolerance scale and speed targets).  For every selected shape and dtype, every
variant (the learner's candidates, the PyTorch baseline, peers) is first run once and
compared with the spec's float64 oracle -- a learner's candidate must also show that its
answer came from a Triton kernel of the learner's file -- and only a variant that passes
is timed.  Per variant the JSON (schema ``results/schema/benchmark.schema.json``) holds
raw samples and statistics, device time (graph replay), per-call time (CUDA events),
host overhead and a launch-bound mark, the registers, spills, shared memory, warps and
stages of the Triton kernels it launched, the error against the oracle, and achieved
GB/s or TFLOP/s against ceilings measured on the same card (kept per card).

The package, one concern per module:

    specs.py       which ops are benchmarked (from the catalog) and their spec modules
    rows.py        the result row (BenchRow), correctness tolerances, the exit code
    row_text.py    the text of a row's cells, for the tables, SUMMARY.md and the app
    statistics.py  sample statistics, throughput and roofline, host overhead, speedups
    kernels.py     the compiled Triton kernels a call launched, and their resources
    timing.py      CUDA timers, ceilings, the environment (imported on a GPU only)
    ceilings.py    the card's ceilings, measured once per card and kept
    measuring.py   one timed callable's samples until sure, harness cost, working set
    runner.py      check then time every variant of one op
    planned.py     the shapes a run measures and the calls it will time, each once
    timed_calls.py the witness of timed calls: input sets rotated, launches counted
    targets.py     verdicts of the specs' speed targets
    evidence.py    the JSON evidence of a run: its envelope, file hashes, strict JSON
    tables.py      printed tables
    arguments.py   the command line's arguments: parser, validation, usage errors
    cli.py         the command line

Exit codes: 0 everything ran and passed; 1 a variant failed; 2 a variant is still TODO
and nothing failed; 3 no CUDA GPU or nothing to run; 64 a usage error.
"""
