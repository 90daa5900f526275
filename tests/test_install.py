"""A broken install names its fix: the import errors, the build summary, the build's arch list.

Each import case copies the package's Python files (not its compiled _C) into a temporary
directory, breaks one thing, and imports it in a fresh interpreter.
"""

import os
import runpy
import shutil
import subprocess
import sys

import pytest
import torch

import smem_ops

PACKAGE = os.path.dirname(os.path.abspath(smem_ops.__file__))
ROOT = os.path.dirname(PACKAGE)


def import_copy(tmp_path, build_info=None, fake_extension=False):
    """Imports a copy of smem_ops's Python files; returns (returncode, stderr)."""
    from importlib.machinery import EXTENSION_SUFFIXES

    copy = tmp_path / "smem_ops"
    copy.mkdir()
    for name in os.listdir(PACKAGE):
        if name.endswith(".py") and name != "_build_info.py":
            shutil.copy(os.path.join(PACKAGE, name), copy / name)
    if build_info is not None:
        (copy / "_build_info.py").write_text(build_info)
    if fake_extension:
        (copy / ("_C" + EXTENSION_SUFFIXES[0])).write_bytes(b"not a shared library")
    run = subprocess.run([sys.executable, "-c", "import smem_ops"], cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(tmp_path)},
                         capture_output=True, text=True, timeout=300, check=False)
    return run.returncode, run.stderr


def test_not_built_says_how_to_build(tmp_path):
    rc, err = import_copy(tmp_path)
    assert rc != 0
    assert "ImportError: smem_ops: the compiled extension smem_ops._C is not built" in err
    assert "pip install --no-build-isolation -e ." in err
    assert "circular import" not in err


def test_other_torch_is_caught_before_loading(tmp_path):
    rc, err = import_copy(tmp_path, "TORCH_VERSION = '1.13.1'\nWITH_CUDA = False\nNOTE = ''\n",
                          fake_extension=True)
    assert rc != 0
    assert (f"smem_ops was built against torch 1.13.1, but this is torch {torch.__version__}"
            in err)
    assert "pip install --no-build-isolation -e ." in err


def test_unloadable_extension_names_both_torches(tmp_path):
    info = f"TORCH_VERSION = {torch.__version__!r}\nWITH_CUDA = False\nNOTE = ''\n"
    rc, err = import_copy(tmp_path, info, fake_extension=True)
    assert rc != 0
    assert "smem_ops: the compiled extension smem_ops._C failed to load" in err
    assert f"built against torch {torch.__version__}; this is torch {torch.__version__}" in err


def test_build_info_says_what_was_built():
    line = smem_ops.build_info()
    assert line.startswith(f"smem_ops {smem_ops.__version__}: ")
    if smem_ops.cuda_compiled():
        archs = ", ".join(f"sm_{a // 10}" for a in smem_ops.compiled_archs())
        assert f"CPU and CUDA kernels ({archs})" in line
    else:
        assert "CPU kernels, built against torch" in line


def test_version_is_defined_once():
    meta = runpy.run_path(os.path.join(PACKAGE, "_meta.py"))
    assert smem_ops.__version__ == meta["__version__"]
    from importlib.metadata import PackageNotFoundError, version

    try:
        assert version("smem_ops") == meta["__version__"]
    except PackageNotFoundError:
        pytest.skip("smem_ops is built in place, not installed: no distribution metadata")


@pytest.mark.skipif(torch.version.cuda is None or smem_ops.cuda_compiled(),
                    reason="only a CPU-kernel build under a CUDA torch registers the raising kernels")
def test_cuda_torch_without_cuda_kernels_raises_clearly():
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    for op in ("smem::sum", "smem::transpose", "smem::histc"):
        assert has_kernel(op, "CUDA"), op


def load_setup(monkeypatch):
    """setup.py's helpers; the CUDA_HOME it may set on load is undone after the test."""
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    return runpy.run_path(os.path.join(ROOT, "setup.py"), run_name="smem_setup")


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "setup.py")),
                    reason="needs the source tree")
def test_cuda_home_follows_an_nvcc_wrapper_to_its_toolkit(tmp_path, monkeypatch):
    # /usr/local/bin/nvcc that runs /usr/local/cuda-13.0/bin/nvcc: torch alone would guess
    # CUDA_HOME=/usr/local and fail to link libcudart.
    toolkit = tmp_path / "cuda-13.0"
    (toolkit / "bin").mkdir(parents=True)
    real = toolkit / "bin" / "nvcc"
    real.write_text(f'#!/bin/sh\necho "#$ _HERE_={toolkit}/bin"\necho "#$ TOP={toolkit}/bin/.."\n')
    wrapper_dir = tmp_path / "local" / "bin"
    wrapper_dir.mkdir(parents=True)
    wrapper = wrapper_dir / "nvcc"
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    real.chmod(0o755)
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper_dir}{os.pathsep}{os.environ['PATH']}")
    load_setup(monkeypatch)
    assert os.environ.get("CUDA_HOME") == str(toolkit)

    monkeypatch.setenv("CUDA_HOME", "/opt/chosen")  # the user's choice is kept
    scope = runpy.run_path(os.path.join(ROOT, "setup.py"), run_name="smem_setup")
    scope["point_cuda_home_at_the_toolkit"]()
    assert os.environ["CUDA_HOME"] == "/opt/chosen"


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "setup.py")),
                    reason="needs the source tree")
def test_default_arch_list_drops_what_nvcc_cannot_target(monkeypatch):
    scope = load_setup(monkeypatch)
    default = runpy.run_path(os.path.join(PACKAGE, "_meta.py"))["DEFAULT_CUDA_ARCHS"]
    default_arch_list = scope["default_arch_list"]
    targets = default_arch_list.__globals__  # the functions' own module namespace
    monkeypatch.setitem(targets, "nvcc_targets", lambda: None)  # an nvcc that cannot tell
    assert default_arch_list() == default
    monkeypatch.setitem(targets, "nvcc_targets", lambda: {"8.0", "8.6", "9.0"})  # an older nvcc
    assert default_arch_list() == "8.0;8.6;9.0+PTX"
    monkeypatch.setitem(targets, "nvcc_targets", lambda: {"5.0"})
    with pytest.raises(RuntimeError, match="TORCH_CUDA_ARCH_LIST"):
        default_arch_list()
