"""CUDA-only behaviour: graph capture and replay, non-default streams, introspection."""

import pytest
import torch

import smem_ops

from conftest import HAS_CUDA, requires_cuda

pytestmark = pytest.mark.cuda


def test_introspection():
    assert isinstance(smem_ops.cuda_compiled(), bool)
    for family in ("reduce", "transpose", "histogram"):
        names = smem_ops.variants(family)
        assert isinstance(names, list)
        if smem_ops.cuda_compiled():
            assert names[-1] == "final"
        else:
            assert names == []
    with pytest.raises(ValueError, match="unknown family"):
        smem_ops.variants("sort")
    if not HAS_CUDA:
        assert smem_ops.cluster_supported(0) is False


@requires_cuda
def test_compiled_archs_cover_device():
    major, minor = torch.cuda.get_device_capability()
    archs = smem_ops.compiled_archs()
    assert any(a // 10 <= major * 10 + minor for a in archs), archs


@requires_cuda
def test_cuda_graph_capture_and_replay_with_new_data():
    x = torch.randn(1000, 517, device="cuda")
    y = torch.randn(517, device="cuda")
    static = {}

    def step():
        static["sum"] = smem_ops.sum(x)  # multi-block: workspace + counters inside the graph
        static["rows"] = smem_ops.sum(x, 1)
        static["cols"] = smem_ops.sum_of_squares(x, 0)
        static["dot"] = smem_ops.dot(x[0], y)
        static["t"] = smem_ops.transpose(x)
        static["h"] = smem_ops.histc(x, 64, -3, 3)
        static["auto"] = smem_ops.histc(x, 64)  # auto-range on the device: no host sync

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()  # warm-up outside capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    for scale in (1.0, 5.0, 0.25):
        x.copy_(torch.randn_like(x) * scale)
        y.copy_(torch.randn_like(y))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(static["sum"], x.double().sum().float(), rtol=1e-5, atol=1e-2)
        torch.testing.assert_close(static["rows"], x.sum(1), rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(static["cols"], (x * x).sum(0), rtol=1e-5, atol=1e-3)
        torch.testing.assert_close(static["dot"], torch.dot(x[0], y), rtol=1e-5, atol=1e-4)
        assert torch.equal(static["t"], x.t().contiguous())
        assert torch.equal(static["h"], torch.histc(x, 64, -3, 3))
        assert torch.equal(static["auto"], torch.histc(x, 64))


@requires_cuda
def test_non_default_stream():
    s = torch.cuda.Stream()
    x = torch.randn(4096, 1031, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        a = smem_ops.sum(x, 0)
        t = smem_ops.transpose(x)
        h = smem_ops.histc(x, 100)
        total = smem_ops.sum(x)
    s.synchronize()
    torch.testing.assert_close(a, x.sum(0), rtol=1e-5, atol=1e-3)
    assert torch.equal(t, x.t().contiguous())
    assert torch.equal(h, torch.histc(x, 100))
    torch.testing.assert_close(total, x.double().sum().float(), rtol=1e-5, atol=1e-1)


@requires_cuda
def test_other_device_index_guard():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    x = torch.randn(100, 100, device="cuda:1")
    assert smem_ops.sum(x).device == x.device
    assert torch.equal(smem_ops.transpose(x), x.t().contiguous())


@requires_cuda
def test_counters_reused_across_calls_and_streams():
    """Split reductions share each stream's last-block counters, which every kernel leaves at
    zero: many different splits in a row, on two streams, must all come out right."""
    xs = [torch.randn(n, device="cuda") for n in (70_001, 1 << 20, 3_000_017)]
    mats = [torch.randn(r, c, device="cuda") for r, c in ((7, 200_000), (100_000, 24))]
    # references on the CPU: racecheck flags torch's own CUDA reduce_kernel (not ours)
    expected = ([x.cpu().double().sum() for x in xs] +
                [m.cpu().double().sum(d) for m in mats for d in (0, 1)])
    streams = [torch.cuda.current_stream(), torch.cuda.Stream()]
    torch.cuda.synchronize()
    results = []
    for rep in range(6):
        with torch.cuda.stream(streams[rep % 2]):
            results.append([smem_ops.sum(x) for x in xs] +
                           [smem_ops.sum(m, d) for m in mats for d in (0, 1)])
    torch.cuda.synchronize()
    for got in results:
        for g, e in zip(got, expected):
            torch.testing.assert_close(g.cpu().double(), e, rtol=1e-5, atol=1e-2)


@requires_cuda
def test_histogram_workspace_reused_across_calls_and_streams():
    """histc with few bins adds into a per-stream workspace that its last block moves to the
    output and zeroes: calls of every shape in a row, on two streams, must not see each
    other's counts."""
    cases = [(torch.randn(n, device="cuda"), bins) for n, bins in
             ((70_001, 2048), (1 << 20, 7), (3_000_017, 256), (5, 1000), (1 << 16, 4096))]
    xb = torch.randn(1 << 20, device="cuda").to(torch.bfloat16)
    expected = [torch.histc(x.cpu(), bins, -2, 2).long() for x, bins in cases]
    expected.append(torch.histc(xb.cpu().float(), 300, -2, 2).long())
    streams = [torch.cuda.current_stream(), torch.cuda.Stream()]
    torch.cuda.synchronize()
    results = []
    for rep in range(6):
        with torch.cuda.stream(streams[rep % 2]):
            got = [smem_ops.histc(x, bins, -2, 2, dtype=torch.int64) for x, bins in cases]
            got.append(torch.ops.smem._histc_variant(xb, 300, -2.0, 2.0, "final:lut16"))
            results.append(got)
    torch.cuda.synchronize()
    for got in results:
        for g, e in zip(got, expected):
            assert torch.equal(g.cpu(), e)
