"""Whether this environment can run a reading at all, said before one is tried.

Triton's interpreter up to 3.6 turns a kernel's scalars, one-element numpy arrays, into
Python integers with ``int(array)`` (``tensor.__index__``: a loop's bounds, a scalar
argument used as an index), which numpy deprecated in 1.25 and made a TypeError in 2.4:
the readings' kernels then fail with ``InterpreterError: TypeError('only 0-dimensional
arrays can be converted to Python scalars')`` (triton-lang/triton#9171, fixed after 3.6
by #9172).  The project pins
``numpy<2.4`` for that reason, but an image may ship a newer one (a GPU image with
Triton 3.6 and numpy 2.5 did).

The versions are read from the installed distributions' metadata (:func:`installed`),
without importing either package.  Standard library only.
"""

from __future__ import annotations

import re
from importlib import metadata
from typing import Optional

EXIT_ENVIRONMENT = 4  # the exit code of a reading this environment cannot run
FIRST_BAD_NUMPY = (2, 4)
FIRST_FIXED_TRITON = (3, 7)  # the first release after the fix (#9172, January 2026)
INSTALL = 'pip install "numpy<2.4"'


def installed(dist: str) -> Optional[str]:
    """The installed version of the distribution ``dist`` (None: not installed)."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def release(version: str) -> tuple:
    """The leading numbers of a version: '2.5.0rc1' -> (2, 5, 0), '3.6.0+git' -> (3, 6, 0)."""
    out = []
    for part in version.split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group()))
        if m.end() < len(part):
            break
    return tuple(out)


def interpreter_problem() -> Optional[str]:
    """Why Triton's interpreter cannot run here (lines of text, the last one standing
    alone: what to install), or None when nothing known stands in its way."""
    numpy_version = installed("numpy")
    triton_version = installed("triton") or installed("pytorch-triton")
    if not numpy_version or not triton_version:
        return None
    if release(numpy_version) < FIRST_BAD_NUMPY or release(triton_version) >= FIRST_FIXED_TRITON:
        return None
    return (
        f"Triton {triton_version}'s interpreter converts a kernel's scalars (one-element arrays) to "
        f"Python integers, which numpy 2.4 and newer refuse: the kernels would fail with "
        f"TypeError('only 0-dimensional arrays can be converted to Python scalars') "
        f"(triton-lang/triton#9171).\n"
        f"Triton {triton_version}'s interpreter cannot run with numpy {numpy_version} (2.4 or newer) here: "
        f"install an older numpy in this environment: {INSTALL}"
    )
