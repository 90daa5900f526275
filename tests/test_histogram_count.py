"""_histogram_count: the counts and weighted sums of CPU torch.histogram, for both overloads'
bin rules (tensor edges: binary search; int bins: linear interpolation + local search)."""

import re

import pytest
import torch

from conftest import DEVICES, make_tensor, requires_cuda

count = torch.ops.smem._histogram_count


def searchsorted_bins(x, edges):
    """torch.histogram's bin of each element (upper_bound - 1, the last edge in the last bin),
    -1 where it is dropped."""
    x = x.flatten()
    b = torch.searchsorted(edges, x, right=True) - 1
    b = torch.where(x == edges[-1], edges.numel() - 2, b)
    keep = (x >= edges[0]) & (x <= edges[-1])
    return torch.where(keep, b, -1)


def weighted_reference(x, edges, w):
    b = searchsorted_bins(x.cpu(), edges.cpu())
    keep = b >= 0
    return torch.zeros(edges.numel() - 1, dtype=torch.float64).index_add_(
        0, b[keep], w.cpu().flatten()[keep].double())


def assert_lane_sums_close(sums, ref, magnitude, dtype):
    """The lane-sums kernel's accuracy: float64 inputs within 1e-9 of the float64 reference;
    narrower ones, whose lanes add their share in float32 before a float64 combine, within a
    quarter of a float32 rounding (2^-26) of each bin's sum of weight magnitudes: measured
    errors stay below 0.02 of 2^-24 here, while one float32 accumulator per bin would be off by
    about 2^-24 of it (docs/DESIGN.md)."""
    if dtype == torch.float64:
        torch.testing.assert_close(sums, ref, rtol=1e-9, atol=1e-9)
        return
    err = (sums.double() - ref).abs()
    bound = 2.0 ** -26 * magnitude
    assert bool((err <= bound).all()), f"off by {(err / bound.clamp_min(1e-300)).max().item():.3g} bounds"


def tricky(n, edges, dtype, device):
    """Random values around the edges, the edges themselves, out-of-range values, NaN, +-inf."""
    lo, hi = edges[0].item(), edges[-1].item()
    span = hi - lo if hi > lo else 1.0
    x = torch.rand(n, dtype=torch.float64) * span * 1.2 + lo - 0.1 * span
    extra = torch.cat([edges.cpu().double(), torch.tensor([lo - 1, hi + 1, float("nan"),
                                                           float("inf"), float("-inf")])])
    x = torch.cat([x, extra])[torch.randperm(n + extra.numel())]
    return x.to(dtype).to(device)


EDGE_SETS = {
    "two": lambda dt: torch.tensor([-1.0, 1.0], dtype=dt),
    "sorted_random": lambda dt: torch.sort(torch.randn(300, dtype=dt) * 2).values,
    "repeated": lambda dt: torch.tensor([0.0, 0.0, 1.0, 1.0, 1.0, 2.5, 3.0, 3.0], dtype=dt),
    "wide": lambda dt: torch.sort(torch.rand(5001, dtype=dt) * 1e6 - 5e5).values,
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("edges_name", list(EDGE_SETS))
@pytest.mark.parametrize("n", [0, 1, 1001, 200_003])
def test_tensor_edges_match_torch_histogram(device, dtype, edges_name, n):
    edges = EDGE_SETS[edges_name](dtype)
    x = tricky(n, edges, dtype, "cpu")
    w = torch.randn(x.shape, dtype=dtype)
    expected = torch.histogram(x, edges).hist  # BINARY_SEARCH
    got = count(x.to(device), edges.to(device))
    assert got.dtype == torch.int64 and torch.equal(got.cpu(), expected.long())
    assert torch.equal(torch.bincount(searchsorted_bins(x, edges).clamp(min=0)[searchsorted_bins(x, edges) >= 0],
                                      minlength=edges.numel() - 1), expected.long())
    sums = count(x.to(device), edges.to(device), w.to(device))
    assert sums.dtype == torch.float64
    torch.testing.assert_close(sums.cpu(), weighted_reference(x, edges, w), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
# (256, 1e7, 1e7 + 3): float32 edges of 4 distinct values, so torch's hint lands far from the bin
@pytest.mark.parametrize("bins,lo,hi", [(1, -1, 1), (2, -1, 1), (256, -3, 3), (100, 0.1, 0.7), (4096, -1e4, 3e4),
                                        (7, 5.0, 5.0), (256, 1e7, 1e7 + 3)])
@pytest.mark.parametrize("n", [1, 999, 300_001])
def test_int_bins_match_torch_histogram(device, dtype, bins, lo, hi, n):
    # The int-bins overload: edges from torch's linspace, bins by interpolation + local search.
    x = make_tensor((n,), dtype, "cpu", low=lo - 1, high=hi + 1)
    w = torch.rand(x.shape, dtype=dtype)
    ref = torch.histogram(x, bins, range=(lo, hi))
    edges = ref.bin_edges
    x = torch.cat([x, edges, torch.tensor([float("nan"), lo - 0.5, hi + 0.5], dtype=dtype)])
    w = torch.cat([w, torch.ones(edges.numel() + 3, dtype=dtype)])
    expected = torch.histogram(x, bins, range=(lo, hi))
    assert torch.equal(expected.bin_edges, edges)
    got = count(x.to(device), edges.to(device), uniform=True)
    assert torch.equal(got.cpu(), expected.hist.long())
    sums = count(x.to(device), edges.to(device), w.to(device), uniform=True)
    if bool((edges.diff() > 0).all()):  # else torch's local search and a global one disagree
        torch.testing.assert_close(sums.cpu(), weighted_reference(x, edges, w), rtol=1e-9, atol=1e-9)
    # torch's own weighted sums, in the input dtype
    torch.testing.assert_close(sums.cpu().to(dtype), torch.histogram(x, bins, range=(lo, hi), weight=w).hist,
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_layouts(device):
    base = torch.randn(64, 65, device=device)
    wbase = torch.rand(64, 65, device=device)
    edges = torch.linspace(-2, 2, 33, device=device)
    for x, w in ((base.t(), wbase.t()), (base[:, 1:], wbase[:, :-1]), (base[1:].flatten(), wbase[:-1].flatten()),
                 (base[:1].expand(10, 65), wbase[:1].expand(10, 65))):
        x_cpu, w_cpu = x.cpu().contiguous(), w.cpu().contiguous()
        assert torch.equal(count(x, edges).cpu(), torch.histogram(x_cpu.flatten(), edges.cpu()).hist.long())
        torch.testing.assert_close(count(x, edges, w).cpu(), weighted_reference(x_cpu, edges, w_cpu),
                                   rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("device", DEVICES)
def test_unsorted_edges_stay_in_bounds(device):
    # Not a contract (the caller checks monotonicity), but never out of bounds: every count
    # lands in some bin and the total is at most n.
    x = torch.randn(10_000, device=device)
    for edges in (torch.randn(50), torch.tensor([0.0, float("nan"), 1.0]), torch.tensor([1.0, 1.0]),
                  torch.tensor([-float("inf"), float("inf")])):
        for uniform in (False, True):
            got = count(x, edges.to(device), uniform=uniform)
            assert got.shape == (edges.numel() - 1,) and 0 <= got.sum().item() <= x.numel()


@pytest.mark.parametrize("device", DEVICES)
def test_deterministic(device):
    x = torch.randn(1_000_003, device=device)
    w = torch.randn_like(x)
    edges = torch.linspace(-3, 3, 257, device=device)
    for uniform in (False, True):
        a, b = count(x, edges, w, uniform=uniform), count(x, edges, w, uniform=uniform)
        assert torch.equal(a, b)


@requires_cuda
@pytest.mark.parametrize("n", [5, 1 << 20, 3_000_017])
@pytest.mark.parametrize("edges_n", [2, 257, 20_001, 200_001])
def test_cuda_matches_cpu(n, edges_n):
    # 200_001 edges: the counts' global-memory fallback. Weighted sums need the edges and one
    # float64 copy of the bins in a block's shared memory (20_001 fp32 edges: 241 KB, over an
    # H100's 227 KB), and past that refuse, naming the limit.
    x = torch.randn(n, device="cuda") * 2
    w = torch.randn_like(x)
    edges = torch.sort(torch.randn(edges_n) * 2).values
    for uniform, e in ((False, edges), (True, torch.linspace(-3, 3, edges_n))):
        assert torch.equal(count(x, e.cuda(), uniform=uniform).cpu(), count(x.cpu(), e, uniform=uniform))
        try:
            sums = count(x, e.cuda(), w, uniform=uniform)
        except NotImplementedError as err:
            smem = torch.cuda.get_device_properties(x.device).shared_memory_per_block_optin
            assert edges_n * 4 + (edges_n - 1) * 8 > smem - 2048, (edges_n, smem)
            assert f"weighted sums over {edges_n - 1} bins need more shared memory" in str(err)
            continue
        torch.testing.assert_close(sums.cpu(), count(x.cpu(), e, w.cpu(), uniform=uniform),
                                   rtol=1e-9, atol=1e-9)


@requires_cuda
@pytest.mark.parametrize("dtype, bins, values", [
    (torch.float32, 1, "tricky"), (torch.float32, 64, "tricky"), (torch.float32, 256, "tricky"),
    (torch.float32, 257, "tricky"), (torch.float32, 256, "few"), (torch.float32, 256, "one"),
    (torch.float64, 256, "tricky"), (torch.float64, 64, "few")])
def test_cuda_weighted_int_bins_large(dtype, bins, values):
    # Int bins over 2^23+ elements and <= 256 bins go through the lane-sums kernel (257: the
    # warp-copy kernel). "few" puts equal bins side by side in a vector (combined in registers
    # first); "one" sends everything to one bin.
    n = (1 << 23) + 3
    edges = torch.linspace(-2.5, 4.0, bins + 1, dtype=dtype)
    if values == "tricky":
        x = tricky(n, edges, dtype, "cpu")
    elif values == "few":
        x = edges[torch.randint(0, bins + 1, (n,))] + torch.randint(0, 2, (n,), dtype=dtype) * 1e-3
    else:
        x = torch.full((n,), 0.5, dtype=dtype)
    w = torch.randn(x.shape, dtype=dtype)
    xd, wd, ed = x.cuda(), w.cuda(), edges.cuda()
    sums = count(xd, ed, wd, uniform=True)
    assert torch.equal(sums, count(xd, ed, wd, uniform=True)), "not deterministic"
    magnitude = weighted_reference(x, edges, w.abs())
    assert_lane_sums_close(sums.cpu(), count(x, edges, w, uniform=True), magnitude, dtype)
    assert_lane_sums_close(sums.cpu(), weighted_reference(x, edges, w), magnitude, dtype)


@requires_cuda
def test_cuda_graph_capture():
    x, w = torch.randn(100_000, device="cuda"), torch.rand(100_000, device="cuda")
    edges = torch.linspace(-2, 2, 65, device="cuda")
    expected = (count(x, edges), count(x, edges, w, uniform=True))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = (count(x, edges), count(x, edges, w, uniform=True))
    g.replay()
    torch.cuda.synchronize()
    assert all(torch.equal(a, b) for a, b in zip(out, expected))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x = torch.randn(3, 100, device=device)
    edges = torch.linspace(-2, 2, 9, device=device)
    for args in ((x, edges), (x, edges, torch.rand_like(x)), (x, edges, None, True)):
        torch.library.opcheck(torch.ops.smem._histogram_count.default, args)


def _error_cases(device):
    f = lambda *s, dt=torch.float32: torch.randn(s, device=device, dtype=dt)
    op = "smem._histogram_count: "
    return [
        ("dtype", lambda: count(f(4, dt=torch.float16), f(3, dt=torch.float16)), TypeError,
         op + "input dtype torch.float16 is not supported (expected torch.float32 or torch.float64)"),
        ("edges 2-D", lambda: count(f(4), f(2, 3)), ValueError, op + "bin_edges must be 1-D, but got 2-D"),
        ("edges 1", lambda: count(f(4), f(1)), ValueError,
         op + "bin_edges must hold at least 2 edges, but got 1"),
        ("edges dtype", lambda: count(f(4), f(3, dt=torch.float64)), TypeError,
         op + "expected bin_edges of dtype torch.float32, but got torch.float64"),
        ("weight shape", lambda: count(f(4, 2), f(3), f(8)), ValueError,
         op + "expected weight of shape [4, 2] (the shape of self), but got [8]"),
        ("weight dtype", lambda: count(f(4), f(3), f(4, dt=torch.float64)), TypeError,
         op + "expected weight of dtype torch.float32, but got torch.float64"),
    ]


_IDS = [c[0] for c in _error_cases("cpu")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("index", range(len(_IDS)), ids=_IDS)
def test_errors_eager_and_fake(device, index):
    from torch._subclasses.fake_tensor import FakeTensorMode

    _, fn, etype, message = _error_cases(device)[index]
    with pytest.raises(etype, match=re.escape(message)):
        fn()
    with FakeTensorMode(), pytest.raises(etype, match=re.escape(message)):
        fn()


@requires_cuda
def test_device_mismatch():
    x, edges = torch.randn(4, device="cuda"), torch.linspace(0, 1, 3)
    msg = "smem._histogram_count: expected bin_edges on the device of self (cuda:0), but got cpu"
    with pytest.raises(ValueError, match=re.escape(msg)):
        count(x, edges)
    msg = "smem._histogram_count: expected weight on the device of self (cuda:0), but got cpu"
    with pytest.raises(ValueError, match=re.escape(msg)):
        count(x, edges.cuda(), torch.rand(4))
