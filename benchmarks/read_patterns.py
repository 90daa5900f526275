"""Read patterns of a flat fp32 sum, as CuPy kernels: how the grid, the block size, the loads in
flight, the layout (each block one contiguous run, or all blocks interleaving 16-byte vectors)
and the load kind change its device time, and what combining the blocks' partials on the device
costs (none; the last block found by an acquire-release ticket; flagged slots and a relaxed
ticket, as smem's row runs do). Each kernel's result is checked against a float64 sum first.
Needs CuPy and a GPU; device time as everywhere (benchmarks/timing.py).

    python -m benchmarks.read_patterns            # the combine table at 4, 64 and 32 MB
    python -m benchmarks.read_patterns --sweep    # every shape at 64 MB; the best 12 at 32, 4 MB
    python -m benchmarks.read_patterns --compile  # torch.compile's flat sums: kernels and times
"""
from __future__ import annotations

import argparse
import itertools
import statistics

import torch

from .cases import torch_stream
from .timing import time_device

# L: loads in flight per thread; C: contiguous runs (1) or interleaved vectors (0); S: ld.global.nc
# (0), ld.global.cs (1), no-allocate + evict-first (2, not accepted by ptxas for .v4.f32);
# K: compensated sums; D: no combine (0), acquire-release ticket (1), flagged slots (2);
# T, MB: __launch_bounds__
SRC = r'''
#define L %(L)d
#define CONTIG %(C)d
#define STREAM %(S)d
#define KAHAN %(K)d
#define DONE %(D)d
__device__ __forceinline__ float4 ld(const float4* p) {
#if STREAM == 1
  return __ldcs(p);
#elif STREAM == 2
  float4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::evict_first.v4.f32 {%%0,%%1,%%2,%%3}, [%%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
#else
  return __ldg(p);
#endif
}
struct Acc {
  float sum = 0.f, carry = 0.f;
  __device__ void add(float v) {
#if KAHAN
    const float y = v - carry; const float t = sum + y; carry = (t - sum) - y; sum = t;
#else
    sum += v;
#endif
  }
};
extern "C" __global__ void __launch_bounds__(%(T)d, %(MB)d) k(const float4* __restrict__ x, long long nvec, long long per_block,
                             float* out, unsigned* done, float* result) {
  Acc a;
  long long i, stride, end;
  if (CONTIG) {
    i = blockIdx.x * per_block + threadIdx.x;
    end = min(nvec, (long long)(blockIdx.x + 1) * per_block);
    stride = blockDim.x;
  } else {
    i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    end = nvec;
    stride = (long long)gridDim.x * blockDim.x;
  }
  for (; i + (L - 1) * stride < end; i += L * stride) {
    float4 v[L];
#pragma unroll
    for (int u = 0; u < L; ++u) v[u] = ld(x + i + u * stride);
#pragma unroll
    for (int u = 0; u < L; ++u) a.add((v[u].x + v[u].y) + (v[u].z + v[u].w));
  }
  for (; i < end; i += stride) {
    float4 v = ld(x + i);
    a.add((v.x + v.y) + (v.z + v.w));
  }
  float acc = a.sum;
  for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(~0u, acc, o);
  __shared__ float s[32];
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < blockDim.x / 32 ? s[threadIdx.x] : 0.f;
    for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(~0u, acc, o);
    if (threadIdx.x == 0 && DONE != 2) out[blockIdx.x] = acc;
  }
#if DONE == 2
  // flagged slots: (partial, 1) as one 64-bit store, a relaxed ticket; the last block spins
  // on each slot's flag (the store and the ticket are not ordered), then clears it.
  __shared__ bool is_last;
  unsigned long long* slots = reinterpret_cast<unsigned long long*>(out);
  if (threadIdx.x == 0) {
    unsigned long long word = (1ull << 32) | __float_as_uint(acc);
    asm volatile("st.relaxed.gpu.global.b64 [%%0], %%1;" :: "l"(slots + blockIdx.x), "l"(word) : "memory");
    unsigned before;
    asm volatile("atom.relaxed.gpu.global.add.u32 %%0, [%%1], 1;" : "=r"(before) : "l"(done) : "memory");
    is_last = before == gridDim.x - 1;
    if (is_last) *done = 0;
  }
  __syncthreads();
  if (!is_last) return;
  float p = 0.f;
  for (int j = threadIdx.x; j < gridDim.x; j += blockDim.x) {
    unsigned long long w;
    do {
      asm volatile("ld.relaxed.gpu.global.b64 %%0, [%%1];" : "=l"(w) : "l"(slots + j) : "memory");
    } while ((w >> 32) == 0);
    slots[j] = 0;
    p += __uint_as_float(static_cast<unsigned>(w));
  }
  for (int o = 16; o; o >>= 1) p += __shfl_xor_sync(~0u, p, o);
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = p;
  __syncthreads();
  if (threadIdx.x < 32) {
    p = threadIdx.x < blockDim.x / 32 ? s[threadIdx.x] : 0.f;
    for (int o = 16; o; o >>= 1) p += __shfl_xor_sync(~0u, p, o);
    if (threadIdx.x == 0) *result = p;
  }
#elif DONE
  __shared__ bool is_last;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned before;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %%0, [%%1], 1;" : "=r"(before) : "l"(done) : "memory");
    is_last = before == gridDim.x - 1;
    if (is_last) *done = 0;
  }
  __syncthreads();
  if (!is_last) return;
  float p = 0.f;
  for (int j = threadIdx.x; j < gridDim.x; j += blockDim.x) p += __ldcg(out + j);
  for (int o = 16; o; o >>= 1) p += __shfl_xor_sync(~0u, p, o);
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = p;
  __syncthreads();
  if (threadIdx.x < 32) {
    p = threadIdx.x < blockDim.x / 32 ? s[threadIdx.x] : 0.f;
    for (int o = 16; o; o >>= 1) p += __shfl_xor_sync(~0u, p, o);
    if (threadIdx.x == 0) *result = p;
  }
#endif
}
'''

_mods: dict = {}


def kern(L, C, S, K=0, D=0, T=1024, MB=1):
    import cupy

    key = (L, C, S, K, D, T, MB)
    if key not in _mods:
        code = SRC % {"L": L, "C": C, "S": S, "K": K, "D": D, "T": T, "MB": MB}
        _mods[key] = cupy.RawModule(code=code, options=("-std=c++17",)).get_function("k")
    return _mods[key]


_done: list = []


def variant(x, G, T, L, C, S, K=0, D=0, MB=1):
    """A call of the kernel over x (fp32) with G blocks of T threads, checked once."""
    import cupy

    if not _done:
        _done.append(torch.zeros(4, dtype=torch.int32, device="cuda"))
    res = torch.zeros(1, device="cuda")
    nvec = x.numel() // 4
    per_block = -(-nvec // G)
    out = torch.zeros(2 * G, device="cuda")
    f = kern(L, C, S, K, D, T, MB)
    xc, oc, dc, rc = cupy.asarray(x), cupy.asarray(out), cupy.asarray(_done[0]), cupy.asarray(res)

    def call():
        f((G,), (T,), (xc, cupy.int64(nvec), cupy.int64(per_block), oc, dc, rc),
          stream=torch_stream(cupy))
        return out

    call()
    want = x.double().sum().item()
    got = res.item() if D else out[:G].double().sum().item()
    assert abs(got - want) <= 1e-4 * x.double().abs().sum().item(), (G, T, L, C, S, got, want)
    return call


def name(G, T, L, C, S=1, K=None, D=None, MB=None):
    parts = [f"G={G} T={T} L={L} {'contig' if C else 'interl'} ld={['ldg', 'ldcs', 'evict_first'][S]}"]
    if MB is not None:
        parts.append(f"minblocks={MB}")
    if K is not None:
        parts.append(f"kahan={K} combine={['none', 'acq_rel', 'slots'][D]}")
    return " ".join(parts)


def sweep(sms):
    top = None
    for nbytes in (64 << 20, 32 << 20, 4 << 20):
        x = torch.randn(nbytes // 4, device="cuda")
        combos = list(itertools.product((264, 396, 512, 528, 660, 792, 1056), (256, 512), (2, 4, 8),
                                        (0, 1), (0, 1)))
        if top is not None:
            combos = top + [(396, 256, 4, 0, 1)] + [(G, 256, 4, 1, 1)
                                                     for G in (264, 396, 512, 528, 792, 1056)]
        res = []
        for G, T, L, C, S in combos:
            if G * T > sms * 2048:
                continue
            res.append((time_device(variant(x, G, T, L, C, S), calls=20, warmup=3).us, G, T, L, C, S))
        res.sort()
        if top is None:
            top = [r[1:] for r in res[:12]]
        base = [r[0] for r in res if r[1:] == (396, 256, 4, 0, 1)]
        print(f"==== {nbytes >> 20} MB: smem's old pattern (396 x 256, 4 in flight, interleaved, "
              f"ldcs) {base[0]:.2f} us")
        for r in res[:25]:
            print(f"  {r[0]:7.2f} us  {name(*r[1:])}")
        by = {}
        for r in res:
            by.setdefault((r[4], r[5]), []).append(r[0])
        for (c, s), v in sorted(by.items()):
            print(f"  {'contig' if c else 'interl'} ld={s}: best {min(v):.2f} median "
                  f"{statistics.median(v):.2f}")


def combine():
    import smem_ops  # noqa: F401

    for nbytes in (4 << 20, 64 << 20, 32 << 20):
        x = torch.randn(nbytes // 4, device="cuda")
        rows = []
        for _ in range(2):
            rows.append(("smem ops.sum", time_device(lambda x=x: torch.ops.smem.sum(x)).us))
            rows.append(("torch.sum", time_device(lambda x=x: torch.sum(x)).us))
            for G, T, L, C, MB in ((396, 256, 4, 0, 1), (512, 512, 4, 1, 1), (512, 512, 4, 1, 4),
                                   (512, 512, 2, 0, 1), (512, 512, 2, 0, 4), (512, 256, 4, 0, 1),
                                   (512, 512, 4, 0, 4)):
                for K, D in ((1, 0), (1, 1), (1, 2)):
                    call = variant(x, G, T, L, C, 1, K, D, MB)
                    rows.append((name(G, T, L, C, 1, K, D, MB), time_device(call, calls=30).us))
        print(f"==== {nbytes >> 20} MB (two runs, device us)")
        half = len(rows) // 2
        for (label, a), (_, b) in zip(rows[:half], rows[half:]):
            print(f"  {a:7.2f} {b:7.2f}  {label}")


def compiled():
    from torch._inductor.utils import run_and_get_code

    for label, n, dtype in (("fp32 16M", 1 << 24, torch.float32), ("bf16 16M", 1 << 24, torch.bfloat16),
                            ("fp32 1M", 1 << 20, torch.float32)):
        x = torch.randn(n, device="cuda").to(dtype)
        f = torch.compile(lambda t: t.sum(), fullgraph=True, dynamic=False)
        _, code = run_and_get_code(f, x)
        print("====", label, "torch.compile's launches")
        for line in code[0].splitlines():
            if ".run(" in line or "R0_BLOCK: tl.constexpr" in line or "r0_numel = " in line:
                print("   ", line.strip()[:200])
        t = time_device(lambda f=f, x=x: f(x))
        print(f"  {t.us:.2f} us, kernels {[round(u, 2) for u in t.per_activity_us]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sweep", action="store_true")
    p.add_argument("--compile", action="store_true")
    args = p.parse_args(argv)
    print(torch.cuda.get_device_name())
    if args.compile:
        compiled()
    if args.sweep:
        sweep(torch.cuda.get_device_properties(0).multi_processor_count)
    if not (args.sweep or args.compile):
        combine()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
