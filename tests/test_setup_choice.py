"""scripts/choose_torch.py, the torch scripts/setup.sh installs, against local indexes of
fake torch wheels (tests/test_setup_index.py serves them over HTTP and counts the bytes).

Each index here is a PEP 503 folder without metadata files (no PEP 658 `.metadata`), the
kind that makes `pip install --dry-run torch` read whole wheels; the chooser's only
subprocess is its question to pip about its settings (PROBE), and the network is never
needed: PyTorch's CPU index is a local folder or a port that refuses at once."""

import os
import subprocess
import sys

import pytest
from conftest import REPO
from setup_indexes import CUDA_REQUIRES, TAG, choose_torch, index_url, make_index, make_wheel, watching_opens


@pytest.fixture
def pip_env(monkeypatch, tmp_path):
    """pip's settings from the environment alone, and PyTorch's CPU index refusing."""
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX", "PIP_CONSTRAINT", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setattr(choose_torch, "CPU_INDEX", "http://127.0.0.1:9/whl/cpu")  # discard port: refused
    monkeypatch.setenv("no_proxy", "127.0.0.1")  # asked directly, never through a proxy
    return monkeypatch


class Recorded:
    """subprocess.run, remembering each command."""

    def __init__(self):
        self.commands = []

    def __call__(self, command, **kwargs):
        self.commands.append(list(command))
        return subprocess.run(command, **kwargs)

    def only_asked_pip_for_its_settings(self):
        return self.commands == [[sys.executable, "-c", choose_torch.PROBE]]


def test_a_gpu_machine_gets_the_pinned_pair_without_asking_anything():
    choice = choose_torch.choose(True, "python", run=lambda *a, **k: pytest.fail("ran a command"))
    assert choice.pip_args == ("torch==2.11.0", "triton==3.6.0")


def test_the_gpu_pair_pins_the_triton_pyproject_pins():
    pyproject = (REPO / "pyproject.toml").read_text()
    triton = next(p for p in choose_torch.GPU_PAIR if p.startswith("triton=="))
    assert f'"{triton}"' in pyproject


def test_the_issue_a_mirror_holding_only_cuda_torch_stops_setup_without_downloading(pip_env, tmp_path):
    """Issue 45: PyTorch's CPU index unreachable, the configured index a mirror without
    metadata files holding a CUDA torch only. Setup stops, saying why, having read the
    wheel's METADATA alone: never a pip install or download, the wheel never copied."""
    wheel = make_wheel(tmp_path / "files", "2.14.1", requires=CUDA_REQUIRES, pad=4 << 20)
    pip_env.setenv("PIP_INDEX_URL", index_url(make_index(tmp_path / "mirror", [wheel])))
    run = Recorded()
    with watching_opens() as opened, pytest.raises(choose_torch.NoCpuBuild) as raised:
        choose_torch.choose(False, sys.executable, run=run)
    message = str(raised.value)
    assert "PyTorch's CPU index" in message and "no answer" in message
    assert "torch 2.14.1 is a CUDA build: it requires 2 CUDA packages (nvidia-cublas-cu12" in message
    assert "No wheel was downloaded" in message and f"--index-url {choose_torch.CPU_INDEX}" in message
    assert run.only_asked_pip_for_its_settings()
    assert [(p, mode) for p, mode in opened if p.endswith(".whl")] == [(str(wheel), "r")]  # read, once
    read = float(message.split("its METADATA, ")[1].split(" KiB")[0])
    assert read < 64 < wheel.stat().st_size / 1024, message  # KiB: the zip's directory and METADATA


def test_a_cpu_build_on_the_mirror_is_chosen_by_its_name_alone(pip_env, tmp_path):
    files = tmp_path / "files"
    wheels = [
        make_wheel(files, "2.14.1", requires=CUDA_REQUIRES),
        make_wheel(files, "2.13.0+cpu"),
        make_wheel(files, "2.12.1+cpu"),
        make_wheel(files, "2.3.0+cpu"),  # older than the course takes
    ]
    pip_env.setenv("PIP_INDEX_URL", index_url(make_index(tmp_path / "mirror", wheels)))
    run = Recorded()
    with watching_opens() as opened:
        choice = choose_torch.choose(False, sys.executable, run=run)
    assert choice.pip_args == ("torch==2.13.0+cpu",)
    assert "torch 2.13.0+cpu (a CPU build) from the configured index" in choice.says
    assert run.only_asked_pip_for_its_settings()
    assert not [p for p, _ in opened if p.endswith(".whl")], "a wheel was opened"


def test_pytorchs_cpu_index_comes_first_when_it_lists_the_pinned_build_for_this_python(pip_env, tmp_path):
    cpu_index = make_index(tmp_path / "cpu", [make_wheel(tmp_path / "cpu-files", "2.11.0+cpu")], simple="")
    pip_env.setattr(choose_torch, "CPU_INDEX", index_url(cpu_index))
    pip_env.setenv("PIP_INDEX_URL", index_url(make_index(tmp_path / "mirror", [])))
    with watching_opens() as opened:
        choice = choose_torch.choose(False, sys.executable)
    assert choice.pip_args == ("--index-url", choose_torch.CPU_INDEX, "torch==2.11.0+cpu")
    assert "PyTorch's CPU index" in choice.says
    assert not [p for p, _ in opened if p.endswith(".whl")]


def test_a_cpu_index_without_a_wheel_for_this_python_falls_to_the_configured_index(pip_env, tmp_path):
    other = make_wheel(tmp_path / "cpu-files", "2.11.0+cpu", tag="cp27-cp27mu-manylinux1_x86_64")
    pip_env.setattr(choose_torch, "CPU_INDEX", index_url(make_index(tmp_path / "cpu", [other], simple="")))
    mine = make_wheel(tmp_path / "files", "2.10.0+cpu")
    pip_env.setenv("PIP_INDEX_URL", index_url(make_index(tmp_path / "mirror", [mine])))
    choice = choose_torch.choose(False, sys.executable)
    assert choice.pip_args == ("torch==2.10.0+cpu",)


def test_a_plain_torch_is_chosen_when_its_metadata_requires_no_cuda(pip_env, tmp_path):
    wheels = [make_wheel(tmp_path / "files", "2.12.0", requires=["sympy>=1.13.3", "filelock"], pad=1 << 20)]
    pip_env.setenv("PIP_INDEX_URL", index_url(make_index(tmp_path / "mirror", wheels)))
    choice = choose_torch.choose(False, sys.executable)
    assert choice.pip_args == ("torch==2.12.0",)
    assert "a CPU build (it requires no CUDA package" in choice.says


def test_a_local_wheel_folder_in_find_links_is_read_by_its_file_names(pip_env, tmp_path):
    make_wheel(tmp_path / "wheels", "2.13.0+cpu")
    pip_env.setenv("PIP_NO_INDEX", "1")
    pip_env.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    with watching_opens() as opened:
        choice = choose_torch.choose(False, sys.executable)
    assert choice.pip_args == ("torch==2.13.0+cpu",)
    assert not [p for p, _ in opened if p.endswith(".whl")]


def test_pips_constraints_are_kept(pip_env, tmp_path):
    files = tmp_path / "files"
    wheels = [make_wheel(files, "2.14.0+cpu"), make_wheel(files, "2.13.0+cpu")]
    pip_env.setenv("PIP_INDEX_URL", index_url(make_index(tmp_path / "mirror", wheels)))
    (tmp_path / "constraints.txt").write_text("numpy<3\ntorch<2.14,!=2.13.1  # pinned by the admins\n")
    pip_env.setenv("PIP_CONSTRAINT", str(tmp_path / "constraints.txt"))
    assert choose_torch.choose(False, sys.executable).pip_args == ("torch==2.13.0+cpu",)


@pytest.mark.parametrize(
    "version, specs, ok",
    [
        ("2.13.0+cpu", ["<=2.14.1"], True),
        ("2.14.1", ["<=2.14.1"], True),
        ("2.14.2", ["<=2.14.1"], False),
        ("2.13.0+cpu", ["<2.13"], False),
        ("2.13.0+cpu", ["==2.13.0"], True),
        ("2.13.0+cpu", ["!=2.13.0"], False),
        ("2.12.1", ["~=2.12.0"], True),
        ("2.13.0", ["~=2.12.0"], False),
        ("2.13.0", ["==2.*"], True),  # not read: ignored
    ],
)
def test_allowed_reads_torchs_specifiers(version, specs, ok):
    assert choose_torch.allowed(version, specs) is ok


def test_a_cpu_build_is_named_by_its_local_tag():
    assert choose_torch.is_cpu_name("2.13.0+cpu") and choose_torch.is_cpu_name("2.1.0+cpu.cxx11.abi")
    assert not choose_torch.is_cpu_name("2.13.0") and not choose_torch.is_cpu_name("2.13.0+cu126")
    assert not choose_torch.is_cpu_name("2.13.0+cpuish")


def test_cuda_requirements_are_read_from_the_metadata():
    cuda = "Name: torch\nRequires-Dist: filelock\n"
    cuda += "Requires-Dist: nvidia-nccl-cu13==2.28.9; platform_system == 'Linux'\n"
    assert choose_torch.cuda_requirements(cuda) == ["nvidia-nccl-cu13"]
    assert choose_torch.cuda_requirements("Name: torch\nRequires-Dist: sympy\n") == []


def test_one_cuda_package_is_said_in_the_singular(pip_env, tmp_path):
    wheel = make_wheel(tmp_path / "files", "2.14.1", requires=["nvidia-nccl-cu13", "sympy"])
    pip_env.setenv("PIP_INDEX_URL", index_url(make_index(tmp_path / "mirror", [wheel])))
    with pytest.raises(choose_torch.NoCpuBuild) as raised:
        choose_torch.choose(False, sys.executable)
    assert "it requires 1 CUDA package (nvidia-nccl-cu13; its METADATA" in str(raised.value)
    assert TAG.count("-") == 2


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
