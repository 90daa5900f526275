"""Compile every CUDA source with nvcc, with the flags the real build uses, without linking.

CI has nvcc but no GPU and a CPU-only torch, so `setup.py` builds the CPU extension there;
this script still puts every .cu file through nvcc (host and device passes), and the CUDA
backend's torch-side .cpp files through nvcc's host compiler, so that a compile error shows
without a CUDA torch. A CPU torch wheel ships the c10/cuda headers but not the one header
its CMake build generates (c10/cuda/impl/cuda_cmake_macros.h); a stand-in with the same
single definition is written to a temporary include directory.

    python tools/check_cuda_compile.py [--archs "8.0;9.0+PTX"] [--jobs 2] [SOURCE ...]

The default arch list is the one a build with no GPU visible uses (smem_ops/_meta.py).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import glob
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ARCHS = runpy.run_path(os.path.join(ROOT, "smem_ops", "_meta.py"))["DEFAULT_CUDA_ARCHS"]


def gencode_flags(archs: str) -> list[str]:
    """TORCH_CUDA_ARCH_LIST syntax ("8.0;9.0+PTX") as nvcc -gencode flags, as torch builds them."""
    flags = []
    for arch in archs.replace(" ", ";").split(";"):
        num = arch.removesuffix("+PTX").replace(".", "")
        flags.append(f"-gencode=arch=compute_{num},code=sm_{num}")
        if arch.endswith("+PTX"):
            flags.append(f"-gencode=arch=compute_{num},code=compute_{num}")
    return flags


def nvcc_command(source: str, out: str, archs: str, shim: str) -> list[str]:
    from torch.utils import cpp_extension as ce

    includes = [os.path.join(ROOT, "csrc"), *ce.include_paths(), shim]
    with open(ce.__file__) as f:
        std = "-std=c++20" if "-std=c++20" in f.read() else "-std=c++17"
    return [
        "nvcc", "-c", source, "-o", out, std, "-O3", "-lineinfo", "--expt-relaxed-constexpr",
        "-DSMEM_WITH_CUDA=1", "-Xcompiler", "-fPIC",
        *gencode_flags(archs),
        *ce.COMMON_NVCC_FLAGS,
        *[f"-I{p}" for p in includes],
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--archs", default=DEFAULT_ARCHS,
                    help=f"archs in TORCH_CUDA_ARCH_LIST syntax (default {DEFAULT_ARCHS})")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("sources", nargs="*", help="only these files (default: every .cu and .cpp under csrc/cuda)")
    args = ap.parse_args()
    if shutil.which("nvcc") is None:
        print("check_cuda_compile: nvcc not found", file=sys.stderr)
        return 1
    sources = sorted(os.path.abspath(s) for s in args.sources) or sorted(
        p for ext in ("cu", "cpp")
        for p in glob.glob(os.path.join(ROOT, "csrc", "cuda", "**", f"*.{ext}"), recursive=True))
    with tempfile.TemporaryDirectory() as tmp:
        shim = os.path.join(tmp, "include")
        os.makedirs(os.path.join(shim, "c10", "cuda", "impl"))
        with open(os.path.join(shim, "c10", "cuda", "impl", "cuda_cmake_macros.h"), "w") as f:
            f.write("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")

        def compile_one(src: str) -> tuple[str, int, str, float]:
            t0 = time.time()
            out = os.path.join(tmp, os.path.basename(src) + ".o")
            p = subprocess.run(nvcc_command(src, out, args.archs, shim), capture_output=True,
                               text=True, check=False)
            return src, p.returncode, p.stdout + p.stderr, time.time() - t0

        failed = 0
        with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for src, rc, log, dt in pool.map(compile_one, sources):
                name = os.path.relpath(src, ROOT)
                print(f"nvcc {name}: {'ok' if rc == 0 else 'FAILED'} ({dt:.0f} s)", flush=True)
                if rc != 0:
                    failed += 1
                    print("\n".join(log.splitlines()[:80]))
    print(f"check_cuda_compile: {len(sources) - failed} of {len(sources)} CUDA sources compiled "
          f"for {args.archs}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
