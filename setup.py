"""Builds smem_ops._C against the torch installed in this environment.

    pip install --no-build-isolation -e .      # or `pip install --no-build-isolation .`, `pip wheel ...`

What gets built:
- CPU-only torch: the CPU kernels.
- CUDA torch and a CUDA toolkit (nvcc) of the same major version: the CPU and CUDA kernels, for
  TORCH_CUDA_ARCH_LIST if set, else for the visible GPUs, else (no GPU: CI, a login node, a
  Docker build) for smem_ops._meta.DEFAULT_CUDA_ARCHS, less what the local nvcc cannot target.
- CUDA torch without a usable nvcc: the CPU kernels, and one line saying how to get the rest.
FORCE_CUDA=1 builds the CUDA kernels regardless (an error if nvcc is unusable); USE_CUDA=0
builds CPU-only. MAX_JOBS limits parallel compiles. The wheel requires the torch minor
version it was built against: the C++ ABI of torch changes between minor versions.
"""

import glob
import os
import re
import runpy
import shutil
import subprocess
import sys

import torch
from setuptools import setup


def point_cuda_home_at_the_toolkit() -> None:
    """Sets CUDA_HOME to the toolkit the nvcc on PATH belongs to, when torch would guess wrong.

    Without CUDA_HOME, torch takes the toolkit to be two levels above the nvcc on PATH. When
    that nvcc is a wrapper script (/usr/local/bin/nvcc running /usr/local/cuda-13.0/bin/nvcc),
    the guess is /usr/local, and linking fails with "cannot find -lcudart". nvcc's dry run
    names its real install directory (TOP), so ask it.
    """
    if os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH"):
        return
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return
    try:
        dry_run = subprocess.run([nvcc, "--dryrun", "-c", "smem_ops_probe.cu"],
                                 check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return
    found = re.search(r"^#\$ TOP=(.+)$", dry_run.stdout + dry_run.stderr, re.MULTILINE)
    if found is None:
        return
    top = os.path.realpath(found.group(1).strip())
    if top != os.path.realpath(os.path.dirname(os.path.dirname(nvcc))):
        os.environ["CUDA_HOME"] = top


point_cuda_home_at_the_toolkit()
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

ROOT = os.path.dirname(os.path.abspath(__file__))
META = runpy.run_path(os.path.join(ROOT, "smem_ops", "_meta.py"))


def say(message: str) -> None:
    print(f"smem_ops: {message}", file=sys.stderr, flush=True)


def nvcc_release() -> tuple[int, int] | None:
    """The CUDA release of CUDA_HOME's nvcc, or None if there is none that runs."""
    if CUDA_HOME is None:
        return None
    try:
        text = subprocess.run([os.path.join(CUDA_HOME, "bin", "nvcc"), "--version"],
                              capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    found = re.search(r"release (\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def cuda_plan() -> tuple[bool, str]:
    """Whether to build the CUDA kernels and, if not, why (a line for the user)."""
    if os.environ.get("USE_CUDA", "") == "0":
        return False, "CPU kernels only (USE_CUDA=0)"
    if os.environ.get("FORCE_CUDA", "") == "1":
        return True, ""
    if torch.version.cuda is None:
        return False, f"CPU kernels only: torch {torch.__version__} is a CPU build"
    how = (f"install a CUDA {torch.version.cuda.split('.')[0]}.x toolkit, set CUDA_HOME to it, "
           f"and rebuild: {META['BUILD_COMMAND']}")
    release = nvcc_release()
    if release is None:
        return False, (f"CPU kernels only: torch {torch.__version__} is a CUDA build, but no "
                       f"CUDA compiler (nvcc) was found. For the GPU kernels, {how}")
    if str(release[0]) != torch.version.cuda.split(".")[0]:
        return False, (f"CPU kernels only: nvcc is CUDA {release[0]}.{release[1]} but torch "
                       f"{torch.__version__} was built with CUDA {torch.version.cuda}, and their "
                       f"major versions must match. For the GPU kernels, {how}")
    return True, ""


def nvcc_targets() -> set[str] | None:
    """The compute capabilities ("9.0") the local nvcc can compile for, if it can tell."""
    try:
        text = subprocess.run([os.path.join(CUDA_HOME, "bin", "nvcc"), "--list-gpu-arch"],
                              capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {f"{int(n) // 10}.{int(n) % 10}" for n in re.findall(r"compute_(\d+)", text)}


def default_arch_list() -> str:
    """DEFAULT_CUDA_ARCHS less the archs this nvcc cannot target; PTX for the newest kept."""
    wanted = [a.removesuffix("+PTX") for a in META["DEFAULT_CUDA_ARCHS"].split(";")]
    targets = nvcc_targets()
    kept = [a for a in wanted if targets is None or a in targets]
    if not kept:
        raise RuntimeError(f"smem_ops: this nvcc targets none of {wanted}; set "
                           "TORCH_CUDA_ARCH_LIST to the compute capability of your GPU")
    return ";".join(kept[:-1] + [kept[-1] + "+PTX"])


def set_default_arch_list() -> None:
    """TORCH_CUDA_ARCH_LIST if set; else torch builds for the visible GPUs; with neither,
    DEFAULT_CUDA_ARCHS (torch's own detection fails when it sees no GPU)."""
    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        say(f"building the CUDA kernels for TORCH_CUDA_ARCH_LIST={os.environ['TORCH_CUDA_ARCH_LIST']}")
    elif torch.cuda.is_available() and torch.cuda.device_count() > 0:
        say("building the CUDA kernels for the visible GPUs (set TORCH_CUDA_ARCH_LIST to choose)")
    else:
        os.environ["TORCH_CUDA_ARCH_LIST"] = default_arch_list()
        say(f"no GPU visible: building the CUDA kernels for {os.environ['TORCH_CUDA_ARCH_LIST']} "
            "(set TORCH_CUDA_ARCH_LIST to choose)")


def rel(pattern: str) -> list[str]:
    return sorted(os.path.relpath(p, ROOT)
                  for p in glob.glob(os.path.join(ROOT, pattern), recursive=True))


def write_build_info(with_cuda: bool, note: str) -> None:
    """smem_ops/_build_info.py: what this build was compiled against, read at import to
    catch a torch that changed since (a mismatched _C fails to load, or worse)."""
    with open(os.path.join(ROOT, "smem_ops", "_build_info.py"), "w") as f:
        f.write("# Written by setup.py at build time; not tracked by git.\n")
        f.write(f"TORCH_VERSION = {torch.__version__!r}\n")
        f.write(f"WITH_CUDA = {with_cuda!r}\n")
        f.write(f"NOTE = {note!r}\n")


def extension():
    # csrc/*.cpp + cpu + cuda are the library (CMakeLists.txt builds them into libsmem_ops.so);
    # csrc/python/ is the pybind11 module, the extension's own.
    sources = rel("csrc/*.cpp") + rel("csrc/cpu/*.cpp") + rel("csrc/python/*.cpp")
    cxx = ["-O3"]
    link = []
    # at::parallel_for is a header template whose OpenMP pragmas are compiled into the caller:
    # without -fopenmp every CPU kernel runs on one thread. (Apple clang has no -fopenmp.)
    if sys.platform.startswith("linux"):
        cxx.append("-fopenmp")
        link.append("-fopenmp")
    include_dirs = [os.path.join(ROOT, "csrc"), os.path.join(ROOT, "include")]
    with_cuda, note = cuda_plan()
    if not with_cuda:
        say(note)
        write_build_info(False, note)
        return CppExtension("smem_ops._C", sources, include_dirs=include_dirs,
                            extra_compile_args={"cxx": cxx}, extra_link_args=link)
    say(f"CUDA toolkit: {CUDA_HOME}")
    set_default_arch_list()
    write_build_info(True, "")
    nvcc = [
        "-O3",
        "-lineinfo",  # source lines in compute-sanitizer and ncu reports; no runtime cost
        "--expt-relaxed-constexpr",
    ]
    return CUDAExtension(
        "smem_ops._C",
        sources + rel("csrc/cuda/**/*.cu") + rel("csrc/cuda/**/*.cpp"),
        include_dirs=include_dirs,
        extra_compile_args={"cxx": cxx + ["-DSMEM_WITH_CUDA=1"], "nvcc": nvcc + ["-DSMEM_WITH_CUDA=1"]},
        extra_link_args=link,
    )


def torch_requirement() -> str:
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return f"torch=={major}.{minor}.*"


if __name__ == "__main__":  # as pip's build backend runs it; tests import the helpers above
    setup(
        version=META["__version__"],
        install_requires=[torch_requirement()],
        ext_modules=[extension()],
        cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    )
