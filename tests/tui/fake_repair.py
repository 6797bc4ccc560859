"""A stand-in for ``python -m checks.repair WORKSHOP --file PATH --jsonl`` in the app's
tests: prints its JSON lines (begin, progress, result) as the real search does.

Set by the environment: FAKE_REPAIR_STATUS (found, none, budget, not-applicable; crash:
no result line, a message on stderr, exit code 3), FAKE_REPAIR_STEPS (progress lines,
default 4), FAKE_REPAIR_DELAY (seconds after each, default 0), FAKE_REPAIR_PIDS (a file
where it writes its pid, the pid of a child it starts in its process group and the pid of
one it starts in a session of its own, as the real search starts its warm workers),
FAKE_REPAIR_ARGS (a file where it writes its arguments), FAKE_REPAIR_RECORDS (a file where
it writes the line of records it read from its input, with --records-from-stdin),
FAKE_REPAIR_READ_AFTER (seconds before it reads that line, as the real search reads it once a
worker is ready)."""

import argparse
import json
import os
import subprocess
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("workshop")
p.add_argument("--file", required=True)
p.add_argument("--interpret", action="store_true")
p.add_argument("--budget", type=float)
p.add_argument("--jsonl", action="store_true")
p.add_argument("--records-from-stdin", action="store_true")
args = p.parse_args()
env = os.environ
if env.get("FAKE_REPAIR_ARGS"):
    with open(env["FAKE_REPAIR_ARGS"], "a", encoding="utf-8") as f:
        f.write(json.dumps(sys.argv[1:]) + "\n")
workers = []
if env.get("FAKE_REPAIR_PIDS"):
    sleep = [sys.executable, "-c", "import time; time.sleep(300)"]
    workers = [subprocess.Popen(sleep), subprocess.Popen(sleep, start_new_session=True)]
    with open(env["FAKE_REPAIR_PIDS"] + ".tmp", "w", encoding="utf-8") as f:
        f.write(" ".join(str(p) for p in [os.getpid()] + [w.pid for w in workers]) + "\n")
    os.replace(env["FAKE_REPAIR_PIDS"] + ".tmp", env["FAKE_REPAIR_PIDS"])


if args.records_from_stdin:  # as the real search: the failing run's records, else stop
    time.sleep(float(env.get("FAKE_REPAIR_READ_AFTER", "0")))  # its workers warming first
    given = sys.stdin.readline()
    if env.get("FAKE_REPAIR_RECORDS"):
        with open(env["FAKE_REPAIR_RECORDS"], "a", encoding="utf-8") as f:
            f.write(given if given.endswith("\n") else given + "\n")
    if not given.strip():
        sys.exit(0)


def say(message: dict) -> None:
    print(json.dumps(message), flush=True)


status = env.get("FAKE_REPAIR_STATUS", "found")
steps, delay = int(env.get("FAKE_REPAIR_STEPS", "4")), float(env.get("FAKE_REPAIR_DELAY", "0"))
print("warming up the workers", flush=True)  # not a JSON line: the app skips it
say({"event": "begin", "candidates": steps})
for n in range(1, steps + 1):
    say({"event": "progress", "tried": n, "candidates": steps, "stage": "single", "seconds": n * delay})
    time.sleep(delay)
if status == "crash":
    print("Traceback (most recent call last):\nRuntimeError: the fake search broke", file=sys.stderr)
    sys.exit(3)
with open(args.file, encoding="utf-8") as f:
    lines = f.read().splitlines()
line = next((i for i, text in enumerate(lines, 1) if "return" in text), 1)
before = lines[line - 1] if lines else ""
after = before.replace("return", "return  0 +", 1)
repair = {"status": status, "tried": steps, "seconds": round(steps * delay, 1)}
if status == "found":
    repair.update(
        says=f"line {line}: the running sum is divided by the raw denominator, not the one "
        "rescaled to the new maximum, so every row that meets a larger value later comes out "
        "too small by the factor its maximum moved",
        line=line,
        kind="rescale",
        before=before,
        after=after,
        diff=f"--- {args.file}\n+++ {args.file}\n@@ -{line} +{line} @@\n-{before}\n+{after}\n",
    )
else:
    repair["note"] = f"no change of one or two edits made every check pass (tried {steps} changes in 0 s)"
say({"event": "result", "repair": repair})
for w in workers:
    w.kill()
    w.wait()
