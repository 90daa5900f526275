"""histc's CUDA kernels, each forced where it would not be chosen: the technique ladder's
variants, cluster sizes, packed counters (16-bit and 6-bit rows, splits), the 2-byte pattern
table, in CUDA graphs, exact against torch's bin formula."""

import pytest
import torch

import smem_ops

from conftest import make_tensor, reference_counts, requires_cuda


@requires_cuda
@pytest.mark.parametrize("variant", ["global_atomics", "shared", "shared_per_warp", "cluster",
                                     "final"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int32],
                         ids=str)
def test_ladder_variants_exact(variant, dtype):
    assert variant in smem_ops.variants("histogram")
    if variant == "cluster" and not smem_ops.cluster_supported(0):
        pytest.skip("needs thread-block clusters (sm_90)")
    n = 200_003
    data = {
        "spread": make_tensor((n,), dtype, "cuda", low=-5, high=5),
        "one bin": torch.full((n,), 1, dtype=dtype, device="cuda"),
        "misaligned": make_tensor((n + 1,), dtype, "cuda", low=-5, high=5)[1:],
    }
    for bins in (16, 256, 5000, 70_000):
        for name, x in data.items():
            out = torch.ops.smem._histc_variant(x, bins, -4.0, 4.0, variant)
            assert out.dtype == torch.int64
            assert torch.equal(out.cpu(), reference_counts(x.cpu(), bins, -4.0, 4.0)), (name, bins)
    with pytest.raises(ValueError, match="unknown variant"):
        torch.ops.smem._histc_variant(x, 8, -1.0, 1.0, "fastest")


@requires_cuda
def test_bins_beyond_shared_memory():
    x = make_tensor((1_000_003,), torch.float32, "cuda")
    # opt-in shared memory, packed 16-bit then 6-bit counters, 6-bit counters split over
    # groups of 2 and 8 blocks, then global counters
    for bins in (60_000, 100_000, 131_072, 262_144, 500_000, 2_000_000, 3_000_000):
        assert torch.equal(smem_ops.histc(x, bins, -4, 4), torch.histc(x, bins, -4, 4)), bins


@requires_cuda
@pytest.mark.parametrize("cluster", [2, 4, 8, 16])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32], ids=str)
def test_cluster_sizes_exact(cluster, dtype):
    """Every cluster size on bins that don't divide evenly, in and out of one block's reach."""
    if not smem_ops.cluster_supported(0):
        pytest.skip("needs thread-block clusters (sm_90)")
    x = make_tensor((500_009,), dtype, "cuda", low=-5, high=5)
    for bins in (3, 1001, 65_536, 70_001, 262_144):
        if -(-bins // cluster) * 4 > 226 * 1024:  # the slice must fit one block's shared memory
            continue
        out = torch.ops.smem._histc_variant(x, bins, -4.0, 4.0, f"cluster:{cluster}")
        assert torch.equal(out.cpu(), reference_counts(x.cpu(), bins, -4.0, 4.0)), bins
    # one hot bin: every add goes to one counter of one block of each cluster
    hot = torch.full((300_007,), 1, dtype=dtype, device="cuda")
    out = torch.ops.smem._histc_variant(hot, 100_003, -4.0, 4.0, f"cluster:{cluster}")
    assert torch.equal(out.cpu(), reference_counts(hot.cpu(), 100_003, -4.0, 4.0))


@requires_cuda
def test_cluster_path_auto_range_and_graph():
    if not smem_ops.cluster_supported(0):
        pytest.skip("needs thread-block clusters (sm_90)")
    x = torch.randn(400_000, device="cuda")
    out = torch.empty(0)
    g = torch.cuda.CUDAGraph()
    smem_ops.histc(x, 100_000)  # warm-up outside capture (function attributes)
    with torch.cuda.graph(g):
        out = smem_ops.histc(x, 100_000)  # auto-range on the device, then the cluster kernel
    for scale in (1.0, 3.0):
        x.copy_(torch.randn_like(x) * scale)
        g.replay()
        assert torch.equal(out, torch.histc(x, 100_000))


@requires_cuda
def test_packed_rows_in_cuda_graph():
    """The rows path (each block's counters stored to scratch, then the row sum) captures and
    replays, with a given range and with auto-range on the device, on fresh data each replay."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    x = torch.randn(sms * 65536 // 4 + 7, device="cuda")  # 16 x n >= blocks x bins: rows
    for lo, hi in ((-4.0, 4.0), (0.0, 0.0)):
        smem_ops.histc(x, 65536, lo, hi)  # warm-up outside capture (function attributes)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = smem_ops.histc(x, 65536, lo, hi)
        for scale in (1.0, 3.0):
            x.copy_(torch.randn_like(x) * scale)
            g.replay()
            assert torch.equal(out, torch.histc(x, 65536, lo, hi)), (lo, hi, scale)


@requires_cuda
def test_cluster_variant_errors():
    x = torch.randn(100, device="cuda")
    for bad in ("cluster:3", "cluster:32", "final:4", "cluster:"):
        with pytest.raises(ValueError):
            torch.ops.smem._histc_variant(x, 8, -1.0, 1.0, bad)
    if smem_ops.cluster_supported(0):
        with pytest.raises(RuntimeError, match="do not fit a cluster"):
            torch.ops.smem._histc_variant(x, 1 << 24, -1.0, 1.0, "cluster:2")


@requires_cuda
@pytest.mark.parametrize("variant,bins", [(None, 70_001), (None, 262_144), ("final:split:2", 70_001),
                                          ("final:split:4", 262_147), ("final:split:8", 9_001)])
def test_packed_rows_exact(variant, bins):
    """Packed kernels whose blocks count elements enough for their counters (here more than
    they hold) store the counters as rows, which a second kernel adds up: exact for one block's
    16- or 6-bit counters and for groups of blocks, with a hot bin that wraps every block's
    6-bit counter (test_packed16_counts_wrap_exactly wraps 16-bit ones on this path; the hot
    count stays below 2^24, so the forced variants' float32 counts are exact too)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    n = 2 * sms * bins + 12_345
    x = torch.rand(n, device="cuda") * bins
    x[::8] = 7.5
    out = (smem_ops.histc(x, bins, 0, bins, dtype=torch.int64) if variant is None
           else torch.ops.smem._histc_variant(x, bins, 0.0, float(bins), variant).long())
    assert torch.equal(out, reference_counts(x, bins, 0, bins))
    assert out.sum().item() == n


@requires_cuda
@pytest.mark.parametrize("bins", [65_537, 100_000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32], ids=str)
def test_packed16_counts_wrap_exactly(bins, dtype):
    """Bins one block holds only as 16-bit counters: three hot bins (a low half, the high half
    of the same word, the last bin) wrap every block's counters several times over."""
    n = 1 << 26
    centre = 0.5 if dtype.is_floating_point else 0  # a bin's middle (or its integer)
    hot = torch.tensor([10 + centre, 11 + centre, bins - 1 + centre], device="cuda").to(dtype)
    x = hot[torch.randint(0, 3, (n,), device="cuda")]
    x[::8] = (torch.rand(n // 8, device="cuda") * bins).to(dtype)  # and every other bin
    out = smem_ops.histc(x, bins, 0, bins, dtype=torch.int64)
    assert torch.equal(out, reference_counts(x, bins, 0, bins))  # hot bins pass 2^24: exact only
    assert out.sum().item() == n


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int16], ids=str)
@pytest.mark.parametrize("bins,lo,hi", [(256, -4, 4), (3001, -2.5, 3.1), (100, 0, 0)])
def test_2byte_pattern_table_exact(dtype, bins, lo, hi):
    """Large 2-byte inputs bin through a table of all 65536 patterns: same counts, edge
    values, NaN, infinities and out-of-range values included."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    n = 8 * 65536 * sms + 12_345  # past the size where the table pays for itself
    if dtype.is_floating_point:
        x = (torch.randn(n, device="cuda") * 2).to(dtype)
        x[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), hi])
        x[4:6] = torch.tensor([lo, 1e4])
    else:
        x = torch.randint(-40, 41, (n,), device="cuda").to(dtype)
        lo, hi = (-30, 25) if lo != hi else (lo, hi)
    out = smem_ops.histc(x, bins, lo, hi, dtype=torch.int64)
    assert torch.equal(out, reference_counts(x, bins, lo, hi))


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int16], ids=str)
def test_forced_pattern_table_small(dtype):
    """The table path on inputs small enough for the sanitizers (final:lut16 forces it)."""
    x = make_tensor((100_003,), dtype, "cuda", low=-5, high=5)
    if dtype.is_floating_point:
        x[:3] = torch.tensor([float("nan"), float("inf"), 4.0])
    for bins in (1, 256, 3001, 24_000):  # 24000 counters still fit beside the 128 KiB table
        out = torch.ops.smem._histc_variant(x, bins, -4.0, 4.0, "final:lut16")
        assert torch.equal(out, reference_counts(x, bins, -4.0, 4.0)), bins
    for bad_x, bad_bins in ((x.float(), 16), (x, 65_535)):
        with pytest.raises(ValueError, match="lut16"):
            torch.ops.smem._histc_variant(bad_x, bad_bins, -4.0, 4.0, "final:lut16")


@requires_cuda
def test_forced_packed16_small():
    """packed16 on small bin counts and an input whose hot bins wrap every block's halves."""
    x = make_tensor((1_000_003,), torch.float32, "cuda", low=-5, high=5)
    for bins in (1, 2, 1001, 65_537):
        out = torch.ops.smem._histc_variant(x, bins, -4.0, 4.0, "final:packed16")
        assert torch.equal(out, reference_counts(x, bins, -4.0, 4.0)), bins
    # two hot bins sharing a word: over 2^26 / (2 * resident blocks) > 65536 adds each per block
    hot = torch.tensor([0.5, 1.5], device="cuda")[torch.randint(0, 2, (1 << 26,), device="cuda")]
    out = torch.ops.smem._histc_variant(hot, 3, 0.0, 3.0, "final:packed16")
    assert torch.equal(out, reference_counts(hot, 3, 0.0, 3.0))
    with pytest.raises(ValueError, match="packed16"):
        torch.ops.smem._histc_variant(x, 1 << 20, -4.0, 4.0, "final:packed16")


@requires_cuda
def test_forced_packed6_small():
    """6-bit counters in one block: small bin counts, and hot bins that fill a whole word
    (fields 0-4) plus the last bin, so every field wraps and carries run through the word;
    then one hot bin alone (its wraps are tallied per thread)."""
    x = make_tensor((1_000_003,), torch.float32, "cuda", low=-5, high=5)
    for bins in (1, 3, 1001, 280_001):
        out = torch.ops.smem._histc_variant(x, bins, -4.0, 4.0, "final:packed6")
        assert torch.equal(out, reference_counts(x, bins, -4.0, 4.0)), bins
    bins = 7
    hot = torch.tensor([0.5, 1.5, 2.5, 3.5, 4.5, 6.5], device="cuda")
    h = hot[torch.randint(0, 6, (1 << 24,), device="cuda")]
    out = torch.ops.smem._histc_variant(h, bins, 0.0, float(bins), "final:packed6")
    assert torch.equal(out, reference_counts(h, bins, 0.0, float(bins)))
    one = torch.full((1 << 24,), 1.5, device="cuda")
    assert torch.ops.smem._histc_variant(one, bins, 0.0, float(bins), "final:packed6").tolist() == [
        0, 1 << 24, 0, 0, 0, 0, 0]
    with pytest.raises(ValueError, match="packed6"):
        torch.ops.smem._histc_variant(x, 1 << 20, -4.0, 4.0, "final:packed6")


def packed6_fits(bins, split):
    return (-(-bins // split) + 4) // 5 * 4 <= 226 * 1024  # block 0's counters fit


@requires_cuda
@pytest.mark.parametrize("split", [2, 4, 8])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32], ids=str)
def test_forced_split_exact(split, dtype):
    """Bins split over a group of blocks (final:split:N forces it on any bin count), bins
    that don't divide evenly among the group."""
    x = make_tensor((500_009,), dtype, "cuda", low=-5, high=5)
    x_odd = make_tensor((300_001,), dtype, "cuda", low=-5, high=5)[1:]  # misaligned
    for bins in (split, 1001, 70_001, 262_144, 500_001):
        if not packed6_fits(bins, split):
            continue
        for data in (x, x_odd):
            out = torch.ops.smem._histc_variant(data, bins, -4.0, 4.0, f"final:split:{split}")
            assert torch.equal(out.cpu(), reference_counts(data.cpu(), bins, -4.0, 4.0)), bins


@requires_cuda
@pytest.mark.parametrize("split", [2, 4, 8])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32], ids=str)
def test_split_counts_wrap_exactly(split, dtype):
    """Bins 1, 1 + split, 1 + 4 split and 5 split + 1 are, in block 1 of each group, fields
    0, 1 and 4 (the top) of its first word and a last counter alone in its word; each gets
    over 2^14 adds in every group, so block 1's 6-bit counters wrap and carry often."""
    bins = 5 * split + 2
    hot = torch.tensor([1, 1 + split, 1 + 4 * split, bins - 1], dtype=torch.float32, device="cuda")
    idx = torch.randint(0, 4, (1 << 25,), device="cuda")
    h = (hot[idx] + 0.5).to(dtype) if dtype.is_floating_point else hot[idx].to(dtype)
    out = torch.ops.smem._histc_variant(h, bins, 0.0, float(bins), f"final:split:{split}")
    assert torch.equal(out, reference_counts(h, bins, 0.0, float(bins)))
    assert out.sum().item() == h.numel()


@requires_cuda
def test_forced_split_errors():
    x = torch.randn(100, device="cuda")
    for bad in ("final:split:1", "final:split:3", "final:split:16", "final:split:", "final:split:x"):
        with pytest.raises(ValueError, match="split"):
            torch.ops.smem._histc_variant(x, 100, -1.0, 1.0, bad)
    with pytest.raises(ValueError, match="split"):
        torch.ops.smem._histc_variant(x, 3, -1.0, 1.0, "final:split:4")  # fewer bins than blocks
    with pytest.raises(ValueError, match="split"):
        torch.ops.smem._histc_variant(x, 1 << 21, -1.0, 1.0, "final:split:2")  # do not fit
    x = torch.randn(1000, device="cuda")
    assert packed6_fits(1_500_000, 8) and not packed6_fits(1_500_000, 4)
    assert torch.equal(torch.ops.smem._histc_variant(x, 1_500_000, -1.0, 1.0, "final:split:8"),
                       reference_counts(x, 1_500_000, -1.0, 1.0))
    with pytest.raises(ValueError, match="split"):
        torch.ops.smem._histc_variant(x, 1_500_000, -1.0, 1.0, "final:split:4")
