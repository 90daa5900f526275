"""Times a few named cases on the GPU, each output checked first: the quick loop for tuning.

    python3 tools/probe.py sum_1m sum_16m hist_bf16          # selected cases
    python3 tools/probe.py all --tag FILL=4                  # every case, tagged lines
    python3 tools/probe.py t:float32:181x181 torch_t:float32:181x181   # any transpose shape
    python3 tools/probe.py sum:bfloat16:8192x8192:-1 compile_sum:bfloat16:8192x8192:-1  # any sum

Both clocks of the benchmark (benchmarks/timing.py): device time (kernel durations from CUPTI,
median, L2 flushed before each call) and wall time (CUDA events, median, L2 flushed). Prints one
line per case: tag, case, device us, % of the copy ceiling, wall us, %; --kernels adds each
device activity's median us. --clean and --settle are wall-time diagnostics (CUDA events around
each call after their own preparation).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import smem_ops  # noqa: F401  (registers torch.ops.smem)
from benchmarks import cublas
from benchmarks.histograms import assert_weighted_close, global_bins
from benchmarks.read_floor import read_floor
from benchmarks.timing import (
    copy_ceiling_gbs,
    device_copy,
    l2_flush,
    time_device,
    time_events,
    time_wall,
)

ops = torch.ops.smem
dev = "cuda"


def _randn(shape, dtype=torch.float32):
    return torch.randn(shape, device=dev).to(dtype)


class SumRef:
    """A float64 sum and the sum of its terms' magnitudes, which bounds its rounding error."""

    def __init__(self, terms, dim=None):
        self.value = terms.sum() if dim is None else terms.sum(dim)
        self.scale = terms.abs().sum() if dim is None else terms.abs().sum(dim)


def _sum(shape, dtype=torch.float32, dim=None, impl="smem"):
    """A sum over `dim` (all dims when None) by smem, torch eager or torch.compile (static
    shapes: the best read of these bytes found for some sizes)."""
    x = _randn(shape, dtype)
    dims = () if dim is None else (dim,)
    if impl == "smem":
        op = lambda t: ops.sum(t, list(dims)) if dims else ops.sum(t)
    elif impl == "torch":
        op = lambda t: torch.sum(t, *dims)
    else:
        # one code object for every shape: each shape is a recompile of it
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
        op = torch.compile(lambda t: t.sum(*dims), fullgraph=True, dynamic=False)
    return (lambda: op(x)), SumRef(x.double(), dim), x.numel() * x.element_size()


def _squares(shape=1 << 24, dim=None, dtype=torch.float32):
    x = _randn(shape, dtype)
    op = (lambda: ops.sum_of_squares(x)) if dim is None else (lambda: ops.sum_of_squares(x, [dim]))
    return op, SumRef(x.double() ** 2, dim), x.numel() * x.element_size()


def _sum_named(name):
    """sum:<dtype>:<d0>x<d1>[x...][:<dim>] (torch_sum:, compile_sum:, squares:): a sum over
    `dim`, all dims when it is left out."""
    impl, dtype, shape, *dim = name.split(":")
    shape = tuple(int(d) for d in shape.split("x"))
    dim = int(dim[0]) if dim else None
    if impl == "squares":
        return _squares(shape, dim, getattr(torch, dtype))
    impl = {"torch_sum": "torch", "compile_sum": "compile"}.get(impl, "smem")
    return _sum(shape, getattr(torch, dtype), dim, impl)


def _dot():
    a, b = _randn(1 << 24), _randn(1 << 24)
    return (lambda: ops.dot(a, b)), SumRef(a.double() * b.double()), 2 * a.numel() * 4


def _hist(n, bins, dtype=torch.float32, lo=-4.0, hi=4.0, data="randn"):
    x = {"randn": lambda: _randn(n, dtype),
         "uniform": lambda: (torch.rand(n, device=dev) * 8 - 4).to(dtype),
         "one_bin": lambda: torch.full((n,), 0.1, device=dev, dtype=dtype),
         "bytes": lambda: torch.randint(0, 256, (n,), device=dev, dtype=dtype)}[data]()
    rlo, rhi = (lo, hi) if lo != hi else (x.min().item(), x.max().item())
    # torch's float counts are exact below 2^24 per bin: bin chunks of 2^23, summed in fp64
    wide = (lambda c: c.double()) if dtype == torch.float64 else (lambda c: c.float())
    ref = sum(torch.histc(wide(c), bins, rlo, rhi).double() for c in x.split(1 << 23))
    return (lambda: ops.histc(x, bins, lo, hi, dtype=torch.int64)), ref, x.numel() * x.element_size()


class CloseRef:
    """Weighted bin sums in float64 against a float64 reference: smem's accuracy for them
    (benchmarks.histograms.assert_weighted_close)."""

    def __init__(self, value, magnitude, dtype):
        self.value, self.magnitude, self.dtype = value, magnitude, dtype


def _edges(n, bins, dtype=torch.float32, weights=True, uniform=True):
    """smem._histogram_count (torch.histogram on CUDA): randn over [-4, 4] with int bins
    (linspace edges, torch's local search) or sorted random tensor edges, weights in [0, 1).
    The reference bins by a global search, which agrees with torch's local one because these
    edges are strictly increasing."""
    x = _randn(n, dtype)
    edges = (torch.linspace(-4, 4, bins + 1, device=dev, dtype=dtype) if uniform
             else torch.sort(torch.randn(bins + 1, device=dev, dtype=dtype) * 2).values)
    w = torch.rand(n, device=dev, dtype=dtype) if weights else None
    b = global_bins(x, edges)
    keep = b >= 0
    if weights:
        sums = torch.zeros(bins, dtype=torch.float64, device=dev).index_add_(
            0, b[keep], w[keep].double())
        ref = CloseRef(sums, sums, dtype)  # weights in [0, 1): the sums are the magnitudes
    else:
        ref = torch.bincount(b[keep], minlength=bins).double()
    nbytes = x.numel() * x.element_size() * (2 if weights else 1)
    return (lambda: ops._histogram_count(x, edges, w, uniform)), ref, nbytes


def _moe(tokens, top_k, experts, dtype=torch.int64, histc=None):
    """MoE expert counts: torchtitan's histc(ids, E, 0, E) on int64 ids, transformers'
    histc(ids.int(), E, 0, E - 1) on int32; `histc`: torch.histc for torch's own kernel."""
    histc = histc or ops.histc
    ids = torch.randint(0, experts, (tokens, top_k), device=dev, dtype=dtype)
    hi = experts if dtype == torch.int64 else experts - 1
    ref = torch.bincount(ids.flatten().long(), minlength=experts).double()
    return (lambda: histc(ids, experts, 0, hi)), ref, ids.numel() * ids.element_size()


def _transpose(shape, dtype=torch.float32, impl="smem"):
    """impl: smem, torch, compile, or a variant of smem._transpose_variant (final:gather, ...)."""
    x = (torch.randint(0, 255, shape, device=dev, dtype=torch.uint8).to(dtype)
         if not dtype.is_floating_point else _randn(shape, dtype))
    if impl == "smem":
        op = lambda: ops.transpose(x, -2, -1)
    elif impl in ("torch", "compile"):
        op = lambda: x.transpose(-2, -1).contiguous()
        if impl == "compile":
            # one code object for every shape: each shape is a recompile of it
            torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
            compiled = torch.compile(lambda t: t.transpose(-2, -1).contiguous(), fullgraph=True,
                                     dynamic=False)
            op = lambda: compiled(x)
    else:
        op = lambda: ops._transpose_variant(x, impl)
    return op, x.transpose(-2, -1).contiguous(), 2 * x.numel() * x.element_size()


def _transpose_named(name):
    impl, dtype, shape, *variant = name.split(":", 3)
    impl = {"torch_t": "torch", "compile_t": "compile"}.get(impl, variant[0] if variant else "smem")
    return _transpose(tuple(int(d) for d in shape.split("x")), getattr(torch, dtype), impl)


def _copy(nbytes):
    """torch's device copy moving nbytes in all (half read, half written): what the ceiling's
    own kernel reaches at a sum's size, under the same flush."""
    copy = device_copy(nbytes, dev)
    return copy, copy().clone(), nbytes


def _geam(shape):
    x = _randn(shape)
    return (lambda: cublas.geam_transpose(x)), x.t().contiguous(), 2 * x.numel() * x.element_size()


CASES = {
    "sleep0": lambda: ((lambda: torch.cuda._sleep(0)), None, 0),
    "sum_4k": lambda: _sum(1 << 12),
    "sum_4k_bf16": lambda: _sum(1 << 12, torch.bfloat16),
    "torch_sum_4k": lambda: _sum(1 << 12, impl="torch"),
    "torch_sum_4k_bf16": lambda: _sum(1 << 12, torch.bfloat16, impl="torch"),
    "sum_1m": lambda: _sum(1 << 20),
    "sum_16m": lambda: _sum(1 << 24),
    "sum_bf16_16m": lambda: _sum(1 << 24, torch.bfloat16),
    "sum_256m": lambda: _sum(1 << 28),
    "torch_sum_256m": lambda: _sum(1 << 28, impl="torch"),
    "sum_1g": lambda: _sum(1 << 30),
    "torch_sum_1g": lambda: _sum(1 << 30, impl="torch"),
    "sum_64m": lambda: _sum(1 << 26),
    "sum_bf16_1m": lambda: _sum(1 << 20, torch.bfloat16),
    "sum_fp16_1m": lambda: _sum(1 << 20, torch.float16),
    "sum_fp16_16m": lambda: _sum(1 << 24, torch.float16),
    "sum_odd_1m": lambda: _sum((1 << 20) + 3),
    "sum_rows_4x4m": lambda: _sum((4, 1 << 22), dim=-1),
    "sum_rows_64x256k": lambda: _sum((64, 1 << 18), dim=-1),
    "sum_rows_8192": lambda: _sum((8192, 8192), dim=-1),
    "sum_rows_8192_bf16": lambda: _sum((8192, 8192), torch.bfloat16, dim=-1),
    "sum_cols_8192": lambda: _sum((8192, 8192), dim=0),
    "sum_cols_8192_bf16": lambda: _sum((8192, 8192), torch.bfloat16, dim=0),
    "sum_cols_4096": lambda: _sum((4096, 4096), dim=0),
    "sum_mid": lambda: _sum((32, 4096, 128), dim=1),
    "sum_mid_bf16": lambda: _sum((32, 4096, 128), torch.bfloat16, dim=1),
    "compile_sum_16m": lambda: _sum(1 << 24, impl="compile"),
    "compile_sum_1m": lambda: _sum(1 << 20, impl="compile"),
    "compile_sum_bf16_1m": lambda: _sum(1 << 20, torch.bfloat16, impl="compile"),
    "compile_sum_bf16_16m": lambda: _sum(1 << 24, torch.bfloat16, impl="compile"),
    "compile_sum_64m": lambda: _sum(1 << 26, impl="compile"),
    "compile_sum_rows_8192": lambda: _sum((8192, 8192), dim=-1, impl="compile"),
    "compile_sum_rows_8192_bf16": lambda: _sum((8192, 8192), torch.bfloat16, dim=-1, impl="compile"),
    "compile_sum_mid": lambda: _sum((32, 4096, 128), dim=1, impl="compile"),
    "compile_sum_mid_bf16": lambda: _sum((32, 4096, 128), torch.bfloat16, dim=1, impl="compile"),
    "sum_mid_64": lambda: _sum((32, 8192, 64), dim=1),
    "sum_mid_bf16_64": lambda: _sum((32, 8192, 64), torch.bfloat16, dim=1),
    "squares_16m": _squares,
    "squares_mid": lambda: _squares((32, 4096, 128), 1),
    "dot_16m": _dot,
    "hist_4k": lambda: _hist(1 << 12, 256),
    "hist_64k_elems": lambda: _hist(1 << 16, 256),
    "hist_1m": lambda: _hist(1 << 20, 256),
    "hist_4m": lambda: _hist(1 << 22, 256),
    "hist_1m_2048": lambda: _hist(1 << 20, 2048),
    "hist_64m_2048": lambda: _hist(1 << 26, 2048),
    "moe_4k_64": lambda: _moe(4096, 2, 64),
    "moe_64": lambda: _moe(65536, 8, 64),
    "moe_128": lambda: _moe(65536, 8, 128),
    "moe_256": lambda: _moe(65536, 8, 256),
    "moe32_64": lambda: _moe(65536, 8, 64, torch.int32),
    "moe32_128": lambda: _moe(65536, 8, 128, torch.int32),
    "moe32_256": lambda: _moe(65536, 8, 256, torch.int32),
    "moe_256k_64": lambda: _moe(262144, 8, 64),
    "moe_one_expert": lambda: _moe(65536, 8, 1, histc=lambda i, e, lo, hi: ops.histc(i, 64, 0, 64)[:1]),
    "hist_4m_one_bin": lambda: _hist(1 << 22, 256, data="one_bin"),
    # the largest inputs of the one-block-per-SM regime (L2 / 2), spread and in one bin
    "hist_6m": lambda: _hist(6 << 20, 256),
    "hist_6m_one_bin": lambda: _hist(6 << 20, 256, data="one_bin"),
    "hist_6m_2048": lambda: _hist(6 << 20, 2048),
    "hist_u8_24m": lambda: _hist(24 << 20, 256, torch.uint8, lo=0.0, hi=256.0, data="bytes"),
    "hist_u8_24m_one_bin": lambda: _hist(24 << 20, 256, torch.uint8, data="one_bin"),
    "hist_bf16_12m": lambda: _hist(12 << 20, 256, torch.bfloat16),
    "hist_fp64_16m": lambda: _hist(1 << 24, 256, torch.float64),
    "hist_i32_auto_16m": lambda: _hist(1 << 24, 256, torch.int32, lo=0.0, hi=0.0, data="bytes"),
    "hist_bf16_12m_one_bin": lambda: _hist(12 << 20, 256, torch.bfloat16, data="one_bin"),
    "torch_moe_64": lambda: _moe(65536, 8, 64, histc=torch.histc),
    "torch_moe_128": lambda: _moe(65536, 8, 128, histc=torch.histc),
    "torch_moe_256": lambda: _moe(65536, 8, 256, histc=torch.histc),
    "torch_moe32_64": lambda: _moe(65536, 8, 64, torch.int32, histc=torch.histc),
    "histw_64m": lambda: _edges(1 << 26, 256),
    "histw_64m_64": lambda: _edges(1 << 26, 64),
    "histw_64m_512": lambda: _edges(1 << 26, 512),
    "histw_64m_edges": lambda: _edges(1 << 26, 256, uniform=False),
    "histw_8m": lambda: _edges(1 << 23, 256),
    "histw_1m": lambda: _edges(1 << 20, 256),
    "histw_32m_fp64": lambda: _edges(1 << 25, 256, torch.float64),
    "histn_64m": lambda: _edges(1 << 26, 256, weights=False),
    "histn_64m_edges": lambda: _edges(1 << 26, 256, weights=False, uniform=False),
    "hist_256": lambda: _hist(1 << 28, 256),
    "hist_16m": lambda: _hist(1 << 24, 256),
    "hist_bf16": lambda: _hist(1 << 28, 256, torch.bfloat16),
    "hist_auto": lambda: _hist(1 << 28, 256, lo=0.0, hi=0.0),
    "hist_auto_64k": lambda: _hist(1 << 16, 256, lo=0.0, hi=0.0),
    "hist_auto_1m": lambda: _hist(1 << 20, 256, lo=0.0, hi=0.0),
    "hist_auto_16m": lambda: _hist(1 << 24, 256, lo=0.0, hi=0.0),
    "hist_16k": lambda: _hist(1 << 28, 16384),
    "hist_64k": lambda: _hist(1 << 28, 65536),
    "hist_256k": lambda: _hist(1 << 28, 262144),
    "hist_512k": lambda: _hist(1 << 28, 524288),
    "hist_1m_bins": lambda: _hist(1 << 28, 1 << 20),
    "hist_64k_16m": lambda: _hist(1 << 24, 65536),
    "hist_256k_64m": lambda: _hist(1 << 26, 262144),
    "hist_256k_16m": lambda: _hist(1 << 24, 262144),
    "hist_256k_4m": lambda: _hist(1 << 22, 262144),
    "hist_64k_1m": lambda: _hist(1 << 20, 65536),
    "hist_1m_bins_16m": lambda: _hist(1 << 24, 1 << 20),
    "hist_one_bin": lambda: _hist(1 << 28, 256, data="one_bin"),
    "hist_256k_uniform": lambda: _hist(1 << 28, 262144, data="uniform"),
    "hist_256k_one_bin": lambda: _hist(1 << 28, 262144, data="one_bin"),
    "t_fp32_16k": lambda: _transpose((16384, 16384)),
    "t_fp32_4k": lambda: _transpose((4096, 4096)),
    "t_bf16_16k": lambda: _transpose((16384, 16384), torch.bfloat16),
    "t_bf16_4k": lambda: _transpose((4096, 4096), torch.bfloat16),
    "t_u8_4k": lambda: _transpose((4096, 4096), torch.uint8),
    "t_u8_16k": lambda: _transpose((16384, 16384), torch.uint8),
    "t_fp64_4k": lambda: _transpose((4096, 4096), torch.float64),
    "t_fp64_8k": lambda: _transpose((8192, 8192), torch.float64),
    "t_8192x1000": lambda: _transpose((8192, 1000)),
    "t_bf16_batch": lambda: _transpose((64, 512, 512), torch.bfloat16),
    "t_33x65536": lambda: _transpose((33, 65536), torch.bfloat16),
    "t_65536x33": lambda: _transpose((65536, 33), torch.bfloat16),
    "t_fp32_64": lambda: _transpose((64, 64)),
    "t_fp32_128": lambda: _transpose((128, 128)),
    "t_fp32_181": lambda: _transpose((181, 181)),
    "t_fp32_256": lambda: _transpose((256, 256)),
    "t_fp32_4x64x64": lambda: _transpose((4, 64, 64)),
    "t_bf16_128": lambda: _transpose((128, 128), torch.bfloat16),
    "t_u8_128": lambda: _transpose((128, 128), torch.uint8),
    "t_fp32_1k": lambda: _transpose((1024, 1024)),
    "t_bf16_256": lambda: _transpose((256, 256), torch.bfloat16),
    "torch_t_fp32_64": lambda: _transpose((64, 64), impl="torch"),
    "torch_t_fp32_128": lambda: _transpose((128, 128), impl="torch"),
    "torch_t_fp32_181": lambda: _transpose((181, 181), impl="torch"),
    "torch_t_fp32_256": lambda: _transpose((256, 256), impl="torch"),
    "torch_t_fp32_4x64x64": lambda: _transpose((4, 64, 64), impl="torch"),
    "torch_t_bf16_128": lambda: _transpose((128, 128), torch.bfloat16, impl="torch"),
    "torch_t_u8_128": lambda: _transpose((128, 128), torch.uint8, impl="torch"),
    "torch_t_fp32_1k": lambda: _transpose((1024, 1024), impl="torch"),
    "torch_t_bf16_256": lambda: _transpose((256, 256), torch.bfloat16, impl="torch"),
    "copy_4mb": lambda: _copy(4 << 20),
    "copy_64mb": lambda: _copy(64 << 20),
    "copy_256mb": lambda: _copy(256 << 20),
    "copy_512mb": lambda: _copy(512 << 20),
    "geam_fp32_4k": lambda: _geam((4096, 4096)),
    "geam_fp32_16k": lambda: _geam((16384, 16384)),
    "geam_8192x1000": lambda: _geam((8192, 1000)),
}


# Small integer inputs, smem's kernel against torch's (the drop-in's rule, smem_ops/dropin.py):
# int<bits>_<n>_<bins> and torch_int<bits>_<n>_<bins>, ids in [0, bins).
for _bits, _dt in ((32, torch.int32), (64, torch.int64)):
    for _n in (1 << 12, 1 << 13, 1 << 15, 1 << 16):
        for _bins in (8, 64, 256):
            CASES[f"int{_bits}_{_n}_{_bins}"] = (
                lambda n=_n, b=_bins, dt=_dt: _moe(n, 1, b, dt))
            CASES[f"torch_int{_bits}_{_n}_{_bins}"] = (
                lambda n=_n, b=_bins, dt=_dt: _moe(n, 1, b, dt, histc=torch.histc))


def time_clean(fn):
    clean = torch.ones(256 << 18, dtype=torch.float32, device=dev)
    # the flush's dirty lines, then a read that leaves the L2 holding clean lines of `clean`
    return time_events(fn, lambda: (l2_flush(dev), clean.amax()))


def time_settled(fn, cycles):
    # the flush, then the GPU spins: dirty lines the L2 writes back on its own while idle are
    # gone before fn starts; lines written back only when evicted are still there
    return time_events(fn, lambda: (l2_flush(dev), torch.cuda._sleep(cycles)))


def check(out, ref):
    if ref is None:
        return
    if isinstance(ref, CloseRef):
        assert_weighted_close(out, ref.value, ref.magnitude, ref.dtype)
        return
    if isinstance(ref, torch.Tensor):
        if out.dtype != ref.dtype:  # histogram counts (any dtype) against float64: exact
            assert torch.equal(out.double(), ref), "counts differ"
        else:  # transpose, copy: exact
            assert torch.equal(out, ref), "output differs"
    else:  # sums against float64: the output's rounding, plus an eps of the terms' magnitudes
        # (a sum of 16M randn cancels to ~35 out of ~1.3e7 in magnitude)
        eps = torch.finfo(out.dtype).eps
        err = (out.double() - ref.value).abs()
        assert bool((err <= 2 * eps * ref.value.abs() + eps * ref.scale).all()), \
            f"sum off by {err.max().item():.3g} (terms' magnitude {ref.scale.max().item():.3g})"


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("cases", nargs="+")
    p.add_argument("--tag", default="")
    p.add_argument("--kernels", action="store_true",
                   help="also print each device activity of a call: median us and name")
    p.add_argument("--ceiling", type=float, default=0.0,
                   help="GB/s, for both clocks; measured (by each clock) when 0")
    p.add_argument("--clean", action="store_true",
                   help="flush the L2 and then fill it with clean lines (a read of 256 MB), to see "
                        "what the dirty lines the flush leaves behind cost")
    p.add_argument("--settle", type=int, default=0,
                   help="after the flush, spin the GPU this many cycles before timing (a "
                        "diagnostic: does the L2 write its dirty lines back while idle?)")
    args = p.parse_args(argv)
    names = list(CASES) if args.cases == ["all"] else args.cases
    for name in names:  # copy:<bytes>: the device copy moving that many bytes in all
        if name.startswith("copy:"):
            CASES[name] = lambda n=int(name[5:]): _copy(n)
        # t:<dtype>:<d0>x<d1>[x...][:<variant>], torch_t:..., compile_t:...: smem's (torch
        # eager's, torch.compile's) transpose of the last two dims; a variant (final:gather,
        # final:staged) names smem._transpose_variant's
        if name.split(":")[0] in ("t", "torch_t", "compile_t"):
            CASES[name] = functools.partial(_transpose_named, name)
        if name.split(":")[0] in ("sum", "torch_sum", "compile_sum", "squares"):
            CASES[name] = functools.partial(_sum_named, name)
    ceiling = ({"device": args.ceiling, "wall": args.ceiling} if args.ceiling
               else copy_ceiling_gbs(dev))
    for name in names:
        if name.startswith("read:"):  # read:<bytes>: the read floor of that many bytes
            floor, by_shape = read_floor(int(name[5:]))
            shapes = "  ".join(f"{w}x{t}/{k}w {us:.2f}" for (w, t, k), us in by_shape.items())
            print(f"{args.tag:>16} {name:<16} device {floor:9.2f} us (read floor)   {shapes}",
                  flush=True)
            continue
        fn, ref, nbytes = CASES[name]()
        out = fn()
        try:
            check(out, ref)
        except AssertionError as e:
            print(f"{args.tag:>16} {name:<16} WRONG: {str(e)[:200]}", flush=True)
            continue
        if args.clean or args.settle:
            us = time_clean(fn) if args.clean else time_settled(fn, args.settle)
            pct = 100 * nbytes / us / 1e3 / ceiling["wall"] if nbytes else 0.0
            print(f"{args.tag:>16} {name:<16} wall {us:9.1f} us {pct:6.1f} %", flush=True)
        else:
            wall = time_wall(fn)
            timed = time_device(fn, est_us=wall)
            dev_us = timed.us
            pct = {clock: 100 * nbytes / us / 1e3 / ceiling[clock] if nbytes and us else 0.0
                   for clock, us in (("device", dev_us), ("wall", wall))}
            print(f"{args.tag:>16} {name:<16} device {dev_us:9.2f} us {pct['device']:6.1f} %   "
                  f"wall {wall:9.1f} us {pct['wall']:6.1f} %", flush=True)
            if args.kernels:
                for us, kernel in zip(timed.per_activity_us, timed.names, strict=False):
                    print(f"{'':>16} {'':<16} {us:9.2f} us  {kernel[:100]}", flush=True)
        del fn, ref, out
        torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
