"""Whether Triton's interpreter runs the kernels: decided once per process, here.

Triton reads its switch, the ``TRITON_INTERPRET`` environment variable, when a kernel is
decorated, so the choice is made before any exercise or case module is imported: the
check command and the check worker call :func:`select` first thing, and nothing else in
this process writes the variable.  A child process gets its environment from
:func:`interpreter_env`.  Whoever runs a check afterwards is told the mode (the check
context's ``interpret``); :func:`active` answers for code that is not.

Standard library only, below every room (the app builds its children's environments
with it too).
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

ENV = "TRITON_INTERPRET"
_TRUE = ("1", "true", "on", "yes")  # what Triton itself reads as on

_chosen: Optional[bool] = None


def select(interpret: bool) -> None:
    """Choose for this process: with ``interpret`` Triton's interpreter runs the kernels
    (on CPU tensors).  Without it the environment is left as it is: a ``TRITON_INTERPRET``
    set in the shell still wins (the doctor warns about it).  Call it before Triton
    decorates a kernel; calling it again with the same answer changes nothing."""
    global _chosen
    if interpret:
        os.environ[ENV] = "1"
    _chosen = bool(interpret) or _switch_on(os.environ)


def active() -> bool:
    """Whether kernels decorated now run in the interpreter: the choice :func:`select`
    made, else Triton's own switch as the environment sets it."""
    return _chosen if _chosen is not None else _switch_on(os.environ)


# An interpreted worker runs on one core (there is one per core) and numpy's small
# matrix products only lose by spreading over threads; a value the user set stays.
ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def interpreter_env(interpret: bool, base: Optional[Mapping[str, str]] = None) -> dict:
    """A child process's environment: ``base`` (default: this process's) with Triton's
    interpreter switched on (and its math libraries on one thread each), or with the
    switch removed."""
    env = dict(os.environ if base is None else base)
    if interpret:
        env[ENV] = "1"
        for name in ONE_THREAD:
            env.setdefault(name, "1")
    else:
        env.pop(ENV, None)
    return env


def _switch_on(env: Mapping[str, str]) -> bool:
    return env.get(ENV, "").strip().lower() in _TRUE
