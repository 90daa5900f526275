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
