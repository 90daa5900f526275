"""Builds smem_ops._C.

CUDA sources are compiled when torch is a CUDA build and a CUDA toolkit is found,
or when FORCE_CUDA=1; USE_CUDA=0 forces a CPU-only build. TORCH_CUDA_ARCH_LIST and
MAX_JOBS are honoured by torch.utils.cpp_extension. Build with

    pip install --no-build-isolation -e .
"""

import glob
import os
import sys

import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

ROOT = os.path.dirname(os.path.abspath(__file__))


def want_cuda() -> bool:
    if os.environ.get("USE_CUDA", "") == "0":
        return False
    if os.environ.get("FORCE_CUDA", "") == "1":
        return True
    return torch.version.cuda is not None and CUDA_HOME is not None


def rel(pattern: str) -> list[str]:
    return sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern)))


def extension():
    sources = rel("csrc/*.cpp") + rel("csrc/cpu/*.cpp")
    cxx = ["-O3"]
    link = []
    # at::parallel_for is a header template whose OpenMP pragmas are compiled into the caller:
    # without -fopenmp every CPU kernel runs on one thread. (Apple clang has no -fopenmp.)
    if sys.platform.startswith("linux"):
        cxx.append("-fopenmp")
        link.append("-fopenmp")
    include_dirs = [os.path.join(ROOT, "csrc")]
    if not want_cuda():
        return CppExtension("smem_ops._C", sources, include_dirs=include_dirs,
                            extra_compile_args={"cxx": cxx}, extra_link_args=link)
    nvcc = [
        "-O3",
        "-lineinfo",  # source lines in compute-sanitizer and ncu reports; no runtime cost
        "--expt-relaxed-constexpr",
    ]
    return CUDAExtension(
        "smem_ops._C",
        sources + rel("csrc/cuda/*.cu"),
        include_dirs=include_dirs,
        extra_compile_args={"cxx": cxx + ["-DSMEM_WITH_CUDA=1"], "nvcc": nvcc + ["-DSMEM_WITH_CUDA=1"]},
        extra_link_args=link,
    )


setup(
    ext_modules=[extension()],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
