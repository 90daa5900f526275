"""smem_ops.enable(): torch.histc / torch.histogram on CUDA run smem's kernels and return
exactly what torch returns; smem_ops.bincount: fixed-length integer counts."""

import math
import os
import subprocess
import sys

import pytest
import torch

import smem_ops

from conftest import DEVICES, requires_cuda

has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key


@pytest.fixture(autouse=True)
def _restore():
    yield
    smem_ops.disable()


# ----------------------------------------------------------------------------- enable/disable

def test_import_changes_nothing():
    assert not smem_ops.is_enabled()
    assert not has_kernel("aten::histogram.bin_ct", "CUDA")


def test_enable_disable_and_context():
    smem_ops.enable()
    smem_ops.enable()  # idempotent
    assert smem_ops.is_enabled()
    if hasattr(torch.ops.smem, "_histogram_count"):
        assert has_kernel("aten::histogram.bin_ct", "CUDA")
    smem_ops.disable()
    smem_ops.disable()
    assert not smem_ops.is_enabled()
    assert not has_kernel("aten::histogram.bin_ct", "CUDA")
    with smem_ops.enabled():
        assert smem_ops.is_enabled()
        with smem_ops.enabled():
            pass
        assert smem_ops.is_enabled()  # the inner block leaves the outer state alone
    assert not smem_ops.is_enabled()


def test_enable_prints_no_override_warning():
    """torch warns once per process when a kernel is overridden: check in a fresh process."""
    run = subprocess.run([sys.executable, "-W", "always", "-c",
                          "import smem_ops; smem_ops.enable(); smem_ops.disable(); print('ok')"],
                         capture_output=True, text=True, timeout=300, check=False,
                         cwd=os.path.dirname(os.path.dirname(smem_ops.__file__)))
    assert run.stdout.strip() == "ok", run.stderr
    assert "Overriding" not in run.stderr


def test_histc_is_an_inductor_fallback():
    """Inductor leaves histc to the dispatcher at run time: that is where enable() reaches it."""
    from torch._inductor.utils import run_and_get_code

    fn = torch.compile(lambda x: torch.histc(x, 16, 0, 1), fullgraph=True)
    _, code = run_and_get_code(fn, torch.rand(1000))
    assert any("aten.histc" in c for c in code)


def cpu_histc_cases():
    g = torch.Generator().manual_seed(3)
    f = torch.randn(70_001, generator=g)
    on_edges = torch.linspace(-1, 1, 65).repeat(1100)
    return [
        (f, 100, 0, 0), (f, 256, -2, 2), (f, 7, -0.3, 0.9), (on_edges, 64, -1, 1),
        (torch.cat([f, torch.tensor([math.nan, math.inf, -math.inf])]), 50, -1, 1),
        (f.double(), 4096, -3, 3), (f.double(), 33, 0, 0),
        (torch.full((70_000,), 3.0), 5, 0, 0), (f[:1000], 10, 0, 1),  # small: torch's own
        (f[: 70_000].reshape(280, 250).t(), 128, -1, 1), (f, 10, 1.0, 1.00000001),
        # constant inputs whose auto-range min - 1 or max + 1 is not exact: torch's own
        (torch.full((70_000,), 2.0**24), 4, 0, 0), (torch.full((70_000,), 1e8), 4, 0, 0),
        (torch.full((70_000,), 2.0**53, dtype=torch.float64), 4, 0, 0),
    ]


@pytest.mark.parametrize("case", range(len(cpu_histc_cases())))
def test_cpu_histc_matches_torch_exactly(case):
    x, bins, lo, hi = cpu_histc_cases()[case]
    want = torch.histc(x, bins, lo, hi)
    with smem_ops.enabled():
        got = torch.histc(x, bins, lo, hi)
        out = torch.empty(0, dtype=x.dtype)
        torch.histc(x, bins, lo, hi, out=out)
    assert got.dtype == want.dtype and torch.equal(got, want)
    assert torch.equal(out, want)


def ops_called(fn) -> set[str]:
    with torch.profiler.profile() as prof:
        fn()
    return {e.name for e in prof.events()}


def test_cpu_histc_routes_large_float_inputs_only():
    with smem_ops.enabled():
        assert "smem::histc" in ops_called(lambda: torch.histc(torch.randn(1 << 17), 10))
        assert "smem::histc" not in ops_called(lambda: torch.histc(torch.randn(1000), 10))
        half = torch.randn(1 << 17).half()
        assert "smem::histc" not in ops_called(lambda: torch.histc(half, 10, -1, 1))
    assert "smem::histc" not in ops_called(lambda: torch.histc(torch.randn(1 << 17), 10))


def test_cpu_histc_errors_are_torchs():
    x = torch.randn(100_000)
    for args in [(10, 1.0, 0.0), (0, 0, 1), (10, -math.inf, 1)]:
        with pytest.raises(Exception) as want:
            torch.histc(x, *args)
        with smem_ops.enabled(), pytest.raises(type(want.value)) as got:
            torch.histc(x, *args)
        assert str(got.value) == str(want.value)


# ----------------------------------------------------------------------------- bincount

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64])
@pytest.mark.parametrize("length", [1, 8, 64, 257])
def test_bincount_counts_values_in_range(device, dtype, length):
    hi = min(torch.iinfo(dtype).max, length + 5)
    lo = max(torch.iinfo(dtype).min, -5)
    x = torch.randint(lo, hi + 1, (4099, 3), device=device).to(dtype).transpose(0, 1)
    wide = x.long().cpu()  # compared as int64: `uint8 < 257` would wrap the scalar
    kept = wide[(wide >= 0) & (wide < length)]
    got = smem_ops.bincount(x, length)
    assert got.dtype == torch.int64 and got.shape == (length,)
    assert torch.equal(got.cpu(), torch.bincount(kept, minlength=length))


@pytest.mark.parametrize("device", DEVICES)
def test_bincount_edges_empty_and_huge_ids(device):
    x = torch.tensor([0, 3, 4, -1, 2**40, -(2**40), 3], device=device)
    assert smem_ops.bincount(x, 4).tolist() == [1, 0, 0, 2]
    assert smem_ops.bincount(x[:0], 3).tolist() == [0, 0, 0]


def test_bincount_errors():
    with pytest.raises(TypeError, match="expected an integer tensor, but got torch.float32"):
        smem_ops.bincount(torch.zeros(3), 4)
    with pytest.raises(TypeError, match="torch.bool"):
        smem_ops.bincount(torch.zeros(3, dtype=torch.bool), 4)
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ValueError, match="length must be a positive int"):
            smem_ops.bincount(torch.zeros(3, dtype=torch.long), bad)


@pytest.mark.parametrize("device", DEVICES)
def test_bincount_compiles(device):
    x = torch.randint(0, 8, (512, 2), device=device)
    fn = torch.compile(lambda t: smem_ops.bincount(t, 8), fullgraph=True)
    assert torch.equal(fn(x), smem_ops.bincount(x, 8))


@requires_cuda
def test_bincount_captures_in_a_cuda_graph():
    ids = torch.randint(0, 64, (65536, 8), device="cuda")
    smem_ops.bincount(ids, 64)  # warm up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        counts = smem_ops.bincount(ids, 64)
    ids.copy_(torch.randint(0, 64, ids.shape, device="cuda"))
    graph.replay()
    assert torch.equal(counts, torch.bincount(ids.flatten(), minlength=64))


# ----------------------------------------------------------------------------- torch.histc

def histc_cases():
    """(input, bins, min, max) cases torch's CUDA histc accepts, edges and specials included."""
    g = torch.Generator().manual_seed(1)
    f = torch.randn(100_003, generator=g)
    edges = torch.linspace(-1, 1, 65)  # values exactly on bin edges
    cases = [
        (f, 100, 0, 0), (f, 256, -2, 2), (f, 7, -0.3, 0.9), (f, 1, -1, 1),
        (torch.cat([edges, edges]), 64, -1, 1),
        (torch.cat([f[:1000], torch.tensor([math.nan, math.inf, -math.inf])]), 50, -1, 1),
        (f.double(), 4096, -3, 3), (f.double(), 33, 0, 0),
        (f.view(-1)[:0], 10, 0, 0), (f.view(-1)[:0], 10, 2, 5),
        (torch.full((77,), 3.0), 5, 0, 0),  # constant input: auto-range widens by one
        (f.reshape(-1)[: 100_000].reshape(400, 250).t(), 128, -1, 1),  # non-contiguous
        (torch.randint(0, 64, (65536, 8), generator=g).int(), 64, 0, 63),  # HF MoE
        (torch.randint(0, 256, (65536,), generator=g), 256, 0, 256),  # torchtitan MoE
        (torch.randint(-100, 100, (9999,), generator=g).to(torch.int16), 17, -50.7, 60.2),
        (torch.randint(0, 256, (9999,), generator=g).to(torch.uint8), 256, 0, 255),
        (torch.randint(0, 256, (9999,), generator=g).to(torch.uint8), 10, 0, 0),
        (torch.randint(-5, 5, (999,), generator=g).to(torch.int8), 3, 0, 0),
        # int64 bounds past 2^53, which smem would bin in float64: torch's integer arithmetic
        (torch.full((10,), 2**60), 4, 2**60 - 2, 2**60 + 2),
    ]
    return cases


@requires_cuda
@pytest.mark.parametrize("case", range(len(histc_cases())), ids=[
    f"{i}-{str(c[0].dtype).removeprefix('torch.')}" for i, c in enumerate(histc_cases())])
def test_histc_matches_torch_exactly(case):
    x, bins, lo, hi = histc_cases()[case]
    x = x.cuda()
    torch.cuda.synchronize()
    want = torch.histc(x, bins, lo, hi)
    with smem_ops.enabled():
        got = torch.histc(x, bins, lo, hi)
        out = torch.empty(0, dtype=x.dtype, device="cuda")
        torch.histc(x, bins, lo, hi, out=out)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got, want), (got - want).abs().max()
    assert torch.equal(out, want)


@requires_cuda
def test_cuda_histc_leaves_small_int32_to_torch():
    """Where torch's kernel is measured faster, it runs; deterministic mode keeps smem's."""
    above, up_to = smem_ops.dropin.CUDA_TORCH_INT32_NUMEL
    bins = smem_ops.dropin.CUDA_TORCH_INT32_MIN_BINS
    small32 = torch.randint(0, bins, (up_to,), device="cuda", dtype=torch.int32)
    with smem_ops.enabled():
        assert "smem::histc" not in ops_called(lambda: torch.histc(small32, bins, 0, bins - 1))
        assert "smem::histc" not in ops_called(lambda: torch.histc(small32[:above + 1], bins, 0, bins - 1))
        for x in (small32[:above], torch.cat([small32, small32[:1]])):  # just outside the range
            assert "smem::histc" in ops_called(lambda x=x: torch.histc(x, bins, 0, bins - 1))
        assert "smem::histc" in ops_called(lambda: torch.histc(small32, bins - 1, 0, bins - 1))
        assert "smem::histc" in ops_called(lambda: torch.histc(small32.long(), bins, 0, bins - 1))
        torch.use_deterministic_algorithms(True)
        try:
            assert "smem::histc" in ops_called(lambda: torch.histc(small32, bins, 0, bins - 1))
            got = torch.histc(small32, bins, 0, bins - 1)
        finally:
            torch.use_deterministic_algorithms(False)
    assert torch.equal(got, torch.histc(small32, bins, 0, bins - 1))


@requires_cuda
@pytest.mark.parametrize("args", [(10, 1.0, 0.0), (0, 0, 1), (-3, 0, 1), (10, -math.inf, 1),
                                  (10, 0, math.nan), (10, 0, 1e39)])
def test_histc_errors_are_torchs(args):
    x = torch.rand(100, device="cuda")
    with pytest.raises(Exception) as want:
        torch.histc(x, *args)
    with smem_ops.enabled(), pytest.raises(type(want.value)) as got:
        torch.histc(x, *args)
    assert str(got.value) == str(want.value)


@requires_cuda
@pytest.mark.parametrize("dtype, bound", [(torch.float16, 1e5), (torch.bfloat16, 1e39)], ids=str)
def test_histc_bounds_past_the_dtype_raise_as_torch(dtype, bound):
    x = torch.rand(100, device="cuda").to(dtype)
    with pytest.raises(Exception) as want:
        torch.histc(x, 10, 0, bound)
    with smem_ops.enabled(), pytest.raises(type(want.value)) as got:
        torch.histc(x, 10, 0, bound)
    assert str(got.value) == str(want.value)


def test_int_bounds_from_2_53_stay_with_torch():
    """smem bins integers in float64, where 2^53 + 1 rounds into a range ending at 2^53; torch's
    CUDA kernel bins them in int64. A stand-in for a CUDA int64 tensor: the routing is host code."""
    class CudaInt64:
        is_cuda, dtype = True, torch.int64

        def numel(self):
            return 10

    served = smem_ops.dropin._histc_range
    assert served(CudaInt64(), 1, 1, 2**53 - 1) == (1, 2**53 - 1)
    assert served(CudaInt64(), 1, 1, 2**53) is None
    assert served(CudaInt64(), 1, -2**53, -2**53 + 1) is None


@requires_cuda
@pytest.mark.parametrize("x", [torch.full((10,), 1e8), torch.full((10,), 2.0**60).double()],
                         ids=["fp32 1e8", "fp64 2^60"])
def test_histc_constant_past_exact_widening_raises_as_torch(x):
    # torch widens a constant's range by one each way, which rounds back here, and raises
    x = x.cuda()
    with pytest.raises(RuntimeError) as want:
        torch.histc(x, 4)
    with smem_ops.enabled(), pytest.raises(RuntimeError) as got:
        torch.histc(x, 4)
    assert str(got.value) == str(want.value)


@requires_cuda
def test_histc_nonfinite_autorange_raises_as_torch():
    x = torch.tensor([0.0, math.inf, 1.0], device="cuda")
    with pytest.raises(RuntimeError) as want:
        torch.histc(x, 4)
    with smem_ops.enabled(), pytest.raises(RuntimeError) as got:
        torch.histc(x, 4)
    assert str(got.value) == str(want.value)


@requires_cuda
def test_histc_serves_half_and_bfloat16():
    x = torch.randn(10_000, device="cuda")
    for dtype in (torch.float16, torch.bfloat16):
        with smem_ops.enabled():
            got = torch.histc(x.to(dtype), 64, -2, 2)
        assert got.dtype == dtype
        assert torch.equal(got.float(), smem_ops.histc(x.to(dtype), 64, -2, 2).float())


@requires_cuda
def test_histc_deterministic_mode_and_compile():
    """Eager under deterministic mode, and compiled. Not both at once: torch's own fake kernel
    for histc raises the determinism alert while Dynamo traces, before any kernel is chosen."""
    x = torch.randn(1 << 20, device="cuda")
    fn = torch.compile(lambda t: torch.histc(t, 256, -3, 3) * 2, fullgraph=True)
    want = torch.histc(x, 256, -3, 3) * 2
    with smem_ops.enabled():
        compiled = fn(x)
        torch.use_deterministic_algorithms(True)
        try:
            eager = torch.histc(x, 256, -3, 3) * 2
        finally:
            torch.use_deterministic_algorithms(False)
    assert torch.equal(eager, want) and torch.equal(compiled, want)


@requires_cuda
def test_histc_captures_in_a_cuda_graph_when_enabled():
    ids = torch.randint(0, 128, (65536, 8), device="cuda").int()
    with smem_ops.enabled():
        torch.histc(ids, 128, 0, 127)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            counts = torch.histc(ids, 128, 0, 127)
    graph.replay()
    assert torch.equal(counts, torch.histc(ids, 128, 0, 127))


# ----------------------------------------------------------------------------- torch.histogram

needs_histogram_kernel = pytest.mark.skipif(
    not hasattr(torch.ops.smem, "_histogram_count"), reason="needs smem._histogram_count")


@requires_cuda
@needs_histogram_kernel
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("density", [False, True])
@pytest.mark.parametrize("kind", ["bins", "range", "auto", "edges"])
def test_histogram_matches_cpu(dtype, weighted, density, kind):
    g = torch.Generator().manual_seed(2)
    x = torch.cat([torch.randn(50_001, generator=g), torch.linspace(-2, 2, 41),
                   torch.tensor([math.nan, 5.0, -5.0])]).to(dtype)
    w = torch.rand(x.shape, generator=g).to(dtype) if weighted else None
    kwargs = {"weight": w, "density": density}
    if kind == "bins":  # the range is the data's min and max, which NaN makes an error (below)
        keep = ~x.isnan()
        x, bins = x[keep], 40
        kwargs["weight"] = None if w is None else w[keep]
    elif kind == "range":
        bins, kwargs["range"] = 64, (-2.0, 2.0)
    elif kind == "auto":
        x, bins = x[:-3], 100
        kwargs["weight"] = None if w is None else w[:-3]
    else:
        bins = torch.tensor([-3.0, -1.0, -0.5, 0.0, 0.1, 2.0, 2.5]).to(dtype)
    want_hist, want_edges = torch.histogram(x, bins, **kwargs)
    cuda_kwargs = {k: (v.cuda() if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
    with smem_ops.enabled():
        hist, edges = torch.histogram(x.cuda(), bins.cuda() if kind == "edges" else bins,
                                      **cuda_kwargs)
    assert hist.device.type == "cuda" and hist.dtype == dtype and edges.dtype == dtype
    assert torch.equal(edges.cpu(), want_edges)  # bit for bit
    if not weighted and not density:
        assert torch.equal(hist.cpu(), want_hist)  # exact counts
    else:
        ref = torch.histogram(x.double(), want_edges.double(),
                              weight=None if kwargs["weight"] is None else kwargs["weight"].double(),
                              density=density)[0]
        torch.testing.assert_close(hist.cpu().double(), ref, rtol=1e-5, atol=1e-6)


@requires_cuda
@needs_histogram_kernel
def test_histogram_weighted_over_more_bins_than_shared_memory_holds():
    # smem._histogram_count refuses these (test_histogram_count.py); the drop-in then runs the
    # CPU function, so torch.histogram still answers, with the CPU's result.
    x, w = torch.randn(100_003, dtype=torch.float64), torch.rand(100_003, dtype=torch.float64)
    for bins in (50_000, torch.linspace(-4, 4, 40_001, dtype=torch.float64)):
        want = torch.histogram(x, bins, weight=w)
        with smem_ops.enabled():
            got = torch.histogram(x.cuda(), bins.cuda() if isinstance(bins, torch.Tensor)
                                  else bins, weight=w.cuda())
        assert got[0].device.type == "cuda"
        assert torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1])


@requires_cuda
@needs_histogram_kernel
def test_histogram_is_deterministic_and_rejects_bad_input():
    x = torch.randn(1 << 22, device="cuda")
    w = torch.rand(1 << 22, device="cuda")
    with smem_ops.enabled():
        a = torch.histogram(x, 256, range=(-3.0, 3.0), weight=w)[0]
        b = torch.histogram(x, 256, range=(-3.0, 3.0), weight=w)[0]
        assert torch.equal(a, b)
        with pytest.raises(RuntimeError, match="weight"):
            torch.histogram(x, 10, weight=w[:-1])
        with pytest.raises(ValueError, match="non-decreasing"):
            torch.histogram(x, torch.tensor([0.0, 2.0, 1.0], device="cuda"))
        with pytest.raises(RuntimeError, match="bins must be > 0"):
            torch.histogram(x, 0)
        with pytest.raises(RuntimeError, match="not finite"):
            torch.histogram(x, 10, range=(0.0, math.inf))
        with pytest.raises(RuntimeError, match=r"range \[nan, nan\] is not finite"):
            torch.histogram(torch.tensor([0.0, math.nan], device="cuda"), 10)  # as on the CPU
