"""Benchmark of smem.batched_histc and smem._histogram_count against torch references (CUDA).

    python -m benchmarks.histograms            # the full table
    python -m benchmarks.histograms --quick    # smaller sizes

    python -m benchmarks.histograms --save     # into benchmarks/results (else bench-out/)

Each case is verified first (smem's output against an exact or float64 reference), then timed
with both clocks of benchmarks/timing.py: device time (CUPTI kernel durations, L2 flushed before
each call, median) and wall time (CUDA events, L2 flushed). Bandwidth counts the bytes that
must move (inputs read once, the output written once) over the device time, as a % of the copy
ceiling (bytes read + written by a 1 GiB device copy) measured in the same process by the same
clock.
"""

from __future__ import annotations

import argparse

import torch

import smem_ops

from .provenance import RESULTS, SCRATCH, save_json, slug
from .timing import copy_ceiling_gbs, time_device, time_wall

count = torch.ops.smem._histogram_count


# --------------------------------------------------------------------------- torch references

def torch_batched_histc(x: torch.Tensor, bins: int, lo: float, hi: float) -> torch.Tensor:
    """The usual torch idiom: per-element bins offset by row, one bincount (int64 counts)."""
    rows = x.shape[0]
    v = x.float() if x.dtype != torch.float64 else x
    if lo == hi:
        finite = torch.isfinite(v)
        l = torch.where(finite, v, torch.inf).amin(1, keepdim=True)
        h = torch.where(finite, v, -torch.inf).amax(1, keepdim=True)
        none = l > h
        l, h = torch.where(none, 0, l), torch.where(none, 0, h)
        same = l == h
        l, h = torch.where(same, l - 1, l), torch.where(same, h + 1, h)
    else:
        l, h = torch.tensor(lo, dtype=v.dtype, device=v.device), torch.tensor(hi, dtype=v.dtype, device=v.device)
    b = ((v - l) * bins / (h - l)).long().clamp_(max=bins - 1)
    keep = (v >= l) & (v <= h)
    b = torch.where(keep, b + torch.arange(rows, device=x.device)[:, None] * bins, rows * bins)
    return torch.bincount(b.flatten(), minlength=rows * bins + 1)[:-1].view(rows, bins)


def global_bins(x, edges):
    """Each element's bin by a search over all edges (torch.histogram's bins wherever the edges
    strictly increase), with the last edge in the last bin; -1 where the element is dropped."""
    b = torch.searchsorted(edges, x, right=True) - 1
    b = torch.where(x == edges[-1], edges.numel() - 2, b)
    return torch.where((x >= edges[0]) & (x <= edges[-1]), b, -1)


def torch_weighted_edges(x, edges, w):
    """torch's CUDA idiom for weighted bins over edges (float atomics: not deterministic)."""
    nb = edges.numel() - 1
    b = torch.bucketize(x, edges, right=True).sub_(1)
    b = torch.where(x == edges[-1], nb - 1, b)
    b = torch.where((x >= edges[0]) & (x <= edges[-1]), b, nb)
    return torch.bincount(b, weights=w, minlength=nb + 1)[:-1]


# --------------------------------------------------------------------------- verification

def assert_weighted_close(got, ref, magnitude, dtype):
    """smem's accuracy for weighted bin sums of `dtype` inputs (docs/DESIGN.md), against float64
    references of the sums and of the weights' magnitudes per bin: float64 inputs within 1e-9
    relative; float32 ones, whose lanes add their share in float32 before a float64 combine,
    within 2^-24 of each bin's sum of magnitudes."""
    err = (got.double() - ref.double()).abs()
    bound = (1e-9 * (ref.double().abs() + 1) if dtype == torch.float64
             else 2.0 ** -24 * magnitude.double())
    assert bool((err <= bound).all()), f"weighted sums off by {err.max().item():.3g}"


def verify_edges(x, edges, w, uniform):
    xc, ec = x.cpu(), edges.cpu()
    ref = torch.histogram(xc, ec).hist.long() if not uniform else None
    got = count(x, edges, uniform=uniform).cpu()
    if uniform:  # int-bins overload: torch's own linspace edges and local search
        ref = torch.histogram(xc, ec.numel() - 1, range=(ec[0].item(), ec[-1].item())).hist.long()
    assert torch.equal(got, ref), "counts differ from CPU torch.histogram"
    b = global_bins(xc, ec)
    keep = b >= 0
    wc = w.cpu()[keep].double()
    wref = torch.zeros(ec.numel() - 1, dtype=torch.float64).index_add_(0, b[keep], wc)
    mag = torch.zeros(ec.numel() - 1, dtype=torch.float64).index_add_(0, b[keep], wc.abs())
    assert_weighted_close(count(x, edges, w, uniform=uniform).cpu(), wref, mag, x.dtype)
    a, b2 = count(x, edges, w, uniform=uniform), count(x, edges, w, uniform=uniform)
    assert torch.equal(a, b2), "weighted sums differ run to run"


def verify_batched(x, bins, lo, hi):
    got = smem_ops.batched_histc(x, bins, lo, hi, dtype=torch.int64)
    ref = smem_ops.batched_histc(x.cpu(), bins, lo, hi, dtype=torch.int64)
    assert torch.equal(got.cpu(), ref), "batched_histc differs from its CPU kernel"
    for r in (0, x.shape[0] - 1):
        assert torch.equal(got[r], smem_ops.histc(x[r], bins, lo, hi, dtype=torch.int64))
    if x.dtype in (torch.float32, torch.float64) and lo != hi:
        assert torch.equal(got, torch_batched_histc(x, bins, lo, hi)), "torch idiom disagrees"


# --------------------------------------------------------------------------- cases

def _case(**fields):
    """op, label, bytes (that must move), verify() and impls {name: fn}."""
    return fields


def cases(quick: bool):
    g = torch.Generator(device="cuda").manual_seed(0)
    n = 1 << (22 if quick else 26)
    x = torch.randn(n, device="cuda", generator=g)
    w = torch.rand(n, device="cuda", generator=g)
    uniform_edges = torch.linspace(-4, 4, 257, device="cuda")
    random_edges = torch.sort(torch.randn(257, device="cuda", generator=g) * 2).values
    for label, edges, uniform in (("int bins (uniform)", uniform_edges, True),
                                  ("tensor edges", random_edges, False)):
        yield _case(op="_histogram_count", label=f"fp32 2^{n.bit_length() - 1}, 256 bins, weights, {label}",
                   bytes=2 * x.nbytes + 256 * 8, verify=lambda e=edges, u=uniform: verify_edges(x, e, w, u),
                   impls={"smem": lambda e=edges, u=uniform: count(x, e, w, uniform=u),
                          "torch bucketize+bincount": lambda e=edges: torch_weighted_edges(x, e, w)})
        yield _case(op="_histogram_count", label=f"fp32 2^{n.bit_length() - 1}, 256 bins, counts, {label}",
                   bytes=x.nbytes + 256 * 8, verify=lambda: None,
                   impls={"smem": lambda e=edges, u=uniform: count(x, e, uniform=u),
                          "torch.histc": lambda: torch.histc(x, 256, -4, 4)})
    shapes = [(512, 65536), (64, 1 << 16)] if quick else [(4096, 65536), (64, 1 << 20), (1 << 16, 1000)]
    for rows, length in shapes:
        b = torch.randn(rows, length, device="cuda", generator=g)
        for lo, hi, what in ((-4.0, 4.0, "shared range"), (0.0, 0.0, "auto-range")):
            yield _case(op="batched_histc", label=f"fp32 ({rows}, {length}), 256 bins, {what}",
                       bytes=b.nbytes + rows * 256 * 4,
                       verify=lambda b=b, lo=lo, hi=hi: verify_batched(b, 256, lo, hi),
                       impls={"smem": lambda b=b, lo=lo, hi=hi: smem_ops.batched_histc(b, 256, lo, hi),
                              "torch bincount idiom": lambda b=b, lo=lo, hi=hi: torch_batched_histc(b, 256, lo, hi)})
    img = torch.randint(0, 256, (64 * 3, 224 * 224), device="cuda", dtype=torch.uint8, generator=g)
    yield _case(op="batched_histc", label="uint8 images (64*3, 224*224), 256 bins [0, 255]",
               bytes=img.nbytes + img.shape[0] * 256 * 8,
               verify=lambda: verify_batched(img, 256, 0, 255),
               impls={"smem": lambda: smem_ops.batched_histc(img, 256, 0, 255, dtype=torch.int64),
                      "torch bincount idiom": lambda: torch_batched_histc(img, 256, 0.0, 255.0)})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--out", default=SCRATCH, help=f"output folder (default {SCRATCH})")
    where.add_argument("--save", action="store_true", help="write into benchmarks/results")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available() or not smem_ops.cuda_compiled():
        print("benchmarks.histograms: needs a CUDA device and a CUDA build")
        return 1
    ceiling = copy_ceiling_gbs("cuda")["device"]
    print(f"{torch.cuda.get_device_name()}: copy ceiling {ceiling:.0f} GB/s (read + written, "
          f"device time), torch {torch.__version__}, {smem_ops.build_info()}")
    print(f"{'op':<17} {'case':<58} {'impl':<26} {'device us':>10} {'wall us':>9} {'GB/s':>7} "
          f"{'% ceil':>7} {'vs smem':>8}")
    rows = []
    for case in cases(args.quick):
        case["verify"]()
        times = {name: (time_device(fn).us, time_wall(fn)) for name, fn in case["impls"].items()}
        smem_dev = times["smem"][0]
        for name, (dev, wall) in times.items():
            gbs = case["bytes"] / dev / 1e3
            rows.append({"op": case["op"], "case": case["label"], "impl": name,
                         "bytes": case["bytes"], "device_us": round(dev, 2),
                         "wall_us": round(wall, 2), "gbs_device": round(gbs, 1),
                         "pct_ceiling_device": round(100 * gbs / ceiling, 1),
                         "x_smem_device": round(dev / smem_dev, 2)})
            print(f"{case['op']:<17} {case['label']:<58} {name:<26} {dev:>10.1f} {wall:>9.1f} "
                  f"{gbs:>7.0f} {100 * gbs / ceiling:>6.1f}% {dev / smem_dev:>7.2f}x")
    gpu = torch.cuda.get_device_name()
    save_json(RESULTS if args.save else args.out, f"{slug(gpu)}_histograms.json",
              "benchmarks.histograms", argv,
              {"gpu": gpu, "copy_ceiling_gbs_device": round(ceiling, 1)}, {"results": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
