"""Which torch scripts/setup.sh installs, as pip arguments, one a line on stdout.

* A machine with an NVIDIA GPU (`nvidia-smi -L` lists one): GPU_PAIR, the torch release
  built against the Triton the project pins, from the configured index (PyPI by default).
  Nothing is checked here: setup's `pip install` resolves it.
* A machine without one: a CPU build, never a CUDA download, decided from the indexes'
  pages without downloading a wheel. A PEP 503 page lists every file of torch, and a
  wheel's file name carries its version, local tag ("+cpu") and Python and platform tags.
  1. PyTorch's CPU index, when its page answers within a few seconds and lists
     CPU_INDEX_TORCH for this Python;
  2. else the newest "+cpu" torch (OLDEST_TORCH or newer) that the configured index lists
     for this Python: pip's own index-url, extra-index-url and find-links (a mirror, a
     local wheel folder), within pip's constraints;
  3. else the newest plain torch there, if its core metadata requires no CUDA package.
     The metadata is read without the wheel: the index's own metadata file (PEP 658),
     the METADATA member of a local wheel, or the zip directory and METADATA of a remote
     wheel by byte ranges (at most MAX_RANGE_BYTES); a server that sends whole files only
     leaves it unread, and unchosen.
  If none is, this says how to get one and exits 2.

Standard library only: it runs in the fresh venv before anything is installed, and asks
that venv's pip (PROBE) for its settings and the wheel tags its Python accepts.
Usage: python scripts/choose_torch.py [--python PATH]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser

# torch 2.11 is the release built against Triton 3.6 (pyproject.toml pins triton==3.6.0);
# tests/test_setup_resolution.py resolves this pair against PyPI.
GPU_PAIR = ("torch==2.11.0", "triton==3.6.0")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CPU_INDEX_TORCH = "torch==2.11.0+cpu"
OLDEST_TORCH = (2, 4)
PROBE_SECONDS = 5  # PyTorch's CPU index
INDEX_SECONDS = 30  # the configured index
MAX_RANGE_BYTES = 16 << 20  # a torch wheel's zip directory is 1-2 MB; the wheel, 200-900 MB

Run = Callable[..., subprocess.CompletedProcess]

# Run by the venv's Python: its pip's settings for `pip install` (configuration files and
# PIP_* variables) and the wheel tags it accepts, best first.
PROBE = r"""
import json, platform, sys
out = {"python": "%d%d" % sys.version_info[:2], "machine": platform.machine().lower()}
try:
    from pip._vendor.packaging.tags import sys_tags
    out["tags"] = [str(t) for t in sys_tags()]
except Exception as e:
    out["tags_error"] = repr(e)
try:
    from pip._internal.commands import create_command
    o, _ = create_command("install").parse_args([])
    out.update(index_url=o.index_url, extra_index_urls=o.extra_index_urls, find_links=o.find_links,
               no_index=o.no_index, constraints=o.constraints, cert=o.cert)
except Exception as e:
    out["settings_error"] = repr(e)
print(json.dumps(out))
"""


class NoCpuBuild(Exception):
    """No source this machine can reach offers a CPU build of torch."""


@dataclass(frozen=True)
class Choice:
    pip_args: tuple[str, ...]
    says: str


@dataclass
class Pip:
    """What the venv's pip would use: its sources, its Python's wheel tags, its constraints."""

    python: str = ""  # "311"
    machine: str = ""
    tags: list[str] = field(default_factory=list)  # empty: unknown, judged from python and machine
    sources: list[str] = field(default_factory=list)  # "index URL" / "links URL-or-folder"
    constraints: list[str] = field(default_factory=list)  # torch's specifiers in them, e.g. "<=2.14.1"
    cafile: str | None = None
    problem: str = ""  # why the settings could not be read


@dataclass(frozen=True)
class Wheel:
    """One torch wheel an index lists: its file name says all this."""

    version: str  # "2.13.0+cpu"
    url: str
    tags: frozenset[str]  # "cp311-cp311-manylinux_2_28_x86_64"
    metadata: bool  # the index offers its core metadata alone (PEP 658)

    @property
    def name(self) -> str:
        return urllib.parse.unquote(self.url.split("#")[0].rsplit("/", 1)[-1])


def has_nvidia_gpu(run: Run = subprocess.run, which: Callable[[str], str | None] = shutil.which) -> bool:
    if which("nvidia-smi") is None:
        return False
    try:
        done = run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and "GPU" in done.stdout


def ask_pip(python: str, run: Run = subprocess.run) -> Pip:
    try:
        done = run([python, "-c", PROBE], capture_output=True, text=True, timeout=120)
        out = json.loads(done.stdout)
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        return Pip(problem=f"{python} could not be asked ({e})")
    pip = Pip(python=out["python"], machine=out["machine"], tags=out.get("tags", []))
    if "settings_error" in out:
        pip.problem = f"pip's settings could not be read ({out['settings_error']})"
        return pip
    indexes = [] if out["no_index"] else [out["index_url"], *out["extra_index_urls"]]
    pip.sources = [f"index {u}" for u in indexes] + [f"links {u}" for u in out["find_links"]]
    pip.constraints = [spec for path in out["constraints"] for spec in _torch_constraints(path)]
    pip.cafile = out.get("cert")
    return pip


def _torch_constraints(path: str) -> list[str]:
    """torch's specifiers in a constraints file ("torch<=2.14.1" gives "<=2.14.1")."""
    try:
        text = open(path, encoding="utf-8").read()
    except OSError:
        return []
    specs = []
    for line in text.splitlines():
        line = line.split("#")[0].split(";")[0].strip()
        found = re.fullmatch(r"torch\s*((?:[<>=!~]=?\s*[\w.+*]+\s*,?\s*)+)", line, re.I)
        if found:
            specs += [s.strip() for s in found.group(1).split(",") if s.strip()]
    return specs


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def allowed(version: str, specs: Sequence[str]) -> bool:
    """Whether version meets every specifier (releases compared; a local tag is ignored,
    as PEP 440 does for a specifier without one; a specifier it cannot read is ignored)."""
    have = _release(version)
    for spec in specs:
        m = re.fullmatch(r"(===?|!=|<=|>=|<|>|~=)\s*(\d+(?:\.\d+)*)(?:\+\w+)?", spec)
        if not m:
            continue
        op, want = m.group(1), _release(m.group(2))
        n = max(len(have), len(want))
        a, b = have + (0,) * (n - len(have)), want + (0,) * (n - len(want))
        ok = {
            "==": a == b,
            "===": version == m.group(2),
            "!=": a != b,
            "<=": a <= b,
            ">=": a >= b,
            "<": a < b,
            ">": a > b,
            "~=": a >= b and have[: len(want) - 1] == want[:-1],
        }[op]
        if not ok:
            return False
    return True


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.append(dict(attrs))


def _request(url: str, headers: dict[str, str] | None = None) -> urllib.request.Request:
    """A request for url, its user:password (as pip accepts in an index URL) sent as a header."""
    parts = urllib.parse.urlsplit(url)
    headers = {"User-Agent": "kernel-course-setup", **(headers or {})}
    if parts.username is not None:
        login = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(login.encode()).decode()
        url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    return urllib.request.Request(url, headers=headers)


def _open(url: str, timeout: float, cafile: str | None = None, headers: dict[str, str] | None = None):
    context = ssl.create_default_context(cafile=cafile) if url.startswith("https:") else None
    return urllib.request.urlopen(_request(url, headers), timeout=timeout, context=context)


def _local(url: str) -> str | None:
    """The path of a file: URL or a plain path, else None."""
    if url.startswith("file:"):
        return urllib.request.url2pathname(urllib.parse.urlsplit(url).path)
    return None if "://" in url else os.path.abspath(url)


def torch_wheels(source: str, pip: Pip, timeout: float = INDEX_SECONDS) -> list[Wheel]:
    """Every torch wheel a source lists ("index URL": its PEP 503 page for torch;
    "links X": a folder's files, or the links of a page), read from the listing alone."""
    kind, where = source.split(" ", 1)
    if kind == "index":
        where = where.rstrip("/") + "/torch/"
    path = _local(where)
    if path is not None and os.path.isdir(path):
        if kind == "links":
            names = sorted(os.listdir(path))
            return _wheels([{"href": urllib.parse.quote(n)} for n in names], _file_url(path) + "/")
        where, path = _file_url(os.path.join(path, "index.html")), os.path.join(path, "index.html")
    elif path is not None:
        where = _file_url(path)
    if kind == "index" and path is not None and not os.path.exists(path):
        return []  # an index without torch
    try:
        with _open(where, timeout, pip.cafile, {"Accept": "text/html"}) as page:
            parser = _Links()
            parser.feed(page.read().decode("utf-8", "replace"))
    except urllib.error.HTTPError as e:
        if kind == "index" and e.code == 404:
            return []
        raise
    return _wheels(parser.links, where)


def _file_url(path: str) -> str:
    return "file://" + urllib.request.pathname2url(os.path.abspath(path))


def _wheels(links: list[dict[str, str | None]], base: str) -> list[Wheel]:
    wheels = []
    for link in links:
        href = link.get("href")
        if not href or link.get("data-yanked") is not None:
            continue
        url = urllib.parse.urljoin(base, href)
        name = urllib.parse.unquote(url.split("#")[0].rsplit("/", 1)[-1])
        m = re.fullmatch(r"torch-([^-]+)(?:-\d[^-]*)?-([^-]+)-([^-]+)-([^-]+)\.whl", name, re.I)
        if not m:
            continue
        py, abi, plat = (part.split(".") for part in m.group(2, 3, 4))
        tags = frozenset(f"{p}-{a}-{t}" for p in py for a in abi for t in plat)
        offered = link.get("data-core-metadata") or link.get("data-dist-info-metadata")
        wheels.append(Wheel(m.group(1), url, tags, offered not in (None, "false")))
    return wheels


def _rank(wheel: Wheel, pip: Pip) -> int | None:
    """How much this Python wants the wheel (lower: more), None when it cannot install it."""
    if pip.tags:
        ranks = [pip.tags.index(t) for t in wheel.tags if t in pip.tags]
        return min(ranks) if ranks else None
    for tag in wheel.tags:  # no tags from pip: this CPython on this machine's Linux
        py, abi, plat = tag.split("-")
        if py in (f"cp{pip.python}", "py3") and (plat == "any" or plat.endswith("_" + pip.machine)):
            return 0
    return None


def installable(wheels: list[Wheel], pip: Pip) -> dict[str, Wheel]:
    """Per version this Python can install (OLDEST_TORCH or newer, within pip's
    constraints), the wheel pip would take, newest version first."""
    best: dict[str, tuple[int, Wheel]] = {}
    for w in wheels:
        rank = _rank(w, pip)
        final = re.fullmatch(r"\d+(\.\d+)*(\.post\d+)?(\+[\w.]+)?", w.version)  # no a1, rc1, .dev
        if rank is None or not final or _release(w.version) < OLDEST_TORCH:
            continue
        if not allowed(w.version, pip.constraints):
            continue
        if w.version not in best or rank < best[w.version][0]:
            best[w.version] = (rank, w)
    order = sorted(best, key=lambda v: _release(v), reverse=True)
    return {v: best[v][1] for v in order}


class _Counted(io.RawIOBase):
    """A local file, counting the bytes read from it."""

    def __init__(self, f: io.BufferedReader) -> None:
        super().__init__()
        self.f, self.fetched = f, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.f.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.f.seek(offset, whence)

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        data = self.f.read(len(buffer))
        buffer[: len(data)] = data
        self.fetched += len(data)
        return len(data)


class _Ranges(io.RawIOBase):
    """A remote file read by HTTP byte ranges, only the parts asked for; at most
    MAX_RANGE_BYTES in all. A server that sends the whole file instead is left at once."""

    CHUNK = 256 << 10

    def __init__(self, url: str, cafile: str | None, timeout: float) -> None:
        super().__init__()
        self.url, self.cafile, self.timeout = url, cafile, timeout
        self.fetched, self.pos = 0, 0
        self.parts: list[tuple[int, bytes]] = []
        start, data, self.size = self._get(f"-{self.CHUNK}")
        self.parts.append((start, data))

    def _get(self, span: str) -> tuple[int, bytes, int]:
        with _open(self.url, self.timeout, self.cafile, {"Range": f"bytes={span}"}) as r:
            got = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", r.headers.get("Content-Range") or "")
            if r.status != 206 or not got:
                raise OSError("the server sends whole files only (no byte ranges)")
            start, end, size = (int(g) for g in got.groups())
            if self.fetched + end + 1 - start > MAX_RANGE_BYTES:
                raise OSError(f"more than {MAX_RANGE_BYTES >> 20} MiB of the wheel would be needed")
            data = r.read(end + 1 - start)
        self.fetched += len(data)
        return start, data, size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        n = max(0, min(len(buffer), self.size - self.pos))
        if n == 0:
            return 0
        for start, data in self.parts:
            if start <= self.pos and self.pos + n <= start + len(data):
                buffer[:n] = data[self.pos - start : self.pos - start + n]
                self.pos += n
                return n
        end = min(self.size, self.pos + max(n, self.CHUNK)) - 1
        self.parts.append(self._get(f"{self.pos}-{end}")[:2])
        return self.readinto(buffer)


def core_metadata(wheel: Wheel, pip: Pip, timeout: float = INDEX_SECONDS) -> tuple[str, int]:
    """The wheel's METADATA without downloading the wheel, and how many bytes were read
    for it; OSError when it cannot be had that way."""
    base = wheel.url.split("#")[0]
    if wheel.metadata:
        with _open(base + ".metadata", timeout, pip.cafile) as r:
            data = r.read(MAX_RANGE_BYTES)
        return data.decode("utf-8", "replace"), len(data)
    path = _local(base)
    if path is not None:
        with open(path, "rb") as f:
            counted = _Counted(f)
            return _metadata_member(counted), counted.fetched
    remote = _Ranges(base, pip.cafile, timeout)
    return _metadata_member(remote), remote.fetched


def _metadata_member(f) -> str:  # type: ignore[no-untyped-def]
    try:
        with zipfile.ZipFile(f) as z:
            name = next(n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
            return z.read(name).decode("utf-8", "replace")
    except (zipfile.BadZipFile, StopIteration) as e:
        raise OSError(f"no METADATA in the wheel ({e})") from None


def is_cpu_name(version: str) -> bool:
    """Whether a version's local tag says a CPU build: "+cpu", or "+cpu.cxx11.abi" as
    PyTorch's index named some."""
    return version.partition("+")[2].split(".")[0] == "cpu"


def cuda_requirements(metadata: str) -> list[str]:
    """The CUDA packages a torch's core metadata requires (empty: a CPU build)."""
    required = re.findall(r"^Requires-Dist:\s*([A-Za-z0-9._-]+)", metadata, re.M)
    return sorted({r.lower() for r in required if r.lower().startswith(("nvidia-", "cuda-"))})


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.1f} KiB"


def from_cpu_index(pip: Pip, tried: list[str], timeout: float = PROBE_SECONDS) -> Choice | None:
    version = CPU_INDEX_TORCH.split("==")[1]
    try:
        wheels = torch_wheels(f"index {CPU_INDEX}", pip, timeout)
    except (OSError, ValueError) as e:
        tried.append(f"PyTorch's CPU index ({CPU_INDEX}): no answer within {timeout} s ({e})")
        return None
    if version in installable(wheels, pip):
        says = f"no NVIDIA GPU: torch {version} (a CPU build) from PyTorch's CPU index"
        return Choice(("--index-url", CPU_INDEX, CPU_INDEX_TORCH), says)
    why = (
        ""
        if allowed(version, pip.constraints)
        else f" within pip's constraints ({', '.join(pip.constraints)})"
    )
    tried.append(f"PyTorch's CPU index lists no torch {version} wheel for this Python (cp{pip.python}){why}")
    return None


def from_configured_index(pip: Pip, tried: list[str]) -> Choice | None:
    if pip.problem:
        tried.append(f"the configured index: {pip.problem}")
        return None
    wheels: list[Wheel] = []
    for source in pip.sources:
        try:
            wheels += torch_wheels(source, pip)
        except (OSError, ValueError) as e:
            tried.append(f"{source.split(' ', 1)[1]} could not be read ({e})")
    versions = installable(wheels, pip)
    where = "the configured index"
    cpu = [v for v in versions if is_cpu_name(v)]
    if cpu:
        return Choice((f"torch=={cpu[0]}",), f"no NVIDIA GPU: torch {cpu[0]} (a CPU build) from {where}")
    plain = [v for v in versions if "+" not in v]
    older = f"{OLDEST_TORCH[0]}.{OLDEST_TORCH[1]}"
    if not plain:
        tried.append(f"{where}: no torch {older} or newer for this Python (cp{pip.python}), +cpu or plain")
        return None
    tried.append(f"{where}: no +cpu torch {older} or newer for this Python (cp{pip.python})")
    wheel = versions[plain[0]]
    try:
        metadata, read = core_metadata(wheel, pip)
    except (OSError, ValueError) as e:
        tried.append(
            f"{where}: torch {plain[0]} ({wheel.name}) was not checked: its metadata cannot be read "
            f"without downloading the wheel, which is not done for a build that may be CUDA ({e})"
        )
        return None
    cuda = cuda_requirements(metadata)
    how = f"its METADATA, {_size(read)} read without the wheel"
    if cuda:
        packages = f"{len(cuda)} CUDA package{'s' if len(cuda) > 1 else ''}"
        names = ", ".join(cuda[:3]) + (", ..." if len(cuda) > 3 else "")
        tried.append(f"{where}: torch {plain[0]} is a CUDA build: it requires {packages} ({names}; {how})")
        return None
    says = f"no NVIDIA GPU: torch {plain[0]} from {where}, a CPU build (it requires no CUDA package; {how})"
    return Choice((f"torch=={plain[0]}",), says)


def choose(gpu: bool, python: str, run: Run = subprocess.run, pip: Pip | None = None) -> Choice:
    if gpu:
        return Choice(GPU_PAIR, f"an NVIDIA GPU: {' '.join(GPU_PAIR)} from the configured index")
    if pip is None:
        pip = ask_pip(python, run)
    tried: list[str] = []
    choice = from_cpu_index(pip, tried) or from_configured_index(pip, tried)
    if choice is not None:
        return choice
    raise NoCpuBuild(
        "No CPU build of torch can be installed from here, and a CUDA build (gigabytes) is no use "
        "without an NVIDIA GPU. No wheel was downloaded.\n"
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
