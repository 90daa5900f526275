"""The cases of the benchmark sweep (`python -m benchmarks`): for each op family, the inputs, the
implementations timed on them (smem and its peers), how each output is checked and the bytes
that must move; the goal table; the technique ladders."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, partial

import torch

import smem_ops

from . import cublas

# The goal table (judged on device time, GPU): every row must be a case of the full sweep.
# (op, dtype, shape, params that must match, goal): a goal of ("pct", p) asks for at least p% of
# the copy ceiling, ("us", t) for at most t microseconds.
GOALS = [
    ("transpose", "uint8", (4096, 4096), {}, ("pct", 92)),
    ("transpose", "bfloat16", (4096, 4096), {}, ("pct", 92)),
    ("transpose", "float32", (4096, 4096), {}, ("pct", 94)),
    ("transpose", "float32", (8192, 1000), {}, ("pct", 90)),
    ("transpose", "bfloat16", (64, 512, 512), {"dim0": -2, "dim1": -1}, ("pct", 92)),
    ("transpose", "bfloat16", (33, 65536), {}, ("pct", 70)),
    ("transpose", "bfloat16", (65536, 33), {}, ("pct", 70)),
    ("sum", "float32", (1 << 20,), {"dim": None}, ("us", 4.5)),
    ("sum", "float32", (1 << 24,), {"dim": None}, ("us", 25)),
    ("sum", "bfloat16", (1 << 24,), {"dim": None}, ("us", 13)),
    ("sum", "float32", (8192, 8192), {"dim": -1}, ("pct", 96)),
    ("sum", "float32", (8192, 8192), {"dim": 0}, ("pct", 95)),
    ("sum", "float32", (32, 4096, 128), {"dim": 1}, ("pct", 85)),
    ("sum", "bfloat16", (32, 4096, 128), {"dim": 1}, ("pct", 80)),
    ("sum_of_squares", "float32", (1 << 24,), {}, ("us", 25)),
    ("dot", "float32", (1 << 24,), {}, ("us", 46)),
    ("histc", "float32", (1 << 24,), {"bins": 256, "data": "randn"}, ("us", 24)),
    ("histc", "float32", (1 << 28,), {"bins": 65536, "data": "randn"}, ("pct", 90)),
    ("histc", "float32", (1 << 28,), {"bins": 262144, "data": "randn"}, ("pct", 70)),
    ("histc", "float32", (1 << 28,), {"bins": 1048576, "data": "randn"}, ("pct", 50)),
    ("histc", "float32", (1 << 28,), {"bins": 256, "data": "auto-range"}, ("pct", 49)),
]


def is_goal(op: str, dtype: str, shape, params: dict) -> bool:
    return any(op == g[0] and dtype == g[1] and tuple(shape) == g[2]
               and all(params.get(k) == v for k, v in g[3].items()) for g in GOALS)


# --------------------------------------------------------------------------- cases


@dataclass
class Sweep:
    kind: str             # "cuda" or "cpu": which sizes and peers
    alloc: str            # where inputs live: the device, or "meta" for --list
    quick: bool = False
    compile: bool = False  # torch.compile peers
    cupy: object = None   # the cupy module (CUB peers), or None


@dataclass
class Case:
    op: str
    dtype: torch.dtype
    shape: tuple
    params: dict
    bytes_moved: int
    impls: dict[str, Callable[[], object]]
    check: Callable[[torch.Tensor, torch.Tensor], None]
    label: str
    reference: str = "torch eager"  # the impl whose output is the reference
    checks: dict[str, Callable] = field(default_factory=dict)  # per-impl checks (peers)
    error: Callable[[torch.Tensor], float] | None = None  # relative error, reported per impl


def _nbytes(*ts):
    return sum(t.numel() * t.element_size() for t in ts)


def _check_close(rtol, atol):
    def check(out, ref):
        torch.testing.assert_close(out.double(), ref.double(), rtol=rtol, atol=atol)
    return check


def _rel_err_vs_float64(exact: Callable[[], torch.Tensor]) -> Callable[[torch.Tensor], float]:
    """A Case.error: |out - exact| / |exact|, the float64 `exact` computed once, on first use
    (never for --list, whose inputs are meta tensors)."""
    value = cache(lambda: exact().item())
    return lambda out: abs(out.item() - value()) / abs(value())


def _check_equal(out, ref):
    assert out.shape == ref.shape and torch.equal(out.to(ref.dtype), ref), "outputs differ"


def _check_loose_counts(out, ref):
    """torch's float32 histc counts are rounded sums once bins pass 2^24: allow for that."""
    torch.testing.assert_close(out.double(), ref.double(), rtol=1e-3, atol=0)


def _check_counts_near(out, ref):
    """Counts binned by other edges (CuPy/CUB: a float32 linspace and a search): values within
    an ulp of an edge may land in the neighbouring bin; at most 1e-4 of them may move."""
    moved = (out.double() - ref.double()).abs().sum().item()
    assert moved <= 1e-4 * ref.double().sum().item() + 16, f"{moved:g} counts in other bins"


def _exact_histc(data, bins, lo, hi):
    """Exact counts with torch.histc's own binning: torch.histc over chunks small enough that
    its float counts are exact, summed in float64."""
    src = data.flatten().float() if data.dtype == torch.bfloat16 else data.flatten()
    if lo == hi:
        lo, hi = src.min().item(), src.max().item()
    out = torch.zeros(bins, dtype=torch.float64, device=data.device)
    for chunk in src.split(1 << 23):
        out += torch.histc(chunk, bins, lo, hi).double()
    return out


def compiled(fn, *args):
    """torch.compile(fn)(*args), static shapes: each case compiles its own graph."""
    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(cfg, name):  # the lambdas of all cases share one code object
            setattr(cfg, name, max(getattr(cfg, name), 4096))
    return partial(torch.compile(fn, fullgraph=True, dynamic=False), *args)


def cupy_with_cub():
    """The cupy module with CUB selected for its sums and histograms; None where cupy does not
    import (or has no usable CUDA)."""
    try:
        import cupy
    except Exception:  # noqa: BLE001  (absent, or present without a usable CUDA)
        return None
    try:  # CUB for cupy.sum (DeviceReduce / DeviceSegmentedReduce) and cupy.histogram
        from cupy._core import _accelerator
        _accelerator.set_routine_accelerators(["cub"])
        _accelerator.set_reduction_accelerators(["cub"])
    except (ImportError, AttributeError, ValueError):
        print("# cupy: could not select the CUB accelerator; CuPy rows use its defaults")
    return cupy


def torch_stream(cp):
    """torch's current CUDA stream as a cupy stream: CuPy work launched on it (as a `with`
    context, or as a kernel's stream=) is ordered with torch's, and timed with it."""
    return cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)


def cupy_call(cp, fn, *tensors):
    """fn(*cupy views of tensors) on torch's current stream, returned as a torch tensor."""
    arrays = [cp.from_dlpack(t) for t in tensors]

    def run():
        with torch_stream(cp):
            out = fn(*arrays)
        return torch.from_dlpack(out)
    return run


def _randn(shape, dtype, sw: Sweep):
    return torch.randn(shape, device=sw.alloc, dtype=torch.float32).to(dtype)


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def sum_cases(sw: Sweep):
    gpu = sw.kind == "cuda"
    sizes = [1 << 12, 1 << 16, 1 << 20, 1 << 24, 1 << 28] if gpu else [1 << 20, 1 << 24]
    if sw.quick:
        sizes = [1 << 20, 1 << 24]
    for dtype in (torch.float32, torch.bfloat16):
        for n in sizes:
            x = _randn((n,), dtype, sw)
            out = torch.empty((), dtype=dtype, device=sw.alloc)
            impls = {"torch eager": partial(torch.sum, x), "smem": partial(smem_ops.sum, x)}
            if sw.compile and n in (1 << 20, 1 << 24):
                impls["torch.compile"] = compiled(lambda t: t.sum(), x)
            if sw.cupy is not None and dtype == torch.float32:
                impls["CuPy (CUB)"] = cupy_call(sw.cupy, lambda a: a.sum(), x)
            tol = 1e-5 if dtype == torch.float32 else 1e-2
            yield Case("sum", dtype, (n,), {"dim": None}, _nbytes(x, out), impls,
                       _check_close(tol, tol * math.sqrt(n)), f"({n},)")
    dim_cases = ([((8192, 8192), -1), ((8192, 8192), 0), ((32, 4096, 128), 1)] if gpu
                 else [((4096, 4096), -1), ((4096, 4096), 0), ((32, 1024, 128), 1)])
    if sw.quick:
        dim_cases = dim_cases[:2]
    elif gpu:  # short rows: many of 32, many of 2048, a small batch of 4096
        dim_cases += [((1 << 20, 32), -1), ((32768, 2048), -1), ((64, 4096), -1)]
        # columns of many small slabs (a thread per 16-byte vector; a warp per slab), and columns
        # that are not whole vectors (a column a lane, scalar loads)
        dim_cases += [((1 << 20, 2, 8), 1), ((8192, 128, 8), 1), ((512, 1000, 33), 1),
                      ((8192, 8191), 0)]
    for shape, dim in dim_cases:
        for dtype in (torch.float32, torch.bfloat16):
            x = _randn(shape, dtype, sw)
            out = x.sum(dim)
            impls = {"torch eager": partial(torch.sum, x, dim), "smem": partial(smem_ops.sum, x, dim)}
            if sw.compile:
                impls["torch.compile"] = compiled(lambda t, d: t.sum(d), x, dim)
            if sw.cupy is not None and dtype == torch.float32 and dim == -1:
                impls["CuPy (CUB)"] = cupy_call(sw.cupy, lambda a: a.sum(axis=-1), x)
            tol = 1e-5 if dtype == torch.float32 else 1e-2
            yield Case("sum", dtype, shape, {"dim": dim}, _nbytes(x, out), impls,
                       _check_close(tol, tol * math.sqrt(x.shape[dim])), f"{shape} dim={dim}")


def squares_and_dot_cases(sw: Sweep):
    sizes = [1 << 20, 1 << 24] if sw.kind == "cpu" or sw.quick else [1 << 20, 1 << 24, 1 << 28]
    for n in sizes:
        x, y = _randn((n,), torch.float32, sw), _randn((n,), torch.float32, sw)
        out = torch.empty((), device=sw.alloc)
        impls = {"torch eager": lambda x=x: torch.sum(x * x),
                 "torch vector_norm^2": lambda x=x: torch.linalg.vector_norm(x) ** 2,
                 "smem": partial(smem_ops.sum_of_squares, x)}
        if sw.compile and n == 1 << 24:
            impls["torch.compile"] = compiled(lambda t: (t * t).sum(), x)
        yield Case("sum_of_squares", torch.float32, (n,), {}, _nbytes(x, out), impls,
                   _check_close(1e-3, 1e-2 * math.sqrt(n)), f"({n},)",
                   error=_rel_err_vs_float64(lambda x=x: x.double().square().sum()))
        impls = {"torch eager": partial(torch.dot, x, y), "smem": partial(smem_ops.dot, x, y)}
        if sw.compile and n == 1 << 24:
            impls["torch.compile"] = compiled(lambda a, b: torch.dot(a, b), x, y)
        yield Case("dot", torch.float32, (n,), {}, _nbytes(x, y, out), impls,
                   _check_close(1e-4, 1e-3 * math.sqrt(n)), f"({n},)",
                   error=_rel_err_vs_float64(lambda x=x, y=y: x.double().dot(y.double())))


def transpose_cases(sw: Sweep):
    if sw.kind == "cpu":
        spec = [((1024, 1024), torch.float32), ((4096, 4096), torch.float32),
                ((4096, 4096), torch.bfloat16), ((4096, 4096), torch.uint8),
                ((64, 512, 512), torch.bfloat16)]
        if sw.quick:
            spec = spec[:3]
    else:
        spec = [((64, 64), torch.float32), ((1, 1 << 20), torch.float32),
                ((1 << 20, 1), torch.float32), ((1024, 1024), torch.float32)]
        for n in (4096, 16384):
            for dt in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.uint8,
                       torch.int8):
                if not (n == 16384 and dt == torch.float64):
                    spec.append(((n, n), dt))
        spec += [((8192, 8192), torch.float64), ((8192, 1000), torch.float32),
                 ((64, 512, 512), torch.bfloat16), ((33, 65536), torch.bfloat16),
                 ((65536, 33), torch.bfloat16)]
        # short sides in registers (the interleave kernel): 3 lines and their interleave, and
        # an image batch to HWC and back
        spec += [((3, 1 << 20), torch.float32), ((1 << 20, 3), torch.float32),
                 ((64, 3, 224 * 224), torch.uint8), ((64, 224 * 224, 3), torch.uint8)]
        if sw.quick:
            spec = [((4096, 4096), torch.float32), ((8192, 1000), torch.float32)]
    # torch.compile where it is a peer worth its compile time: the goal cases and the largest
    compile_set = {((4096, 4096), torch.float32), ((4096, 4096), torch.bfloat16),
                   ((4096, 4096), torch.uint8), ((16384, 16384), torch.float32),
                   ((16384, 16384), torch.bfloat16), ((16384, 16384), torch.uint8),
                   ((8192, 1000), torch.float32), ((64, 512, 512), torch.bfloat16),
                   ((33, 65536), torch.bfloat16), ((65536, 33), torch.bfloat16),
                   ((3, 1 << 20), torch.float32), ((1 << 20, 3), torch.float32),
                   ((64, 3, 224 * 224), torch.uint8), ((64, 224 * 224, 3), torch.uint8)}
    for shape, dtype in spec:
        x = (torch.randint(0, 255, shape, device=sw.alloc, dtype=torch.uint8).to(dtype)
             if not dtype.is_floating_point else _randn(shape, dtype, sw))
        impls = {"torch eager": lambda x=x: x.transpose(-2, -1).contiguous(),
                 "smem": partial(smem_ops.transpose, x)}
        if sw.compile and (shape, dtype) in compile_set:
            impls["torch.compile"] = compiled(lambda t: t.transpose(-2, -1).contiguous(), x)
        if sw.kind == "cuda" and dtype in (torch.float32, torch.float64) and len(shape) == 2:
            impls["cuBLAS geam"] = partial(cublas.geam_transpose, x)
        yield Case("transpose", dtype, shape, {"dim0": -2, "dim1": -1}, 2 * _nbytes(x), impls,
                   _check_equal, str(shape))


def histc_cases(sw: Sweep):
    gpu = sw.kind == "cuda"
    n = (1 << 28) if gpu else (1 << 22)
    bins_list = ([16, 256, 1024, 4096, 16384, 65536, 262144, 1048576] if gpu
                 else [16, 256, 4096])
    if sw.quick:
        bins_list = [256, 16384] if gpu else [256]
    x = torch.randn(n, device=sw.alloc)
    ref = "exact counts (chunked torch.histc, untimed)"

    def case(data_name, data, bins, lo, hi, baseline=True):
        out = torch.empty(bins, device=sw.alloc)
        impls = {ref: lambda: _exact_histc(data, bins, lo, hi)}
        if baseline:  # torch has no bf16 histc on CUDA
            impls["torch eager"] = lambda: torch.histc(data, bins, lo, hi)
        impls["smem"] = lambda: smem_ops.histc(data, bins, lo, hi, dtype=torch.int64)
        if sw.compile and baseline and data_name in ("randn", "auto-range") and bins in (
                256, 65536, 262144, 1048576):  # the goal cases' bins
            impls["torch.compile"] = compiled(lambda t: torch.histc(t, bins, lo, hi), data)
        if sw.cupy is not None and data.dtype == torch.float32 and lo != hi:
            cp = sw.cupy
            edges = cp.linspace(lo, hi, bins + 1, dtype=cp.float32)
            impls["CuPy (CUB)"] = cupy_call(sw.cupy, lambda a: cp.histogram(a, edges)[0], data)
        return Case("histc", data.dtype, (data.numel(),),
                    {"bins": bins, "min": lo, "max": hi, "data": data_name},
                    _nbytes(data, out), impls, _check_equal,
                    f"({data.numel()},) {data_name} bins={bins}", reference=ref,
                    checks={"torch eager": _check_loose_counts,
                            "torch.compile": _check_loose_counts,
                            "CuPy (CUB)": _check_counts_near})

    for bins in bins_list:
        yield case("randn", x, bins, -4.0, 4.0)
    if not sw.quick:
        yield case("uniform", torch.rand(n, device=sw.alloc) * 8 - 4, 256, -4.0, 4.0)
        yield case("one-bin", torch.full((n,), 0.01, device=sw.alloc), 256, -4.0, 4.0)
        yield case("out-of-range", x + 10, 256, -4.0, 4.0)
        yield case("auto-range", x, 256, 0.0, 0.0)
        yield case("randn", x[: 1 << 24] if gpu else x[: 1 << 20], 256, -4.0, 4.0)
        yield case("randn", x.to(torch.bfloat16), 256, -4.0, 4.0, baseline=not gpu)


def ladder_cases(sw: Sweep):
    """Every rung of each technique ladder on the same inputs (CUDA only)."""
    if sw.kind != "cuda" or sw.alloc == "meta":
        return
    dev = sw.alloc
    # The sum ladder on well-conditioned inputs, so the relative error says how each rung
    # accumulates: uniform [0, 1), and the seeds' 1e8 copies of 1.23. The error column is the
    # result (a float running sum of 1.23s stalls at 2^25, 73% short); the check only rejects
    # garbage (NaN, wrong sign, over 100% off).
    for label, x in (("uniform", torch.rand(1 << 24, device=dev)),
                     ("1.23 x 1e8", torch.full((100_000_000,), 1.23, device=dev))):
        impls = {"torch eager": partial(torch.sum, x)}
        impls.update({f"ladder:{v}": partial(torch.ops.smem._sum_variant, x, v)
                      for v in smem_ops.variants("reduce")})
        yield Case("sum ladder", torch.float32, (x.numel(),), {"data": label}, _nbytes(x) + 4,
                   impls, _check_close(1.0, 0), f"({x.numel()},) {label}",
                   error=_rel_err_vs_float64(lambda x=x: x.double().sum()))
    m = torch.randn(8192, 8192, device=dev)
    impls = {"torch eager": lambda: m.t().contiguous()}
    impls.update({f"ladder:{v}": partial(torch.ops.smem._transpose_variant, m, v)
                  for v in smem_ops.variants("transpose")})
    yield Case("transpose ladder", torch.float32, (8192, 8192), {}, 2 * _nbytes(m), impls,
               _check_equal, "(8192, 8192)")
    n = 1 << 26
    ref = "exact counts (chunked torch.histc, untimed)"
    for label, h in (("randn", torch.randn(n, device=dev)),
                     ("uniform", torch.rand(n, device=dev) * 8 - 4),
                     ("one-bin", torch.full((n,), 0.01, device=dev))):
        for bins in (256, 65536):
            impls = {ref: lambda b=bins, h=h: _exact_histc(h, b, -4.0, 4.0).long(),
                     "torch eager": lambda b=bins, h=h: torch.histc(h, b, -4, 4).long()}
            impls.update({f"ladder:{v}": partial(torch.ops.smem._histc_variant, h, bins, -4.0,
                                                 4.0, v) for v in smem_ops.variants("histogram")})
            yield Case("histc ladder", torch.float32, (n,), {"bins": bins, "data": label},
                       _nbytes(h) + bins * 8, impls, _check_equal,
                       f"({n},) {label} bins={bins}", reference=ref,
                       checks={"torch eager": _check_loose_counts})


FAMILIES = {"sum": sum_cases, "squares_dot": squares_and_dot_cases,
            "transpose": transpose_cases, "histc": histc_cases}
