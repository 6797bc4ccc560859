"""The (torch, triton) pair scripts/setup.sh installs on a GPU machine resolves on PyPI alone,
with the project's own requirements: pip's dry run (metadata only, nothing downloaded
beyond it) picks one torch, the pinned Triton, and finds no conflict.

It needs PyPI. Without it the test fails and says so; a machine known to be offline (the
GPU machine of results/run_h200.sh) sets KERNEL_COURSE_OFFLINE=1 and the test is skipped
with that reason."""

import importlib.util
import json
import os
import re
import subprocess
import sys
import urllib.request

import pytest
from conftest import REPO

PYPI = "https://pypi.org/simple"

_spec = importlib.util.spec_from_file_location("choose_torch", REPO / "scripts" / "choose_torch.py")
choose_torch = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("choose_torch", choose_torch)
_spec.loader.exec_module(choose_torch)


def _project_requirements() -> list[str]:
    """pyproject.toml's [project] dependencies, without torch (the pair pins it)."""
    text = (REPO / "pyproject.toml").read_text()
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
    requirements = re.findall(r'^\s*"([^"]+)"', block, re.M)
    assert any(r.startswith("triton") for r in requirements), requirements
    return [r for r in requirements if not r.startswith("torch")]


def _pypi_answers() -> str | None:
    try:
        with urllib.request.urlopen(f"{PYPI}/torch/", timeout=15):
            return None
    except Exception as error:  # noqa: BLE001 - the reason is reported, whatever it is
        return f"{type(error).__name__}: {error}"


@pytest.mark.timeout(600)
def test_the_gpu_pair_resolves_on_pypi_with_one_torch_and_the_pinned_triton():
    if os.environ.get("KERNEL_COURSE_OFFLINE") == "1":
        pytest.skip("KERNEL_COURSE_OFFLINE=1: this machine has no network, PyPI's resolution is CI's to test")
    unreachable = _pypi_answers()
    assert unreachable is None, (
        f"PyPI ({PYPI}) did not answer ({unreachable}); this test resolves scripts/setup.sh's GPU pins "
        "against it and needs the network (set KERNEL_COURSE_OFFLINE=1 on a machine known to be offline)"
    )
    requirements = [*choose_torch.GPU_PAIR, *_project_requirements()]
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--ignore-installed",
        "--quiet",
        "--report",
        "-",
        "--isolated",
        "--index-url",
        PYPI,
        "--timeout",
        "60",
        *requirements,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, f"pip could not resolve {requirements} on PyPI:\n{done.stderr[-3000:]}"
    installs = json.loads(done.stdout)["install"]
    versions = {}
    for item in installs:
        versions.setdefault(item["metadata"]["name"].lower(), []).append(item["metadata"]["version"])
    pinned_torch = next(p for p in choose_torch.GPU_PAIR if p.startswith("torch==")).split("==")[1]
    pinned_triton = next(p for p in choose_torch.GPU_PAIR if p.startswith("triton==")).split("==")[1]
    assert versions["torch"] == [pinned_torch]
    assert versions["triton"] == [pinned_triton]
    assert all(len(v) == 1 for v in versions.values()), versions
    # the pair is the CUDA build, whose own triton requirement is the pinned one
    torch_meta = next(i["metadata"] for i in installs if i["metadata"]["name"].lower() == "torch")
    triton_requirement = [r for r in torch_meta.get("requires_dist", []) if r.lower().startswith("triton")]
    assert triton_requirement and all(f"=={pinned_triton}" in r for r in triton_requirement), (
        triton_requirement
    )
