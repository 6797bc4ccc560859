"""``python -m checks.mutation.worker``: a warm process that runs a workshop's checks in
Triton's interpreter on one mutant file after another (torch and triton imported once).

Protocol: one JSON job a line on stdin, ``{"n": N, "workshop": ID, "file": PATH}``; on the
channel the parent passes (``--channel-fd``), ``{"n": N, "begin": CHECK_ID}`` before each
check and ``{"n": N, "records": [...]}`` when the checks end.  The mutant's own prints go
to stderr.  End of stdin ends the worker.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from checks import interpreter


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m checks.mutation.worker")
    p.add_argument("--channel-fd", type=int, required=True)
    args = p.parse_args(argv)
    interpreter.select(True)  # before anything imports triton
    channel = os.fdopen(args.channel_fd, "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # a print of the mutant can never be read as a message

    import torch  # noqa: F401 - imported once for every mutant
    import triton  # noqa: F401

    from checks.judging.engine import run_checks

    def send(message: dict) -> None:
        channel.write(json.dumps(message, default=str) + "\n")
        channel.flush()

    send({"ready": True})
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        n = job["n"]
        records = run_checks(
            job["workshop"],
            job["file"],
            interpret=True,
            on_begin=lambda case: send({"n": n, "begin": case.id}),
        )
        send({"n": n, "records": [r.to_dict() for r in records]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
