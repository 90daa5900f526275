"""Loading the compiled library, with errors that say what to do.

Three ways a user's import goes wrong, each turned into one ImportError that names the fix:
the extension was never built; it was built against another torch (its C++ ABI differs
between minor versions, so it may fail to load or misbehave); it fails to load for another
reason. A build without CUDA kernels under a CUDA torch also gets CUDA kernels that raise
a clear error instead of the dispatcher's "could not run ... with the 'CUDA' backend".
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os

import torch

from ._meta import BUILD_COMMAND

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_HERE)


def _rebuild_hint() -> str:
    where = _REPO if os.path.exists(os.path.join(_REPO, "setup.py")) else "the smem_ops source tree"
    return f"build it from {where} with: {BUILD_COMMAND} (or: bash tools/quickstart.sh)"


def _minor(version: str) -> tuple[str, ...]:
    return tuple(version.split("+")[0].split(".")[:2])


def built(field: str, default=None):
    """A fact setup.py recorded in _build_info.py (TORCH_VERSION, WITH_CUDA, NOTE)."""
    try:
        from . import _build_info
    except ImportError:
        return default
    return getattr(_build_info, field, default)


def _extension_files() -> list[str]:
    return [f for f in os.listdir(_HERE)
            if f.startswith("_C.") and f.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))]


def load_extension():
    """Imports smem_ops._C, or raises an ImportError that says how to fix the install."""
    built_torch = built("TORCH_VERSION")
    if built_torch is not None and _minor(built_torch) != _minor(torch.__version__):
        raise ImportError(
            f"smem_ops was built against torch {built_torch}, but this is torch {torch.__version__}; "
            f"a C++ extension must be rebuilt for another torch minor version: "
            f"{_rebuild_hint()}")
    if not _extension_files():
        raise ImportError(f"smem_ops: the compiled extension smem_ops._C is not built; "
                          f"{_rebuild_hint()}")
    try:
        return importlib.import_module("smem_ops._C")
    except ImportError as error:
        raise ImportError(
            f"smem_ops: the compiled extension smem_ops._C failed to load ({error}). It was "
            f"built against torch {built_torch or '(unknown)'}; this is torch {torch.__version__}. "
            f"Rebuild it: {_rebuild_hint()}") from error


_missing_cuda_library = None


def register_missing_cuda_kernels() -> None:
    """CUDA kernels for every smem op that raise: this build has no CUDA kernels."""
    global _missing_cuda_library
    if _missing_cuda_library is not None:
        return
    note = built("NOTE", "")
    _missing_cuda_library = torch.library.Library("smem", "IMPL")
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("smem::"):
            continue
        op = schema.name.split("::", 1)[1]

        def raise_no_cuda(*args, _op=op, **kwargs):
            raise RuntimeError(
                f"smem.{_op}: this build of smem_ops has no CUDA kernels. {note}")

        name = f"{op}.{schema.overload_name}" if schema.overload_name else op
        _missing_cuda_library.impl(name, raise_no_cuda, "CUDA")
