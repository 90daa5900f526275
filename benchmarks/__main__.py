"""Benchmark runner: smem ops against their peers, on both clocks.

    python -m benchmarks                    # the full sweep for this device (CUDA if present)
    python -m benchmarks --quick            # a short sweep
    python -m benchmarks --goals            # only the cases of the goal table (GPU)
    python -m benchmarks --list             # the full GPU sweep's cases, without running them
    python -m benchmarks --ladder --save    # full sweep + technique ladders -> benchmarks/results/

Writes a table to stdout and, into bench-out/ at the repository root (or --out DIR), a JSON
file, a Markdown table and, with matplotlib, a PNG, named after the device. --save writes them
to benchmarks/results/ instead: the committed results, one current sweep per device.

Every op is memory-bound, so each case reports the bytes that must move (inputs read once,
outputs written once) over the time, as a % of the copy ceiling measured in the same process.
A GPU case has both clocks of benchmarks/timing.py: device time (kernel durations from CUPTI;
goals are judged on it) and wall time (CUDA events, do_bench), each against the ceiling
measured by the same clock. CPU cases have the host clock only. Peers: torch eager,
torch.compile, cuBLAS geam (fp32/fp64 transposes) and CUB through CuPy (fp32 sums and
histograms; skipped when cupy is not importable). Every implementation's output is checked
against the reference before it is timed; one that fails is reported, not timed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, partial

import torch

import smem_ops

from . import cublas
from .provenance import RESULTS, SCRATCH, commit, slug
from .timing import copy_ceiling_gbs, time_cpu, time_device, time_wall

# The goal table (judged on device time, GPU): every row must be a case of the full sweep.
# (op, dtype, shape, params that must match)
GOALS = [
    ("transpose", "uint8", (4096, 4096), {}),
    ("transpose", "bfloat16", (4096, 4096), {}),
    ("transpose", "float32", (4096, 4096), {}),
    ("transpose", "float32", (8192, 1000), {}),
    ("transpose", "bfloat16", (64, 512, 512), {"dim0": -2, "dim1": -1}),
    ("transpose", "bfloat16", (33, 65536), {}),
    ("transpose", "bfloat16", (65536, 33), {}),
    ("sum", "float32", (1 << 20,), {"dim": None}),
    ("sum", "float32", (1 << 24,), {"dim": None}),
    ("sum", "bfloat16", (1 << 24,), {"dim": None}),
    ("sum", "float32", (8192, 8192), {"dim": -1}),
    ("sum", "float32", (8192, 8192), {"dim": 0}),
    ("sum", "float32", (32, 4096, 128), {"dim": 1}),
    ("sum", "bfloat16", (32, 4096, 128), {"dim": 1}),
    ("sum_of_squares", "float32", (1 << 24,), {}),
    ("dot", "float32", (1 << 24,), {}),
    ("histc", "float32", (1 << 24,), {"bins": 256, "data": "randn"}),
    ("histc", "float32", (1 << 28,), {"bins": 65536, "data": "randn"}),
    ("histc", "float32", (1 << 28,), {"bins": 262144, "data": "randn"}),
    ("histc", "float32", (1 << 28,), {"bins": 1048576, "data": "randn"}),
    ("histc", "float32", (1 << 28,), {"bins": 256, "data": "auto-range"}),
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


def _compiled(fn, *args):
    """torch.compile(fn)(*args), static shapes: each case compiles its own graph."""
    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(cfg, name):  # the lambdas of all cases share one code object
            setattr(cfg, name, max(getattr(cfg, name), 4096))
    return partial(torch.compile(fn, fullgraph=True, dynamic=False), *args)


def _cupy(sw: Sweep, fn, *tensors):
    """fn(*cupy views of tensors) on torch's current stream, returned as a torch tensor."""
    cp = sw.cupy
    arrays = [cp.from_dlpack(t) for t in tensors]

    def run():
        with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            out = fn(*arrays)
        return torch.from_dlpack(out)
    return run


def _randn(shape, dtype, sw: Sweep):
    return torch.randn(shape, device=sw.alloc, dtype=torch.float32).to(dtype)


def _dtype_name(dtype):
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
                impls["torch.compile"] = _compiled(lambda t: t.sum(), x)
            if sw.cupy is not None and dtype == torch.float32:
                impls["CuPy (CUB)"] = _cupy(sw, lambda a: a.sum(), x)
            tol = 1e-5 if dtype == torch.float32 else 1e-2
            yield Case("sum", dtype, (n,), {"dim": None}, _nbytes(x, out), impls,
                       _check_close(tol, tol * math.sqrt(n)), f"({n},)")
    dim_cases = ([((8192, 8192), -1), ((8192, 8192), 0), ((32, 4096, 128), 1)] if gpu
                 else [((4096, 4096), -1), ((4096, 4096), 0), ((32, 1024, 128), 1)])
    if sw.quick:
        dim_cases = dim_cases[:2]
    for shape, dim in dim_cases:
        for dtype in (torch.float32, torch.bfloat16):
            x = _randn(shape, dtype, sw)
            out = x.sum(dim)
            impls = {"torch eager": partial(torch.sum, x, dim), "smem": partial(smem_ops.sum, x, dim)}
            if sw.compile:
                impls["torch.compile"] = _compiled(lambda t, d: t.sum(d), x, dim)
            if sw.cupy is not None and dtype == torch.float32 and dim == -1:
                impls["CuPy (CUB)"] = _cupy(sw, lambda a: a.sum(axis=-1), x)
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
            impls["torch.compile"] = _compiled(lambda t: (t * t).sum(), x)
        yield Case("sum_of_squares", torch.float32, (n,), {}, _nbytes(x, out), impls,
                   _check_close(1e-3, 1e-2 * math.sqrt(n)), f"({n},)",
                   error=_rel_err_vs_float64(lambda x=x: x.double().square().sum()))
        impls = {"torch eager": partial(torch.dot, x, y), "smem": partial(smem_ops.dot, x, y)}
        if sw.compile and n == 1 << 24:
            impls["torch.compile"] = _compiled(lambda a, b: torch.dot(a, b), x, y)
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
        if sw.quick:
            spec = [((4096, 4096), torch.float32), ((8192, 1000), torch.float32)]
    # torch.compile where it is a peer worth its compile time: the goal cases and the largest
    compile_set = {((4096, 4096), torch.float32), ((4096, 4096), torch.bfloat16),
                   ((4096, 4096), torch.uint8), ((16384, 16384), torch.float32),
                   ((16384, 16384), torch.bfloat16), ((16384, 16384), torch.uint8),
                   ((8192, 1000), torch.float32), ((64, 512, 512), torch.bfloat16),
                   ((33, 65536), torch.bfloat16), ((65536, 33), torch.bfloat16)}
    for shape, dtype in spec:
        x = (torch.randint(0, 255, shape, device=sw.alloc, dtype=torch.uint8).to(dtype)
             if not dtype.is_floating_point else _randn(shape, dtype, sw))
        impls = {"torch eager": lambda x=x: x.transpose(-2, -1).contiguous(),
                 "smem": partial(smem_ops.transpose, x)}
        if sw.compile and (shape, dtype) in compile_set:
            impls["torch.compile"] = _compiled(lambda t: t.transpose(-2, -1).contiguous(), x)
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
            impls["torch.compile"] = _compiled(lambda t: torch.histc(t, bins, lo, hi), data)
        if sw.cupy is not None and data.dtype == torch.float32 and lo != hi:
            cp = sw.cupy
            edges = cp.linspace(lo, hi, bins + 1, dtype=cp.float32)
            impls["CuPy (CUB)"] = _cupy(sw, lambda a: cp.histogram(a, edges)[0], data)
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


# --------------------------------------------------------------------------- driver


def _cupy_module():
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


def environment(sw: Sweep, ceiling, args) -> dict:
    sha, dirty = commit()
    env = {"device": sw.kind, "torch": torch.__version__, "python": platform.python_version(),
           "commit": sha, "dirty": dirty,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": "python -m benchmarks " + " ".join(sys.argv[1:] if args is None else args),
           "copy_ceiling_gbs_wall": round(ceiling["wall"], 1),
           # other work on the host moves host-clock numbers (CPU cases, wall-time floors)
           "load_avg_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}
    if sw.kind == "cuda":
        p = torch.cuda.get_device_properties(0)
        try:
            import triton
            wall_timer = f"triton {triton.__version__} do_bench"
        except ImportError:
            wall_timer = "CUDA events, by hand (no triton)"

        def empty():
            return torch.cuda._sleep(0)
        env.update(gpu=p.name, sms=p.multi_processor_count, cuda=torch.version.cuda,
                   l2_bytes=getattr(p, "L2_cache_size", None),
                   copy_ceiling_gbs_device=round(ceiling["device"], 1),
                   wall_timer=wall_timer,
                   device_timer="torch.profiler (CUPTI) kernel durations",
                   # each clock's floor: one empty kernel
                   empty_kernel_us_wall=round(time_wall(empty), 2),
                   empty_kernel_us_device=round(time_device(empty).us, 2),
                   cupy=getattr(sw.cupy, "__version__", None))
    else:
        env.update(cpu=platform.processor() or platform.machine(),
                   threads=torch.get_num_threads(), wall_timer="host perf_counter")
    return env


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def run_case(case: Case, sw: Sweep, ceiling: dict) -> list[dict]:
    """Verifies every impl of the case, runs each once more (on the GPU: a whole wall-time
    measurement) and discards that, then times them all for the report. Timing one impl can
    move the state the next one runs in: on the H100, after torch.compile's 8192x1000 transpose
    had been timed, smem's and cuBLAS geam's wall times fell from 29.7 / 29.8 us to 25.9 / 26.7
    us, and stayed there (why is not established). In the reported round each impl runs after
    all of them have run once."""
    gpu = sw.kind == "cuda"
    dtype = _dtype_name(case.dtype)
    goal = gpu and is_goal(case.op, dtype, case.shape, case.params)
    rows, timed = [], {}
    ref_out = case.impls[case.reference]()
    for name, fn in case.impls.items():
        if name == case.reference and name.endswith("untimed)"):
            continue
        row = {"op": case.op, "impl": name, "dtype": dtype, "shape": list(case.shape),
               "params": case.params, "case": case.label, "bytes": case.bytes_moved, "goal": goal}
        rows.append(row)
        try:
            out = ref_out if name == case.reference else fn()
            if case.error is not None:
                row["rel_err"] = float(f"{case.error(out):.3g}")
            if name != case.reference:
                try:
                    case.checks.get(name, case.check)(out, ref_out)
                except AssertionError as e:  # a wrong answer is reported, and not timed
                    err = f", rel err {row['rel_err']:.2e} vs float64" if "rel_err" in row else ""
                    row["error"] = (f"wrong result, not timed (differs from {case.reference}"
                                    f"{err}): {str(e).splitlines()[0][:80]}")
                    continue
            if gpu:
                time_wall(fn)  # the discarded round
            else:
                fn()
            timed[name] = fn
        except Exception as e:  # noqa: BLE001  (a failed impl is reported, not fatal)
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    for row in rows:
        fn = timed.get(row["impl"])
        if fn is None:
            continue
        try:
            if gpu:
                wall = time_wall(fn)
                dev = time_device(fn, est_us=wall)
                row.update(device_us=round(dev.us, 2), activities_per_call=dev.activities)
            else:
                wall = time_cpu(fn)
                row["device_us"] = None
        except Exception as e:  # noqa: BLE001
            row["error"] = f"timing: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
            continue
        row["wall_us"] = round(wall, 2)
        for clock in ("device", "wall"):
            us, ceil = row[f"{clock}_us"], ceiling[clock]
            gbs = case.bytes_moved / us / 1e3 if us else None
            row[f"gbs_{clock}"] = None if gbs is None else round(gbs, 1)
            row[f"pct_ceiling_{clock}"] = None if gbs is None or not ceil else round(
                100 * gbs / ceil, 1)
    eager = next((r for r in rows if r["impl"] == "torch eager" and "wall_us" in r), None)
    for row in rows:
        for clock in ("device", "wall"):
            mine = row.get(f"{clock}_us")
            base = eager.get(f"{clock}_us") if eager else None
            row[f"speedup_vs_eager_{clock}"] = (round(base / mine, 2) if base and mine else None)
        print(format_row(row, gpu), flush=True)
    return rows


def format_row(row: dict, gpu: bool) -> str:
    head = f"{row['op']:<16} {row['case']:<34} {row['dtype']:<9} {row['impl']:<22}"
    if "error" in row:
        # A peer's wrong answer is its own finding; any smem failure is this library's.
        peer_inexact = row["error"].startswith("wrong") and not row["impl"].startswith(
            ("smem", "ladder"))
        return f"{head} {'INEXACT' if peer_inexact else 'FAILED'} {row['error']}"
    if gpu:
        text = (f"{head} {_fmt(row['device_us'], '10.1f')} {_fmt(row['wall_us'], '10.1f')} "
                f"{_fmt(row['pct_ceiling_device'], '6.1f')} {_fmt(row['pct_ceiling_wall'], '6.1f')}"
                f" {_fmt(row['speedup_vs_eager_device'], '7.2f')}"
                f" {_fmt(row.get('activities_per_call'), '4g')}")
    else:
        text = (f"{head} {_fmt(row['wall_us'], '10.1f')} {_fmt(row['pct_ceiling_wall'], '6.1f')}"
                f" {_fmt(row['speedup_vs_eager_wall'], '7.2f')}")
    return text + (f"  rel err {row['rel_err']:.2e}" if "rel_err" in row else "")


def header(gpu: bool) -> str:
    head = f"{'op':<16} {'case':<34} {'dtype':<9} {'impl':<22}"
    if gpu:
        return (f"{head} {'device us':>10} {'wall us':>10} {'%dev':>6} {'%wall':>6} "
                f"{'x eager':>7} {'acts':>4}   (% of the copy ceiling, each by its own clock; "
                f"x eager on device time)")
    return f"{head} {'host us':>10} {'%ceil':>6} {'x eager':>7}"


def build_sweep(args, alloc: str | None = None) -> Sweep:
    kind = args.device or ("cuda" if torch.cuda.is_available() and smem_ops.cuda_compiled()
                           else "cpu")
    listing = alloc == "meta"
    return Sweep(kind=kind, alloc=alloc or kind, quick=args.quick,
                 compile=kind == "cuda" and not args.no_compile,
                 cupy=None if kind != "cuda" or args.no_cupy or listing else _cupy_module())


def cases_of(sw: Sweep, args):
    for family in args.only or list(FAMILIES):
        yield from FAMILIES[family](sw)
    if args.ladder:
        yield from ladder_cases(sw)


def list_cases(args) -> int:
    """Prints the cases of the sweep (inputs on the meta device, nothing runs) and checks that
    the goal table is covered when the sweep is the full GPU one."""
    if args.device is None:
        args.device = "cuda"
    sw = build_sweep(args, alloc="meta")
    found = set()
    for case in cases_of(sw, args):
        dtype = _dtype_name(case.dtype)
        mark = "goal" if sw.kind == "cuda" and is_goal(case.op, dtype, case.shape,
                                                       case.params) else "    "
        print(f"{mark} {case.op:<16} {case.label:<34} {dtype:<9} {', '.join(case.impls)}")
        for g in GOALS:
            if (case.op, dtype, tuple(case.shape)) == g[:3] and all(
                    case.params.get(k) == v for k, v in g[3].items()):
                found.add(GOALS.index(g))
    if sw.kind == "cuda":
        print("(+ 'CuPy (CUB)' on fp32 sums and fixed-range fp32 histograms when cupy imports)")
        missing = [g for i, g in enumerate(GOALS) if i not in found]
        if not (args.quick or args.only):
            print(f"goal table: {len(GOALS) - len(missing)} of {len(GOALS)} rows are cases"
                  + "".join(f"\n  MISSING {g}" for g in missing))
            return 1 if missing else 0
    return 0


def _slug(env: dict, quick: bool) -> str:
    return slug(env.get("gpu") or f"cpu {env['threads']}threads") + ("_quick" if quick else "")


def run(args, argv=None) -> dict:
    sw = build_sweep(args)
    gpu = sw.kind == "cuda"
    if args.goals and not gpu:
        raise SystemExit("--goals: the goal table is for the GPU sweep")
    if args.save and args.quick and gpu:
        raise SystemExit("--save on the GPU keeps the full sweep: drop --quick")
    ceiling = copy_ceiling_gbs(sw.kind)
    env = environment(sw, ceiling, argv)
    print(f"# smem_ops benchmark on {env.get('gpu', env.get('cpu'))}, torch {env['torch']}"
          + (f", CUDA {env['cuda']}" if gpu else f", {env['threads']} threads")
          + f", commit {env['commit']}{' (dirty)' if env['dirty'] else ''}", flush=True)
    if gpu:
        print(f"# copy ceiling (read + write): {env['copy_ceiling_gbs_device']:.0f} GB/s by device "
              f"time, {env['copy_ceiling_gbs_wall']:.0f} GB/s by wall time; empty kernel "
              f"{env['empty_kernel_us_device']} us device, {env['empty_kernel_us_wall']} us wall; "
              f"cupy {env['cupy'] or 'not importable: no CUB rows'}", flush=True)
    else:
        print(f"# copy ceiling (read + write): {env['copy_ceiling_gbs_wall']:.1f} GB/s", flush=True)
    print(header(gpu), flush=True)
    rows = []
    for case in cases_of(sw, args):
        if args.goals and not is_goal(case.op, _dtype_name(case.dtype), case.shape, case.params):
            continue
        rows += run_case(case, sw, ceiling)
    result = {"environment": env, "results": rows}
    if gpu and not (args.quick or args.only):
        result["goals"] = goal_summary(rows)
    out = RESULTS if args.save else (args.out or SCRATCH)
    os.makedirs(out, exist_ok=True)
    stem = os.path.join(out, _slug(env, args.quick))
    with open(stem + ".json", "w") as f:
        json.dump(result, f, indent=1)
    with open(stem + ".md", "w") as f:
        f.write(markdown(result, gpu))
    print(f"# wrote {stem}.json, {stem}.md", flush=True)
    plot(rows, stem, env, gpu)
    return result


def goal_summary(rows: list[dict]) -> list[dict]:
    """One line per goal row: smem's device time and the best peer's, or MISSING."""
    summary = []
    print("# goal table (device time)", flush=True)
    for op, dtype, shape, params in GOALS:
        sel = [r for r in rows if r["op"] == op and r["dtype"] == dtype
               and tuple(r["shape"]) == shape and r.get("device_us") is not None
               and all(r["params"].get(k) == v for k, v in params.items())]
        smem = next((r for r in sel if r["impl"] == "smem"), None)
        peers = [r for r in sel if r["impl"] != "smem" and r["device_us"]]
        best = min(peers, key=lambda r: r["device_us"], default=None)
        line = {"op": op, "dtype": dtype, "shape": list(shape), "params": params,
                "smem_device_us": smem and smem["device_us"],
                "smem_pct_ceiling_device": smem and smem["pct_ceiling_device"],
                "best_peer": best and best["impl"], "best_peer_device_us": best and best["device_us"]}
        summary.append(line)
        print(f"#   {op:<15} {dtype:<9} {shape!s:<16} {params!s:<36} "
              + (f"smem {smem['device_us']:.1f} us ({smem['pct_ceiling_device']}%)"
                 if smem else "MISSING")
              + (f", best peer {best['impl']} {best['device_us']:.1f} us" if best else ""),
              flush=True)
    return summary


def markdown(result: dict, gpu: bool) -> str:
    env = result["environment"]
    lines = [f"# smem_ops benchmark: {env.get('gpu', env.get('cpu'))}", ""]
    lines += [f"- {k}: {v}" for k, v in env.items()] + [""]
    if gpu:
        lines += [("Device time: kernel durations from CUPTI (torch.profiler), median over calls, "
                   "L2 flushed before each. Wall time: CUDA events (do_bench), median, L2 "
                   "flushed. % of the copy ceiling measured by the same clock."), "",
                  ("| op | case | dtype | impl | device us | wall us | % ceiling (device) | "
                   "% ceiling (wall) | x eager (device) | x eager (wall) |"),
                  "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    else:
        lines += ["Host clock (perf_counter), median; % of the copy ceiling measured the same way.",
                  "", "| op | case | dtype | impl | us | % ceiling | x eager |",
                  "|---|---|---|---|---:|---:|---:|"]
    for r in result["results"]:
        lead = f"| {r['op']} | {r['case']} | {r['dtype']} | {r['impl']} |"
        if "error" in r:
            lines.append(f"{lead} failed: {r['error']} |" + " |" * (5 if gpu else 2))
        elif gpu:
            lines.append(f"{lead} {_fmt(r['device_us'], '.1f')} | {_fmt(r['wall_us'], '.1f')} | "
                         f"{_fmt(r['pct_ceiling_device'], '.1f')} | "
                         f"{_fmt(r['pct_ceiling_wall'], '.1f')} | "
                         f"{_fmt(r['speedup_vs_eager_device'], '.2f')} | "
                         f"{_fmt(r['speedup_vs_eager_wall'], '.2f')} |")
        else:
            lines.append(f"{lead} {_fmt(r['wall_us'], '.1f')} | {_fmt(r['pct_ceiling_wall'], '.1f')}"
                         f" | {_fmt(r['speedup_vs_eager_wall'], '.2f')} |")
    if result.get("goals"):
        lines += ["", "## Goal table (device time)", "",
                  "| op | dtype | shape | params | smem us | % ceiling | best peer | peer us |",
                  "|---|---|---|---|---:|---:|---|---:|"]
        for g in result["goals"]:
            lines.append(f"| {g['op']} | {g['dtype']} | {tuple(g['shape'])} | {g['params']} | "
                         f"{_fmt(g['smem_device_us'], '.1f')} | "
                         f"{_fmt(g['smem_pct_ceiling_device'], '.1f')} | {g['best_peer'] or '-'} | "
                         f"{_fmt(g['best_peer_device_us'], '.1f')} |")
    return "\n".join(lines) + "\n"


def plot(rows, stem, env, gpu):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# matplotlib not installed: no plot", flush=True)
        return
    key = "pct_ceiling_device" if gpu else "pct_ceiling_wall"
    rows = [r for r in rows if r.get(key) is not None]
    ops = list(dict.fromkeys(r["op"] for r in rows))
    if not ops:
        return
    fig, axes = plt.subplots(len(ops), 1, figsize=(13, 3.4 * len(ops)), squeeze=False)
    for ax, op in zip(axes[:, 0], ops, strict=True):
        sel = [r for r in rows if r["op"] == op]
        cases = list(dict.fromkeys(f"{r['case']} {r['dtype']}" for r in sel))
        impls = list(dict.fromkeys(r["impl"] for r in sel))
        width = 0.8 / max(1, len(impls))
        for k, impl in enumerate(impls):
            pts = [(cases.index(f"{r['case']} {r['dtype']}") + k * width, r)
                   for r in sel if r["impl"] == impl]
            ax.bar([x for x, _ in pts], [r[key] for _, r in pts], width, label=impl)
            if gpu:  # wall time as a dot on each bar
                ax.plot([x for x, r in pts if r.get("pct_ceiling_wall") is not None],
                        [r["pct_ceiling_wall"] for _, r in pts
                         if r.get("pct_ceiling_wall") is not None], "k.", markersize=4)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))])
        ax.set_xticklabels(cases, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("% of copy ceiling")
        ax.set_title(op)
        ax.legend(fontsize=7, ncol=min(len(impls), 6))
    clock = ("bars: device time (CUPTI), dots: wall time (do_bench)" if gpu
             else "host clock")
    fig.suptitle(f"smem_ops on {env.get('gpu', env.get('cpu'))}, torch {env['torch']}, "
                 f"commit {env['commit']}: {clock}")
    fig.tight_layout()
    fig.savefig(stem + ".png", dpi=80)
    print(f"# wrote {stem}.png", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None)
    ap.add_argument("--quick", action="store_true", help="a short sweep")
    ap.add_argument("--only", nargs="*", choices=list(FAMILIES), help="families to run")
    ap.add_argument("--goals", action="store_true", help="only the goal table's cases (GPU)")
    ap.add_argument("--ladder", action="store_true", help="also time every technique-ladder rung")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile peers")
    ap.add_argument("--no-cupy", action="store_true", help="skip the CuPy (CUB) peers")
    ap.add_argument("--list", action="store_true",
                    help="print the cases (of the full GPU sweep unless --device cpu) and check "
                         "the goal table; runs nothing")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--out", default=None, help=f"output folder (default {SCRATCH})")
    where.add_argument("--save", action="store_true",
                       help="write into benchmarks/results/ (the committed results; full sweeps "
                            "only, --quick allowed on the CPU)")
    args = ap.parse_args(argv)
    if args.list:
        return list_cases(args)
    if args.save and (args.only or args.goals):
        ap.error("--save keeps one whole sweep per device: not with --only or --goals")
    run(args, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
