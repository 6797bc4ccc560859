#!/usr/bin/env bash
# The reference answers' evidence on one NVIDIA GPU (H200 or H100).  All the GPU evidence of a
# commit comes from two parts that each fit one ten-minute device call:
#
#   OUT=/some/folder bash results/run_h200.sh timing       # from the repository root
#   OUT=/some/folder bash results/run_h200.sh correctness  # run `bash results/gpu_wheels.sh`
#                                                          # first, where PyPI answers; carry .whl
#
# "timing" (about 8 minutes on an H100): the latency of record (the app's path, the five GPU
# workshops, one repeat), the A/A benchmark and the benchmark's roofline rows (quick).
# "correctness" (about 9 minutes): the GPU self-check, then the README's test command.
# "repair" (about 9 minutes): the repair search over three mutants of each GPU workshop's
# reference answer as on a learner's GPU machine (changes screened in the interpreter, the one
# that passes verified compiled; python -m checks.repair.report), then the self-check.
# Each step has its own time limit so a part ends inside its call.  The finer parts below
# (checks, latency, tests) remain for a step measured alone.
#
# QUICK=1 takes fewer timing repetitions in "checks" (the checks part fits ten minutes with it:
# self-check about 130 s, bench-both about 90 s, bench-aa about two minutes on the H200);
# REPEATS=N sets the latency repeats (default 1);
# WORKSHOPS=a,b measures only those (default the five GPU workshops) and PART=name names the
# latency file latency-h200-<name>.json; PATHS=warm,sharded,fresh sets the latency paths
# (default warm,fresh; "timing" takes warm).
#
# Needs python3 with torch, triton, numpy and rich (no jsonschema, textual or watchfiles).
# "checks" writes into $OUT (at most 8 files come back from a device call), its steps' output
# in checks.log:
#   self-check.json         every GPU and CPU workshop: each folder complete, the reference
#                           answer passes every check, the starter is TODO, each kept wrong
#                           answer is rejected by the checks its meta.json names
#   bench-both.json         benchmark, graph and events timing, every dtype, every shape:
#                           the comparison rows (against cuBLAS, SDPA and the PyTorch
#                           baselines) and the roofline rows
#   bench-aa.json           A/A: every answer's comparison shapes timed twice in one run
#                           (device and per-call disagreement, median, p90 and worst)
#   resources-h200.json     GEMM 4096^3 and attention B4 H16 N2048 D64 configurations:
#                           registers, spills, shared memory, and each kept one timed beside
#                           cuBLAS / SDPA (python -m checks.running.kernel_resources --time)
#   SUMMARY.md              results/summarize.py over the benchmark files
# "latency" writes latency-h200.json and latency.log: the latency of record, python -m tui.latency over
#                           the five GPU workshops, the app's path and a fresh process side
#                           by side, and the app's benchmark after the first passing run
#                           (REPEATS=1 and two paths fit about 8 minutes).
# Each step runs even if an earlier one failed; the exit status is the worst of them.
# To keep the evidence, copy the JSON into results/ under new names (date and commit,
# e.g. results/2026-12-03-<commit>-h200-self-check.json) and run
# `python3 results/summarize.py`; never overwrite an earlier file.
set -o pipefail
export PYTHONUNBUFFERED=1
: "${OUT:?set OUT to the folder for the results}"
mkdir -p "$OUT"
PY=${PYTHON:-python3}
cd "$(dirname "$0")/.." || exit 1

status=0
LOG="$OUT/${1:-checks}.log"   # one log per part: $OUT brings back 8 files at most
step() {   # step NAME COMMAND...: run, append to the part's log, remember the worst exit status
    local name=$1; shift
    local t0=$SECONDS
    echo "=== $name: $*" | tee -a "$LOG"
    "$@" 2>&1 | tee -a "$LOG"
    local rc=${PIPESTATUS[0]}
    echo "=== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$LOG"
    if [ "$rc" -gt "$status" ]; then status=$rc; fi
    return 0
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv || true
$PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"

CARD=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
GPU_WORKSHOPS=strided_softmax,softmax_backward,fused_gemm,split_softmax,streaming_attention

limited() {   # limited SECONDS COMMAND...: stop the command (SIGINT, then KILL) after SECONDS
    local seconds=$1; shift
    timeout -s INT -k 20 "$seconds" "$@"
}

install_wheels() {   # the wheels results/gpu_wheels.sh downloaded (.whl/) into /tmp/site
    if ! ls .whl/*.whl >/dev/null 2>&1; then
        echo "no wheels in .whl/: run 'bash results/gpu_wheels.sh' where PyPI answers, then carry .whl" >&2
        exit 66
    fi
    rm -rf /tmp/site
    $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
}

run_tests() {   # run_tests LIMIT: the README's test command, stopped after LIMIT seconds
    # 16 cores: test workers, and each test's own check and compile workers capped at
    # two (a 2-core machine gives it two and none), torch one CPU thread per process:
    # left to the machine's size, every test would start 8 to 16 workers of its own.
    export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH KERNEL_COURSE_OFFLINE=1
    export KERNEL_COURSE_POOL=${KERNEL_COURSE_POOL:-2} KERNEL_COURSE_COMPILERS=${KERNEL_COURSE_COMPILERS:-2}
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
    local workers=${WORKERS:-12}
    step tests timeout -s INT -k 30 "$1" $PY -m pytest -q -n "$workers" --maxprocesses "$workers" \
        --junitxml "$OUT/tests-junit.xml" ${PYTEST_ARGS:-}
    $PY results/junit_summary.py "$OUT/tests-junit.xml" --output "$OUT/tests.json" \
        --workers "$workers" --exit-code "$status" || status=1
    rm -f "$OUT/tests-junit.xml"   # tests.json holds what it says; the XML is several MB
}

case "${1:-checks}" in
timing)
    step latency-h200 limited 300 $PY -m tui.latency --workshops "${WORKSHOPS:-$GPU_WORKSHOPS}" \
        --repeats "${REPEATS:-1}" --paths warm --benchmarks --json "$OUT/latency-h200.json"
    step bench-aa limited 200 $PY -m checks.benchmark --op all --solution --timing both \
        --shapes comparison --aa --output "$OUT/bench-aa.json"
    step bench-both limited 90 $PY -m checks.benchmark --op all --solution --timing both --quick \
        --output "$OUT/bench-both.json"
    $PY results/latency_table.py --label "${CARD:-GPU}" "$OUT/latency-h200.json" || status=1
    ;;
correctness)
    step self-check limited 180 $PY -m checks all --include-gpu --self-check --json "$OUT/self-check.json"
    install_wheels
    run_tests "${TESTS_LIMIT:-320}"
    ;;
checks)
    step self-check $PY -m checks all --include-gpu --self-check --json "$OUT/self-check.json"
    step bench-both $PY -m checks.benchmark --op all --solution --timing both --dtype all ${QUICK:+--quick} \
        --output "$OUT/bench-both.json"
    step bench-aa $PY -m checks.benchmark --op all --solution --timing both --shapes comparison --aa \
        ${QUICK:+--quick} --output "$OUT/bench-aa.json"
    step resources $PY -m checks.running.kernel_resources --study all --time --json "$OUT/resources-h200.json"
    # (charts are drawn again where the JSON is committed: $OUT brings back 8 files at most)
    $PY results/summarize.py --results "$OUT" --output "$OUT/SUMMARY.md" --charts /tmp/charts || status=1
    ;;
repair)
    # The repair search on the GPU (kernels compiled, not interpreted): mutants of each
    # GPU workshop's reference answer (REPAIR_PER_SOURCE, default 3), each checked, then
    # searched from that verdict for a verified fix within REPAIR_BUDGET seconds (the JSON is
    # rewritten after each mutant: a step stopped at its limit keeps what it measured); then
    # the GPU self-check.  The search screens changes in Triton's interpreter, which needs
    # numpy below 2.4: the wheels of results/gpu_wheels.sh (carry .whl) go in first.
    install_wheels
    export PYTHONPATH=/tmp/site:$PWD
    step repair limited "${REPAIR_LIMIT:-400}" $PY -m checks.repair.report --workshops ${GPU_WORKSHOPS//,/ } \
        --per-source "${REPAIR_PER_SOURCE:-3}" --no-designs --no-wrong --budget "${REPAIR_BUDGET:-30}" \
        --json "$OUT/repair-gpu.json"
    step self-check limited 170 $PY -m checks all --include-gpu --self-check --json "$OUT/self-check.json"
    ;;
latency)
    name=latency-h200${PART:+-$PART}
    step "$name" $PY -m tui.latency --workshops "${WORKSHOPS:-$GPU_WORKSHOPS}" --repeats "${REPEATS:-1}" \
        --paths "${PATHS:-warm,fresh}" --benchmarks --json "$OUT/$name.json"
    $PY results/latency_table.py --label "${CARD:-GPU}" "$OUT/$name.json" || status=1
    ;;
tests)
    # The README's test command (pyproject's options) on this machine, which has no network
    # and lacks the app's and the test extras' libraries: the wheels results/gpu_wheels.sh
    # downloaded (.whl/) go into /tmp/site first.  Writes tests.log and tests.json (counts,
    # duration, failures, skip reasons, the slowest tests).  WORKERS=N sets the test workers
    # (default 12); PYTEST_ARGS adds pytest arguments (test ids, -k); TESTS_LIMIT=S stops the
    # run after S seconds (default 540; unfinished tests are counted so).
    install_wheels
    run_tests "${TESTS_LIMIT:-540}"
    ;;
*)
    echo "usage: OUT=DIR bash results/run_h200.sh timing|correctness|repair|checks|latency|tests" >&2
    exit 64
    ;;
esac
echo "=== done in $SECONDS s; worst exit status $status"
exit "$status"
