"""Which torch scripts/setup.sh installs, as pip arguments, one a line on stdout.

* A machine with an NVIDIA GPU: GPU_PAIR, the torch release built against the Triton the
  project pins, from the configured index (PyPI by default).
* A machine without one: a CPU build, never a CUDA download. First PyTorch's CPU wheel
  index when it answers within a few seconds; else a "+cpu" torch the configured index
  (a mirror, a local wheel folder) holds; else whatever it would install for "torch", if
  that is a CPU build. Each is checked with `pip install --dry-run --report` first.
  If none is, this says how to get one and exits 2.

Standard library only: it runs in the fresh venv before anything is installed.
Usage: python scripts/choose_torch.py [--python PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# torch 2.11 is the release built against Triton 3.6 (pyproject.toml pins triton==3.6.0);
# tests/test_setup_resolution.py resolves this pair against PyPI.
GPU_PAIR = ("torch==2.11.0", "triton==3.6.0")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CPU_INDEX_TORCH = "torch==2.11.0+cpu"
OLDEST_TORCH = (2, 4)
PROBE_SECONDS = 5

Run = Callable[..., subprocess.CompletedProcess]


class NoCpuBuild(Exception):
    """No source this machine can reach offers a CPU build of torch."""


@dataclass(frozen=True)
class Choice:
    pip_args: tuple[str, ...]
    says: str


def has_nvidia_gpu(run: Run = subprocess.run, which: Callable[[str], str | None] = shutil.which) -> bool:
    if which("nvidia-smi") is None:
        return False
    try:
        done = run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and "GPU" in done.stdout


def answers(url: str, timeout: float = PROBE_SECONDS, urlopen: Callable = urllib.request.urlopen) -> bool:
    """Whether url answers at all within timeout seconds (a failed DNS lookup answers at once)."""
    try:
        with urlopen(url, timeout=timeout):
            return True
    except Exception:  # noqa: BLE001 - any failure means "not reachable"
        return False


def is_cpu_build(report: dict) -> tuple[bool, str]:
    """Whether a pip --report installs a torch without CUDA, and what it installs."""
    installs = report.get("install", [])
    names = {str(i["metadata"]["name"]).lower(): i["metadata"] for i in installs}
    torch = names.get("torch")
    if torch is None:
        return False, "no torch in what pip would install"
    version = str(torch["version"])
    cuda = sorted(n for n in names if n.startswith(("nvidia-", "cuda-")))
    if cuda:
        return False, f"torch {version} with {len(cuda)} CUDA packages ({', '.join(cuda[:3])}, ...)"
    if any(str(r).lower().startswith("nvidia-") for r in torch.get("requires_dist") or []):
        return False, f"torch {version}, a CUDA build"
    return True, f"torch {version}"


def dry_run(python: str, args: Sequence[str], run: Run = subprocess.run) -> dict | None:
    """pip's --report for installing args, or None when pip could not resolve them."""
    command = [
        python,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--ignore-installed",
        "--quiet",
        "--report",
        "-",
        "--timeout",
        "20",
        "--retries",
        "1",
        *args,
    ]
    try:
        done = run(command, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        return None


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def configured_cpu_versions(python: str, run: Run = subprocess.run) -> list[str]:
    """The "+cpu" torch versions the configured index offers, newest first."""
    try:
        done = run(
            [python, "-m", "pip", "index", "versions", "--json", "torch"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        versions = json.loads(done.stdout)["versions"] if done.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError, TypeError):
        return []
    cpu = [v for v in versions if v.endswith("+cpu") and _release(v) >= OLDEST_TORCH]
    return sorted(cpu, key=_release, reverse=True)


def choose(
    gpu: bool,
    python: str,
    run: Run = subprocess.run,
    reachable: Callable[[str], bool] = answers,
) -> Choice:
    if gpu:
        return Choice(GPU_PAIR, f"an NVIDIA GPU: {' '.join(GPU_PAIR)} from the configured index")
    tried: list[str] = []
    candidates: list[tuple[tuple[str, ...], str]] = []
    if reachable(CPU_INDEX + "/torch/"):
        candidates.append((("--index-url", CPU_INDEX, CPU_INDEX_TORCH), "PyTorch's CPU index"))
    else:
        tried.append(f"PyTorch's CPU index ({CPU_INDEX}) did not answer within {PROBE_SECONDS} s")
    candidates += [((f"torch=={v}",), "the configured index") for v in configured_cpu_versions(python, run)]
    candidates.append((("torch",), "the configured index"))
    for args, where in candidates:
        report = dry_run(python, args, run)
        if report is None:
            tried.append(f"{where}: pip could not resolve {args[-1]}")
            continue
        cpu, what = is_cpu_build(report)
        if cpu:
            return Choice(args, f"no NVIDIA GPU: {what} (a CPU build) from {where}")
        tried.append(f"{where}: {args[-1]} would install {what}")
    raise NoCpuBuild(
        "No CPU build of torch can be installed from here, and a CUDA build (gigabytes) is no use "
        "without an NVIDIA GPU.\n"
        + "".join(f"  - {line}\n" for line in tried)
        + "Install a CPU build into .venv yourself, then run scripts/setup.sh again (it keeps an "
        "installed torch):\n"
        f"  .venv/bin/python -m pip install {CPU_INDEX_TORCH} --index-url {CPU_INDEX}\n"
        "or, from a wheel file you downloaded elsewhere:\n"
        "  .venv/bin/python -m pip install ./torch-<version>+cpu-<tags>.whl"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose pip installs torch")
    args = parser.parse_args(argv)
    try:
        choice = choose(has_nvidia_gpu(), args.python)
    except NoCpuBuild as error:
        print(f"setup: {error}", file=sys.stderr)
        return 2
    print(f"setup: {choice.says}", file=sys.stderr)
    print("\n".join(choice.pip_args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
