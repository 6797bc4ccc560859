"""A compile worker: ``python -m checks.running.compile_worker``.

A long-lived process that compiles kernel variants into Triton's cache, without
touching the GPU (the target is given), so that the one process running the checks
finds them compiled.  See :mod:`checks.running.compile_pool` for the parent side.

It reads one JSON request per line on stdin and answers each with one JSON line on its
stdout as it was started (the exercise's own prints, Python's or C's, go to
``/dev/null``):

* ``{"op": "warm", "target": [backend, arch, warp_size]}``: compile a tiny kernel for
  the target, paying the compiler's one-time start-up costs before a save arrives.
* ``{"op": "compile", "id", "file", "digest", "qualname", "data", "target",
  "folder"}``: import the exercise (again only when its bytes changed), compile the
  variant ``data`` of ``qualname``, drop the marker ``<folder>/<id>.done`` (or
  ``.failed``) and answer ``{"id", "ok", "seconds", "error"}``.  A file whose bytes are
  not ``digest`` is not compiled (the check run imports another save).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time


def _reply_channel():
    """The original stdout, kept for answers; file descriptor 1 then goes to /dev/null."""
    reply = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w", encoding="utf-8")
    return reply


class Exercise:
    """The exercise module of the last compile request, imported once per content."""

    def __init__(self):
        self.digest, self.module, self.error = None, None, ""

    def get(self, path: str, digest: str):
        from checks.judging.engine import LoadError, load_exercise

        try:
            with open(path, "rb") as f:
                now = hashlib.sha256(f.read()).hexdigest()
        except OSError as e:
            return None, f"cannot read {path}: {e}"
        if digest and now != digest:
            return None, "the file changed since the save"
        if now != self.digest:
            if self.module is not None:  # a long session imports one module per save
                sys.modules.pop(self.module.__name__, None)
            self.digest, self.module, self.error = now, None, ""
            try:
                self.module = load_exercise(path)
            except LoadError as e:
                self.error = str(e)
            except Exception as e:  # noqa: BLE001 - the check run reports it properly
                self.error = f"{type(e).__name__}: {e}"
        return self.module, self.error


def handle(request: dict, exercise: Exercise) -> dict:
    from checks.running import variants, warmup

    t0 = time.monotonic()
    op = request.get("op")
    if op == "warm":
        warmup.compile_ahead(tuple(request["target"]))
        return {"op": "warm", "ok": True, "seconds": round(time.monotonic() - t0, 4)}
    if op != "compile":
        return {"ok": False, "error": f"unknown op {op!r}"}
    ident, folder = request["id"], request["folder"]
    ok, error = False, ""
    mod, error = exercise.get(request["file"], request.get("digest", ""))
    if mod is not None:
        try:
            fn = variants.jit_function(mod, request["qualname"])
            variants.compile_variant(fn, request["data"], tuple(request["target"]))
            ok = True
        except Exception as e:  # noqa: BLE001 - the check run compiles it and reports the error
            error = f"{type(e).__name__}: {e}"
    variants.write_marker(folder, ident, ok, error)
    return {"id": ident, "ok": ok, "seconds": round(time.monotonic() - t0, 4), "error": error[:500]}


def main(argv=None) -> int:
    argparse.ArgumentParser(prog="python -m checks.running.compile_worker", description=__doc__).parse_args(
        argv
    )
    reply = _reply_channel()
    if hasattr(os, "nice"):
        # Below the check worker: while both want the CPU, the checks of the save come
        # first (each variant they wait for is already being compiled).
        os.nice(5)
    import torch  # noqa: F401 - what an exercise imports first, imported before any save
    import triton  # noqa: F401

    reply.write(json.dumps({"op": "ready", "pid": os.getpid()}) + "\n")
    exercise = Exercise()
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        try:
            answer = handle(request, exercise)
        except Exception as e:  # noqa: BLE001 - one bad request must not end the worker
            answer = {"id": request.get("id"), "ok": False, "error": f"{type(e).__name__}: {e}"}
        reply.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
