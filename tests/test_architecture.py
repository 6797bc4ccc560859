"""The import contract, read from the source (an AST scan of every .py file under
workshops/, checks/ and tui/; nothing is imported).

* Imports run one way: tui -> checks -> workshops.  workshops imports neither checks
  nor tui; checks never imports tui.
* The app never imports torch or triton (they load in the checks' child processes).
* The CPU path -- the catalog, the CPU workshop and its checks, the case and engine
  modules -- imports neither torch nor triton at module top level, so the CPU workshop
  runs with the standard library alone (``python -S -m checks online_normalizer``).
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("workshops", "checks", "tui")
GPU_LIBRARIES = ("torch", "triton")
# tui modules allowed to import torch or triton (none: the app never does).
TUI_MAY_IMPORT_GPU_LIBRARIES: frozenset = frozenset()
CPU_PATH = (
    "checks/judging/case.py",
    "checks/judging/engine.py",
    "checks/judging/cases/online_normalizer.py",
    "workshops/catalog.py",
    "workshops/online_normalizer/*.py",
)


def python_files():
    return sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py") if "__pycache__" not in p.parts)


def rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, top_level_only: bool = False) -> list:
    """(line, absolute module name) of every import in the file; with top_level_only,
    only those that run when the module is imported (not inside a def or class body)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_of(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found = []

    def visit(node, nested):
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
            )
            if not (top_level_only and nested):
                if isinstance(child, ast.Import):
                    found.extend((child.lineno, a.name) for a in child.names)
                elif isinstance(child, ast.ImportFrom):
                    base = child.module or ""
                    if child.level:
                        anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                        base = ".".join(anchor + ([base] if base else []))
                    found.append((child.lineno, base))
                    found.extend(
                        (child.lineno, f"{base}.{a.name}")
                        for a in child.names
                        if child.level and not child.module
                    )
            visit(child, inner)

    visit(tree, False)
    return found


def _top(name: str) -> str:
    return name.split(".")[0]


def violations(files, forbidden, top_level_only=False) -> list:
    return [
        f"{rel(p)}:{line} imports {name}"
        for p in files
        for line, name in imports(p, top_level_only)
        if _top(name) in forbidden
    ]


def under(pkg: str) -> list:
    return [p for p in python_files() if rel(p).startswith(pkg + "/")]


def test_the_scan_sees_the_packages_and_reads_imports(tmp_path):
    assert {rel(p).split("/")[0] for p in python_files()} == set(PACKAGES)
    sample = REPO / "checks" / "x_probe.py"
    src = "import os\nfrom . import engine\nimport torch as t\ndef f():\n    import triton\n"
    try:
        sample.write_text(src)
        assert [n for _, n in imports(sample)] == ["os", "checks", "checks.engine", "torch", "triton"]
        assert [n for _, n in imports(sample, top_level_only=True)] == [
            "os",
            "checks",
            "checks.engine",
            "torch",
        ]
    finally:
        sample.unlink()


def test_workshops_import_neither_checks_nor_tui():
    bad = violations(under("workshops"), {"checks", "tui"})
    assert not bad, "workshops must stand alone:\n" + "\n".join(bad)


def test_checks_never_import_tui():
    bad = violations(under("checks"), {"tui"})
    assert not bad, "imports run tui -> checks, never back:\n" + "\n".join(bad)


def test_the_app_never_imports_torch_or_triton():
    files = [p for p in under("tui") if rel(p) not in TUI_MAY_IMPORT_GPU_LIBRARIES]
    bad = violations(files, set(GPU_LIBRARIES))
    assert not bad, "the app runs torch and triton in child processes only:\n" + "\n".join(bad)


@pytest.mark.parametrize("pattern", CPU_PATH)
def test_the_cpu_path_imports_no_gpu_library_at_top_level(pattern):
    files = sorted(REPO.glob(pattern))
    assert files, f"nothing matches {pattern}"
    bad = violations(files, set(GPU_LIBRARIES), top_level_only=True)
    assert not bad, "the CPU workshop must run without torch or triton:\n" + "\n".join(bad)


def test_results_never_import_the_app():
    files = sorted((REPO / "results").glob("*.py"))
    bad = violations(files, {"tui"})
    assert not bad, "results/ reads evidence; it does not import the app:\n" + "\n".join(bad)


def test_the_apps_process_loads_neither_torch_nor_triton():
    """At run time: the app's modules, the controller and the compile pool's parent side
    import no GPU library (the engine imports them lazily, in child processes)."""
    code = (
        "import sys\n"
        "import tui.app, tui.headless, tui.screens.workshop, tui.latency\n"
        "import checks.running, checks.judging\n"
        "print(sorted(m for m in ('torch', 'triton') if m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_import_contracts():
    """The layers and front doors of pyproject.toml's [tool.importlinter] contracts."""
    # lint-imports' own entry point, through this interpreter: no console script is
    # needed (a `pip install --target` has none beside sys.executable)
    run = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    r = subprocess.run([sys.executable, "-c", run], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


# Library modules whose underscored attributes are private to their authors.
LIBRARIES = ("torch", "triton", "tl", "np", "numpy", "sys", "os", "textual", "inspect")
PUBLIC_DESPITE_THE_UNDERSCORE = {
    "os._exit",  # documented: leave a forked or broken process without cleanup
    # an aten operator (native_functions.yaml), PyTorch's own softmax backward: the peer
    # the benchmark times a learner's backward against
    "torch.ops.aten._softmax_backward_data",
}


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def test_no_private_attribute_of_a_library_is_used():
    found = []
    for path in python_files() + sorted((REPO / "results").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute):
                continue
            name = _dotted(node)
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            if private and name.split(".")[0] in LIBRARIES and name not in PUBLIC_DESPITE_THE_UNDERSCORE:
                found.append(f"{rel(path)}:{node.lineno}: {name}")
    assert not found, "private attributes of a library:\n" + "\n".join(found)


def test_launch_records_never_imports_launches():
    """launches imports launch_records (the listener base and the launch's shape); the other
    way round would make the two a circle, even for annotations only."""
    import ast

    tree = ast.parse((REPO / "checks/judging/launch_records.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert "checks.judging.launches" not in imported
    assert not any(
        isinstance(n, ast.ImportFrom)
        and n.module == "checks.judging"
        and any(a.name == "launches" for a in n.names)
        for n in ast.walk(tree)
    )


def test_the_benchmark_imports_one_way():
    """The command line uses the runner, the runner uses the plan; neither the runner nor
    the plan reaches back into the command line (not even inside a function)."""
    import ast

    def imported(path: str) -> set:
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        out = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.module:
                out.add(n.module)
                out |= {f"{n.module}.{a.name}" for a in n.names}
            elif isinstance(n, ast.Import):
                out |= {a.name for a in n.names}
        return out

    for path in ("checks/benchmark/runner.py", "checks/benchmark/planned.py"):
        assert "checks.benchmark.cli" not in imported(path), path
    assert "checks.benchmark.runner" not in imported("checks/benchmark/planned.py")
