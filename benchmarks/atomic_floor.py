"""Floors of the large-bin histograms (histc fp32 2^28 randn over [-4, 4] with 65536 / 262144 /
2^20 bins): how fast a kernel that reads the input, bins each value and adds one shared-memory
atomic per value can be, when it does nothing else. Such a kernel has no overflow handling for
its narrow counters, no per-warp copies and no flush of the counters to global memory: each of
those is work smem's histc does on top. So its time is a floor for the one-atomic-per-value
designs (shared counters, packed counters, groups of blocks that split the bins), and with the
traffic of a two-pass design (values partitioned by their bin's high bits, then counted per
partition) a floor for that one too. CuPy kernels, timed as everywhere (benchmarks/timing.py);
each is first checked against torch on an input small enough that no counter wraps.

    python -m benchmarks.atomic_floor          # needs CuPy and a GPU
"""
from __future__ import annotations

import argparse

import torch

from .cases import torch_stream
from .timing import device_copy, time_device

# BITS: counter width (32, 16 or 6; 32 // BITS counters to a 32-bit word); GROUP: blocks per
# group, block r of a group counting the bins b with b % GROUP == r (as smem's split groups own
# them, so that a run of popular bins spreads over the group) over the group's whole slice of
# the input, which it reads with plain loads (the group's other blocks find it in L2; one block
# alone reads evict-first);
# RET: the atomic's old value is used, as a wrap check needs it (0: it is not); IDS: the input
# is 16-bit bin ids (an int16 tensor's bits) instead of fp32 values; COUNT: 0 bins the values but adds nothing; FLUSH:
# the blocks add their counters to `out` (for the check only, not timed).
SRC = r'''
#define BITS %(BITS)d
#define GROUP %(GROUP)d
#define RET %(RET)d
#define IDS %(IDS)d
#define COUNT %(COUNT)d
#define FLUSH %(FLUSH)d
constexpr int PER = 32 / BITS;
constexpr unsigned FULL = BITS == 32 ? ~0u : (1u << (BITS %% 32)) - 1;
__device__ __forceinline__ uint4 ld(const uint4* p) { return GROUP == 1 ? __ldcs(p) : *p; }
extern "C" __global__ void __launch_bounds__(1024, 1)
k(const uint4* __restrict__ x, long long nvec, float lo, float hi, int bins,
  unsigned long long* out) {
  extern __shared__ unsigned c[];
  const int share = (bins + GROUP - 1) / GROUP;  // local bins of rank 0, the most
  const int rank = blockIdx.x %% GROUP;
  const int words = (share + PER - 1) / PER;
  for (int i = threadIdx.x; i < words; i += blockDim.x) c[i] = 0;
  __syncthreads();
  unsigned seen = 0;
  const float scale = bins / (hi - lo);
  auto count = [&](int b) {
    if (!COUNT || b %% GROUP != rank) { seen += b; return; }
    b /= GROUP;  // the local bin
    const unsigned add = 1u << ((b %% PER) * BITS);
    if (RET) seen ^= atomicAdd(&c[b / PER], add);
    else atomicAdd(&c[b / PER], add);
  };
  auto take = [&](uint4 v) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (IDS) {
        count(w[j] & 0xffff);
        count(w[j] >> 16);
      } else {
        const float f = __uint_as_float(w[j]);
        if (f >= lo && f <= hi) count(min(int((f - lo) * scale), bins - 1));
      }
    }
  };
  const long long groups = gridDim.x / GROUP, g = blockIdx.x / GROUP;
  const long long per = (nvec + groups - 1) / groups;
  const long long end = min(nvec, (g + 1) * per);
  long long i = g * per + threadIdx.x;
  for (; i + 3 * blockDim.x < end; i += 4 * blockDim.x) {  // four 16-byte loads in flight
    const uint4 v0 = ld(x + i), v1 = ld(x + i + blockDim.x), v2 = ld(x + i + 2 * blockDim.x),
                v3 = ld(x + i + 3 * blockDim.x);
    take(v0);
    take(v1);
    take(v2);
    take(v3);
  }
  for (; i < end; i += blockDim.x) take(ld(x + i));
  __syncthreads();
  if (FLUSH)
    for (int j = threadIdx.x; j < share && j * GROUP + rank < bins; j += blockDim.x)
      atomicAdd(out + j * GROUP + rank,
                (unsigned long long)((c[j / PER] >> ((j %% PER) * BITS)) & FULL));
  if (seen == 0x9e3779b9u) out[0] = seen;  // keeps `seen` (and the loads behind it) live
}
'''

_mods: dict = {}


def _kernel(**knobs):
    import cupy

    key = tuple(sorted(knobs.items()))
    if key not in _mods:
        f = cupy.RawModule(code=SRC % knobs, options=("-std=c++17",)).get_function("k")
        _mods[key] = f
    return _mods[key]


def floor_call(data: torch.Tensor, bins: int, bits: int, group: int, ret: int, count: int = 1,
               flush: int = 0, lo: float = -4.0, hi: float = 4.0):
    """A call of the floor kernel over `data` (fp32 values, or int16 holding 16-bit ids), one 1024-thread block
    per SM (rounded down to a multiple of `group`); `out` gets the counts where `flush`."""
    import cupy

    ids = data.dtype == torch.int16
    f = _kernel(BITS=bits, GROUP=group, RET=ret, IDS=int(ids), COUNT=count, FLUSH=flush)
    share = -(-bins // group)
    smem = -(-share // (32 // bits)) * 4
    f.max_dynamic_shared_size_bytes = smem
    sms = torch.cuda.get_device_properties(data.device).multi_processor_count
    grid = sms // group * group
    out = torch.zeros(bins, dtype=torch.int64, device=data.device)
    x, o = cupy.from_dlpack(data.view(torch.uint8)), cupy.from_dlpack(out)
    nvec = data.numel() * data.element_size() // 16

    def call():
        f((grid,), (1024,), (x, cupy.int64(nvec), cupy.float32(lo), cupy.float32(hi),
                             cupy.int32(bins), o), shared_mem=smem, stream=torch_stream(cupy))
        return out
    return call


def check(bins: int, bits: int, group: int) -> None:
    """The kernel's counts against torch's on inputs where no `bits`-bit counter can wrap: every
    id counted exactly, and the values binned as torch.histc bins them up to a few values at bin
    edges (the kernel scales by bins / (hi - lo) in one step)."""
    n = 1 << 20 if bits >= 16 else 1 << 14
    ids = torch.randint(0, min(bins, 65536), (n,), device="cuda", dtype=torch.int32)
    got = floor_call(ids.to(torch.int16), bins, bits, group, ret=1, flush=1)()
    want = torch.bincount(ids.long(), minlength=bins)
    assert torch.equal(got, want), f"ids: bins={bins} bits={bits} group={group}"
    x = torch.randn(n, device="cuda")
    got = floor_call(x, bins, bits, group, ret=1, flush=1)()
    want = torch.histc(x, bins, -4, 4).long()
    assert got.sum() == want.sum() and (got - want).abs().sum() <= 8, (bins, bits, group)


CASES = (  # (bins, counter bits, group, what smem's histc runs there)
    (65536, 16, 1, "one block of packed 16-bit counters per SM"),
    (262144, 6, 1, "one block of packed 6-bit counters per SM"),
    (1 << 20, 6, 4, "6-bit counters split over groups of 4 blocks"),
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log2n", type=int, default=28)
    args = ap.parse_args(argv)
    print(torch.cuda.get_device_name())
    for bins, bits, group, _ in CASES:
        check(bins, bits, group)
    n = 1 << args.log2n
    x = torch.randn(n, device="cuda")
    print(f"fp32 randn, 2^{args.log2n} values over [-4, 4], device us (median, L2 flushed):")
    read_us = time_device(floor_call(x, 256, 32, 1, ret=0, count=0)).us
    print(f"  read and bin, no atomics: {read_us:8.1f}")
    for bins, bits, group, what in CASES:
        t = [time_device(floor_call(x, bins, bits, group, ret=r)).us for r in (0, 1)]
        print(f"  {bins:8} bins, {bits:2}-bit counters, groups of {group} ({what}): "
              f"{t[0]:8.1f} old value unused, {t[1]:8.1f} used")
    # The two-pass design for 2^20 bins: pass 1 reads the values and writes each one's bin
    # (its low 16 bits, grouped by the high 4), pass 2 counts 65536 bins per group of ids. Here
    # the ids are not grouped: pass 2 does the same atomics on the same bytes. (Values beyond
    # [-4, 4], 6e-5 of them, land in the edge bins.)
    ids = (((x + 4) * ((1 << 20) / 8)).clamp(0, (1 << 20) - 1).int() & 0xFFFF).to(torch.int16)
    del x
    moved = n * 4 + n * 2
    pass1 = time_device(device_copy(moved)).us
    pass2 = [time_device(floor_call(ids, 65536, 16, 1, ret=r)).us for r in (0, 1)]
    print(f"  two passes for 2^20 bins: pass 1 at least a copy moving its {moved >> 20} MB "
          f"{pass1:8.1f}; pass 2, 65536 bins of 2^{args.log2n} 16-bit ids: {pass2[0]:8.1f} old "
          f"value unused, {pass2[1]:8.1f} used; together at least {pass1 + pass2[0]:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
