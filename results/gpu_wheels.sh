#!/usr/bin/env bash
# Download, on a machine with PyPI, the wheels the test suite needs on the offline H200
# machine (python3.12, manylinux x86_64) beyond what it has: the app's libraries, the test
# extras and numpy<2.4 (Triton 3.6's interpreter breaks on numpy 2.4). They land in .whl/
# (git-ignored); `results/run_h200.sh tests` installs them there (carry ".whl" to it).
# The H200 machine already has torch, triton, pytest, pytest-xdist, pytest-timeout,
# hypothesis and rich (with their own dependencies), so those are not downloaded.
# Versions: those this repository's CI resolves (pip freeze of a scripts/setup.sh venv),
# so ruff and mypy judge the code as they do in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=(
    numpy==2.3.5
    textual==8.2.8 markdown-it-py==4.3.0 mdit-py-plugins==0.7.0 linkify-it-py==2.2.0
    platformdirs==4.14.9 typing_extensions==4.16.0
    watchfiles==1.3.0 anyio==4.16.0 idna==3.20
    jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
    attrs==26.1.0
    pytest-textual-snapshot==1.1.0 syrupy==4.8.0
    ruff==0.17.6
    import-linter==2.17 grimp==3.20 click==8.5.1 lazy-importer==0.1.0
    mypy_extensions==1.2.0 pathspec==1.1.1 librt==0.17.0 ast_serialize==0.13.1
    dask==2026.8.0 distributed==2026.8.0 cloudpickle==3.1.3 fsspec==2026.9.0 partd==1.4.2
    locket==1.0.0 toolz==1.2.0 PyYAML==6.0.4 importlib_metadata==10.2.0 zipp==4.1.2
    msgpack==1.2.4 psutil==7.2.2 sortedcontainers==2.4.0 tblib==3.2.2 tornado==6.6.1 zict==3.0.0
)
mkdir -p .whl
for wheel in "${WHEELS[@]}"; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .whl "$wheel"
done
# mypy's pure-Python wheel: the compiled one is 12 MiB larger, and a device call carries
# at most 64 MiB with the working tree (slower type checking, same verdicts).
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation py \
    --platform any -d .whl mypy==2.4.1
echo "$(ls .whl/*.whl | wc -l) wheels, $(du -sm .whl | cut -f1) MiB in .whl/"
