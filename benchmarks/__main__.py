"""Benchmark runner: smem ops against their torch baselines, as ../shared/BENCHMARKING.md asks.

    python -m benchmarks                  # the full sweep for this device (CUDA if present)
    python -m benchmarks --quick          # a short sweep
    python -m benchmarks --only transpose --out benchmarks/results

Every op is memory-bound, so each case reports bytes that must move (inputs read once,
outputs written once) over the median time, as a % of the copy ceiling measured in the same
process, and the speedup over torch eager. Every implementation's output is checked against
the baseline (or a reference) before it is timed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import torch

import smem_ops

from . import cublas

# --------------------------------------------------------------------------- timing


def l2_flush_buffer(device):
    return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=device)


def time_events(fn: Callable[[], object], before_each: Callable[[], object], runs: int = 50) -> float:
    """Median microseconds of fn between two CUDA events, before_each() (a flush) run first."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        before_each()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def time_cuda(fn: Callable[[], object], rep_ms: float = 100.0) -> float:
    """Median microseconds of fn on the GPU, L2 flushed between runs."""
    try:
        import triton.testing

        return 1000.0 * triton.testing.do_bench(fn, warmup=25, rep=rep_ms, return_mode="median")
    except ImportError:  # same protocol by hand: events, flush, median
        return time_events(fn, l2_flush_buffer("cuda").zero_)


def time_cpu(fn: Callable[[], object], min_runs: int = 5, budget_s: float = 1.0) -> float:
    fn()
    times = []
    deadline = time.perf_counter() + budget_s
    while len(times) < min_runs or (time.perf_counter() < deadline and len(times) < 200):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def copy_ceiling_gbs(device: str) -> float:
    """Device copy bandwidth, bytes read + written."""
    n = (1 << 30) if device == "cuda" else (1 << 26)
    src = torch.empty(n, dtype=torch.uint8, device=device).random_(0, 255)
    dst = torch.empty_like(src)
    us = (time_cuda if device == "cuda" else time_cpu)(lambda: dst.copy_(src))
    return 2 * n / us / 1e3


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    op: str
    label: str           # shape / params as printed
    dtype: torch.dtype
    bytes_moved: int
    impls: dict[str, Callable[[], torch.Tensor]]
    check: Callable[[torch.Tensor, torch.Tensor], None]
    reference: str = "torch eager"  # the impl whose output is the reference
    params: dict = field(default_factory=dict)
    baseline_check: Callable | None = None  # for torch baselines, when they are not exact
    error: Callable[[torch.Tensor], float] | None = None  # relative error, reported per impl


def _nbytes(*ts):
    return sum(t.numel() * t.element_size() for t in ts)


def _check_close(rtol, atol):
    def check(out, ref):
        torch.testing.assert_close(out.double(), ref.double(), rtol=rtol, atol=atol)
    return check


def _check_equal(out, ref):
    assert out.shape == ref.shape and torch.equal(out.to(ref.dtype), ref), "outputs differ"


def _check_loose_counts(out, ref):
    """torch's float32 histc counts are rounded sums once bins pass 2^24: allow for that."""
    torch.testing.assert_close(out.double(), ref.double(), rtol=1e-3, atol=0)


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


def _compiled(fn):
    return torch.compile(fn, fullgraph=True)


def _randn(shape, dtype, device):
    return torch.randn(shape, device=device, dtype=torch.float32).to(dtype)


def sum_cases(device, quick, with_compile):
    cases = []
    sizes = ([1 << 20, 1 << 24] if device == "cpu" else
             [1 << 12, 1 << 16, 1 << 20, 1 << 24, 1 << 28])
    if quick:
        sizes = sizes[-2:] if device == "cpu" else [1 << 20, 1 << 24]
    for dtype in (torch.float32, torch.bfloat16):
        for n in sizes:
            x = _randn((n,), dtype, device)
            out = torch.empty((), dtype=dtype, device=device)
            impls = {"torch eager": lambda x=x: torch.sum(x), "smem": lambda x=x: smem_ops.sum(x)}
            if with_compile and dtype == torch.float32 and n in (1 << 20, 1 << 24):
                impls["torch.compile"] = partial(_compiled(lambda t: t.sum()), x)
            tol = 1e-5 if dtype == torch.float32 else 1e-2
            cases.append(Case("sum", f"({n},)", dtype, _nbytes(x, out), impls,
                              _check_close(tol, tol * math.sqrt(n)), params={"n": n}))
    dim_cases = ([((4096, 4096), -1), ((4096, 4096), 0), ((32, 1024, 128), 1)] if device == "cpu"
                 else [((8192, 8192), -1), ((8192, 8192), 0), ((32, 4096, 128), 1)])
    if quick:
        dim_cases = dim_cases[:2]
    for shape, dim in dim_cases:
        for dtype in (torch.float32, torch.bfloat16):
            x = _randn(shape, dtype, device)
            out = x.sum(dim)
            tol = 1e-5 if dtype == torch.float32 else 1e-2
            cases.append(Case("sum", f"{tuple(shape)} dim={dim}", dtype, _nbytes(x, out), {
                "torch eager": lambda x=x, d=dim: torch.sum(x, d),
                "smem": lambda x=x, d=dim: smem_ops.sum(x, d),
            }, _check_close(tol, tol * math.sqrt(x.shape[dim])), params={"dim": dim}))
    return cases


def squares_and_dot_cases(device, quick, with_compile):
    cases = []
    sizes = [1 << 20, 1 << 24] if device == "cpu" or quick else [1 << 20, 1 << 24, 1 << 28]
    for n in sizes:
        x, y = _randn((n,), torch.float32, device), _randn((n,), torch.float32, device)
        out = torch.empty((), device=device)
        impls = {"torch eager": lambda x=x: torch.sum(x * x),
                 "torch vector_norm^2": lambda x=x: torch.linalg.vector_norm(x) ** 2,
                 "smem": lambda x=x: smem_ops.sum_of_squares(x)}
        if with_compile and n == 1 << 24:
            impls["torch.compile"] = partial(_compiled(lambda t: (t * t).sum()), x)
        cases.append(Case("sum_of_squares", f"({n},)", torch.float32, _nbytes(x, out), impls,
                          _check_close(1e-3, 1e-2 * math.sqrt(n))))
        cases.append(Case("dot", f"({n},)", torch.float32, _nbytes(x, y, out), {
            "torch eager": lambda x=x, y=y: torch.dot(x, y),
            "smem": lambda x=x, y=y: smem_ops.dot(x, y),
        }, _check_close(1e-4, 1e-3 * math.sqrt(n))))
    return cases


def transpose_cases(device, quick, with_compile):
    if device == "cpu":
        spec = [((1024, 1024), torch.float32), ((4096, 4096), torch.float32),
                ((4096, 4096), torch.bfloat16), ((4096, 4096), torch.uint8),
                ((64, 512, 512), torch.bfloat16)]
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
    if quick:
        spec = spec[:3] if device == "cpu" else [((4096, 4096), torch.float32),
                                                 ((8192, 1000), torch.float32)]
    compile_set = {((4096, 4096), torch.float32), ((16384, 16384), torch.float32),
                   ((16384, 16384), torch.bfloat16), ((8192, 1000), torch.float32),
                   ((16384, 16384), torch.uint8)}
    cases = []
    for shape, dtype in spec:
        x = (torch.randint(0, 255, shape, device=device, dtype=torch.uint8).to(dtype)
             if not dtype.is_floating_point else _randn(shape, dtype, device))
        impls = {"torch eager": lambda x=x: x.transpose(-2, -1).contiguous(),
                 "smem": lambda x=x: smem_ops.transpose(x)}
        if with_compile and (shape, dtype) in compile_set:
            impls["torch.compile"] = partial(_compiled(lambda t: t.transpose(-2, -1).contiguous()), x)
        if cublas.supported(x):
            impls["cuBLAS geam"] = partial(cublas.geam_transpose, x)
        cases.append(Case("transpose", str(tuple(shape)), dtype, 2 * _nbytes(x), impls,
                          _check_equal))
    return cases


def histc_cases(device, quick, with_compile):
    n = (1 << 22) if device == "cpu" else (1 << 28)
    bins_list = [16, 256, 4096] if device == "cpu" else [16, 256, 1024, 4096, 16384, 65536, 262144]
    if quick:
        bins_list = [256, 16384] if device == "cuda" else [256]
    x = torch.randn(n, device=device)
    cases = []

    def add(label, data, bins, lo, hi, dtype=torch.float32, baseline=True):
        out = torch.empty(bins, device=device)
        ref = "exact counts (chunked torch.histc, untimed)"
        impls = {ref: lambda: _exact_histc(data, bins, lo, hi)}
        if baseline:  # (torch has no bf16 histc on CUDA)
            impls["torch eager"] = lambda: torch.histc(data, bins, lo, hi)
        impls["smem"] = lambda: smem_ops.histc(data, bins, lo, hi, dtype=torch.int64)
        if with_compile and baseline and bins == 256 and label == "randn":
            impls["torch.compile"] = _compiled(lambda: torch.histc(data, bins, lo, hi))
        cases.append(Case("histc", f"({data.numel()},) {label} bins={bins}", dtype,
                          _nbytes(data, out), impls, _check_equal, reference=ref,
                          params={"bins": bins, "min": lo, "max": hi, "data": label},
                          baseline_check=_check_loose_counts))

    for bins in bins_list:
        add("randn", x, bins, -4.0, 4.0)
    if not quick:
        add("uniform", torch.rand(n, device=device) * 8 - 4, 256, -4.0, 4.0)
        add("one-bin", torch.full((n,), 0.01, device=device), 256, -4.0, 4.0)
        add("out-of-range", x + 10, 256, -4.0, 4.0)
        add("auto-range", x, 256, 0.0, 0.0)
        add("randn", x[: 1 << 24] if device == "cuda" else x[: 1 << 20], 256, -4.0, 4.0)
        xb = x.to(torch.bfloat16)
        add("randn bf16", xb, 256, -4.0, 4.0, dtype=torch.bfloat16, baseline=device == "cpu")
    return cases


def ladder_cases(device):
    """Every rung of each technique ladder on the same inputs (CUDA only)."""
    if device != "cuda":
        return []
    cases = []
    # The sum ladder on well-conditioned inputs, so the relative error says how each rung
    # accumulates: uniform [0, 1), and the seeds' 1e8 copies of 1.23. The error column is the
    # result (a float running sum of 1.23s stalls at 2^25, 73% short); the check only rejects
    # garbage (NaN, wrong sign, over 100% off).
    for label, x in (("uniform", torch.rand(1 << 24, device=device)),
                     ("1.23 x 1e8", torch.full((100_000_000,), 1.23, device=device))):
        exact = x.double().sum().item()
        impls = {"torch eager": lambda x=x: torch.sum(x)}
        impls.update({f"ladder:{v}": (lambda v=v, x=x: torch.ops.smem._sum_variant(x, v))
                      for v in smem_ops.variants("reduce")})
        cases.append(Case("sum ladder", f"({x.numel()},) {label}", torch.float32, _nbytes(x) + 4,
                          impls, _check_close(1.0, 0),
                          error=lambda out, exact=exact: abs(out.item() - exact) / exact))
    m = torch.randn(8192, 8192, device=device)
    impls = {"torch eager": lambda: m.t().contiguous()}
    impls.update({f"ladder:{v}": (lambda v=v: torch.ops.smem._transpose_variant(m, v))
                  for v in smem_ops.variants("transpose")})
    cases.append(Case("transpose ladder", "(8192, 8192)", torch.float32, 2 * _nbytes(m), impls,
                      _check_equal))
    n = 1 << 26
    for label, h in (("randn", torch.randn(n, device=device)),
                     ("uniform", torch.rand(n, device=device) * 8 - 4),
                     ("one-bin", torch.full((n,), 0.01, device=device))):
        for bins in (256, 65536):
            impls = {"exact counts (chunked torch.histc, untimed)":
                     lambda b=bins, h=h: _exact_histc(h, b, -4.0, 4.0).long(),
                     "torch eager": lambda b=bins, h=h: torch.histc(h, b, -4, 4).long()}
            impls.update({f"ladder:{v}": (lambda v=v, b=bins, h=h: torch.ops.smem._histc_variant(
                h, b, -4.0, 4.0, v)) for v in smem_ops.variants("histogram")})
            cases.append(Case("histc ladder", f"({n},) {label} bins={bins}", torch.float32,
                              _nbytes(h) + bins * 8, impls, _check_equal,
                              reference="exact counts (chunked torch.histc, untimed)",
                              baseline_check=_check_loose_counts))
    return cases


FAMILIES = {"sum": sum_cases, "squares_dot": squares_and_dot_cases,
            "transpose": transpose_cases, "histc": histc_cases}


# --------------------------------------------------------------------------- driver


def environment(device, ceiling):
    env = {"device": device, "torch": torch.__version__, "python": platform.python_version(),
           "copy_ceiling_gbs": round(ceiling, 1),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    try:
        env["commit"] = os.environ.get("SMEM_COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                       text=True, cwd=os.path.dirname(__file__)).stdout.strip()
    except OSError:
        env["commit"] = "unknown"
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        env.update(gpu=p.name, sms=p.multi_processor_count, cuda=torch.version.cuda,
                   l2_bytes=getattr(p, "L2_cache_size", None),
                   # the floor of this protocol: one empty kernel between the two events
                   empty_kernel_us=round(time_cuda(lambda: torch.cuda._sleep(0)), 2))
    else:
        env.update(cpu=platform.processor() or platform.machine(), threads=torch.get_num_threads())
    return env


def run_case(case: Case, timer, ceiling: float) -> list[dict]:
    """Verifies every impl of the case, times them all once and discards those times, then
    times them again for the report. Timing one impl can move the state the next one runs in:
    on the H100, after torch.compile's 8192x1000 transpose had been timed, smem's and cuBLAS
    geam's times fell from 29.7 / 29.8 us to 25.9 / 26.7 us, and stayed there (why is not
    established). In the second round each impl runs after all of them have run once."""
    rows, timed = [], {}
    ref_out = case.impls[case.reference]()
    for name, fn in case.impls.items():
        row = {"op": case.op, "case": case.label, "dtype": str(case.dtype).replace("torch.", ""),
               "impl": name, "bytes": case.bytes_moved, **case.params}
        rows.append(row)
        if name == case.reference and name.endswith("untimed)"):
            continue
        try:
            if name == case.reference:
                out = ref_out
            else:  # verify before timing; torch baselines may have their own check
                out = fn()
                baseline = name.startswith("torch") and case.baseline_check is not None
                (case.baseline_check if baseline else case.check)(out, ref_out)
            if case.error is not None:
                row["rel_err"] = float(f"{case.error(out):.3g}")
            timer(fn)  # the discarded round
            timed[name] = fn
        except Exception as e:  # noqa: BLE001  (a failed impl is reported, not fatal)
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    eager_us = None
    for row in rows:
        name = row["impl"]
        if "error" in row:
            print(f"{case.op:<16} {case.label:<34} {row['dtype']:<15} {name:<26} "
                  f"FAILED {row['error']}", flush=True)
        if name not in timed:
            continue
        us = timer(timed[name])
        gbs = case.bytes_moved / us / 1e3
        if name == "torch eager":
            eager_us = us
        row.update(median_us=round(us, 2), gbs=round(gbs, 1),
                   pct_ceiling=round(100 * gbs / ceiling, 1),
                   speedup_vs_eager=round(eager_us / us, 2) if eager_us else None)
        print(f"{case.op:<16} {case.label:<34} {row['dtype']:<15} {name:<26} {us:>10.1f} "
              f"{gbs:>8.0f} {row['pct_ceiling']:>6.1f} "
              f"{(str(row['speedup_vs_eager']) + 'x') if eager_us else '-':>8}"
              + (f"  rel err {row['rel_err']:.2e}" if "rel_err" in row else ""), flush=True)
    return [row for row in rows if "median_us" in row or "error" in row]


def run(args):
    device = args.device or ("cuda" if torch.cuda.is_available() and smem_ops.cuda_compiled()
                             else "cpu")
    with_compile = device == "cuda" and not args.no_compile
    timer = time_cuda if device == "cuda" else time_cpu
    ceiling = copy_ceiling_gbs(device)
    env = environment(device, ceiling)
    print(f"# smem_ops benchmark on {env.get('gpu', env.get('cpu'))}, torch {env['torch']}, "
          f"copy ceiling {ceiling:.0f} GB/s (read+write), commit {env['commit']}"
          + (f", empty kernel {env['empty_kernel_us']} us" if "empty_kernel_us" in env else ""),
          flush=True)
    families = args.only or list(FAMILIES)
    rows = []
    header = (f"{'op':<16} {'case':<34} {'dtype':<15} {'impl':<26} {'median us':>10} "
              f"{'GB/s':>8} {'%ceil':>6} {'vs eager':>8}")
    print(header, flush=True)
    builders = [FAMILIES[f] for f in families]
    if args.ladder and device == "cuda":
        builders.append(lambda d, q, c: ladder_cases(d))
    for build in builders:
        for case in build(device, args.quick, with_compile):
            rows += run_case(case, timer, ceiling)
    result = {"environment": env, "results": rows}
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"{device}_{env.get('gpu', 'cpu').replace(' ', '_')}")
    with open(stem + ".json", "w") as f:
        json.dump(result, f, indent=1)
    print(f"# wrote {stem}.json", flush=True)
    plot(rows, stem, env)
    return result


def plot(rows, stem, env):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# matplotlib not installed: no plots", flush=True)
        return
    ops = sorted({r["op"] for r in rows if "pct_ceiling" in r})
    fig, axes = plt.subplots(len(ops), 1, figsize=(12, 3.2 * len(ops)), squeeze=False)
    for ax, op in zip(axes[:, 0], ops):
        sel = [r for r in rows if r["op"] == op and "pct_ceiling" in r]
        cases = list(dict.fromkeys(f"{r['case']} {r['dtype']}" for r in sel))
        impls = list(dict.fromkeys(r["impl"] for r in sel))
        width = 0.8 / max(1, len(impls))
        for k, impl in enumerate(impls):
            xs, ys = [], []
            for i, c in enumerate(cases):
                for r in sel:
                    if r["impl"] == impl and f"{r['case']} {r['dtype']}" == c:
                        xs.append(i + k * width)
                        ys.append(r["pct_ceiling"])
            ax.bar(xs, ys, width, label=impl)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))])
        ax.set_xticklabels(cases, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("% of copy ceiling")
        ax.set_title(op)
        ax.legend(fontsize=7)
    fig.suptitle(f"smem_ops on {env.get('gpu', env.get('cpu'))} (torch {env['torch']})")
    fig.tight_layout()
    fig.savefig(stem + ".png", dpi=90)
    print(f"# wrote {stem}.png", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None)
    ap.add_argument("--quick", action="store_true", help="a short sweep")
    ap.add_argument("--only", nargs="*", choices=list(FAMILIES), help="families to run")
    ap.add_argument("--ladder", action="store_true", help="also time every technique-ladder variant")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile baselines")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
