"""Host cost of one call on a tiny input: smem's Python API and torch.ops.smem against torch,
on CPU and CUDA tensors (the part of a call a kernel's device time does not show).

    python -m benchmarks.host_overhead            # the table; bench-out/ JSON
    python -m benchmarks.host_overhead --save     # into benchmarks/results

torch.ops.aten rows call torch's own kernels through the OpOverload path that every op
registered with torch.library (torch.ops.smem too) is called through from Python.

Host clock (time.perf_counter): the median over 25 batches of the time per call in a batch of
400 calls, the impls of a case taking turns batch by batch. CUDA calls are not synchronized one
by one (a 16-element kernel runs faster than a host launches it); the device is synchronized
before each batch. Every result is checked against torch's first.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import smem_ops

from .provenance import RESULTS, SCRATCH, save_json, slug

ops = torch.ops.smem


def per_call_us(impls: dict, device: str, batches: int = 25, calls: int = 400) -> dict:
    """Each impl's median time per call. The impls' batches take turns, so that a drift of the
    host's speed during the run (other processes, clocks) reaches every impl alike."""
    for fn in impls.values():
        for _ in range(50):
            fn()
    times = {k: [] for k in impls}
    for _ in range(batches):
        for k, fn in impls.items():
            if device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times[k].append((time.perf_counter() - t0) / calls * 1e6)
    if device == "cuda":
        torch.cuda.synchronize()
    return {k: statistics.median(v) for k, v in times.items()}


def cases(device: str):
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(16, device=device, generator=g)
    y = torch.randn(16, device=device, generator=g)
    m = torch.randn(4, 4, device=device, generator=g)
    leaf = x.clone().requires_grad_()
    aten = torch.ops.aten  # torch's own ops through the same OpOverload path as torch.ops.smem
    yield "sum", {"smem_ops": lambda: smem_ops.sum(x), "torch.ops.smem": lambda: ops.sum(x),
                  "torch": lambda: torch.sum(x), "torch.ops.aten": lambda: aten.sum.default(x)}
    yield "sum dim=1", {"smem_ops": lambda: smem_ops.sum(m, 1),
                        "torch.ops.smem": lambda: ops.sum(m, [1]),
                        "torch": lambda: torch.sum(m, 1),
                        "torch.ops.aten": lambda: aten.sum.dim_IntList(m, [1])}
    yield "sum, requires_grad", {"smem_ops": lambda: smem_ops.sum(leaf),
                                 "torch": lambda: torch.sum(leaf)}
    yield "sum_of_squares", {"smem_ops": lambda: smem_ops.sum_of_squares(x),
                             "torch.ops.smem": lambda: ops.sum_of_squares(x),
                             "torch (x*x).sum()": lambda: (x * x).sum()}
    yield "dot", {"smem_ops": lambda: smem_ops.dot(x, y), "torch.ops.smem": lambda: ops.dot(x, y),
                  "torch": lambda: torch.dot(x, y), "torch.ops.aten": lambda: aten.dot.default(x, y)}
    yield "transpose", {"smem_ops": lambda: smem_ops.transpose(m),
                        "torch.ops.smem": lambda: ops.transpose(m),
                        "torch": lambda: m.transpose(-2, -1).contiguous()}
    yield "histc", {"smem_ops": lambda: smem_ops.histc(x, 16, -2, 2),
                    "torch.ops.smem": lambda: ops.histc(x, 16, -2, 2),
                    "torch": lambda: torch.histc(x, 16, -2, 2),
                    "torch.ops.aten": lambda: aten.histc.default(x, 16, -2, 2)}


def check(name: str, impls: dict) -> None:
    outs = {k: fn() for k, fn in impls.items()}
    ref = outs[next(k for k in outs if k.startswith("torch") and not k.startswith("torch.ops"))]
    for k, v in outs.items():
        torch.testing.assert_close(v.detach().cpu(), ref.detach().cpu(), rtol=1e-5, atol=1e-5,
                                   msg=f"{name}: {k} differs from torch")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--out", default=SCRATCH, help=f"output folder (default {SCRATCH})")
    where.add_argument("--save", action="store_true", help="write into benchmarks/results")
    args = ap.parse_args(argv)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() and smem_ops.cuda_compiled() else [])
    rows = []
    print(f"{'device':<6} {'op':<20} {'impl':<18} {'us/call':>8} {'x torch':>8}")
    for device in devices:
        for name, impls in cases(device):
            check(name, impls)
            times = per_call_us(impls, device)
            base = times[next(k for k in times
                              if k.startswith("torch") and not k.startswith("torch.ops"))]
            for impl, us in times.items():
                rows.append({"device": device, "op": name, "impl": impl, "host_us": round(us, 3),
                             "x_torch": round(us / base, 2)})
                print(f"{device:<6} {name:<20} {impl:<18} {us:8.2f} {us / base:8.2f}", flush=True)
    gpu = torch.cuda.get_device_name() if "cuda" in devices else None
    save_json(RESULTS if args.save else args.out, f"{slug(gpu or 'cpu')}_host_overhead.json",
              "benchmarks.host_overhead", argv,
              {"gpu": gpu, "threads": torch.get_num_threads()}, {"results": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
