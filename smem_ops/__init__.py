"""smem_ops: shared-memory CUDA kernels registered as torch.ops.smem.*.

Importing this package loads the compiled library (which defines the ops and registers
their kernels and autograd with the dispatcher) and registers their fake kernels.
"""

import torch  # noqa: F401  (the extension links against torch)

from . import _C  # noqa: F401  (defines torch.ops.smem.*)
from .ops import dot, histc, sum, sum_of_squares, transpose  # noqa: A004

__all__ = ["sum", "sum_of_squares", "dot", "transpose", "histc", "cuda_compiled",
           "compiled_archs", "cluster_supported", "variants"]

cuda_compiled = _C.cuda_compiled
compiled_archs = _C.compiled_archs
cluster_supported = _C.cluster_supported
variants = _C.variants
