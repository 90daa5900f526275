"""smem_ops: shared-memory CUDA kernels registered as torch.ops.smem.*.

Importing this package loads the compiled library (which defines the ops and registers
their kernels and autograd with the dispatcher) and registers their fake kernels.
"""

import torch

from ._loader import built, load_extension
from ._meta import __version__

_C = load_extension()

from . import distributed as _distributed  # noqa: F401  (DTensor rules, registered lazily)
from .dropin import disable, enable, enabled, is_enabled
from .histograms import batched_histc
from .ops import bincount, dot, histc, sum, sum_of_squares, transpose

__all__ = [
    "__version__",
    "batched_histc",
    "bincount",
    "build_info",
    "cluster_supported",
    "compiled_archs",
    "cuda_compiled",
    "disable",
    "dot",
    "enable",
    "enabled",
    "histc",
    "is_enabled",
    "sum",
    "sum_of_squares",
    "transpose",
    "variants",
]

cuda_compiled = _C.cuda_compiled
compiled_archs = _C.compiled_archs
cluster_supported = _C.cluster_supported
variants = _C.variants


def build_info() -> str:
    """One line: what this build of smem_ops holds and what it was compiled against."""
    kernels = ("CPU and CUDA kernels (sm_" + ", sm_".join(str(a // 10) for a in compiled_archs())
               + ")") if cuda_compiled() else "CPU kernels"
    line = f"smem_ops {__version__}: {kernels}, built against torch {built('TORCH_VERSION', '?')}"
    return line + (f". {built('NOTE')}" if built("NOTE") and not cuda_compiled() else "")


if torch.version.cuda is not None and not cuda_compiled():
    from ._loader import register_missing_cuda_kernels

    register_missing_cuda_kernels()
