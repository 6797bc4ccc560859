"""A stand-in for ``python -m checks.benchmark`` in the app's tests: writes fixed rows.

With ``--stream-rows`` it first prints each row as the benchmark does (one JSON line on
stdout, or appended to the named file), waiting FAKE_BENCH_DELAY seconds after each, and
its text goes to stderr."""

import argparse
import json
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--op", required=True)
p.add_argument("--output", required=True)
p.add_argument("--file")
p.add_argument("--stream-rows", nargs="?", const="-")
p.add_argument("--shapes", choices=("comparison", "roofline", "all"), default="all")
p.add_argument("--dtype")
p.add_argument("--cap-s", type=float)
p.add_argument("--quick", action="store_true")
p.add_argument("--variants", choices=("all", "defaults"), default="all")
args = p.parse_args()
if os.environ.get("FAKE_BENCH_ARGS"):  # where a test reads the arguments it was given
    with open(os.environ["FAKE_BENCH_ARGS"], "a", encoding="utf-8") as f:
        f.write(json.dumps(sys.argv[1:]) + "\n")
if args.op == "broken":
    print("kernel exploded", file=sys.stderr)
    sys.exit(1)
rows = [
    {
        "op": args.op,
        "shape": "4096x4096",
        "dtype": "fp16",
        "variant": "torch",
        "role": "baseline",
        "median_us": 200.0,
        "p20_us": 198.0,
        "p80_us": 203.5,
        "speedup": 1.0,
        "gbps": 640.0,
        "tflops": None,
        "fraction_of_ceiling": 0.2,
        "status": "ok",
    },
    {
        "op": args.op,
        "shape": "4096x4096",
        "dtype": "fp16",
        "variant": "triton",
        "role": "yours",
        "median_us": 100.0,
        "p20_us": 99.0,
        "p80_us": 101.0,
        "speedup": 2.0,
        "gbps": 1280.0,
        "tflops": None,
        "fraction_of_ceiling": None,
        "status": "ok",
    },
]
delay = float(os.environ.get("FAKE_BENCH_DELAY", "0"))
for row in rows if args.stream_rows else []:
    line = json.dumps({"type": "bench_row", "row": row}) + "\n"
    if args.stream_rows == "-":
        sys.stdout.write(line)
        sys.stdout.flush()
    else:
        with open(args.stream_rows, "a", encoding="utf-8") as f:
            f.write(line)
    print(f"measured {row['variant']}", file=sys.stderr, flush=True)
    time.sleep(delay)
with open(args.output, "w", encoding="utf-8") as f:
    json.dump({"schema": "test", "results": rows}, f)
print("timed 2 variants", file=sys.stderr if args.stream_rows == "-" else sys.stdout)
