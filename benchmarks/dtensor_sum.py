"""smem.sum of a Shard(0) DTensor reduced to a Replicate scalar, vs. the local kernel plus one
all-reduce by hand: what the DTensor path costs over the least it could.

    torchrun --nproc-per-node 2 benchmarks/dtensor_sum.py [--numel 16777216] [--runs 100]
    torchrun --nproc-per-node 2 benchmarks/dtensor_sum.py --device cpu --numel 1048576  # smoke

Each rank holds --numel fp32 elements (the global tensor is world x numel). Implementations:

  dtensor      torch.ops.smem.sum(dx).redistribute(mesh, [Replicate()])   (Partial -> all-reduce)
  manual       s = torch.ops.smem.sum(local); dist.all_reduce(s)
  local        torch.ops.smem.sum(local)                                (no communication)
  aten-dtensor dx.sum().redistribute(mesh, [Replicate()])                (torch's own kernel)

Two clocks, as docs/BENCHMARKING asks (per rank, median over --runs calls, L2 flushed before
each call, ranks lined up by a CPU (gloo) barrier before each call so one rank's late start is
not timed as the other's all-reduce):
  device us   the kernels' own durations per call from torch.profiler (CUDA activity): compute
              (smem/aten kernels) + comm (NCCL kernels); the flush kernel is left out by name;
  wall us     CUDA events around the call (GPU), or perf_counter around call + sync (CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist

import smem_ops  # noqa: F401  (torch.ops.smem.* and their DTensor rules)

ops = torch.ops.smem


def kernel_times(prof, calls: int) -> dict[str, float]:
    """Mean device microseconds per call of the profiled kernels: compute and NCCL comm."""
    compute = comm = 0.0
    for evt in prof.events():
        if evt.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name = evt.name
        if "FillFunctor" in name:
            continue  # the L2 flush (zero_)
        us = evt.device_time_total  # a kernel's own duration (CUPTI)
        if name.startswith("nccl"):
            comm += us
        else:
            compute += us
    return {"compute": compute / calls, "comm": comm / calls, "total": (compute + comm) / calls}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--numel", type=int, default=16 * 1024 * 1024, help="elements per rank")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--device", choices=["cuda", "cpu"],
                    default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--json", help="write the results here (rank 0)")
    args = ap.parse_args()

    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo")
    cpu_group = dist.new_group(backend="gloo")  # barriers that launch no GPU kernel
    rank, world = dist.get_rank(), dist.get_world_size()

    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Replicate, Shard

    device = f"cuda:{torch.cuda.current_device()}" if cuda else "cpu"
    mesh = init_device_mesh(args.device, (world,))
    g = torch.Generator().manual_seed(1234 + rank)
    local = torch.randn(args.numel, generator=g).to(device)
    dx = DTensor.from_local(local, mesh, [Shard(0)], run_check=False)

    def waited(t):
        # DTensor's collectives return an AsyncCollectiveTensor, waited on at its first use;
        # wait here, so the timed call includes the all-reduce (as dist.all_reduce does).
        return t.wait() if hasattr(t, "wait") else t

    def dtensor():
        return waited(ops.sum(dx).redistribute(mesh, [Replicate()]).to_local())

    def manual():
        s = ops.sum(local)
        dist.all_reduce(s)
        return s

    def local_only():
        return ops.sum(local)

    def aten_dtensor():
        return waited(dx.sum().redistribute(mesh, [Replicate()]).to_local())

    impls = {"dtensor": dtensor, "manual": manual, "local": local_only,
             "aten-dtensor": aten_dtensor}

    # Check before timing: every rank gets the global sum, both ways, and they agree.
    full = torch.tensor(local.double().sum().item(), dtype=torch.float64)
    dist.all_reduce(full, group=cpu_group)
    for name in ("dtensor", "manual", "aten-dtensor"):
        got = impls[name]().double().cpu()
        assert torch.allclose(got, full, rtol=1e-5, atol=1e-3), (name, got, full)
    assert torch.equal(dtensor(), manual()), "the DTensor path and the manual path differ"

    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=device) if cuda else None

    def before_each():
        if flush is not None:
            flush.zero_()
            torch.cuda.synchronize()
        dist.barrier(group=cpu_group)

    results = {}
    for name, fn in impls.items():
        for _ in range(5):
            fn()
        if cuda:
            torch.cuda.synchronize()
        walls = []
        for _ in range(args.runs):
            before_each()
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                torch.cuda.synchronize()
                walls.append(start.elapsed_time(end) * 1000.0)
            else:
                t0 = time.perf_counter()
                fn()
                walls.append((time.perf_counter() - t0) * 1e6)
        res = {"wall_us": statistics.median(walls)}
        if cuda:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(args.runs):
                    before_each()
                    fn()
                torch.cuda.synchronize()
            res.update({f"device_{k}_us": v for k, v in kernel_times(prof, args.runs).items()})
        results[name] = res

    per_rank = [None] * world
    dist.all_gather_object(per_rank, results, group=cpu_group)
    if rank == 0:
        info = {"device": torch.cuda.get_device_name() if cuda else "cpu", "world": world,
                "numel_per_rank": args.numel, "dtype": "float32", "torch": torch.__version__,
                "cuda": torch.version.cuda, "nccl": ".".join(map(str, torch.cuda.nccl.version()))
                if cuda else None, "runs": args.runs}
        print(json.dumps(info))
        cols = ["wall_us"] + (["device_compute_us", "device_comm_us", "device_total_us"]
                              if cuda else [])
        print(f"{'impl':14s} {'rank':>4s} " + " ".join(f"{c:>18s}" for c in cols))
        for name in impls:
            for r in range(world):
                row = per_rank[r][name]
                print(f"{name:14s} {r:4d} " + " ".join(f"{row[c]:18.1f}" for c in cols))
        if cuda:
            for r in range(world):
                d, m = per_rank[r]["dtensor"], per_rank[r]["manual"]
                print(f"rank {r}: dtensor / manual  device {d['device_total_us']:.1f} / "
                      f"{m['device_total_us']:.1f} us ({d['device_total_us'] / m['device_total_us']:.2f}x),"
                      f"  wall {d['wall_us']:.1f} / {m['wall_us']:.1f} us "
                      f"({d['wall_us'] / m['wall_us']:.2f}x)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"info": info, "per_rank": per_rank}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
