"""Real workloads that call torch's histogram functions, with and without smem_ops.enable().

    python -m benchmarks.workloads [--quick] [--out DIR] [--save]

- histc sweep: torch.histc, fp32, 256 bins, 2^12..2^28 elements.
- MoE routing counts as Hugging Face transformers (`torch.histc(ids.int(), E, 0, E - 1)`) and
  torchtitan (`torch.histc(ids, E, 0, E)` on int64 ids) compute them, smem_ops.bincount and
  torch.compile's count (scatter_add_), beside three floors of the ids' bytes: a copy, the
  fastest read, and the fastest reductions of them to one number; plus a CUDA graph of a router
  step (top-k, then the counts) captured and replayed.
- torch.ao.quantization.HistogramObserver: forward passes over random activations; the
  observer's state at the end must be the same with and without enable().
- Per-channel histogram equalization of uint8 images (torchvision's `equalize`), when
  torchvision and smem.batched_histc exist: the output must be identical.

Every timed result is first checked against torch's. Device time (CUPTI kernel durations,
L2 flushed before each call) is what goals are judged on; wall time is reported beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from functools import partial

import torch

import smem_ops

from .cases import compiled, cupy_call, cupy_with_cub
from .provenance import RESULTS, SCRATCH, save_json, slug
from .read_floor import read_floor
from .timing import device_copy, time_device, time_wall


def clocks(fn) -> dict:
    return {"device_us": round(time_device(fn).us, 2), "wall_us": round(time_wall(fn), 2)}


def row(workload: str, impl: str, params: dict, fn, rows: list) -> dict:
    r = {"workload": workload, "impl": impl, **params, **clocks(fn)}
    rows.append(r)
    print(f"{workload:12} {impl:22} {json.dumps(params):60} device {r['device_us']:9.2f} us"
          f"   wall {r['wall_us']:9.2f} us", flush=True)
    return r


def same(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    if not torch.equal(a.cpu(), b.cpu()):
        raise AssertionError(f"{what}: smem and torch differ")


def histc_sweep(quick: bool, rows: list) -> None:
    for log2 in (range(12, 29, 4) if quick else range(12, 29, 2)):
        x = torch.randn(1 << log2, device="cuda")
        want = torch.histc(x, 256, -3, 3)
        with smem_ops.enabled():
            same(torch.histc(x, 256, -3, 3), want, f"histc 2^{log2}")
        params = {"n": f"2^{log2}", "bins": 256}
        row("histc", "torch", params, partial(torch.histc, x, 256, -3, 3), rows)
        with smem_ops.enabled():
            row("histc", "torch+enable", params, partial(torch.histc, x, 256, -3, 3), rows)


def compiled_count(ids: torch.Tensor, experts: int):
    """What torch.compile makes of a count written with scatter_add_ (Inductor has no kernel of
    its own for histc or bincount): ids.flatten() counted into `experts` int64 bins."""
    def count(i):
        out = torch.zeros(experts, dtype=torch.int64, device=i.device)
        return out.scatter_add_(0, i.flatten(), torch.ones_like(i.flatten()))
    return compiled(count, ids)


def reduction_floors(nbytes: int):
    """(name, fn): the fastest reductions of `nbytes` to one number found, on random fp32 of
    that size. A count of E bins reads the same bytes and combines E results across the blocks
    where these combine one, so they bound what the known ways of counting can reach: torch.compile's
    flat sum (two kernels; device time leaves out the gap between them), CUB's DeviceReduce
    (CuPy, where it imports) and smem_ops.sum."""
    x = torch.randn(nbytes // 4, device="cuda")
    want = x.double().sum()
    found = [("torch.compile sum", compiled(lambda t: t.sum(), x)),
             ("smem_ops.sum", partial(smem_ops.sum, x))]
    cp = cupy_with_cub()
    if cp is not None:
        found.append(("CuPy (CUB) sum", cupy_call(cp, lambda a: a.sum(), x)))
    for name, fn in found:
        torch.testing.assert_close(fn().double(), want, rtol=1e-5, atol=1e-2, msg=name)
    return found


def moe_counts(quick: bool, rows: list) -> None:
    shapes = [(4096, 2), (65536, 8)] if quick else [(4096, 2), (65536, 8), (262144, 8)]
    for tokens, top_k in shapes:
        for experts in (8, 64, 128, 256):
            ids = torch.randint(0, experts, (tokens, top_k), device="cuda")
            ids32 = ids.int()
            want = torch.bincount(ids.flatten(), minlength=experts)
            same(smem_ops.bincount(ids, experts), want, "bincount")
            same(torch.histc(ids32, experts, 0, experts - 1).long(), want, "hf histc")
            params = {"tokens": tokens, "top_k": top_k, "experts": experts}
            row("moe", "torch.histc int32", params,
                partial(torch.histc, ids32, experts, 0, experts - 1), rows)
            row("moe", "torch.histc int64", params,
                partial(torch.histc, ids, experts, 0, experts), rows)
            with smem_ops.enabled():
                same(torch.histc(ids32, experts, 0, experts - 1).long(), want, "enabled")
                row("moe", "torch.histc int32+enable", params,
                    partial(torch.histc, ids32, experts, 0, experts - 1), rows)
                row("moe", "torch.histc int64+enable", params,
                    partial(torch.histc, ids, experts, 0, experts), rows)
            row("moe", "smem_ops.bincount", params, partial(smem_ops.bincount, ids, experts), rows)
            count = compiled_count(ids, experts)
            same(count(), want, "torch.compile count")
            row("moe", "torch.compile scatter_add_", params, count, rows)
        # Floors: torch's device copy moving as many bytes as the int64 ids (half read, half
        # written), and the read floor, the fastest kernel found that reads them once (any
        # count must), both timed the same way.
        params = {"tokens": tokens, "top_k": top_k}
        row("moe", "copy floor (int64 ids' bytes)", params, device_copy(tokens * top_k * 8), rows)
        floor_us, by_shape = read_floor(tokens * top_k * 8)
        rows.append({"workload": "moe", "impl": "read floor (int64 ids' bytes)", **params,
                     "device_us": round(floor_us, 2),
                     "device_us_by_shape": {str(k): round(v, 2) for k, v in by_shape.items()}})
        print(f"{'moe':12} {'read floor':22} {json.dumps(params):60} device {floor_us:9.2f} us",
              flush=True)
        for impl, fn in reduction_floors(tokens * top_k * 8):
            row("moe", f"{impl} (int64 ids' bytes)", params, fn, rows)
    # A router step in a CUDA graph: torch.histc syncs nothing with an explicit range, so it
    # captures with and without enable(); bincount captures too.
    logits = torch.randn(65536, 64, device="cuda")
    for name, count in (("histc+enable", lambda i: torch.histc(i.int(), 64, 0, 63)),
                        ("bincount", lambda i: smem_ops.bincount(i, 64))):
        with smem_ops.enabled():
            count(logits.topk(8, dim=-1).indices)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                counts = count(logits.topk(8, dim=-1).indices)
        logits.normal_()
        graph.replay()
        same(counts.long(), torch.bincount(logits.topk(8, dim=-1).indices.flatten(),
                                           minlength=64), f"graph {name}")
        print(f"moe          CUDA graph of a router step with {name}: captured, replay correct")


@contextlib.contextmanager
def recording_histc(calls: list):
    """torch.histc as the observer looks it up, each result kept (a copy) in `calls`."""
    original = torch.histc

    def histc(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append(out.clone())
        return out

    torch.histc = histc
    try:
        yield
    finally:
        torch.histc = original


def histogram_observer(quick: bool, rows: list) -> None:
    from torch.ao.quantization import HistogramObserver

    shape = (16, 1024, 1024) if quick else (64, 1024, 1024)
    steps = [torch.randn(shape, device="cuda") * (1 + i / 4) for i in range(4)]

    def calibrate():
        obs = HistogramObserver().cuda()
        for x in steps:
            obs(x)
        return obs

    # Every torch.histc call of the calibration must return the same tensor with and without
    # enable(). The observer's merged histogram is compared to float tolerance only: it merges
    # through torch.bincount with float weights, whose CUDA atomics add in a varying order.
    want_calls, got_calls = [], []
    with recording_histc(want_calls):
        want = calibrate()
    with smem_ops.enabled(), recording_histc(got_calls):
        got = calibrate()
    assert len(got_calls) == len(want_calls) > 0, "the observer's histc calls differ"
    for i, (a, b) in enumerate(zip(got_calls, want_calls, strict=True)):
        same(a, b, f"observer histc call {i}")
    for name in ("min_val", "max_val"):
        same(getattr(got, name), getattr(want, name), f"observer {name}")
    torch.testing.assert_close(got.histogram, want.histogram, rtol=1e-5, atol=1e-2)
    rerun = calibrate().histogram
    print(f"observer     {len(want_calls)} torch.histc calls identical with enable(); the merged "
          f"histogram is {'bitwise equal' if torch.equal(got.histogram, want.histogram) else 'equal within 1e-5'}"
          f" (torch alone, run twice: {'bitwise equal' if torch.equal(rerun, want.histogram) else 'differs'})")
    obs_torch, obs_smem = calibrate(), calibrate()
    params = {"shape": list(shape), "bins": obs_torch.bins}
    row("observer", "torch", params, lambda: obs_torch(steps[-1]), rows)
    with smem_ops.enabled():
        row("observer", "torch+enable", params, lambda: obs_smem(steps[-1]), rows)


def equalize(quick: bool, rows: list) -> None:
    try:
        from torchvision.transforms.v2.functional import equalize as tv_equalize
    except ImportError:
        print("equalize: torchvision is not installed; skipped")
        return
    if not hasattr(torch.ops.smem, "batched_histc"):
        print("equalize: smem.batched_histc is not built; skipped")
        return
    from .equalize import equalize as smem_equalize

    images = torch.randint(0, 256, (16 if quick else 64, 3, 224, 224), dtype=torch.uint8,
                           device="cuda")
    same(smem_equalize(images), tv_equalize(images), "equalize")
    params = {"shape": list(images.shape)}
    row("equalize", "torchvision", params, lambda: tv_equalize(images), rows)
    row("equalize", "smem", params, lambda: smem_equalize(images), rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=SCRATCH)
    ap.add_argument("--save", action="store_true", help="write into benchmarks/results")
    args = ap.parse_args(argv)
    if not (torch.cuda.is_available() and smem_ops.cuda_compiled()):
        print("workloads: needs a CUDA device and a CUDA build of smem_ops")
        return 0
    rows: list = []
    for workload in (histc_sweep, moe_counts, histogram_observer, equalize):
        workload(args.quick, rows)
    gpu = torch.cuda.get_device_name()
    save_json(RESULTS if args.save else args.out, f"{slug(gpu)}_workloads.json",
              "benchmarks.workloads", argv, {"gpu": gpu}, {"rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
