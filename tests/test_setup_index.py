"""scripts/choose_torch.py against a mirror without metadata files, served over HTTP on
this machine (127.0.0.1, no network), every byte it sends counted.

Issue 45: against such an index `pip install --dry-run torch` downloads whole wheels
(the CUDA torch and its CUDA libraries, 3 GB) only to decide not to install them. The
first test shows pip doing so against this very server; the others that the chooser
decides from the index's page and, for a torch whose name does not say "+cpu", from the
METADATA inside the wheel read by byte ranges, never the wheel."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest
from setup_indexes import CUDA_REQUIRES, choose_torch, make_index, make_wheel

PAD = 4 << 20  # the fake torch's "libraries": a wheel of 4 MiB, its METADATA well under 1 KiB


class Mirror:
    """A folder served on 127.0.0.1: ranges honoured or not; what was sent, per file."""

    def __init__(self, root, ranges=True):
        self.sent: dict[str, int] = {}
        self.requests: list[tuple[str, str | None]] = []
        mirror = self

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def log_message(self, *args):
                pass

            def do_GET(self):
                wanted = self.headers.get("Range")
                mirror.requests.append((self.path, wanted))
                path = self.translate_path(self.path)
                found = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted or "")
                if not (ranges and found and os.path.isfile(path)):
                    return self._whole()
                size = os.path.getsize(path)
                first, last = found.groups()
                start = size - int(last) if not first else int(first)
                end = min(size - 1, int(last)) if first and last else size - 1
                start = max(0, start)
                with open(path, "rb") as f:
                    f.seek(start)
                    data = f.read(end + 1 - start)
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self._send(data)

            def _whole(self):
                f = self.send_head()
                if f:
                    with f:
                        try:
                            while chunk := f.read(64 << 10):
                                self._send(chunk)
                        except (BrokenPipeError, ConnectionResetError):
                            pass

            def _send(self, data):  # counted first: the client may act on the bytes at once
                name = self.path.split("?")[0].rsplit("/", 1)[-1]
                mirror.sent[name] = mirror.sent.get(name, 0) + len(data)
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wheel_bytes(self):
        return {name: n for name, n in self.sent.items() if name.endswith(".whl")}

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mirror_of(monkeypatch, tmp_path):
    """Serve tmp_path; pip's settings: that index only, and PyTorch's CPU index refusing."""
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX", "PIP_CONSTRAINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setattr(choose_torch, "CPU_INDEX", "http://127.0.0.1:9/whl/cpu")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    servers = []

    def serve(ranges=True):
        servers.append(Mirror(tmp_path, ranges))
        monkeypatch.setenv("PIP_INDEX_URL", servers[-1].url + "/mirror/simple")
        return servers[-1]

    yield serve
    for server in servers:
        server.close()


def test_pips_dry_run_downloads_the_whole_wheel_from_this_mirror(mirror_of, tmp_path):
    """What issue 45 saw, in small: the index is truly one without metadata files."""
    wheel = make_wheel(tmp_path / "files", "2.14.1", requires=CUDA_REQUIRES, pad=PAD)
    make_index(tmp_path / "mirror", [wheel])
    mirror = mirror_of()
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed"]
    command += ["--no-cache-dir", "--quiet", "--report", "-", "torch==2.14.1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert mirror.wheel_bytes() == {wheel.name: wheel.stat().st_size}


def test_the_chooser_reads_the_metadata_by_ranges_never_the_wheel(mirror_of, tmp_path):
    wheel = make_wheel(tmp_path / "files", "2.14.1", requires=CUDA_REQUIRES, pad=PAD)
    make_index(tmp_path / "mirror", [wheel])
    mirror = mirror_of()
    with pytest.raises(choose_torch.NoCpuBuild) as raised:
        choose_torch.choose(False, sys.executable)
    assert "torch 2.14.1 is a CUDA build: it requires 2 CUDA packages" in str(raised.value)
    assert all(r is not None for path, r in mirror.requests if path.endswith(".whl")), mirror.requests
    sent = mirror.wheel_bytes()[wheel.name]
    assert sent <= choose_torch._Ranges.CHUNK * 2 < wheel.stat().st_size // 8, sent


def test_a_cpu_build_named_so_is_chosen_without_asking_for_any_wheel(mirror_of, tmp_path):
    files = tmp_path / "files"
    wheels = [make_wheel(files, "2.14.1", requires=CUDA_REQUIRES, pad=PAD), make_wheel(files, "2.13.0+cpu")]
    make_index(tmp_path / "mirror", wheels)
    mirror = mirror_of()
    assert choose_torch.choose(False, sys.executable).pip_args == ("torch==2.13.0+cpu",)
    assert [path for path, _ in mirror.requests] == ["/mirror/simple/torch/"]


def test_a_plain_cpu_torch_is_chosen_from_its_metadata_read_by_ranges(mirror_of, tmp_path):
    wheel = make_wheel(tmp_path / "files", "2.12.0", requires=["sympy"], pad=PAD)
    make_index(tmp_path / "mirror", [wheel])
    mirror = mirror_of()
    choice = choose_torch.choose(False, sys.executable)
    assert choice.pip_args == ("torch==2.12.0",)
    assert mirror.wheel_bytes()[wheel.name] < wheel.stat().st_size // 8


def test_a_server_without_ranges_leaves_the_plain_torch_unchosen(mirror_of, tmp_path):
    wheel = make_wheel(tmp_path / "files", "2.12.0", requires=["sympy"], pad=PAD)
    make_index(tmp_path / "mirror", [wheel])
    mirror_of(ranges=False)
    with pytest.raises(choose_torch.NoCpuBuild) as raised:
        choose_torch.choose(False, sys.executable)
    message = str(raised.value)
    assert "torch 2.12.0" in message and "was not checked" in message and "whole files only" in message


def test_an_index_offering_metadata_files_is_read_through_them(mirror_of, tmp_path):
    wheel = make_wheel(tmp_path / "files", "2.14.1", requires=CUDA_REQUIRES, pad=PAD)
    make_index(tmp_path / "mirror", [wheel], metadata=True)
    mirror = mirror_of()
    with pytest.raises(choose_torch.NoCpuBuild, match="CUDA build"):
        choose_torch.choose(False, sys.executable)
    assert mirror.wheel_bytes() == {}
    assert f"{wheel.name}.metadata" in mirror.sent, mirror.requests
