"""Where a wall-time sample's time goes, when it lies far above the call's device time (GPU).

Each wall-time run (benchmarks.timing.time_wall) waits for the GPU first: the persisting-line
reset acts when called. Without a head start the flush is then queued on an idle GPU, then the
start event, the call and the end event, so the flush gives the host that long to queue the
call; a call whose host side takes longer leaves the GPU idle between the start event and its
first kernel, and the idle time counts as the call's. This splits such runs into

    flush    events around the flush kernel alone (after the reset): how long the host had
    host     perf_counter from the start event's record to the call's return: the host's part
    wall     the start and end events, what time_wall takes the median of

and prints time_wall without a head start (`no spin`) beside time_wall as the sweep runs it
(a spin of timing.HEAD_START_US queued ahead of the flush, whose measured length it prints
first) and the call's device time.

    python -m benchmarks.wall_check [--runs 200]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import smem_ops
from benchmarks import timing


def _cases():
    compile_sum = torch.compile(lambda t: t.sum(), fullgraph=True, dynamic=False)
    compile_t = torch.compile(lambda t: t.transpose(-2, -1).contiguous(), fullgraph=True,
                              dynamic=False)
    x1m = torch.randn(1 << 20, device="cuda")
    b16m = torch.randn(1 << 24, device="cuda").bfloat16()
    skinny = torch.randn(33, 65536, device="cuda").bfloat16()
    mid = torch.randn(32, 4096, 128, device="cuda").bfloat16()
    compile_mid = torch.compile(lambda t: t.sum(1), fullgraph=True, dynamic=False)
    cases = [
        ("smem sum fp32 1M", lambda: smem_ops.sum(x1m)),
        ("eager sum fp32 1M", lambda: x1m.sum()),
        ("compile sum fp32 1M", lambda: compile_sum(x1m)),
        ("compile sum bf16 16M", lambda: compile_sum(b16m)),
        ("compile sum bf16 mid-dim", lambda: compile_mid(mid)),
        ("smem sum bf16 mid-dim", lambda: smem_ops.sum(mid, 1)),
        ("compile t bf16 33x65536", lambda: compile_t(skinny)),
        ("smem t bf16 33x65536", lambda: smem_ops.transpose(skinny, 0, 1)),
    ]
    try:
        import cupy
        cx = cupy.from_dlpack(x1m)
        cases.append(("CuPy sum fp32 1M", lambda: cx.sum()))
    except ImportError:
        pass
    return cases


def sample(fn, runs: int) -> dict[str, float]:
    """Medians over `runs` runs of time_wall's protocol without a head start, each split into
    flush / host / wall."""
    device = f"cuda:{torch.cuda.current_device()}"
    fn()
    torch.cuda.synchronize()
    flush, host, wall, over = [], [], [], 0
    for _ in range(runs):
        timing.reset_persisting_l2()
        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        e0.record()
        timing.l2_flush(device, reset=False)
        t0 = time.perf_counter()
        e1.record()
        fn()
        t1 = time.perf_counter()
        e2.record()
        torch.cuda.synchronize()
        flush.append(e0.elapsed_time(e1) * 1e3)
        host.append((t1 - t0) * 1e6)
        wall.append(e1.elapsed_time(e2) * 1e3)
        over += host[-1] > flush[-1]
    return {"flush": statistics.median(flush), "host": statistics.median(host),
            "host_p90": sorted(host)[int(0.9 * len(host))], "wall": statistics.median(wall),
            "host_over_flush": over / runs}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.wall_check",
                                description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=200)
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error(f"--runs must be at least 1, got {args.runs}")
    if not torch.cuda.is_available():
        p.error("needs a CUDA device")
    spin = timing.time_wall(lambda: None)  # calibrates the spin; the empty call's wall time
    cycles = timing.spin_cycles(torch.cuda.current_device(), timing.HEAD_START_US)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    torch.cuda.synchronize()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; us, medians over "
          f"{args.runs} runs; time_wall's spin {timing.HEAD_START_US:g} us, measured "
          f"{start.elapsed_time(end) * 1e3:.0f} us ({spin:.2f} us between events, no call)")
    for name, fn in _cases():
        s = sample(fn, args.runs)
        dev = timing.time_device(fn).us
        no_spin, with_spin = timing.time_wall(fn, head_start_us=0), timing.time_wall(fn)
        print(f"{name:26} device {dev:7.2f}  time_wall: no spin {no_spin:7.2f}  spin "
              f"{with_spin:7.2f} | flush {s['flush']:6.1f}  host {s['host']:6.1f} (p90 "
              f"{s['host_p90']:6.1f}, over flush {100 * s['host_over_flush']:3.0f}%)  wall "
              f"{s['wall']:7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
