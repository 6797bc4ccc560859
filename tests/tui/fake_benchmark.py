"""A stand-in for ``python -m checks.benchmark`` in the app's tests: writes fixed rows."""

import argparse
import json
import sys

p = argparse.ArgumentParser()
p.add_argument("--op", required=True)
p.add_argument("--output", required=True)
p.add_argument("--file")
args = p.parse_args()
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
with open(args.output, "w", encoding="utf-8") as f:
    json.dump({"schema": "test", "results": rows}, f)
print("timed 2 variants")
