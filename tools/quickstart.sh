#!/usr/bin/env bash
# From a fresh clone to a built smem_ops and a first benchmark on whatever device this machine
# has. Uses the installed torch; with none, installs TORCH_SPEC (default: the newest torch on
# PyPI, a CUDA build on Linux). Any torch works: setup.py builds the CUDA kernels when it can
# (for the visible GPUs, else for a default arch list) and says why when it cannot.
#   bash tools/quickstart.sh [benchmark args, e.g. --only transpose]
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c "import torch" 2>/dev/null || python3 -m pip install -q "${TORCH_SPEC:-torch}"
python3 -m pip install -q numpy ninja pytest expecttest "setuptools>=64" wheel
echo "quickstart: building smem_ops (with CUDA kernels for several GPU archs this takes minutes)"
python3 -m pip install -q --no-build-isolation -e .
python3 -c "import smem_ops; print(smem_ops.build_info())"
python3 -m benchmarks --quick "$@"
