"""Typed Python front for torch.ops.smem.*: wrappers and fake kernels.

The kernels live in C++/CUDA and are reached through the dispatcher. The fake kernels
here give torch.compile / torch.export the output metadata and raise the same errors
(type and message) as the real kernels, whose checks live in csrc/{reduce,transpose,histogram}.h.
"""

from __future__ import annotations

import math
import operator
import sys
from collections.abc import Sequence

import torch
from torch import Tensor

from ._on_import import call_after_import

_ops = torch.ops.smem
# The wrappers call each op's OpOverload, positionally and without the arguments that equal the
# schema's defaults: resolving the overload packet, and parsing each argument against the
# schema, cost more host time than the tiny-input kernels themselves. Outside torch.compile
# they call the overload's C++ handle (`_op`), which is all OpOverload.__call__ does (the same
# dispatch, Python modes and subclasses included) less one Python frame; Dynamo traces only the
# OpOverload itself. The commonest calls (sum and sum_of_squares over every dim or one int64
# dim, dot) on plain tensors with no torch function mode active go through _C instead: the C++
# API's typed dispatcher calls, without the schema parsing (csrc/python/module.cpp).
# _C is the extension the package has loaded (smem_ops/__init__.py, before this module);
# examples/cpp/export_model.py loads this file beside the plain C++ library, without it, and
# then every call takes the OpOverload.
_C = sys.modules.get(f"{__package__}._C")
_compiling = torch.compiler.is_compiling
_tf_mode = torch._C._is_torch_function_mode_enabled
# The types that take the typed calls: no __torch_function__ of their own.
_PLAIN = frozenset((Tensor, torch.nn.Parameter) if _C is not None else ())
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1  # a dim past them: the schema's error
_dot = _ops.dot.default
_transpose = _ops.transpose.default
_histc = _ops.histc.default
_dot_eager = _dot._op
_transpose_eager = _transpose._op
_histc_eager = _histc._op


def _supported(family: str) -> frozenset[torch.dtype]:
    """The dtypes the C++ checks of a family accept (the library's smem::_supported_dtypes): the
    fake kernels check against the same list."""
    names = (name.removeprefix("torch.") for name in _ops._supported_dtypes(family))
    return frozenset(getattr(torch, n) for n in names if hasattr(torch, n))


_REDUCE_DTYPES = _supported("reduce")
_TRANSPOSE_DTYPES = _supported("transpose")
_HISTC_DTYPES = _supported("histogram")

DimArg = int | Sequence[int] | None


# ----------------------------------------------------------------------------- wrappers

def _reduction(overload, squares: bool, name: str, doc: str):
    """The wrapper of sum (squares=False) or sum_of_squares: one body, built once per op, so that
    a call pays no extra Python frame."""
    eager = overload._op

    def reduction(x: Tensor, dim: DimArg = None, keepdim: bool = False, *,
                  dtype: torch.dtype | None = None) -> Tensor:
        if _compiling():
            op = overload
        else:
            if dtype is None and not keepdim and type(x) in _PLAIN and not _tf_mode():
                if dim is None:
                    return _C._reduce_all(x, squares)
                if type(dim) is int and _INT64_MIN <= dim <= _INT64_MAX:
                    return _C._reduce_dim(x, dim, squares)
            op = eager
        if dtype is None and not keepdim:  # the common call, without _reduce's frame
            return op(x) if dim is None else op(x, _dims(dim, name))
        return _reduce(op, x, _dims(dim, name), keepdim, dtype)

    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = doc
    return reduction


sum = _reduction(_ops.sum.default, False, "sum", """\
Sum of ``x`` over ``dim`` (all dims when None), like :func:`torch.sum`.

    Same dtype promotion (bool and integers sum to int64 unless ``dtype`` says otherwise);
    fp16/bf16 accumulate in fp32, fp64 in fp64, integers in int64. Deterministic:
    bitwise-identical results run to run, no floating-point atomics.
    """)

sum_of_squares = _reduction(_ops.sum_of_squares.default, True, "sum_of_squares", """\
``torch.sum(x * x, dim, keepdim, dtype=dtype)`` in one pass over ``x``.

    Differs from torch on purpose: each square is computed in the accumulate type, so fp16/bf16
    squares don't round and integer squares don't wrap around in the input dtype.
    """)


def _dot_python(x: Tensor, other: Tensor) -> Tensor:
    """Dot product of two 1-D tensors of the same length and dtype, like :func:`torch.dot`.

    Integers accumulate in int64 and are returned in the input dtype, as torch does.
    """
    return _dot(x, other) if _compiling() else _dot_eager(x, other)


_dot_python.__name__ = _dot_python.__qualname__ = "dot"  # as errors name it


# smem_ops.dot is a C function (csrc/python/module.cpp) that takes the typed call for two plain
# tensors and hands every other call to _dot_python; torch.compile traces _dot_python in its place,
# registered once torch._dynamo is imported (importing it here would cost every import a second).
if _C is not None:
    dot = _C._make_dot(_dot_python, torch.nn.Parameter)
    call_after_import("torch._dynamo", lambda: torch.compiler.substitute_in_graph(dot)(_dot_python),
                      "torch.compile's stand-in for smem_ops.dot")
else:
    dot = _dot_python


def transpose(x: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    """``x.transpose(dim0, dim1).contiguous()``, always as a new contiguous tensor.

    Never returns a view, even where torch's ``.contiguous()`` would return ``x`` itself.
    Every dtype torch can copy but the quantized ones (bool, 1/2/4/8/16-byte types, fp8, fp4
    pairs, bits, complex).
    """
    op = _transpose if _compiling() else _transpose_eager
    if type(dim0) is int and type(dim1) is int and dim0 == -2 and dim1 == -1:
        return op(x)  # the defaults (a float -2.0 still reaches the schema's int check)
    return op(x, dim0, dim1)


def histc(x: Tensor, bins: int = 100, min: float = 0, max: float = 0, *,
          dtype: torch.dtype | None = None) -> Tensor:
    """Histogram of ``x`` with ``bins`` equal bins over ``[min, max]``, like :func:`torch.histc`.

    Counts are exact integers internally; ``dtype=torch.int64`` returns them exactly at any
    size (float32 counts stop being exact at 2**24). Differences from torch:
      * fp16, bf16 and integer inputs are supported; integer inputs return int64 counts and
        keep fractional bounds as they are (torch's CUDA histc truncates them to the input's
        integer type; the drop-in, ``smem_ops.enable()``, does as torch);
      * with ``min == max`` the range is the finite min and max of ``x``, found on the device
        with no host sync (torch syncs, and errors when ``x`` holds inf or NaN);
      * deterministic, so it runs under ``torch.use_deterministic_algorithms(True)``.
    Not differentiable.
    """
    op = _histc if _compiling() else _histc_eager
    if dtype is None:
        return op(x, bins, min, max)
    return op(x, bins, min, max, dtype=dtype)


def bincount(x: Tensor, length: int) -> Tensor:
    """How often each integer in ``[0, length)`` occurs in ``x``: int64 counts of shape
    ``(length,)``. Values outside ``[0, length)`` are not counted.

    ``torch.bincount`` sizes its output from ``x.max()``, so it reads it back to the host and
    cannot be captured in a CUDA graph; here the length is given, so there is no host sync.
    Exact and deterministic (integer counts, no float atomics), any shape or layout of ``x``
    (every element counts), any integer dtype. Made for MoE routers counting tokens per expert:
    ``smem_ops.bincount(expert_ids, num_experts)``.
    """
    if x.dtype == torch.bool or x.dtype.is_floating_point or x.dtype.is_complex:
        raise TypeError(f"smem_ops.bincount: expected an integer tensor, but got {x.dtype}")
    n = _as_int(length)  # numpy ints too, as torch takes them
    if n is None or n <= 0:
        raise ValueError(f"smem_ops.bincount: length must be a positive int, but got {length!r}")
    length = n
    # One bin per integer: [v - 1/2, v + 1/2) holds v alone, and integer inputs are binned in
    # float64, where (v + 1/2) * length / length is exact.
    return (_histc if _compiling() else _histc_eager)(x, length, -0.5, length - 0.5,
                                                      dtype=torch.int64)


def _reduce(op, x: Tensor, dim: int | list[int] | None, keepdim: bool,
            dtype: torch.dtype | None) -> Tensor:
    """sum / sum_of_squares with keepdim or dtype given (dim from _dims)."""
    if dtype is not None:
        return op(x, dim, keepdim, dtype=dtype)
    return op(x, dim, keepdim)


def _dims(dim: DimArg, name: str) -> int | list[int] | None:
    """dim as the schema's int[1]? takes it: None, an int, or a list of ints. Like torch.sum,
    anything with __index__ but a bool is an int (numpy ints, 0-d integer tensors)."""
    if dim is None or type(dim) is int:
        return dim  # the schema's int[1]? takes a lone int (cheaper to pass than a list)
    if isinstance(dim, (list, tuple)):
        return [_dim_index(d, name) for d in dim]
    return _dim_index(dim, name)


def _as_int(v) -> int | None:
    """v as an int where torch takes it as one (anything with __index__ but a bool), else None."""
    if isinstance(v, bool) or not hasattr(type(v), "__index__"):
        return None
    return operator.index(v)


def _dim_index(d, name: str) -> int:
    i = _as_int(d)
    if i is None:
        raise TypeError(f"smem.{name}: dim must be an int or a sequence of ints, but got {d!r}")
    return i


# ----------------------------------------------------------------------------- checks
# Each mirrors a C++ check: same exception type, same message.

def _fmt(v: float) -> str:
    return f"{v:g}"  # what a C++ stream prints for a double


def _check_reduce_dtype(dt: torch.dtype, op: str, what: str) -> None:
    if dt not in _REDUCE_DTYPES:
        raise TypeError(f"smem.{op}: {what} {dt} is not supported")


def _reduced_dims(x: Tensor, dim: list[int] | None, op: str) -> list[int]:
    ndim = x.dim()
    if not dim:
        return list(range(ndim))
    bound = max(ndim, 1)
    seen: list[int] = []
    for d in dim:
        if not -bound <= d < bound:
            raise IndexError(f"smem.{op}: dim {d} is out of range for a tensor of dimension {ndim}")
        w = d % bound
        if w in seen:
            raise ValueError(f"smem.{op}: dim {w} appears multiple times in the list of dims")
        seen.append(w)
    return seen if ndim > 0 else []


def _sum_result_dtype(x: Tensor, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        return dtype
    if x.dtype == torch.bool or not (x.dtype.is_floating_point or x.dtype.is_complex):
        return torch.int64
    return x.dtype


def _reduce_meta(x: Tensor, dim, keepdim: bool, dtype, op: str) -> Tensor:
    _check_reduce_dtype(x.dtype, op, "input dtype")
    if dtype is not None:
        _check_reduce_dtype(dtype, op, "dtype=")
    reduced = _reduced_dims(x, dim, op)
    shape = [1 if i in reduced else s for i, s in enumerate(x.shape) if keepdim or i not in reduced]
    return x.new_empty(shape, dtype=_sum_result_dtype(x, dtype))


def _check_dot(a: Tensor, b: Tensor) -> None:
    if a.device != b.device:
        raise ValueError("smem.dot: expected both tensors on the same device, but got self on "
                         f"{a.device} and other on {b.device}")
    if a.dim() != 1 or b.dim() != 1:
        raise ValueError(f"smem.dot: 1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    if a.dtype != b.dtype:
        raise TypeError("smem.dot: expected both tensors to have the same dtype, but got self "
                        f"{a.dtype} and other {b.dtype}")
    if a.dtype == torch.bool:
        raise TypeError("smem.dot: input dtype torch.bool is not supported")
    _check_reduce_dtype(a.dtype, "dot", "input dtype")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"smem.dot: inconsistent tensor size, expected self of size {a.shape[0]} "
                         f"and other of size {b.shape[0]} to be equal")


def _transpose_dims(x: Tensor, dim0: int, dim1: int) -> tuple[int, int]:
    n = x.dim()
    if n == 0:
        raise ValueError("smem.transpose: expected a tensor with at least one dimension, "
                         "but got a 0-dim tensor")
    for d in (dim0, dim1):
        if not -n <= d < n:
            raise IndexError(f"smem.transpose: dim {d} is out of range for a tensor of dimension "
                             f"{n} (expected to be in range of [{-n}, {n - 1}])")
    if x.dtype not in _TRANSPOSE_DTYPES:
        raise TypeError(f"smem.transpose: dtype {x.dtype} is not supported")
    return dim0 % n, dim1 % n


# Input dtypes a histc bound is cast to (float64 and integer inputs keep the bound as a double).
_HISTC_CAST_BOUNDS = (torch.float16, torch.bfloat16, torch.float32)


def _histc_bounds_fit(dtype: torch.dtype, lo: float, hi: float) -> bool:
    """Whether both bounds fit the input dtype they are cast to (torch raises where they don't;
    csrc/histogram.h, histc_range_fits)."""
    return dtype not in _HISTC_CAST_BOUNDS or max(abs(lo), abs(hi)) <= torch.finfo(dtype).max


def _histc_out_dtype(x: Tensor, bins: int, lo: float, hi: float,
                     dtype: torch.dtype | None, op: str = "smem.histc") -> torch.dtype:
    """histc's checks (batched_histc shares them, under its own name) and its output dtype."""
    if x.dtype not in _HISTC_DTYPES:
        raise TypeError(f"{op}: input dtype {x.dtype} is not supported (expected a floating "
                        "point or integer dtype other than bool)")
    if bins <= 0:
        raise ValueError(f"{op}: bins must be > 0, but got {bins}")
    if isinstance(lo, complex) or isinstance(hi, complex):
        raise TypeError(f"{op}: min and max must be real numbers, but got a complex bound")
    if (isinstance(lo, int) and isinstance(hi, int) and lo != hi
            and float(lo) == float(hi)):
        raise ValueError(f"{op}: min={lo} and max={hi} round to the same float64 bound; give "
                         "bounds that differ there")
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"{op}: range of [{_fmt(lo)}, {_fmt(hi)}] is not finite")
    if lo > hi:
        raise ValueError(f"{op}: max must be larger than min, but got min={_fmt(lo)} and "
                         f"max={_fmt(hi)}")
    if not _histc_bounds_fit(x.dtype, lo, hi):
        raise ValueError(f"{op}: range of [{_fmt(lo)}, {_fmt(hi)}] overflows the input dtype "
                         f"{x.dtype}")
    if dtype is not None:
        if dtype not in _HISTC_DTYPES:
            raise TypeError(f"{op}: dtype= {dtype} is not supported (expected a floating "
                            "point or integer dtype)")
        return dtype
    return x.dtype if x.dtype.is_floating_point else torch.int64


# ----------------------------------------------------------------------------- fake kernels

@torch.library.register_fake("smem::sum")
def _sum_fake(x, dim=None, keepdim=False, *, dtype=None):
    return _reduce_meta(x, dim, keepdim, dtype, "sum")


@torch.library.register_fake("smem::sum_of_squares")
def _sum_of_squares_fake(x, dim=None, keepdim=False, *, dtype=None):
    return _reduce_meta(x, dim, keepdim, dtype, "sum_of_squares")


@torch.library.register_fake("smem::dot")
def _dot_fake(x, other):
    _check_dot(x, other)
    return x.new_empty(())


@torch.library.register_fake("smem::transpose")
def _transpose_fake(x, dim0=-2, dim1=-1):
    d0, d1 = _transpose_dims(x, dim0, dim1)
    shape = list(x.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    return x.new_empty(shape)


@torch.library.register_fake("smem::histc")
def _histc_fake(x, bins=100, min=0, max=0, *, dtype=None):
    return x.new_empty((bins,), dtype=_histc_out_dtype(x, bins, min, max, dtype))

# Autograd is registered in C++ (csrc/autograd.cpp): a Python autograd kernel runs on every
# call, grad or not, and cost 5-7 us each.
