"""Batched histograms and the counting op behind the torch.histogram drop-in: Python wrappers
and fake kernels of torch.ops.smem.batched_histc and torch.ops.smem._histogram_count.

The fakes raise the same errors (type and message) as the C++ checks in csrc/histogram_edges.h.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .ops import _histc_out_dtype

_ops = torch.ops.smem

__all__ = ["batched_histc"]


def batched_histc(x: Tensor, bins: int = 100, min: float = 0, max: float = 0, *,
                  dim: int = -1, dtype: torch.dtype | None = None) -> Tensor:
    """One :func:`torch.histc` per slice of ``x`` along ``dim``, in one op.

    Returns a tensor of shape ``x.shape`` with ``dim`` removed and ``(bins,)`` appended:
    ``out[i, j, :]`` is ``histc(x[i, j, :])`` for ``dim=-1`` on a 3-D ``x``. Each slice counts
    ``bins`` equal bins over ``[min, max]``; values outside it, and NaN, are not counted; a
    value equal to ``max`` counts in the last bin. With ``min == max`` every slice gets its own
    range: its finite min and max (NaN and +-inf left out; widened by 1 each way when equal),
    found on the device with no host sync.

    Same dtypes and rules as :func:`smem_ops.histc`: any floating point or integer input but
    bool; counts are exact integers internally; the output dtype is the input's for floating
    point input and int64 for integers, or ``dtype`` (``torch.int64`` gives exact counts at any
    slice length). Empty slices give zero counts. Deterministic; not differentiable. Any layout
    is accepted; slices along a dim other than the innermost one are copied contiguous first.

    Example: per-channel histograms of a batch of images, ``(N, C, H, W) -> (N, C, 256)``::

        smem_ops.batched_histc(img.flatten(2), 256, 0, 255, dtype=torch.int64)
    """
    return _ops.batched_histc(x, bins, min, max, dim=dim, dtype=dtype)


def _histogram_count(x: Tensor, bin_edges: Tensor, weight: Tensor | None = None,
                     uniform: bool = False) -> Tensor:
    """Internal: what ``torch.histogram(x, bin_edges, weight=weight)`` counts, as int64 counts
    (no weight) or float64 weighted sums (``weight``), shape ``(bin_edges.numel() - 1,)``.

    ``x`` is float32 or float64, any shape (flattened); ``bin_edges`` is 1-D, same dtype, at
    least 2 non-decreasing edges (not checked here: the caller checks monotonicity; the kernels
    stay in bounds whatever the edges hold); ``weight`` has the shape and dtype of ``x``.
    Bin i holds ``edges[i] <= v < edges[i + 1]``, the last bin also ``v == edges[-1]``; values
    outside the edges and NaN are dropped. ``uniform=False`` finds bins by binary search over
    the edges, ``uniform=True`` (edges from ``torch.linspace``, the int-``bins`` overload) by
    torch's linear interpolation and local search: the two give torch's CPU bins exactly.
    Deterministic (weighted sums too: no floating-point atomics).
    """
    return _ops._histogram_count(x, bin_edges, weight, uniform)


# ----------------------------------------------------------------------------- checks

def _batched_histc_meta(x: Tensor, bins: int, lo, hi, dim: int,
                        dtype: torch.dtype | None) -> tuple[list[int], torch.dtype]:
    op = "smem.batched_histc"
    ndim = x.dim()
    if ndim == 0:
        raise ValueError(f"{op}: expected a tensor with at least one dimension, but got a 0-dim "
                         "tensor")
    if not -ndim <= dim < ndim:
        raise IndexError(f"{op}: dim {dim} is out of range for a tensor of dimension {ndim}")
    dtype = _histc_out_dtype(x, bins, lo, hi, dtype, op)
    shape = [s for d, s in enumerate(x.shape) if d != dim % ndim] + [bins]
    return shape, dtype


def _shape_str(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"  # as c10::IntArrayRef prints


def _check_histogram_count(x: Tensor, edges: Tensor, weight: Tensor | None) -> None:
    op = "smem._histogram_count: "
    if x.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"{op}input dtype {x.dtype} is not supported (expected torch.float32 or "
                        "torch.float64)")
    if edges.device != x.device:
        raise ValueError(f"{op}expected bin_edges on the device of self ({x.device}), but got "
                         f"{edges.device}")
    if edges.dim() != 1:
        raise ValueError(f"{op}bin_edges must be 1-D, but got {edges.dim()}-D")
    if edges.numel() < 2:
        raise ValueError(f"{op}bin_edges must hold at least 2 edges, but got {edges.numel()}")
    if edges.dtype != x.dtype:
        raise TypeError(f"{op}expected bin_edges of dtype {x.dtype}, but got {edges.dtype}")
    if weight is None:
        return
    if weight.device != x.device:
        raise ValueError(f"{op}expected weight on the device of self ({x.device}), but got "
                         f"{weight.device}")
    if weight.shape != x.shape:
        raise ValueError(f"{op}expected weight of shape {_shape_str(x.shape)} (the shape of self), "
                         f"but got {_shape_str(weight.shape)}")
    if weight.dtype != x.dtype:
        raise TypeError(f"{op}expected weight of dtype {x.dtype}, but got {weight.dtype}")


# ----------------------------------------------------------------------------- fake kernels

@torch.library.register_fake("smem::batched_histc")
def _batched_histc_fake(x, bins=100, min=0, max=0, *, dim=-1, dtype=None):
    shape, out_dtype = _batched_histc_meta(x, bins, min, max, dim, dtype)
    return x.new_empty(shape, dtype=out_dtype)


@torch.library.register_fake("smem::_histogram_count")
def _histogram_count_fake(x, bin_edges, weight=None, uniform=False):
    _check_histogram_count(x, bin_edges, weight)
    return x.new_empty((bin_edges.shape[0] - 1,),
                       dtype=torch.int64 if weight is None else torch.float64)
