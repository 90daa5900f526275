"""Opt-in drop-in: torch's own histogram functions run smem's kernels on CUDA.

    smem_ops.enable()            # torch.histc and torch.histogram on CUDA now use smem
    with smem_ops.enabled(): ... # the same, for a block
    smem_ops.disable()

Nothing changes on import. While enabled:
- ``torch.histc`` on a CUDA tensor, and on a float32/float64 CPU tensor of at least
  ``CPU_MIN_NUMEL`` elements (where smem's CPU kernel measured faster), runs smem's histc and
  returns exactly what torch's kernel returns: the input dtype, torch's bin formula, edge and
  NaN rules. The exception: a range so wide that torch's ``(v - lo) * bins`` overflows (bounds
  near the dtype's largest value), where torch's counts are not defined (its CUDA kernel indexes
  past its counters) and smem's are the same formula scaled by 2^-64. CUDA int32 inputs of
  4097-8192 elements over 64 bins or more (``CUDA_TORCH_INT32_NUMEL``), where torch's kernel
  measured faster, stay with torch outside deterministic mode. Cases smem does not serve (a
  range torch would reject, an integer range past exact float64 binning) run torch's original
  kernel, fetched with ``torch.library.get_kernel`` before the override, so they give torch's
  own result or error.
  fp16/bf16 inputs, which torch's CUDA kernel rejects, are served. Deterministic, so it runs
  under ``torch.use_deterministic_algorithms(True)``.
- ``torch.histogram`` (both overloads) gets the CUDA kernel torch lacks, matching the CPU
  function: the same bin edges bit for bit, exact counts, weighted sums accumulated in float64
  in a fixed order. Inputs other than float32/float64, and weighted sums over more bins than
  one float64 copy fits in a block's shared memory (about 19K on an H100), are computed by the
  CPU function on a copy (its result or error, moved to the device).
- Auto-range (``min == max``) reads the data's min and max back to the host, as torch does.

Registering over a kernel torch already has makes torch warn "Overriding a previously
registered kernel" once per process; ``enable()`` registers with that warning silenced, since
the override is the point. AOTInductor-compiled models call ``at::cuda::histc`` directly, not
through the dispatcher, so they are not reached.
"""

from __future__ import annotations

import contextlib
import math
import struct
import warnings

import torch

from .ops import _histc_bounds_fit

_HISTC_OPS = ("histc", "histc.out")
# On a 16-core host smem's CPU histc took 0.88x torch's time at 2^16 elements and 0.25x at
# 2^20 (docs/PERFORMANCE.md); smaller inputs stay with torch.
CPU_MIN_NUMEL = 1 << 16
# On CUDA, torch's own kernel is the faster one only for int32 inputs of 2^12 < n <= 2^13
# elements over 64 bins or more (torch 3.3-3.4 us, smem 3.4-3.5: H100, device time,
# docs/PERFORMANCE.md); every other integer input measured (2^12, 2^13, 2^15, 2^16 elements;
# 8, 64, 256 bins) is even or faster with smem's (int64: 3.0-3.6 us against torch's 3.6-6.2).
# Deterministic mode keeps smem's.
CUDA_TORCH_INT32_NUMEL = (1 << 12, 1 << 13)  # (above, up to and including)
CUDA_TORCH_INT32_MIN_BINS = 64
_HISTOGRAM_OPS = ("histogram.bin_ct", "histogram.bins_tensor")
# integer binning is exact in float64 while (hi - lo) * bins and the bounds stay below 2^53
_EXACT_INT_SPAN = 2.0**53

_state: dict | None = None


def is_enabled() -> bool:
    return _state is not None


def enable() -> None:
    """Routes torch.histc / torch.histogram on CUDA tensors to smem's kernels (idempotent)."""
    global _state
    if _state is not None:
        return
    originals = {(op, key): _original_kernel(op, key) for op in _HISTC_OPS
                 for key in ("CUDA", "CPU")}
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        # the message starts with a line of its own: (?s) lets .* cross it
        warnings.filterwarnings("ignore", message="(?s).*Overriding a previously registered kernel")
        for key in ("CUDA", "CPU"):
            library.impl("histc", _histc_kernel, key, with_keyset=True)
            library.impl("histc.out", _histc_out_kernel, key, with_keyset=True)
        if hasattr(torch.ops.smem, "_histogram_count"):
            library.impl("histogram.bin_ct", _histogram_bin_ct, "CUDA")
            library.impl("histogram.bins_tensor", _histogram_bins_tensor, "CUDA")
    _state = {"library": library, "originals": originals}


def _original_kernel(op: str, key: str):
    """torch's kernel of aten::op for a dispatch key, to run the cases smem does not serve
    (None in a torch built without CUDA, where no CUDA tensor can reach it)."""
    try:
        return torch.library.get_kernel(f"aten::{op}", key)
    except RuntimeError:
        return None


def _call_original(op: str, keyset, x, *args, **kwargs):
    key = "CUDA" if x.is_cuda else "CPU"
    original = _state["originals"][(op, key)]
    if original is None:
        raise NotImplementedError(f"aten::{op} has no {key} kernel in this build of torch")
    return original.call_boxed(keyset, x, *args, **kwargs)


def disable() -> None:
    """Restores torch's own kernels (idempotent)."""
    global _state
    if _state is None:
        return
    _state["library"]._destroy()
    _state = None


@contextlib.contextmanager
def enabled():
    """``enable()`` for a block; restores the previous state after it."""
    was_enabled = is_enabled()
    enable()
    try:
        yield
    finally:
        if not was_enabled:
            disable()


# ----------------------------------------------------------------------------- torch.histc

def _as_float32(v: float) -> float:
    return struct.unpack("f", struct.pack("f", v))[0]


def _torch_is_faster_on_cuda(x: torch.Tensor, bins: int) -> bool:
    if torch.are_deterministic_algorithms_enabled():
        return False
    above, up_to = CUDA_TORCH_INT32_NUMEL
    return (x.dtype == torch.int32 and above < x.numel() <= up_to
            and bins >= CUDA_TORCH_INT32_MIN_BINS)


def _histc_range(x: torch.Tensor, bins, lo, hi) -> tuple[float, float] | None:
    """The range torch's CUDA histc bins x with, or None where smem leaves the call to torch
    (anything torch would reject, integer ranges smem cannot bin exactly, and the inputs where
    torch's kernel is the faster one)."""
    if not isinstance(bins, int) or bins <= 0:
        return None
    if not x.is_cuda and (x.dtype not in (torch.float32, torch.float64)
                          or x.numel() < CPU_MIN_NUMEL):
        return None
    if x.is_cuda and _torch_is_faster_on_cuda(x, bins):
        return None
    if x.dtype.is_floating_point:
        lo, hi = float(lo), float(hi)
        if x.dtype in (torch.float32, torch.float16, torch.bfloat16):
            if not _histc_bounds_fit(x.dtype, lo, hi):
                return None  # torch raises: the bound does not fit the input dtype
            cast = _as_float32(lo), _as_float32(hi)
            # torch's CPU kernel compares the bounds before rounding them to float32
            if not x.is_cuda and cast[0] == cast[1] and lo != hi:
                return None
            lo, hi = cast
    elif x.dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        if not all(math.isfinite(float(v)) for v in (lo, hi)):
            return None
        lo, hi = int(lo), int(hi)  # torch converts the bounds to the input's integer type
        info = torch.iinfo(x.dtype)
        if not (info.min <= lo <= info.max and info.min <= hi <= info.max):
            return None
    else:
        return None
    if lo == hi and x.numel() > 0:
        if x.dtype in (torch.float16, torch.bfloat16):
            return lo, lo  # smem's own auto-range: finite min and max, on the device
        lo, hi = (v.item() for v in torch.aminmax(x))  # torch syncs here too
    if lo == hi:
        lo, hi = lo - 1, hi + 1
        if x.dtype == torch.float32:
            lo, hi = _as_float32(lo), _as_float32(hi)
        # torch's CPU kernel bins by edges spaced over this range; where min - 1 or max + 1 is
        # not exact in the input dtype (|value| >= 2^24 in fp32, 2^53 in fp64) those edges part
        # from the formula's bins
        if not x.is_cuda and lo + 1 != hi - 1:
            return None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        return None
    if not x.dtype.is_floating_point:
        info = torch.iinfo(x.dtype)
        # past _EXACT_INT_SPAN an integer outside the range can round into it
        if (lo < info.min or hi > info.max or (hi - lo) * bins >= _EXACT_INT_SPAN
                or max(-lo, hi) >= _EXACT_INT_SPAN):
            return None
    return lo, hi


def _histc_kernel(keyset, x, bins=100, min=0, max=0):
    served = _histc_range(x, bins, min, max)
    if served is None:
        return _call_original("histc", keyset, x, bins, min, max)
    return torch.ops.smem.histc(x, bins, served[0], served[1], dtype=x.dtype)


def _histc_out_kernel(keyset, x, bins=100, min=0, max=0, *, out):
    served = _histc_range(x, bins, min, max)
    if served is None or out.dtype != x.dtype or out.device != x.device:
        return _call_original("histc.out", keyset, x, bins, min, max, out=out)
    result = torch.ops.smem.histc(x, bins, served[0], served[1], dtype=x.dtype)
    out.resize_(result.shape)
    return out.copy_(result)


# ----------------------------------------------------------------------------- torch.histogram

def _on_cpu(x, bins, **kwargs):
    """torch.histogram's CPU function on copies: its exact result, or its exact error."""
    if isinstance(bins, torch.Tensor):
        bins = bins.cpu()
    if kwargs.get("weight") is not None:
        kwargs["weight"] = kwargs["weight"].cpu()
    hist, edges = torch.histogram(x.cpu(), bins, **kwargs)
    return hist.to(x.device), edges.to(x.device)


def _served(x, weight) -> bool:
    return (x.dtype in (torch.float32, torch.float64)
            and (weight is None or (weight.dtype == x.dtype and weight.numel() == x.numel()
                                    and weight.device == x.device)))


def _finish(x, edges, weight, density, uniform, on_cpu):
    try:
        counts = torch.ops.smem._histogram_count(
            x, edges, None if weight is None else weight.reshape(x.shape), uniform)
    except NotImplementedError:  # weighted sums over more bins than a block's shared memory
        return on_cpu()
    hist = counts.to(x.dtype)
    if density:  # as the CPU function: by the total, then by each bin's width
        hist = hist / hist.sum() / edges.diff()
    return hist, edges


def _histogram_bin_ct(x, bins=100, *, range=None, weight=None, density=False):
    if not _served(x, weight) or not isinstance(bins, int) or bins <= 0:
        return _on_cpu(x, bins, range=range, weight=weight, density=density)
    if range is not None:
        lo, hi = (float(v) for v in range) if len(range) == 2 else (math.nan, math.nan)
    elif x.numel() > 0:
        lo, hi = (v.item() for v in torch.aminmax(x))  # the CPU function reads them too
    else:
        lo, hi = 0.0, 1.0
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        return _on_cpu(x, bins, range=range, weight=weight, density=density)  # its error
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    # The CPU function's edges: linspace in the input dtype, on the CPU (bit for bit).
    edges = torch.linspace(lo, hi, bins + 1, dtype=x.dtype).to(x.device)
    return _finish(x, edges, weight, density, True, lambda: _on_cpu(
        x, bins, range=range, weight=weight, density=density))


def _histogram_bins_tensor(x, bins, *, weight=None, density=False):
    if (not _served(x, weight) or bins.dim() != 1 or bins.dtype != x.dtype
            or bins.device != x.device or bins.numel() < 2):
        return _on_cpu(x, bins, weight=weight, density=density)
    if bool((bins[1:] < bins[:-1]).any()):
        raise ValueError("torch.histogram: bins must be a non-decreasing sequence of bin edges")
    return _finish(x, bins.clone(), weight, density, False, lambda: _on_cpu(
        x, bins, weight=weight, density=density))
