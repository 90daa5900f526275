"""The plain C++ library (libsmem_ops.so, CMakeLists.txt) and the Python extension
(smem_ops._C, setup.py) are built from the same csrc/ sources. These checks keep it so: one
library definition of the namespace, and no Python outside the extension's pybind11 module
(csrc/python/), which the C++ build leaves out. tools/cpp_check.sh builds and tests the C++ side.
"""

import pathlib
import re

import pytest

CSRC = pathlib.Path(__file__).resolve().parent.parent / "csrc"
if not CSRC.is_dir():  # the tests run from a copy beside an installed wheel: no sources
    pytest.skip(f"no C++ sources at {CSRC}", allow_module_level=True)
SOURCES = sorted(p for p in CSRC.rglob("*") if p.suffix in {".cpp", ".cu", ".h", ".cuh"})
PYTHON_INCLUDE = re.compile(
    r'^\s*#\s*include\s*[<"](Python\.h|pybind11/|torch/extension\.h|torch/python\.h)',
    re.MULTILINE)


def test_one_library_definition():
    defs = [p.relative_to(CSRC).as_posix() for p in SOURCES
            for _ in re.finditer(r"^\s*TORCH_LIBRARY\s*\(", p.read_text(), re.MULTILINE)]
    assert defs == ["smem.cpp"]


def test_python_only_in_the_extension_module():
    with_python = [p.relative_to(CSRC).as_posix() for p in SOURCES
                   if PYTHON_INCLUDE.search(p.read_text())]
    assert with_python == ["python/module.cpp"]


# A .cu file is parsed once per target arch; the CUDA sources keep their torch side in a .cpp
# beside them (csrc/cuda/launch.h says why), and must not pull torch's tensor, dispatcher or
# CUDA-runtime headers back in, directly or through another header. c10's macros, scalar types
# and ScalarType, c10::function_ref and ATen's integer divider are small and allowed.
HEAVY_INCLUDE = re.compile(
    r"^(ATen/(?!cuda/detail/IntegerDivider\.cuh)|torch/|c10/cuda/|c10/core/(?!ScalarType\.h))")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)


def heavy_includes(path: pathlib.Path, seen: set[pathlib.Path]) -> list[str]:
    found = []
    for kind, name in INCLUDE.findall(path.read_text()):
        local = [d / name for d in (path.parent, CSRC) if (d / name).is_file()]
        if kind == '"' and local:
            if local[0] not in seen:
                seen.add(local[0])
                found += heavy_includes(local[0], seen)
        elif HEAVY_INCLUDE.match(name):
            found.append(f"{path.relative_to(CSRC).as_posix()}: <{name}>")
    return found


def test_cuda_sources_free_of_torch_headers():
    cu = {p.relative_to(CSRC).as_posix(): p for p in SOURCES if p.suffix == ".cu"}
    assert {"cuda/transpose/transpose.cu", "cuda/reduce/reduce.cu", "cuda/histogram/histc.cu",
            "cuda/histogram/batched_histc.cu", "cuda/histogram/histogram_edges.cu"} <= set(cu)
    heavy = {name: heavy_includes(p, set()) for name, p in cu.items()}
    assert {name: found for name, found in heavy.items() if found} == {}
