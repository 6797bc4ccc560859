"""The benchmark's cached-handle launch mode (checks/benchmark/kernels.py).

On the CPU the launches go to a stand-in kernel class with the shape of Triton's
``JITFunction`` (``run(self, *args, grid, warmup, **kwargs)`` returning a compiled
kernel that launches as ``compiled[grid](*all_parameters)``), put in Triton's place as
the launch entry point that checks.judging.launches wraps, so what is cached, what is
replayed and what goes back to the dispatch are observed directly.  On a CUDA GPU, a
child process without the interpreter compares the real thing with the plain launch.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import triton.language as tl

from checks.benchmark import kernels, specs
from checks.judging import launches

REPO = Path(__file__).resolve().parent.parent


def _kernel_class():
    """A fresh stand-in class per test: its ``run`` is "Triton's dispatch", logged."""

    class Compiled:
        def __init__(self, key):
            self.key, self.launches = key, []

        def __getitem__(self, grid):
            return lambda *args: self.launches.append((grid, args))

    class Kernel:
        dispatched: list = []

        def __init__(self, fn):
            self.fn, self.pre_run_hooks, self.compiled = fn, [], {}

        def run(self, *args, grid, warmup, **kwargs):
            type(self).dispatched.append((grid, args, kwargs))
            key = repr((len(args), sorted(kwargs.items())))
            return self.compiled.setdefault(key, Compiled(key))

        def __getitem__(self, grid):
            return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    return Kernel


@pytest.fixture
def Kernel(monkeypatch):
    """The stand-in class, heard as Triton's JIT dispatch is (and nothing else is)."""
    cls = _kernel_class()
    monkeypatch.setattr(launches, "launch_points", lambda: [(cls, "run", launches.JIT)])
    return cls


def _scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr, EVEN: tl.constexpr = True):
    pass


def test_the_first_launch_dispatches_and_the_next_ones_replay_the_handle(Kernel):
    tritons_run = Kernel.__dict__["run"]
    k = Kernel(_scale)
    x, out = torch.zeros(64), torch.zeros(64)
    call = kernels.cached_handles(lambda: k[(4,)](x, out, 64, 0.5, BLOCK=16, num_warps=4))
    first = call()
    assert len(Kernel.dispatched) == 1 and first.launches == []
    call()
    call()
    assert len(Kernel.dispatched) == 1  # no more dispatches
    # every parameter in order: the runtime arguments, the constexpr keyword, the default;
    # a one-axis grid padded to three
    assert first.launches == [((4, 1, 1), (x, out, 64, 0.5, 16, True))] * 2
    assert Kernel.__dict__["run"] is tritons_run  # Triton's run is back after each call


def test_a_new_specialization_dispatches_again(Kernel):
    k = Kernel(_scale)
    x = torch.zeros(64)
    misaligned = torch.zeros(65)[1:]  # 4 bytes past a 16-byte boundary
    n = [64]
    tensors = [x]
    call = kernels.cached_handles(lambda: k[(1,)](tensors[0], x, n[0], 1.0, BLOCK=16))
    call()
    for value in (65, 1, 2**31):  # not divisible by 16; equal to 1; past int32
        n[0] = value
        call()
    n[0] = 80  # divisible by 16 and int32, like 64: the handle of the first call
    call()
    tensors[0] = misaligned
    call()
    assert [d[1][2] for d in Kernel.dispatched] == [64, 65, 1, 2**31, 80]
    assert [d[1][0] is misaligned for d in Kernel.dispatched] == [False] * 4 + [True]
    assert len(Kernel.dispatched) == 5  # 80 replayed the first handle
    changed_block = kernels.cached_handles(lambda: k[(1,)](x, x, 64, 1.0, BLOCK=32))
    changed_block()
    assert len(Kernel.dispatched) == 6  # a constexpr keyword is part of the key


def test_launches_the_cache_cannot_replay_always_dispatch(Kernel):
    k = Kernel(_scale)
    x = torch.zeros(8)
    cases = [
        lambda: k[(1,)](x, x, 8, 1.0, 16),  # a constexpr by position: its value is not in the key
        lambda: k[lambda meta: (1,)](x, x, 8, 1.0, BLOCK=16),  # a callable grid
        lambda: k[(1,)](x, x, 8, (1, 2), BLOCK=16),  # an argument Triton treats as a tuple
        lambda: k[(1,)](x, x, 8, 1.0, BLOCK=[16]),  # an unhashable keyword
    ]
    for fn in cases:
        Kernel.dispatched.clear()
        call = kernels.cached_handles(fn)
        for _ in range(3):
            call()
        assert len(Kernel.dispatched) == 3
    hooked = Kernel(_scale)
    hooked.pre_run_hooks.append(lambda *a, **kw: None)
    Kernel.dispatched.clear()
    call = kernels.cached_handles(lambda: hooked[(1,)](x, x, 8, 1.0, BLOCK=16))
    call()
    call()
    assert len(Kernel.dispatched) == 2


def test_a_listener_registered_before_hears_every_launch_replayed_or_not(Kernel):
    k = Kernel(_scale)
    x = torch.zeros(8)
    call = kernels.cached_handles(lambda: k[(1,)](x, x, 8, 1.0, BLOCK=16))
    heard = []

    class Hearing(launches.Listener):
        def around_launch(self, launch, proceed):
            heard.append((launch.kernel, launch.args, launch.kwargs, launch.grid))
            return proceed()

    with launches.listening(Hearing()):
        for _ in range(3):
            call()
    assert heard == [(k, (x, x, 8, 1.0), {"BLOCK": 16}, (1,))] * 3  # each launch as it was asked for
    assert len(Kernel.dispatched) == 1  # the second and third replayed the handle
    first = next(iter(call.handles.values()))[0]
    assert first.launches == [((1, 1, 1), (x, x, 8, 1.0, 16, True))] * 2


def test_run_is_restored_when_the_call_raises(Kernel):
    tritons_run = Kernel.__dict__["run"]

    def broken():
        raise ValueError("x: wrong")

    call = kernels.cached_handles(broken)
    with pytest.raises(ValueError):
        call()
    assert Kernel.__dict__["run"] is tritons_run and not hasattr(Kernel.run, "__wrapped__")
    assert launches.listeners() == ()


def test_the_twin_follows_the_candidate_it_repeats():
    plain = [
        dict(name="a", role="candidate", config={"num_warps": 4}, fn=lambda: 1),
        dict(name="b", role="candidate", config={"num_warps": 8}, fn=lambda: 2),
        dict(name="torch", role="baseline", config={}, fn=lambda: 3),
    ]
    got = kernels.with_cached_handle(plain, {"num_warps": 8})
    assert [v["name"] for v in got] == ["a", "b", "b, cached handle", "torch"]
    twin = got[2]
    assert twin["role"] == "candidate" and twin["config"] == {"num_warps": 8, "launch": "cached handle"}
    assert twin["fn"]() == 2  # the same wrapper call (nothing launched: Triton's run untouched)
    assert got[1]["default"] and not any(v.get("default") for v in got[:1] + got[2:])
    assert kernels.with_cached_handle(plain, {"num_warps": 2}) == plain


def test_the_first_view_keeps_the_default_candidate_and_pytorchs_rows():
    plain = [
        dict(name="a", role="candidate", config={"num_warps": 4}, fn=lambda: 1),
        dict(name="b", role="candidate", config={"num_warps": 8}, fn=lambda: 2),
        dict(name="torch", role="baseline", config={}, fn=lambda: 3),
        dict(name="aten", role="peer", config={}, fn=lambda: 4),
    ]
    marked = kernels.with_cached_handle(plain, {"num_warps": 8})
    assert [v["name"] for v in kernels.first_view(marked)] == ["b", "torch", "aten"]
    # no candidate marked: the first one stands for the defaults
    assert [v["name"] for v in kernels.first_view(plain)] == ["a", "torch", "aten"]


@pytest.mark.parametrize("op", specs.benchmarked_ops())
def test_the_real_specs_time_the_default_launch_both_ways(op, monkeypatch):
    """Each real spec's variants, with a stand-in module that records how it was called:
    exactly one cached-handle variant, right after the candidate it repeats, calling the
    module the same way."""
    spec = specs.load_spec(op)
    shape = next(s for s in spec.SHAPES if s["role"] == "comparison")
    calls = []

    class Module:
        def __getattr__(self, name):
            def fn(*args, **kwargs):
                calls.append((name, kwargs))
                raise TypeError("a probe only")  # e.g. the GEMM's wide-tile probe says no

            return fn

    inputs = {name: torch.zeros(2, 2) for name in ("x", "y", "grad_output", "a", "b", "bias", "q", "k", "v")}
    variants = spec.variants(Module(), inputs, shape)
    names = [v["name"] for v in variants]
    twins = [i for i, v in enumerate(variants) if (v.get("config") or {}).get("launch") == "cached handle"]
    assert len(twins) == 1, names
    i = twins[0]
    assert names[i] == f"{names[i - 1]}, cached handle"
    calls.clear()
    for v in (variants[i - 1], variants[i]):
        with pytest.raises(TypeError):
            v["fn"]()
    assert calls[0] == calls[1]
    first = kernels.first_view(variants)  # what the app times after a pass: one candidate, the default
    assert [v["name"] for v in first if v.get("role", "candidate") == "candidate"] == [names[i - 1]]
    others = [v for v in variants if v.get("role") != "candidate"]  # PyTorch's rows, all kept
    assert [v for v in first if v.get("role") != "candidate"] == others


# --- on a CUDA GPU: the real handles, in a child process without the interpreter -------------

GPU_SCRIPT = """
import sys, torch
sys.path.insert(0, sys.argv[1])
from checks.benchmark import kernels
from checks.judging.engine import load_exercise
from workshops import catalog
mod = load_exercise(catalog.get("strided_softmax").solution)
x = torch.randn(512, 300, device="cuda").t()  # the tiled path
y = torch.randn(64, 1000, device="cuda")  # the row path
for inp in (x, y):
    plain = lambda: mod.softmax(inp)
    cached = kernels.cached_handles(plain)
    want = plain()
    for _ in range(3):
        got = cached()
    torch.cuda.synchronize()
    assert torch.equal(got, want)
    handles = list(cached.handles.values())
    assert len(handles) == 1 and handles[0][0] is not None, handles
print("OK")
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_cached_handles_give_the_plain_launch_answer():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run(
        [sys.executable, "-c", GPU_SCRIPT, str(REPO)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout[-1500:] + r.stderr[-1500:]
