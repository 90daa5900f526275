"""Timers shared by the benchmark runner (`python -m benchmarks`) and tools/probe.py.

A GPU call gets two clocks (docs/PERFORMANCE.md says why):

device time  `time_device(fn)`: the durations of the device activities one call of fn causes
             (kernels, memcpys, memsets), summed, as CUPTI records them through torch.profiler
             (ProfilerActivity.CUDA); the median over many calls, the L2 flushed before each.
wall time    `time_wall(fn)`: CUDA events around each call, the L2 flushed before each (the
             same flush as device time's) behind a 500 us spin that lets the host queue the
             call first, median: triton.testing.do_bench's protocol, with a flush that also
             resets persisting lines.

How time_device attributes activities to calls. Each call is preceded by a flush, an in-place
bitwise NOT of a 256 MB int32 buffer: it leaves the L2 holding the buffer's dirty lines, as
do_bench's flush (a memset) does, and its kernel is one that no op measured here launches.
Before it, cudaCtxResetPersistingL2Cache returns lines loaded with an evict-last hint to
normal, which the writes alone would not evict (reset_persisting_l2). The flush is first
profiled alone, once per device, which gives the names and the number of its activities.
Then warm-up + `calls` pairs (flush, fn) run under one profiler, on the current stream, and
the device activities are taken in start order: each flush opens the next call's group, and
every other activity until the next flush belongs to that group. The number of flush
activities must come out exactly as issued, so an op that launched a kernel of the flush's
name would raise rather than be cut in two. A call's device time is the sum of its group's
durations (a call with no device work, a view, counts 0); the warm-up groups are dropped and
the median of the rest is reported, with the median number of activities per call.

    python -m benchmarks.timing --selftest     # on a GPU: known kernels timed both ways
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import glob
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

FLUSH_BYTES = 256 * 1024 * 1024


def l2_flush_buffer(device) -> torch.Tensor:
    """256 MB of int32, larger than the L2 of any current GPU."""
    return torch.zeros(FLUSH_BYTES // 4, dtype=torch.int32, device=device)


_FLUSH_BUFFERS: dict[str, torch.Tensor] = {}


@functools.cache
def _cudart():
    """The CUDA runtime library (ctypes), for cudaCtxResetPersistingL2Cache; None (and a warning,
    once) if not found."""
    dirs = [os.path.join(os.path.dirname(torch.__file__), "lib")]
    dirs += glob.glob(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)),
                                   "nvidia", "*", "lib"))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            dirs.append(os.path.join(home, "lib64"))
    for path in [f for d in dirs for f in sorted(glob.glob(os.path.join(d, "libcudart.so*")))] + [
            "libcudart.so"]:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    print("benchmarks.timing: libcudart not found; L2 lines with an evict-last hint survive the "
          "flush", file=sys.stderr)
    return None


def reset_persisting_l2() -> bool:
    """Returns L2 lines marked persisting (loads with an evict-last hint) to normal, once the
    GPU has finished the work queued so far: a flush by plain writes does not evict them, so an
    input that a kernel reads with that hint (torch.compile's transposes do) stays in the L2
    across the flush and its next call reads it from there. False where the runtime library
    was not found (the flush then leaves such lines in place)."""
    rt = _cudart()
    if rt is None:
        return False
    torch.cuda.synchronize()  # the reset acts when called, not in stream order
    rc = rt.cudaSetDevice(torch.cuda.current_device())  # this library's own current device
    if rc == 0:
        rc = rt.cudaCtxResetPersistingL2Cache()
    if rc != 0:
        rt.cudaGetLastError()  # clear it, so that no later check blames another call
        raise RuntimeError(f"benchmarks.timing: cudaCtxResetPersistingL2Cache failed "
                           f"(cudaError {rc}): the flush would leave lines with an evict-last "
                           "hint in the L2")
    return True


def l2_flush(device="cuda", reset: bool = True) -> None:
    """Flushes the L2 with a kernel no measured op launches (bitwise NOT, in place, 256 MB),
    after returning any persisting lines to normal (reset_persisting_l2) unless the caller just
    did."""
    key = str(torch.device(device))
    if key not in _FLUSH_BUFFERS:
        _FLUSH_BUFFERS[key] = l2_flush_buffer(device)
    if reset:
        reset_persisting_l2()
    _FLUSH_BUFFERS[key].bitwise_not_()


# --------------------------------------------------------------------------- wall time


def time_events(fn: Callable[[], object], before_each: Callable[[], object],
                runs: int = 50, budget_ms: float = 0.0, max_runs: int = 1000) -> float:
    """Median microseconds of fn between two CUDA events, before_each() (a flush) run first:
    `runs` runs, and more (up to max_runs) until budget_ms of the host clock have passed,
    flushes included."""
    fn()
    torch.cuda.synchronize()
    times = []
    deadline = time.perf_counter() + budget_ms / 1000.0
    while len(times) < runs or (time.perf_counter() < deadline and len(times) < max_runs):
        before_each()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


# How long a spin queued ahead of each wall-time run's flush lasts (time_wall). Each run waits
# for the GPU first (the persisting-line reset acts at once), so the host can only queue the
# call while the GPU spins and flushes. Without the spin, a call whose host side took longer
# than the flush alone (140-160 us on an H200, ~170 on an H100; torch.compile's calls took
# 84-191 us on the H200's host, CuPy's 46-85) left the GPU idle between the start event and
# its first kernel, and the idle time counted as the call's (docs/PERFORMANCE.md, "Wall time
# and the host's head start").
HEAD_START_US = 500.0


@functools.cache
def spin_cycles(device_index: int, us: float) -> int:
    """torch.cuda._sleep cycles that spin for at least about `us` on the device: _sleep counts
    SM clock cycles, so the cycles are taken from the shortest of a few timed spins (the fastest
    clock seen); a slower clock later only makes the spin longer."""
    n = 1_000_000
    with torch.cuda.device(device_index):
        torch.cuda._sleep(n)  # the clock ramps up under load
        shortest = float("inf")
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(n)
            end.record()
            torch.cuda.synchronize()
            shortest = min(shortest, start.elapsed_time(end) * 1e3)
    return max(1, int(n * us / shortest))


def time_wall(fn: Callable[[], object], rep_ms: float = 100.0, warmup_ms: float = 25.0,
              head_start_us: float = HEAD_START_US) -> float:
    """Median microseconds of fn between CUDA events, L2 flushed before each run: do_bench's
    protocol (a warm-up, then as many flushed runs as fit in rep_ms), with l2_flush, which first
    returns persisting lines to normal; do_bench's own flush leaves lines loaded with an
    evict-last hint in the L2. The reset acts at once, not in stream order, so each run waits
    for the last, and a spin of head_start_us is queued ahead of the flush: the host queues fn
    while the GPU spins and flushes, as do_bench's host runs ahead of its GPU, and the events
    time the GPU's work, not the host's turn (where fn's host side takes less than the spin and
    the flush together)."""
    device = f"cuda:{torch.cuda.current_device()}"
    cycles = spin_cycles(torch.cuda.current_device(), head_start_us) if head_start_us > 0 else 0

    def before_each():
        reset_persisting_l2()
        if cycles:
            torch.cuda._sleep(cycles)
        l2_flush(device, reset=False)

    deadline = time.perf_counter() + warmup_ms / 1000.0
    fn()
    torch.cuda.synchronize()
    while time.perf_counter() < deadline:
        fn()
        torch.cuda.synchronize()
    return time_events(fn, before_each, runs=5, budget_ms=rep_ms)


def time_cpu(fn: Callable[[], object], min_runs: int = 5, budget_s: float = 1.0) -> float:
    """Median microseconds of fn on the host clock (CPU tensors)."""
    fn()
    times = []
    deadline = time.perf_counter() + budget_s
    while len(times) < min_runs or (time.perf_counter() < deadline and len(times) < 200):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


# --------------------------------------------------------------------------- device time


@dataclass
class DeviceTime:
    us: float                 # median over calls of the summed activity durations
    activities: float         # median number of device activities per call
    calls: int                # calls the median is over
    names: list[str]          # the activities of the last call, in order
    per_activity_us: list[float]  # median duration of each activity, in order, where every
                                  # call had the same number of them (else empty)


def _device_activities(prof, device_index: int) -> list[tuple[str, int, int]]:
    """(name, start ns, duration ns) of every kernel, memcpy and memset on the device."""
    try:
        from torch.autograd import DeviceType
    except ImportError:  # older torch
        from torch._C._autograd import DeviceType
    out = []
    for e in prof.profiler.kineto_results.events():
        if e.device_type() != DeviceType.CUDA or e.device_index() != device_index:
            continue
        kind = e.activity_type() if hasattr(e, "activity_type") else ""
        if "annotation" in kind or (hasattr(e, "is_user_annotation") and e.is_user_annotation()):
            continue  # record_function ranges mirrored on the GPU timeline: not device work
        if kind and kind != "kernel" and not kind.startswith("gpu_mem"):
            continue
        out.append((e.name(), e.start_ns(), e.duration_ns()))
    out.sort(key=lambda a: a[1])
    return out


def _profile(body: Callable[[], None], device_index: int) -> list[tuple[str, int, int]]:
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        body()
        torch.cuda.synchronize()
    return _device_activities(prof, device_index)


_FLUSH_SIGNATURE: dict[int, tuple[frozenset[str], int]] = {}


def _flush_signature(device_index: int) -> tuple[frozenset[str], int]:
    """Names and count of the device activities of one l2_flush(), profiled alone."""
    if device_index not in _FLUSH_SIGNATURE:
        device = f"cuda:{device_index}"
        l2_flush(device)
        acts = _profile(lambda: l2_flush(device), device_index)
        if not acts:
            raise RuntimeError("the profiler recorded no device activity for the L2 flush: "
                               "is CUPTI available to torch.profiler?")
        _FLUSH_SIGNATURE[device_index] = (frozenset(a[0] for a in acts), len(acts))
    return _FLUSH_SIGNATURE[device_index]


def time_device(fn: Callable[[], object], calls: int | None = None, warmup: int = 3,
                budget_s: float = 0.3, est_us: float | None = None) -> DeviceTime:
    """Device time of fn: see the module docstring. `calls` defaults to what fits in budget_s
    given est_us (a wall-time estimate; one call is timed when it is not given), 10 to 100."""
    device_index = torch.cuda.current_device()
    flush_names, per_flush = _flush_signature(device_index)
    device = f"cuda:{device_index}"
    if calls is None:
        if est_us is None:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            est_us = (time.perf_counter() - t0) * 1e6
        flush_us = 2 * FLUSH_BYTES / 3e6  # bytes / (bytes per us at ~3 TB/s): sizes the run
        calls = int(min(100, max(10, budget_s * 1e6 / (est_us + flush_us))))

    def body():
        for _ in range(warmup + calls):
            l2_flush(device)
            fn()

    acts = _profile(body, device_index)
    groups: list[list[tuple[str, int]]] = []
    flushes = 0
    for name, _start, dur in acts:
        if name in flush_names:
            if flushes % per_flush == 0:
                groups.append([])
            flushes += 1
        elif groups:  # (anything before the first flush belongs to no call)
            groups[-1].append((name, dur))
    if flushes != per_flush * (warmup + calls) or len(groups) != warmup + calls:
        raise RuntimeError(
            f"expected {warmup + calls} flushes of {per_flush} activities each, found "
            f"{flushes} flush activities: does fn launch a kernel named like the flush "
            f"({min(flush_names)[:80]})?")
    kept = groups[warmup:]
    per_call = [sum(d for _, d in g) / 1e3 for g in kept]
    same_shape = len({len(g) for g in kept}) == 1
    return DeviceTime(us=statistics.median(per_call),
                      activities=statistics.median(len(g) for g in kept),
                      calls=len(kept), names=[n for n, _ in kept[-1]],
                      per_activity_us=[statistics.median(g[k][1] for g in kept) / 1e3
                                       for k in range(len(kept[0]))] if same_shape else [])


# --------------------------------------------------------------------------- ceiling


def device_copy(nbytes: int, device: str = "cuda") -> Callable[[], torch.Tensor]:
    """torch's copy moving `nbytes` in all (half read, half written), checked once: the kernel
    of the copy ceiling, and, at a case's size, of its copy floor."""
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device=device).random_(0, 255)
    dst = torch.empty_like(src)
    dst.copy_(src)
    assert torch.equal(dst, src), "the device copy is wrong"
    return lambda: dst.copy_(src)


def copy_ceiling_gbs(device: str) -> dict[str, float | None]:
    """The device's copy bandwidth, bytes read + written, of a 1 GiB copy (64 MiB on the CPU),
    by each clock: {"wall": GB/s, "device": GB/s, or None on the CPU}."""
    n = (1 << 30) if device == "cuda" else (1 << 26)
    copy = device_copy(2 * n, device)
    if device != "cuda":
        return {"wall": 2 * n / time_cpu(copy) / 1e3, "device": None}
    return {"wall": 2 * n / time_wall(copy) / 1e3,
            "device": 2 * n / time_device(copy, calls=20).us / 1e3}


# --------------------------------------------------------------------------- self-check


def selftest() -> int:
    """Times kernels whose cost is known, both ways, and says whether the clocks agree."""
    if not torch.cuda.is_available():
        x = torch.empty(1 << 26, dtype=torch.uint8)
        y = torch.empty_like(x)
        us = time_cpu(lambda: y.copy_(x))
        print(f"no CUDA device: device time needs a GPU. Host timer, 64 MiB CPU copy: {us:.0f} us "
              f"({2 * x.numel() / us / 1e3:.1f} GB/s read + write)")
        return 0
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    names, per_flush = _flush_signature(torch.cuda.current_device())
    print(f"flush: {per_flush} activity per call: {sorted(names)}")
    failures = []

    def check(ok, what):
        print(("PASS  " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    # 1. a 256 MB device-to-device copy: one memcpy (or copy kernel); near the copy ceiling on
    #    both clocks, the device clock a few us below the wall clock (launch and event floor)
    src = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    wall = time_wall(lambda: dst.copy_(src))
    dev = time_device(lambda: dst.copy_(src), est_us=wall)
    print(f"copy 256 MB: wall {wall:.1f} us ({2 * FLUSH_BYTES / wall / 1e3:.0f} GB/s), device "
          f"{dev.us:.1f} us ({2 * FLUSH_BYTES / dev.us / 1e3:.0f} GB/s), {dev.activities:g} "
          f"activities/call over {dev.calls} calls: {dev.names}")
    check(dev.activities == 1, "the copy is one device activity per call")
    check(0.8 * wall <= dev.us <= 1.03 * wall, "copy: device time within 80-103% of wall time")
    # 2. three kernels per call, all counted to the call that launched them
    a = torch.zeros(1 << 20, device="cuda")
    dev = time_device(lambda: (a.add_(1), a.mul_(2), a.sub_(1)))
    print(f"add_/mul_/sub_ on 4 MB: device {dev.us:.2f} us, {dev.activities:g} activities/call: "
          f"{[n[:50] for n in dev.names]}")
    check(dev.activities == 3, "three kernels per call are attributed to their call")
    # 3. a spinning kernel of known length: device and wall time differ by the launch floor only
    empty_wall = time_wall(lambda: torch.cuda._sleep(0))
    empty_dev = time_device(lambda: torch.cuda._sleep(0))
    print(f"empty kernel: wall {empty_wall:.2f} us, device {empty_dev.us:.2f} us")
    cycles = 2_000_000
    sleep_wall = time_wall(lambda: torch.cuda._sleep(cycles))
    sleep_dev = time_device(lambda: torch.cuda._sleep(cycles))
    print(f"_sleep({cycles}): wall {sleep_wall:.1f} us, device {sleep_dev.us:.1f} us, wall - device "
          f"{sleep_wall - sleep_dev.us:.2f} us")
    check(-1 <= sleep_wall - sleep_dev.us <= empty_wall + 3,
          "spin kernel: wall - device within [-1, empty-kernel wall + 3] us")
    # 4. no device work: a view costs 0 device time, and no flush is mistaken for the op's
    v = torch.zeros(64, 64, device="cuda")
    dev = time_device(lambda: v.t(), calls=10)
    check(dev.us == 0 and dev.activities == 0, f"a view: {dev.us} us, {dev.activities:g} activities")
    print("selftest:", "all passed" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.timing", description=__doc__.split("\n")[0])
    p.add_argument("--selftest", action="store_true", help="time known kernels both ways")
    args = p.parse_args(argv)
    if args.selftest:
        return selftest()
    p.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
