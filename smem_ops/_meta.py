"""Facts about the package that the build and the runtime both read (plain literals only:
setup.py and tools/check_cuda_compile.py load this file without importing smem_ops)."""

__version__ = "0.2.0"

# GPUs the CUDA kernels are built for when no GPU is visible at build time and
# TORCH_CUDA_ARCH_LIST is unset (a CI box, a login node, a Docker build): Turing, Ampere
# (A100, consumer), Ada, Hopper, Blackwell (datacenter, consumer), plus PTX of the newest so
# that later GPUs can JIT it. Archs the local nvcc cannot target are dropped at build time.
DEFAULT_CUDA_ARCHS = "7.5;8.0;8.6;8.9;9.0;10.0;12.0+PTX"

# How a user rebuilds the extension, quoted by every error that asks for a rebuild.
BUILD_COMMAND = "pip install --no-build-isolation -e ."
