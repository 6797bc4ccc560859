"""Fake torch wheels and PEP 503 indexes of them, for the tests of scripts/choose_torch.py.

A wheel is a zip with a dist-info folder; these hold an empty ``torch`` package, their
METADATA (with the Requires-Dist lines asked for) and, when asked, random padding in the
place of torch's libraries, so that reading the wheel differs from reading its METADATA.
The indexes offer no metadata files (PEP 658): a resolver must read the wheels."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

from pip._vendor.packaging.tags import sys_tags

REPO = Path(__file__).resolve().parent.parent

_spec = importlib.util.spec_from_file_location("choose_torch", REPO / "scripts" / "choose_torch.py")
choose_torch = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("choose_torch", choose_torch)  # dataclasses look their module up
_spec.loader.exec_module(choose_torch)
choose_torch = sys.modules["choose_torch"]

TAG = str(next(iter(sys_tags())))  # the wheel tag this Python wants most, e.g. cp311-cp311-linux_x86_64
CUDA_REQUIRES = ["nvidia-cublas-cu12==12.9.1.4; platform_system == 'Linux'", "nvidia-cudnn-cu12", "sympy"]


def make_wheel(folder: Path, version: str, tag: str = TAG, requires=(), pad: int = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"torch-{version}-{tag}.whl"
    dist = f"torch-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("torch/__init__.py", "")
        if pad:
            z.writestr("torch/lib/libtorch_cpu.so", os.urandom(pad))
        z.writestr(f"{dist}/METADATA", metadata)
        z.writestr(
            f"{dist}/WHEEL", f"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\nTag: {tag}\n"
        )
        z.writestr(f"{dist}/RECORD", "")
    return path


def make_index(root: Path, wheels, simple: str = "simple", metadata: bool = False) -> Path:
    """A PEP 503 index at root/simple (or root itself, as PyTorch's CPU index is laid
    out) listing the wheels, which stay where they are; metadata: each wheel's METADATA
    beside it as a PEP 658 file, and the page saying so."""
    index = root / simple if simple else root
    page = index / "torch"
    page.mkdir(parents=True, exist_ok=True)
    links = []
    for wheel in wheels:
        href = urllib.parse.quote(os.path.relpath(wheel, page))
        sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
        offered = ""
        if metadata:
            with zipfile.ZipFile(wheel) as z:
                text = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA")))
            Path(f"{wheel}.metadata").write_bytes(text)
            offered = f' data-dist-info-metadata="sha256={hashlib.sha256(text).hexdigest()}"'
        links.append(f'<a href="{href}#sha256={sha}"{offered}>{wheel.name}</a><br/>')
    page.joinpath("index.html").write_text(
        "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"
    )
    index.joinpath("index.html").write_text(
        '<!DOCTYPE html><html><body><a href="torch/">torch</a></body></html>\n'
    )
    return index


def index_url(index: Path) -> str:
    return "file://" + urllib.request.pathname2url(str(index))


_watching: list | None = None


def _audit(event, args):
    if event == "open" and _watching is not None and isinstance(args[0], (str, bytes, os.PathLike)):
        _watching.append((os.fsdecode(args[0]), args[1]))


sys.addaudithook(_audit)  # for this process's life; it records only inside watching_opens()


@contextlib.contextmanager
def watching_opens():
    """Every file this process opens meanwhile, as (path, mode), from Python's audit hooks."""
    global _watching
    _watching = []
    try:
        yield _watching
    finally:
        _watching = None
