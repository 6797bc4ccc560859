"""checks/judging/launches.py hears Triton for everyone, and checks/interpreter.py decides
the interpreter once: real kernels in Triton's interpreter (tests/conftest.py sets it),
the compile knobs through their public values, and a scan of the source that keeps both
jobs in one place each."""

import ast
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
import triton
import triton.knobs as knobs
import triton.language as tl
from triton.runtime import interpreter as triton_interpreter

from checks import interpreter
from checks.judging import launches

REPO = Path(__file__).resolve().parent.parent


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 8})], key=["n"])
@triton.jit
def _tuned_double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def _tritons_own() -> list:
    builder = type(triton_interpreter.interpreter_builder)
    return [
        triton_interpreter.InterpretedFunction.run,
        builder.create_masked_load,
        builder.create_masked_store,
    ]


TRITONS_OWN = _tritons_own()


class Hearing(launches.Listener):
    def __init__(self, name, log):
        self.name, self.log = name, log

    def around_launch(self, launch, proceed):
        self.log.append((self.name, "enter", launch.kind, launch.depth, launches.depth()))
        result = proceed()
        self.log.append((self.name, "leave", launch.kind, launch.depth))
        return result


def test_a_launch_is_heard_with_its_kernel_arguments_and_grid_and_nothing_stays_patched():
    x, out = torch.arange(10, dtype=torch.float32), torch.empty(10)
    heard = []

    class Keep(launches.Listener):
        def around_launch(self, launch, proceed):
            heard.append(launch)
            return proceed()

    with launches.listening(Keep()):
        _double[(2,)](x, out, 10, BLOCK=8)
    assert torch.equal(out, x * 2)
    (launch,) = heard
    assert launch.kind == launches.INTERPRETED and launch.depth == 0
    assert launch.name == "_double" and launch.file == __file__
    assert launch.args == (x, out, 10) and launch.kwargs == {"BLOCK": 8} and launch.grid == (2,)
    assert launch.arg_names() == ["x_ptr", "out_ptr", "n", "BLOCK"]
    assert _tritons_own() == TRITONS_OWN and launches.listeners() == ()
    _double[(2,)](x, out, 10, BLOCK=8)
    assert len(heard) == 1  # not heard once the block closed


def test_listeners_stack_outermost_first_and_leave_in_any_order():
    x, out = torch.arange(8, dtype=torch.float32), torch.empty(8)
    log: list = []
    first, second = Hearing("first", log), Hearing("second", log)
    outer = launches.listening(first)
    outer.__enter__()
    try:
        with launches.listening(second):
            _double[(1,)](x, out, 8, BLOCK=8)
            # the chain runs inside the launch: Triton's own work is at depth 1
            assert log == [
                ("first", "enter", "interpreted", 0, 1),
                ("second", "enter", "interpreted", 0, 1),
                ("second", "leave", "interpreted", 0),
                ("first", "leave", "interpreted", 0),
            ]
            outer.__exit__(None, None, None)  # the first leaves while the second stays
            outer = None
            assert launches.listeners() == (second,)
            assert _tritons_own() != TRITONS_OWN
            log.clear()
            _double[(1,)](x, out, 8, BLOCK=8)
            assert [entry[0] for entry in log] == ["second", "second"]
    finally:
        if outer is not None:
            outer.__exit__(None, None, None)
    assert launches.listeners() == () and _tritons_own() == TRITONS_OWN
    assert launches.depth() == 0


def test_a_listener_of_one_entry_point_has_only_that_one_wrapped_however_often_it_enters():
    from triton.runtime.jit import JITFunction

    class OnlyJit(launches.Listener):
        launch_kinds = frozenset({launches.JIT})

        def around_launch(self, launch, proceed):
            return proceed()

    tritons_run = JITFunction.__dict__["run"]
    entry = launches.listening(OnlyJit())
    for _ in range(3):  # one object, entered again and again (the cached-handle twin's way)
        with entry:
            assert JITFunction.__dict__["run"] is not tritons_run
            assert _tritons_own() == TRITONS_OWN  # the interpreter's entry point stays Triton's
        assert JITFunction.__dict__["run"] is tritons_run and launches.listeners() == ()
    log: list = []
    with launches.listening(Hearing("all", log)), entry:  # another listener wraps the rest
        assert _tritons_own() != TRITONS_OWN
        assert launches.listeners()[1] is entry.listener
    assert _tritons_own() == TRITONS_OWN and JITFunction.__dict__["run"] is tritons_run


def test_an_autotuned_launch_is_heard_outside_and_its_inner_run_one_level_down():
    x, out = torch.arange(20, dtype=torch.float32), torch.empty(20)
    log: list = []
    with launches.listening(Hearing("h", log)):
        _tuned_double[lambda meta: (triton.cdiv(20, meta["BLOCK"]),)](x, out, 20)
    assert torch.equal(out, x * 2)
    entered = [(kind, depth) for _, what, kind, depth, *_ in log if what == "enter"]
    assert entered[0] == (launches.AUTOTUNER, 0)
    assert (launches.INTERPRETED, 1) in entered[1:]
    assert all(depth >= 1 for _, depth in entered[1:])


def test_a_launch_that_raises_leaves_the_depth_as_it_was():
    log: list = []
    with launches.listening(Hearing("h", log)):
        with pytest.raises(Exception):  # noqa: B017 - whatever Triton raises for a missing argument
            _double[(1,)](torch.zeros(4), BLOCK=8)
        assert launches.depth() == 0


def test_memory_accesses_are_heard_before_and_stores_after_with_their_bytes():
    x, out = torch.arange(10, dtype=torch.float32), torch.empty(10)
    accesses, stores = [], []

    class Memory(launches.Listener):
        def access(self, access):
            accesses.append(
                (access.kind, access.addrs.copy(), access.elem, access.partly_masked, access.program_id)
            )

        def stored(self, access):
            stores.append((access.addrs.copy(), access.values.copy()))

    with launches.listening(Memory()):
        _double[(2,)](x, out, 10, BLOCK=8)
    assert [(a[0], a[4]) for a in accesses] == [
        ("load", (0, 0, 0)),
        ("store", (0, 0, 0)),
        ("load", (1, 0, 0)),
        ("store", (1, 0, 0)),
    ]
    last_load = accesses[2]
    assert last_load[2] == 4 and last_load[3] is True  # 2 of 8 lanes active
    assert ((last_load[1].astype(np.int64) - x.data_ptr()) // 4).tolist() == [8, 9]
    addrs, values = stores[1]
    assert ((addrs.astype(np.int64) - out.data_ptr()) // 4).tolist() == [8, 9]
    assert values.shape == (2, 4) and values.view(np.float32).ravel().tolist() == [16.0, 18.0]
    assert _tritons_own() == TRITONS_OWN


def test_a_listener_for_its_own_thread_is_not_told_of_another_threads_depth():
    seen = []
    x, out = torch.arange(8, dtype=torch.float32), torch.empty(8)

    class Inner(launches.Listener):
        def around_launch(self, launch, proceed):
            other = threading.Thread(target=lambda: seen.append(launches.depth()))
            other.start()
            other.join()
            return proceed()

    with launches.listening(Inner()):
        _double[(1,)](x, out, 8, BLOCK=8)
    assert seen == [0]


def test_the_compile_knobs_call_their_listeners_and_are_put_back():
    before = (knobs.runtime.jit_cache_hook, knobs.compilation.listener)
    asked, told = [], []

    class Compiles(launches.Listener):
        def compiling(self, **info):
            asked.append(info["key"])
            return info["key"] == "skip"

        def compiled(self, **info):
            told.append(info["cache_hit"])

    class Quiet(launches.Listener):
        def compiling(self, **info):
            return None

    with launches.listening(Compiles()), launches.listening(Quiet()):
        assert knobs.runtime.jit_cache_hook(key="k") is None
        assert knobs.runtime.jit_cache_hook(key="skip") is True  # one listener's True skips
        knobs.compilation.listener(cache_hit=True)
    assert asked == ["k", "skip"] and told == [True]
    assert (knobs.runtime.jit_cache_hook, knobs.compilation.listener) == before


def test_interpreter_env_switches_the_interpreter_on_or_off_for_a_child():
    base = {"PATH": "/bin", "TRITON_INTERPRET": "1"}
    assert interpreter.interpreter_env(False, base) == {"PATH": "/bin"}
    one = {name: "1" for name in interpreter.ONE_THREAD}
    assert interpreter.interpreter_env(True, {"PATH": "/bin"}) == {**base, **one}
    assert base == {"PATH": "/bin", "TRITON_INTERPRET": "1"}  # the base itself is left alone
    # an interpreted worker's math libraries on one thread, unless the user chose
    chosen = interpreter.interpreter_env(True, {"OMP_NUM_THREADS": "4"})
    assert chosen["OMP_NUM_THREADS"] == "4" and chosen["OPENBLAS_NUM_THREADS"] == "1"


@pytest.mark.parametrize(
    "shell, chosen, expected",
    [
        (None, True, "True 1"),
        (None, False, "False None"),
        ("1", False, "True 1"),
        ("true", None, "True true"),
    ],
)
def test_the_process_chooses_once_and_says_so(shell, chosen, expected):
    env = interpreter.interpreter_env(False)
    if shell is not None:
        env["TRITON_INTERPRET"] = shell
    code = (
        "import os\n"
        "from checks import interpreter\n"
        + (f"interpreter.select({chosen})\n" if chosen is not None else "")
        + "print(interpreter.active(), os.environ.get('TRITON_INTERPRET'))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == expected


# --- one place each, read from the source ------------------------------------------------------

ROOMS = ("checks", "workshops", "tui")
TRITON_SEAMS = {
    "InterpretedFunction",
    "CompiledKernel",
    "GridExecutor",
    "interpreter_builder",
    "Autotuner",
    "Heuristics",
    "jit_cache_hook",
    "launch_enter_hook",
    "launch_exit_hook",
}


def _sources() -> list:
    return sorted(p for room in ROOMS for p in (REPO / room).rglob("*.py") if "__pycache__" not in p.parts)


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _patches(source: str) -> list:
    """(line, what) for each use of Triton's launch seams or hooks, and each assignment to
    a knob, to JITFunction or to a ``.run`` / ``.__getitem__``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
        names += (
            [node.attr]
            if isinstance(node, ast.Attribute)
            else [node.id]
            if isinstance(node, ast.Name)
            else []
        )
        found += [(node.lineno, name) for name in names if name in TRITON_SEAMS]
        for t in node.targets if isinstance(node, ast.Assign) else []:
            dotted = _dotted(t)
            if (
                dotted.startswith("knobs.")
                or "JITFunction" in dotted
                or dotted.endswith((".run", ".__getitem__"))
            ):
                found.append((node.lineno, f"assigns {dotted}"))
    return found


def _switch_writes(source: str) -> list:
    """Lines that set, delete or pop ``TRITON_INTERPRET`` in a mapping or the environment."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if isinstance(node.slice, ast.Constant) and node.slice.value == "TRITON_INTERPRET":
                found.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("pop", "setdefault", "putenv", "unsetenv") and any(
                isinstance(a, ast.Constant) and a.value == "TRITON_INTERPRET" for a in node.args
            ):
                found.append(node.lineno)
    return found


def test_the_scans_find_a_patch_and_a_switch_write():
    sample = (
        "import os\n"
        "from triton.runtime.jit import JITFunction\n"
        "from triton.compiler.compiler import CompiledKernel\n"
        "JITFunction.run = None\n"
        "knobs.runtime.jit_cache_hook = print\n"
        "os.environ['TRITON_INTERPRET'] = '1'\n"
        "env.pop('TRITON_INTERPRET', None)\n"
        "print(os.environ.get('TRITON_INTERPRET'))\n"
    )
    assert [line for line, _ in _patches(sample)] == [3, 4, 5, 5]
    assert _switch_writes(sample) == [6, 7]  # reading it is not writing it


def test_only_the_launches_module_touches_tritons_launch_path():
    found = [
        f"{path.relative_to(REPO)}:{line}: {what}"
        for path in _sources()
        if path != REPO / "checks" / "judging" / "launches.py"
        for line, what in _patches(path.read_text(encoding="utf-8"))
    ]
    assert not found, "Triton is patched outside checks/judging/launches.py:\n" + "\n".join(found)


def test_only_the_interpreter_module_writes_tritons_switch():
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in _sources()
        if path != REPO / "checks" / "interpreter.py"
        for line in _switch_writes(path.read_text(encoding="utf-8"))
    ]
    assert not found, "TRITON_INTERPRET is written outside checks/interpreter.py:\n" + "\n".join(found)
