"""``python -m checks --sanitize``: the same command again under compute-sanitizer's
memcheck, its findings a failure even when every check passed.  Standard library only."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from checks.command_line import EXIT_UNAVAILABLE
from checks.judging.records import plural
from checks.judging.report import Printer


def run_sanitized(argv: list, out: Printer) -> int:
    """Re-run this command under compute-sanitizer's memcheck; its findings become a
    failure even when every check passed (an out-of-bounds read can give right numbers)."""
    tool = shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.path.exists(p)), None
    )
    if tool is None:
        out.line("--sanitize: compute-sanitizer was not found (it ships with the CUDA toolkit)")
        return EXIT_UNAVAILABLE
    inner = [a for a in argv if a != "--sanitize"]
    if not any(a == "--timeout" or a.startswith("--timeout=") for a in inner):
        inner += ["--timeout", "0"]  # in one process, as memcheck slows it many times over
    cmd = [
        tool,
        "--tool",
        "memcheck",
        "--error-exitcode",
        "99",
        "--print-limit",
        "20",
        sys.executable,
        "-m",
        "checks",
        *inner,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    findings = [l for l in (proc.stdout + proc.stderr).splitlines() if l.startswith("=========")]
    summary = next((l for l in findings if "ERROR SUMMARY" in l), "")
    m = re.search(r"ERROR SUMMARY: (\d+) error", summary)
    errors = int(m.group(1)) if m else (1 if proc.returncode == 99 else 0)
    if errors:
        out.line(f"compute-sanitizer found {plural(errors, 'memory error')}:", "bold red")
        for l in findings[:40]:
            out.line(f"  {l}")
        return 1
    out.line("compute-sanitizer: no memory errors found")
    return proc.returncode
