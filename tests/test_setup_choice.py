"""scripts/choose_torch.py, the torch scripts/setup.sh installs, with pip and the network faked."""

import importlib.util
import json
import subprocess
import sys

import pytest
from conftest import REPO

_spec = importlib.util.spec_from_file_location("choose_torch", REPO / "scripts" / "choose_torch.py")
choose_torch = importlib.util.module_from_spec(_spec)
sys.modules["choose_torch"] = choose_torch  # dataclasses look their module up
_spec.loader.exec_module(choose_torch)


def _report(torch_version, *extra, torch_requires=()):
    installs = [
        {"metadata": {"name": "torch", "version": torch_version, "requires_dist": list(torch_requires)}}
    ]
    installs += [{"metadata": {"name": name, "version": "1.0"}} for name in extra]
    return {"install": installs}


CUDA_2_14 = _report(
    "2.14.1", "nvidia-cublas", "nvidia-cudnn-cu13", "triton", torch_requires=["nvidia-cublas"]
)
CPU_2_13 = _report("2.13.0+cpu", "sympy", "filelock")


class FakePip:
    """Answers `pip index versions` and `pip install --dry-run --report -` from tables."""

    def __init__(self, versions=(), reports=None):
        self.versions = list(versions)
        self.reports = reports or {}
        self.commands = []

    def __call__(self, command, **_):
        self.commands.append(command)
        if command[3:5] == ["index", "versions"]:
            return subprocess.CompletedProcess(command, 0, json.dumps({"versions": self.versions}), "")
        assert "--dry-run" in command and "--report" in command
        report = self.reports.get(command[-1])
        if report is None:
            return subprocess.CompletedProcess(command, 1, "", "ResolutionImpossible")
        return subprocess.CompletedProcess(command, 0, json.dumps(report), "")

    def installs_asked(self):
        return [c[-1] for c in self.commands if "--dry-run" in c]


def test_a_gpu_machine_gets_the_pinned_pair_without_asking_pip():
    pip = FakePip()
    choice = choose_torch.choose(True, "python", run=pip, reachable=lambda url: pytest.fail(url))
    assert choice.pip_args == ("torch==2.11.0", "triton==3.6.0")
    assert pip.commands == []


def test_the_gpu_pair_pins_the_triton_pyproject_pins():
    pyproject = (REPO / "pyproject.toml").read_text()
    triton = next(p for p in choose_torch.GPU_PAIR if p.startswith("triton=="))
    assert f'"{triton}"' in pyproject


def test_without_a_gpu_the_cpu_index_comes_first_when_it_answers():
    pip = FakePip(reports={"torch==2.11.0+cpu": _report("2.11.0+cpu", "sympy")})
    choice = choose_torch.choose(False, "python", run=pip, reachable=lambda url: True)
    assert choice.pip_args == ("--index-url", choose_torch.CPU_INDEX, "torch==2.11.0+cpu")
    assert "PyTorch's CPU index" in choice.says


def test_without_the_cpu_index_a_cpu_build_on_the_configured_index_is_taken():
    pip = FakePip(
        versions=["2.14.1", "2.13.0+cpu", "2.13.0", "2.3.0+cpu"],
        reports={"torch==2.13.0+cpu": CPU_2_13, "torch": CUDA_2_14},
    )
    choice = choose_torch.choose(False, "python", run=pip, reachable=lambda url: False)
    assert choice.pip_args == ("torch==2.13.0+cpu",)
    assert "2.13.0+cpu" in choice.says and "configured index" in choice.says
    assert pip.installs_asked() == ["torch==2.13.0+cpu"]


def test_the_newest_cpu_build_is_tried_first():
    pip = FakePip(
        versions=["2.9.0+cpu", "2.12.1+cpu", "2.10.0+cpu"],
        reports={"torch==2.12.1+cpu": _report("2.12.1+cpu")},
    )
    choice = choose_torch.choose(False, "python", run=pip, reachable=lambda url: False)
    assert choice.pip_args == ("torch==2.12.1+cpu",)


def test_a_plain_torch_is_taken_only_when_it_is_a_cpu_build():
    pip = FakePip(reports={"torch": _report("2.11.0", "sympy")})
    choice = choose_torch.choose(False, "python", run=pip, reachable=lambda url: False)
    assert choice.pip_args == ("torch",)


def test_without_a_gpu_a_cuda_build_is_never_chosen_and_the_message_says_how_to_get_one():
    pip = FakePip(versions=["2.14.1", "2.13.0"], reports={"torch": CUDA_2_14})
    with pytest.raises(choose_torch.NoCpuBuild) as raised:
        choose_torch.choose(False, "python", run=pip, reachable=lambda url: False)
    message = str(raised.value)
    assert "did not answer" in message
    assert "torch 2.14.1 with 3 CUDA packages" in message or "CUDA packages" in message
    assert f"--index-url {choose_torch.CPU_INDEX}" in message
    assert "+cpu" in message


def test_a_cuda_torch_offered_by_the_cpu_index_is_refused_too():
    pip = FakePip(reports={"torch==2.11.0+cpu": CUDA_2_14})
    with pytest.raises(choose_torch.NoCpuBuild):
        choose_torch.choose(False, "python", run=pip, reachable=lambda url: True)


@pytest.mark.parametrize(
    "report, cpu",
    [
        (CPU_2_13, True),
        (_report("2.11.0"), True),
        (CUDA_2_14, False),
        (_report("2.11.0", torch_requires=["nvidia-nccl-cu13==2.28.9; platform_system == 'Linux'"]), False),
        ({"install": [{"metadata": {"name": "sympy", "version": "1"}}]}, False),
    ],
)
def test_is_cpu_build_reads_the_report(report, cpu):
    assert choose_torch.is_cpu_build(report)[0] is cpu


def test_no_nvidia_smi_means_no_gpu_and_a_listed_gpu_means_one():
    assert not choose_torch.has_nvidia_gpu(which=lambda name: None)

    def listing(stdout, rc=0):
        return lambda command, **_: subprocess.CompletedProcess(command, rc, stdout, "")

    smi = lambda name: "/usr/bin/nvidia-smi"
    assert choose_torch.has_nvidia_gpu(run=listing("GPU 0: NVIDIA H200 (UUID: GPU-1)\n"), which=smi)
    assert not choose_torch.has_nvidia_gpu(run=listing("", rc=9), which=smi)


def test_main_prints_one_argument_a_line_and_exits_2_without_a_cpu_build(monkeypatch, capsys):
    monkeypatch.setattr(choose_torch, "has_nvidia_gpu", lambda: True)
    assert choose_torch.main([]) == 0
    assert capsys.readouterr().out.splitlines() == ["torch==2.11.0", "triton==3.6.0"]

    def no_build(*_args, **_kw):
        raise choose_torch.NoCpuBuild("No CPU build of torch")

    monkeypatch.setattr(choose_torch, "has_nvidia_gpu", lambda: False)
    monkeypatch.setattr(choose_torch, "choose", no_build)
    assert choose_torch.main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "No CPU build of torch" in captured.err


def test_setup_sh_installs_what_choose_torch_prints_and_silences_the_editable_banner():
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert "scripts/choose_torch.py" in setup
    assert "torch==" not in setup
    assert "ignore:Editable installation" in setup
