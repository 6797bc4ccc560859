"""workshops/contract.py: interpret mode is an explicit setting, and the reference
answers launch their kernels the way the lessons teach."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from workshops import catalog, contract

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def restore_mode():
    before = contract.interpreting()
    yield
    contract.set_interpret(before)


def test_the_device_rule_follows_the_setting(restore_mode):
    x = torch.zeros(2, 3)
    contract.set_interpret(True)
    assert contract.interpreting() and contract.kernel_device_type() == "cpu"
    contract.check_tensor(x, "x", ndim=2)  # accepted (and remembered) in interpret mode
    contract.set_interpret(False)
    assert contract.kernel_device_type() == "cuda"
    with pytest.raises(
        ValueError, match=r"x: tensor is on cpu, expected a cuda tensor \(run with --interpret"
    ):
        contract.check_tensor(x, "x", ndim=2)  # what was accepted under the other mode is not reused
    contract.set_interpret(True)
    contract.check_tensor(x, "x", ndim=2)


@pytest.mark.parametrize("value, expected", [("1", True), (None, False)])
def test_until_set_it_is_triton_s_own_switch(value, expected):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if value is not None:
        env["TRITON_INTERPRET"] = value
    code = "from workshops import contract; print(contract.interpreting())"
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr[-1500:]
    assert r.stdout.strip() == str(expected)


def _jit_functions(tree) -> list:
    def is_jit(d):
        target = d.func if isinstance(d, ast.Call) else d
        return isinstance(target, ast.Attribute) and target.attr == "jit"

    return [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and any(map(is_jit, n.decorator_list))
    ]


@pytest.mark.parametrize("w", [w for w in catalog.workshops() if w.gpu], ids=lambda w: w.id)
def test_reference_answers_launch_with_kernel_grid(w):
    """In host code (outside the ``@triton.jit`` functions, which may call each other)
    every use of a kernel is ``kernel[grid](...)``; no compiled-kernel handle, no
    ``.run`` / ``.warmup``."""
    tree = ast.parse(w.solution.read_text(encoding="utf-8"))
    jitted = _jit_functions(tree)
    kernels = {f.name for f in jitted}
    assert kernels, f"{w.id}: no @triton.jit kernel found"
    device_code = {id(n) for f in jitted for n in ast.walk(f)}
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    launches, other = 0, []
    for node in ast.walk(tree):
        if id(node) in device_code:
            continue
        if isinstance(node, ast.Name) and node.id in kernels and isinstance(node.ctx, ast.Load):
            sub = parents.get(node)
            call = parents.get(sub)
            if isinstance(sub, ast.Subscript) and isinstance(call, ast.Call) and call.func is sub:
                launches += 1
            else:
                other.append(node.lineno)
        if isinstance(node, ast.Attribute) and node.attr in ("run", "warmup"):
            other.append(node.lineno)
    assert launches and not other, f"{w.id}: kernels used other than as kernel[grid](...) at lines {other}"
