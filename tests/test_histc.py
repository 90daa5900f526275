"""histc: exact counts against torch.histc and float64 references."""

import re

import pytest
import torch

import smem_ops

from conftest import DEVICES, make_tensor, reference_counts, requires_cuda


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("bins,lo,hi", [(1, -1, 1), (16, -4, 4), (100, 0, 0), (257, -2.5, 3.1),
                                        (4096, -4, 4), (20000, -3, 3)])
@pytest.mark.parametrize("n", [1, 1000, 300_001])
def test_matches_torch_exactly(device, dtype, bins, lo, hi, n):
    x = make_tensor((n,), dtype, device)
    out = smem_ops.histc(x, bins, lo, hi)
    assert out.dtype == dtype and out.shape == (bins,)
    assert torch.equal(out, torch.histc(x, bins, lo, hi))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("bins", [7, 256, 3000])
def test_half_types_against_float64(device, dtype, bins):
    x = make_tensor((100_003,), dtype, device)
    out = smem_ops.histc(x, bins, -4, 4, dtype=torch.int64)
    assert torch.equal(out.cpu(), reference_counts(x.cpu(), bins, -4.0, 4.0))
    # binning in float32 (as torch does for fp32) moves a value off its float64 bin only at
    # a bin edge: at most a handful of the 100003 values
    wide = reference_counts(x.cpu().double(), bins, -4.0, 4.0)
    assert (out.cpu() - wide).abs().sum().item() <= 10
    default = smem_ops.histc(x, bins, -4, 4)
    assert default.dtype == dtype


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64],
                         ids=str)
def test_integer_inputs(device, dtype):
    x = make_tensor((50_001,), dtype, device, low=0, high=120)
    out = smem_ops.histc(x, 13, 0, 120)
    assert out.dtype == torch.int64
    assert torch.equal(out.cpu(), reference_counts(x.cpu(), 13, 0.0, 120.0))
    auto = smem_ops.histc(x, 13)
    assert torch.equal(auto.cpu(), reference_counts(x.cpu(), 13, 0.0, 0.0))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64],
                         ids=str)
@pytest.mark.parametrize("bins,lo,hi", [
    (64, 0, 64), (64, -0.5, 63.5), (64, 0, 63),  # torchtitan, smem_ops.bincount, transformers
    (13, 0, 120), (7, -3.5, 10), (1000, -20, 17.5), (100_000, 0, 5000),  # exact integer path
    (1 << 15, 0, 32767), (300_000, 0, 3500),  # span x bins near 2^31: every bit of A;
    # 300000 bins: packed counters split over a group of blocks
    (1 << 20, 0, 4096), (10, 0.25, 9.75), (16, -1000, 1000), (4, 300, 400)])  # and around it
def test_integer_window_exhaustive(device, dtype, bins, lo, hi):
    """Every integer of the range and around it, and the dtype's extremes: integer input over
    bounds that are multiples of 1/2 bins with exact integer arithmetic on CUDA, which must
    give the float64 formula's bin for each value; other bounds keep the float64 path."""
    info = torch.iinfo(dtype)
    first, end = max(int(lo) - 4, info.min), min(int(hi) + 5, info.max + 1)
    window = torch.arange(first, max(first, end))  # empty where the range misses the dtype
    extremes = torch.tensor([info.min, info.min + 1, info.max - 1, info.max])
    x = torch.cat([window, extremes]).to(dtype)
    x = x.repeat(1 + 200_000 // x.numel())
    x = x[torch.randperm(x.numel())].to(device)
    out = smem_ops.histc(x, bins, lo, hi)
    assert torch.equal(out.cpu(), reference_counts(x.cpu(), bins, float(lo), float(hi)))


@pytest.mark.parametrize("device", DEVICES)
def test_edges_out_of_range_and_nan(device):
    x = torch.tensor([-1.0, -1.0001, 0.0, 0.5, 1.0, 1.0001, float("nan"), float("inf"),
                      -float("inf"), 0.25, 0.75, 1e-8], device=device)
    out = smem_ops.histc(x, 4, -1, 1)
    assert torch.equal(out, torch.histc(x, 4, -1, 1))
    assert out.tolist() == [1.0, 0.0, 3.0, 3.0]
    # every value on a bin edge, many edges
    edges = torch.linspace(-3, 3, 1025, device=device)
    assert torch.equal(smem_ops.histc(edges, 1024, -3, 3), torch.histc(edges, 1024, -3, 3))


@requires_cuda
@pytest.mark.parametrize("lo,hi,bins", [
    (-3.0, 3.0, 1024), (0.1, 0.7, 4097), (-1e20, 1e20, 100), (1e-30, 3e-30, 999),
    (0.0, 2.0**-100, 7), (0.0, 2.0**-101, 7),  # either side of the reciprocal path's lower limit
    (0.0, 2.0**90, 1024), (0.0, 2.0**91, 1024),  # and of its upper one (width * bins <= 2^100)
    (1e30, 3e30, 777), (0.0, 1e-40, 10), (-1e37, 1e37, 5)])  # outside: plain division
def test_float_bin_edges_match_torch(lo, hi, bins):
    """Every bin edge and its float neighbours, for widths from subnormal to near overflow:
    the CUDA kernels divide by a per-thread reciprocal where the width allows, and must put
    each value where torch's division does."""
    lo32, hi32 = (torch.tensor(b, dtype=torch.float32) for b in (lo, hi))
    edges = lo32 + (hi32 - lo32) / bins * torch.arange(bins + 1, dtype=torch.float32)
    x = torch.cat([edges, torch.nextafter(edges, torch.tensor(float("inf"))),
                   torch.nextafter(edges, torch.tensor(-float("inf"))),
                   lo32 + (hi32 - lo32) * torch.rand(100_000)])
    x = x[torch.isfinite(x)].cuda()
    for variant in (None, "final:packed16", "final:split:2"):
        if variant is None:
            out = smem_ops.histc(x, bins, lo, hi)
        elif bins >= 2:
            out = torch.ops.smem._histc_variant(x, bins, lo, hi, variant).float()
        else:
            continue
        assert torch.equal(out, torch.histc(x, bins, lo, hi)), variant


@pytest.mark.parametrize("device", DEVICES)
def test_auto_range(device):
    x = make_tensor((10_001,), torch.float32, device)
    assert torch.equal(smem_ops.histc(x, 33), torch.histc(x, 33))
    assert torch.equal(smem_ops.histc(x, 33, 2, 2), torch.histc(x, 33, 2, 2))
    const = torch.full((100,), 3.0, device=device)
    assert torch.equal(smem_ops.histc(const, 4), torch.histc(const, 4))  # range [2, 4]
    # non-finite values are left out of the auto-range (torch raises instead)
    y = torch.cat([x, torch.tensor([float("inf"), float("nan"), -float("inf")], device=device)])
    assert torch.equal(smem_ops.histc(y, 33), torch.histc(x, 33))
    with pytest.raises(RuntimeError):
        torch.histc(y, 33)
    nothing_finite = torch.tensor([float("nan"), float("inf")], device=device)
    assert smem_ops.histc(nothing_finite, 5).sum().item() == 0


@pytest.mark.parametrize("device", DEVICES)
def test_empty(device):
    x = torch.empty(0, device=device)
    assert torch.equal(smem_ops.histc(x, 5), torch.histc(x, 5))
    assert torch.equal(smem_ops.histc(x, 5, -1, 1), torch.zeros(5, device=device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded", "2d"])
def test_any_layout(device, layout):
    base = make_tensor((300, 200), torch.float32, device)
    x = {"transposed": base.t(), "sliced": base[::3, 1::2], "expanded": base[:, :1].expand(300, 50),
         "2d": base}[layout]
    assert torch.equal(smem_ops.histc(x, 50, -2, 2), torch.histc(x, 50, -2, 2))


@pytest.mark.parametrize("device", DEVICES)
def test_int64_counts_exact_past_2_24(device):
    n = 2**24 + 3
    x = torch.zeros(n, device=device)
    exact = smem_ops.histc(x, 2, -1, 1, dtype=torch.int64)
    assert exact.tolist() == [0, n]
    f32 = smem_ops.histc(x, 2, -1, 1)
    assert f32[1].item() != n  # float32 counts lose the low bits, as torch's do


@requires_cuda
@pytest.mark.parametrize("n", [1_500_001, 5_000_003, 7_000_005])  # 6-28 MB around the L2 half
@pytest.mark.parametrize("offset", [0, 1, 3])  # unaligned heads: scalar loads before the vectors
def test_shared_kernel_load_batches_exact(n, offset):
    """Sizes where a thread of one block per SM takes several batches of loads, the last one
    partial: every element counted once."""
    x = make_tensor((n + offset,), torch.float32, "cuda")[offset:]
    assert torch.equal(smem_ops.histc(x, 256, -4, 4, dtype=torch.int64).cpu(),
                       reference_counts(x.cpu(), 256, -4.0, 4.0))
    ids = torch.randint(0, 64, (n // 2 + offset,), device="cuda")[offset:]
    assert torch.equal(smem_ops.histc(ids, 64, 0, 64),
                       torch.bincount(ids, minlength=64))


@pytest.mark.parametrize("device", DEVICES)
def test_deterministic_mode(device):
    x = make_tensor((100_000,), torch.float32, device)
    prev = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        a = smem_ops.histc(x, 64, -3, 3)
        b = smem_ops.histc(x, 64, -3, 3)
        auto = smem_ops.histc(x, 64)
    finally:
        torch.use_deterministic_algorithms(prev)
    assert torch.equal(a, b)
    assert torch.equal(auto, torch.histc(x, 64))


@pytest.mark.parametrize("device", DEVICES)
def test_fp16_bounds_at_the_dtype_limit(device):
    # fp16's largest finite value is a bound it keeps (one past it raises: test_errors); fp16 is
    # binned in fp32, where that range is far from overflow
    most = torch.finfo(torch.float16).max
    x = torch.tensor([100.0, 30000.0, 60000.0, -65504.0], dtype=torch.float16, device=device)
    want = torch.histc(x.double().cpu(), 5, -most, most).to(torch.int64)
    assert torch.equal(smem_ops.histc(x, 5, -most, most, dtype=torch.int64).cpu(), want)
    assert want.tolist() == [1, 0, 1, 1, 1]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("value,dtype", [(1e8, torch.float32), (-3e9, torch.float32),
                                         (2.0**60, torch.float64), (2**60, torch.int64),
                                         (torch.finfo(torch.float32).max, torch.float32),
                                         (-torch.finfo(torch.float64).max, torch.float64)],
                         ids=["fp32 1e8", "fp32 -3e9", "fp64 2^60", "int64 2^60", "fp32 max",
                              "fp64 -max"])
def test_constant_past_exact_widening(device, value, dtype):
    # auto-range widens a constant by one each way; where that rounds back, the range is stepped
    # to the next value up, so every value sits at lo: bin 0 (torch's CUDA histc raises: its
    # range stays empty). At the dtype's largest value the step goes down instead: the last bin.
    # The CPU used to drop every value.
    x = torch.full((1001,), value, dtype=dtype, device=device)
    bins = 4
    at = bins - 1 if value == torch.finfo(torch.float32).max else 0
    want = torch.zeros(bins, dtype=torch.int64)
    want[at] = x.numel()
    assert torch.equal(smem_ops.histc(x, bins, dtype=torch.int64).cpu(), want)
    rows = smem_ops.batched_histc(x.reshape(7, 143), bins, dtype=torch.int64).cpu()
    assert torch.equal(rows, (want // 7).expand(7, bins))


def _wide_reference(x, bins, lo, hi):
    """Counts over a range whose product overflows torch's arithmetic: torch's formula in that
    arithmetic on values and bounds scaled by 2^-64 (exact: nothing here comes near underflow),
    where nothing overflows."""
    math = torch.float64 if x.dtype == torch.float64 else torch.float32
    s = 2.0**-64
    return reference_counts(x.to(math) * s, bins, lo * s, hi * s, math=math)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("bins", [4, 1000, 1 << 20])
def test_range_near_the_dtype_limit(device, dtype, bins):
    # (v - lo) * bins overflows the arithmetic type over [-max, max]: there histc scales it by
    # 2^-64 (torch's own kernels overflow: its CPU drops those values, its CUDA bin runs past the
    # counters). The CPU used to drop them and the CUDA kernels put them in the last bin.
    most = torch.finfo(dtype).max
    g = torch.Generator().manual_seed(bins)
    v = (torch.rand(200_001, generator=g, dtype=torch.float64) * 2 - 1) * most
    x = torch.cat([v.to(dtype), torch.tensor([-most, most, 0.0], dtype=dtype)]).to(device)  # 4 rows
    want = _wide_reference(x.cpu(), bins, -most, most)
    assert want.sum() == x.numel()
    assert torch.equal(smem_ops.histc(x, bins, -most, most, dtype=torch.int64).cpu(), want)
    assert torch.equal(smem_ops.histc(x, bins, dtype=torch.int64).cpu(), want)  # auto-range
    rows = smem_ops.batched_histc(x.reshape(4, -1), bins, -most, most, dtype=torch.int64)
    row_want = torch.stack([_wide_reference(r, bins, -most, most) for r in x.cpu().reshape(4, -1)])
    assert torch.equal(rows.cpu(), row_want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("lo,hi", [(2**60, 2**60 + 1), (2**63 - 1, 2**63), (2**63, 2**63 + 1),
                                   (-2**60 - 1, -2**60)], ids=["2^60", "2^63-1", "2^63", "-2^60"])
def test_int_bounds_equal_in_float64_raise(device, lo, hi):
    # a Python int from 2^63 reaches the op as an unsigned Scalar
    x = torch.full((5,), 2**60, device=device)
    message = (f"smem.histc: min={lo} and max={hi} round to the same float64 bound; give bounds "
               "that differ there")
    with pytest.raises(ValueError, match=re.escape(message)):
        smem_ops.histc(x, 4, lo, hi)
    with pytest.raises(ValueError, match=re.escape(message.replace("histc:", "batched_histc:"))):
        smem_ops.batched_histc(x, 4, lo, hi)


@pytest.mark.parametrize("device", DEVICES)
def test_int_bounds_that_differ_in_float64_or_are_equal(device):
    x = torch.full((5,), 2**60, device=device)
    assert smem_ops.histc(x, 4, 2**60 - 512, 2**60 + 512).tolist() == [0, 0, 5, 0]
    assert smem_ops.histc(x, 4, 2**60, 2**60).tolist() == [5, 0, 0, 0]  # auto-range
    f = make_tensor((1000,), torch.float64, device)
    assert torch.equal(smem_ops.histc(f, 4, 2**63, 2**63), smem_ops.histc(f, 4))


@pytest.mark.parametrize("device", DEVICES)
def test_not_differentiable(device):
    x = torch.randn(100, device=device, requires_grad=True)
    out = smem_ops.histc(x, 10, -1, 1)
    with pytest.raises(RuntimeError, match="smem.histc is not differentiable"):
        out.sum().backward()


@requires_cuda
@pytest.mark.slow
def test_cuda_over_2_31_elements():
    n = 2**31 + 11
    x = torch.zeros(n, dtype=torch.uint8, device="cuda")
    x[-7:] = 200
    out = smem_ops.histc(x, 2, 0, 255)
    assert out.tolist() == [n - 7, 7]
    # bins beyond one block: the cluster path (on sm_90) with 32-bit counters per cluster
    wide = smem_ops.histc(x, 1 << 17, 0, 255)
    assert wide[0].item() == n - 7 and wide[200 * (1 << 17) // 255].item() == 7
    assert wide.sum().item() == n
    del x
    torch.cuda.empty_cache()
