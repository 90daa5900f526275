#!/usr/bin/env bash
# The C++ side, end to end (CI calls this; so does the GPU machine): configure the CMake build
# against the torch of python3, build libsmem_ops.so and the examples, install to a temporary
# prefix, and run ctest:
#   smem_example      the C++ API on CPU (and CUDA when built and a GPU is present) vs libtorch
#   aoti_export_<dev> Python exports + AOTInductor-packages a model calling smem ops
#   aoti_run_<dev>    C++ runs the package (AOTIModelPackageLoader), outputs == Python's
#   no_python         libsmem_ops.so needs no Python symbol or library
#   downstream        a project that only does find_package(smem_ops), built against the
#                     install and run (the API's results, error kinds and messages)
#
#   bash tools/cpp_check.sh                     # CPU: about 5 minutes on 2 cores
#   TORCH_CUDA_ARCH_LIST=9.0 bash tools/cpp_check.sh   # CUDA torch + nvcc: CUDA kernels too
#
# Environment: BUILD_DIR (default build/cpp), MAX_JOBS (default: all cores), PYTHON (python3),
# CUDA_HOME (the CUDA toolkit, when torch is a CUDA build; default /usr/local/cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build/cpp}
JOBS=${MAX_JOBS:-$(nproc)}
PYTHON=${PYTHON:-python3}
PREFIX=$(mktemp -d "${TMPDIR:-/tmp}/smem_ops_prefix.XXXXXX")
trap 'rm -rf "$PREFIX"' EXIT
start=$(date +%s)
step() { echo "== $1 ($(( $(date +%s) - start )) s)"; }

read -r TORCH_PREFIX TORCH_CUDA < <("$PYTHON" -c \
  'import torch; print(torch.utils.cmake_prefix_path, torch.version.cuda or "none")')
args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$TORCH_PREFIX"
      -DSMEM_OPS_PYTHON="$(command -v "$PYTHON")" -DSMEM_OPS_DOWNSTREAM_PREFIX="$PREFIX")
command -v ninja >/dev/null && args+=(-G Ninja)
if [ "$TORCH_CUDA" != none ]; then
  # A CUDA torch's CMake package looks for the toolkit through nvcc; an nvcc on PATH that is a
  # wrapper script outside the toolkit misleads it, so name the toolkit (the downstream
  # project's configure, run by ctest, inherits these too).
  root=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
  if [ -x "$root/bin/nvcc" ]; then
    export CUDA_PATH="$root" CUDACXX="$root/bin/nvcc"
    args+=(-DCUDA_TOOLKIT_ROOT_DIR="$root" -DCMAKE_CUDA_COMPILER="$root/bin/nvcc")
  fi
fi

step "configure (torch $("$PYTHON" -c 'import torch; print(torch.__version__)'), $BUILD_DIR)"
cmake -S . -B "$BUILD_DIR" "${args[@]}"
step "build (-j $JOBS)"
cmake --build "$BUILD_DIR" -j "$JOBS"
step "install to $PREFIX"
cmake --install "$BUILD_DIR" --prefix "$PREFIX" >/dev/null
step "ctest"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"
step "done"
