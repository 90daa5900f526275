"""batched_histc: one histc per slice, against per-slice smem.histc / torch.histc references."""

import re

import pytest
import torch

import smem_ops

from conftest import DEVICES, make_tensor, raised_from, requires_cuda

ALL_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
              torch.float16, torch.bfloat16, torch.float32, torch.float64]


def per_slice(x, bins, lo, hi, dim=-1, dtype=None):
    """The reference: smem.histc on the CPU (itself tested against torch.histc) on every slice.
    On the CPU, so a CUDA test launches a few kernels rather than one per slice (thousands)."""
    moved = x.movedim(dim, -1)
    rows = moved.reshape(-1, moved.shape[-1]).cpu()
    outs = [smem_ops.histc(r, bins, lo, hi, dtype=dtype) for r in rows]
    out_dtype = dtype or (x.dtype if x.dtype.is_floating_point else torch.int64)
    if not outs:
        return torch.zeros((*moved.shape[:-1], bins), dtype=out_dtype, device=x.device)
    return torch.stack(outs).reshape(*moved.shape[:-1], bins).to(x.device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (3, 1000), (7, 4097), (64, 300), (2, 3, 513)])
@pytest.mark.parametrize("bins,lo,hi", [(1, -1, 1), (256, -3, 3), (100, 0, 0), (3000, -2.5, 3.1)])
def test_matches_torch_histc(device, dtype, shape, bins, lo, hi):
    x = make_tensor(shape, dtype, device)
    out = smem_ops.batched_histc(x, bins, lo, hi)
    assert out.dtype == dtype and out.shape == (*shape[:-1], bins)
    ref = torch.stack([torch.histc(r.cpu(), bins, lo, hi) if lo != hi else
                       torch.histc(r.cpu(), bins, r.min().item(), r.max().item())
                       for r in x.reshape(-1, shape[-1])]).reshape(out.shape)
    if lo == hi and shape[-1] == 1:  # torch widens a constant slice the same way
        ref = torch.stack([torch.histc(r.cpu(), bins, r.item() - 1, r.item() + 1)
                           for r in x.reshape(-1, 1)]).reshape(out.shape)
    assert torch.equal(out.cpu(), ref)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("auto", [False, True], ids=["range", "auto"])
def test_every_dtype(device, dtype, auto):
    x = make_tensor((5, 1031), dtype, device)
    lo, hi = (0, 0) if auto else (-50, 60)
    out = smem_ops.batched_histc(x, 37, lo, hi)
    assert out.dtype == (dtype if dtype.is_floating_point else torch.int64)
    assert torch.equal(out, per_slice(x, 37, lo, hi))
    exact = smem_ops.batched_histc(x, 37, lo, hi, dtype=torch.int64)
    assert exact.dtype == torch.int64 and torch.equal(exact, per_slice(x, 37, lo, hi, dtype=torch.int64))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, -3])
def test_dims_and_layouts(device, dim):
    base = make_tensor((6, 40, 70), torch.float32, device)
    for x in (base, base.transpose(0, 2), base[:, ::3, 1:], base[:1].expand(5, 40, 70)):
        for lo, hi in ((-2, 2), (0, 0)):
            out = smem_ops.batched_histc(x, 16, lo, hi, dim=dim, dtype=torch.int64)
            assert torch.equal(out, per_slice(x, 16, lo, hi, dim=dim, dtype=torch.int64)), (x.shape, lo)


@pytest.mark.parametrize("device", DEVICES)
def test_empty(device):
    for shape, dim in (((0, 5), -1), ((4, 0), -1), ((4, 0), 0), ((0,), 0), ((3, 0, 2), 2)):
        x = torch.empty(shape, device=device)
        for lo, hi in ((0, 1), (0, 0)):
            out = smem_ops.batched_histc(x, 8, lo, hi, dim=dim)
            expected = [s for d, s in enumerate(shape) if d != dim % len(shape)] + [8]
            assert out.shape == tuple(expected) and out.dtype == torch.float32
            assert (out == 0).all()


@pytest.mark.parametrize("device", DEVICES)
def test_auto_range_skips_inf_and_nan(device):
    x = torch.tensor([[1.0, 2.0, float("inf"), 3.0, float("nan")],
                      [float("nan")] * 5,
                      [5.0, 5.0, float("-inf"), 5.0, 5.0],
                      [-1.0, float("inf"), 4.0, float("-inf"), 0.5]], device=device)
    out = smem_ops.batched_histc(x, 4, dtype=torch.int64).cpu()
    # row 0: range [1, 3]; row 1: nothing finite -> [-1, 1], NaN not counted;
    # row 2: constant -> [4, 6], 5 lands in bin 2; row 3: [-1, 4]
    assert out.tolist() == [[1, 0, 1, 1], [0, 0, 0, 0], [0, 0, 4, 0], [1, 1, 0, 1]]
    assert torch.equal(smem_ops.batched_histc(x, 4, dtype=torch.int64), per_slice(x, 4, 0, 0, dtype=torch.int64))


@pytest.mark.parametrize("device", DEVICES)
def test_edges_and_out_of_range(device):
    x = torch.tensor([[-1.0, 0.0, 0.25, 0.5, 1.0, 1.5, float("nan")]], device=device)
    assert smem_ops.batched_histc(x, 4, 0, 1, dtype=torch.int64).tolist() == [[1, 1, 1, 1]]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("auto", [False, True], ids=["range", "auto"])
def test_deterministic(device, auto):
    x = make_tensor((33, 20001), torch.float32, device)
    lo, hi = (0, 0) if auto else (-3, 3)
    assert torch.equal(smem_ops.batched_histc(x, 256, lo, hi), smem_ops.batched_histc(x, 256, lo, hi))


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float16, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("shape", [(1, 1 << 20), (3, 300_007), (4096, 65), (200, 10_001)])
@pytest.mark.parametrize("auto", [False, True], ids=["range", "auto"])
def test_cuda_matches_cpu(dtype, shape, auto):
    # few long rows (split into parts), many short rows, odd lengths (unaligned row starts)
    x = make_tensor(shape, dtype, "cuda")
    lo, hi = (0, 0) if auto else (-2, 70)
    for bins in (1, 256, 5000, 1 << 15):
        out = smem_ops.batched_histc(x, bins, lo, hi, dtype=torch.int64)
        assert torch.equal(out.cpu(), smem_ops.batched_histc(x.cpu(), bins, lo, hi, dtype=torch.int64))


@requires_cuda
def test_cuda_bins_beyond_shared_memory():
    x = make_tensor((3, 100_003), torch.float32, "cuda")
    for lo, hi in ((-3, 3), (0, 0)):
        out = smem_ops.batched_histc(x, 1 << 22, lo, hi, dtype=torch.int64)
        assert torch.equal(out.cpu(), smem_ops.batched_histc(x.cpu(), 1 << 22, lo, hi, dtype=torch.int64))


@requires_cuda
def test_cuda_graph_capture():
    x = make_tensor((64, 4096), torch.float32, "cuda")
    expected = smem_ops.batched_histc(x, 64)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = smem_ops.batched_histc(x, 64)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, expected)


# ----------------------------------------------------------------------------- pt2

@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x = make_tensor((4, 300), torch.float32, device)
    for args, kwargs in (((x, 16, -2, 2), {}), ((x, 10), {}), ((x, 8, -1, 1), {"dim": 0}),
                         ((x.to(torch.int32), 8, -50, 50), {"dtype": torch.int64})):
        torch.library.opcheck(torch.ops.smem.batched_histc.default, args, kwargs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_fullgraph(device, dynamic):
    torch._dynamo.reset()

    def f(x):
        return smem_ops.batched_histc(x * 2, 32, -4, 4, dim=0) + 1

    x = make_tensor((50, 7), torch.float32, device)
    compiled = torch.compile(f, fullgraph=True, dynamic=dynamic)
    assert torch.equal(compiled(x), f(x))
    y = make_tensor((30, 9), torch.float32, device)
    assert torch.equal(compiled(y), f(y))


class _Model(torch.nn.Module):
    def forward(self, x):
        return smem_ops.batched_histc(x, 16, dtype=torch.int64)


@pytest.mark.parametrize("device", DEVICES)
def test_export(device):
    x = make_tensor((5, 100), torch.float32, device)
    ep = torch.export.export(_Model(), (x,))
    assert any(n.target is torch.ops.smem.batched_histc.default for n in ep.graph.nodes)
    assert torch.equal(ep.module()(x), _Model()(x))


@pytest.mark.parametrize("device", DEVICES)
def test_not_differentiable(device):
    # a float count joins the graph only to refuse backward (autograd's fallback would warn and
    # leave the input's grad None); an int64 count stays out of it
    x = torch.rand(4, 10, device=device, requires_grad=True)
    assert not smem_ops.batched_histc(x, 5, 0, 1, dtype=torch.int64).requires_grad
    counts = smem_ops.batched_histc(x, 5, 0, 1)
    assert counts.grad_fn.name() == "SmemBatchedHistcBackward"
    with pytest.raises(RuntimeError, match="smem.batched_histc is not differentiable"):
        counts.sum().backward()
    assert x.grad is None


# ----------------------------------------------------------------------------- errors

def _error_cases(device):
    f = lambda *s: torch.randn(s, device=device)
    op = "smem.batched_histc: "
    return [
        ("0-dim", lambda: smem_ops.batched_histc(f()), ValueError,
         op + "expected a tensor with at least one dimension, but got a 0-dim tensor"),
        ("dim", lambda: smem_ops.batched_histc(f(2, 3), dim=2), IndexError,
         op + "dim 2 is out of range for a tensor of dimension 2"),
        ("dim negative", lambda: smem_ops.batched_histc(f(2, 3), dim=-3), IndexError,
         op + "dim -3 is out of range for a tensor of dimension 2"),
        ("bins", lambda: smem_ops.batched_histc(f(2, 3), 0), ValueError,
         op + "bins must be > 0, but got 0"),
        ("min > max", lambda: smem_ops.batched_histc(f(2, 3), 10, 2, 1), ValueError,
         op + "max must be larger than min, but got min=2 and max=1"),
        ("inf", lambda: smem_ops.batched_histc(f(2, 3), 10, 0, float("inf")), ValueError,
         op + "range of [0, inf] is not finite"),
        ("nan", lambda: smem_ops.batched_histc(f(2, 3), 10, float("nan"), 1.5), ValueError,
         op + "range of [nan, 1.5] is not finite"),
        ("complex bound", lambda: smem_ops.batched_histc(f(2, 3), 10, 1j, 2), TypeError,
         op + "min and max must be real numbers, but got a complex bound"),
        ("int bounds equal in float64",
         lambda: smem_ops.batched_histc(f(2, 3).long(), 10, 2**60, 2**60 + 1), ValueError,
         op + "min=1152921504606846976 and max=1152921504606846977 round to the same float64 "
         "bound; give bounds that differ there"),
        ("bound past fp16", lambda: smem_ops.batched_histc(f(2, 3).half(), 10, 0, 65505),
         ValueError, op + "range of [0, 65505] overflows the input dtype torch.float16"),
        ("bool", lambda: smem_ops.batched_histc(f(2, 3) > 0), TypeError,
         op + "input dtype torch.bool is not supported (expected a floating point or integer "
         "dtype other than bool)"),
        ("complex", lambda: smem_ops.batched_histc(f(2, 3).to(torch.complex64)), TypeError,
         op + "input dtype torch.complex64 is not supported"),
        ("out dtype", lambda: smem_ops.batched_histc(f(2, 3), dtype=torch.bool), TypeError,
         op + "dtype= torch.bool is not supported (expected a floating point or integer dtype)"),
    ]


_IDS = [c[0] for c in _error_cases("cpu")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("index", range(len(_IDS)), ids=_IDS)
def test_errors_eager_and_compiled(device, index):
    _, fn, etype, message = _error_cases(device)[index]
    with pytest.raises(etype, match=re.escape(message)):
        fn()
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(fn, fullgraph=True, backend="aot_eager")()
    assert raised_from(info.value, etype, message), repr(info.value)

