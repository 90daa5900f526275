"""The ops' backward nodes (csrc/autograd_node.h): what torch's own nodes do, they do. Gradients
themselves are checked by gradcheck in test_pt2.py."""

import pytest
import torch
from torch._dynamo import compiled_autograd

import smem_ops

from conftest import DEVICES


def grads_of(loss_fn, *inputs):
    for t in inputs:
        t.grad = None
    loss_fn(*inputs).backward()
    return [t.grad for t in inputs]


def losses():
    """Each op, with dims, keepdim and dtype= where they change the backward formula."""
    return {
        "sum": lambda x, y: smem_ops.sum(x),
        "sum dims": lambda x, y: (smem_ops.sum(x, [0, 2]) * torch.arange(4.0, device=x.device)).sum(),
        "sum keepdim dtype": lambda x, y: smem_ops.sum(x, 1, keepdim=True, dtype=torch.float64).sum(),
        "sum_of_squares": lambda x, y: smem_ops.sum_of_squares(x, -1).sum(),
        "dot": lambda x, y: smem_ops.dot(x.flatten()[:5], y),
        "transpose": lambda x, y: (smem_ops.transpose(x, 0, 2) * torch.randn(
            5, 4, 3, generator=torch.Generator().manual_seed(1)).to(x.device)).sum(),
    }


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(losses()))
def test_compiled_autograd_traces_the_nodes(device, case):
    """Compiled autograd (eager forward, compiled backward) calls each node's formula through its
    compiled_args / apply_with_saved, and gets the eager gradients."""
    loss_fn = losses()[case]
    x = torch.randn(3, 4, 5, device=device, requires_grad=True)
    y = torch.randn(5, device=device, requires_grad=True)
    want = grads_of(loss_fn, x, y)
    graphs = []

    def compiler(gm):
        graphs.append(gm)
        return torch.compile(gm, backend="eager", fullgraph=True)

    with compiled_autograd._enable(compiler):
        got = grads_of(loss_fn, x, y)
    assert len(graphs) == 1
    called = {getattr(n.target, "__name__", "") for n in graphs[0].graph.nodes}
    assert any(name.startswith("Smem") for name in called), called
    for g, w in zip(got, want, strict=True):
        if w is None:
            assert g is None
        else:
            torch.testing.assert_close(g, w)


@pytest.mark.parametrize("device", DEVICES)
def test_nodes_behave_as_torch_nodes(device):
    x = torch.randn(4, 6, device=device, requires_grad=True)
    assert smem_ops.sum(x).grad_fn.name() == "SmemSumBackward"
    assert smem_ops.sum_of_squares(x, 0).grad_fn.name() == "SmemSumOfSquaresBackward"
    assert smem_ops.dot(x[0], x[1]).grad_fn.name() == "SmemDotBackward"
    assert smem_ops.transpose(x).grad_fn.name() == "SmemTransposeBackward"
    # the saved input is freed after backward, as torch's nodes free theirs
    out = smem_ops.sum_of_squares(x)
    out.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()
    # an input changed in place after it was saved
    w = x * 1
    out = smem_ops.dot(w[0], w[1])
    w.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()
    # saved-tensor hooks see what the nodes save: both dot inputs, the squares' input, no more
    packed = []

    def pack(t):
        packed.append(t.shape)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        smem_ops.dot(x[0], x[1])
        smem_ops.sum_of_squares(x, 1)
        smem_ops.sum(x, 1)
        smem_ops.transpose(x)
    assert packed == [torch.Size([6]), torch.Size([6]), torch.Size([4, 6])]


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_autograd_cannot_differentiate_stay_out_of_the_graph(device):
    x = torch.randn(50, device=device, requires_grad=True)
    assert not smem_ops.histc(x, 5, -1, 1, dtype=torch.int64).requires_grad
    counts = smem_ops.histc(x, 5, -1, 1)  # a float count joins, to refuse backward
    assert counts.requires_grad
    with pytest.raises(RuntimeError, match="smem.histc is not differentiable"):
        counts.sum().backward()
    # a dot with one input needing grad saves only the other input and returns one gradient
    a, b = torch.randn(7, device=device, requires_grad=True), torch.randn(7, device=device)
    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        out = smem_ops.dot(a, b)
    assert len(packed) == 1 and torch.equal(packed[0], b)
    out.backward()
    assert torch.equal(a.grad, b)


@pytest.mark.parametrize("device", DEVICES)
def test_forward_ad_is_refused_not_dropped(device):
    """No op has a forward-mode formula: a dual input raises, as torch's ops without one do,
    instead of returning a result without its tangent."""
    import torch.autograd.forward_ad as fwAD

    x = torch.randn(6, device=device)
    calls = {"smem.sum": lambda t: smem_ops.sum(t), "smem.sum_of_squares": smem_ops.sum_of_squares,
             "smem.dot": lambda t: smem_ops.dot(t, t), "smem.histc": lambda t: smem_ops.histc(t, 4),
             "smem.transpose": lambda t: smem_ops.transpose(t.view(2, 3))}
    for name, call in calls.items():
        with fwAD.dual_level():
            dual = fwAD.make_dual(x, torch.ones_like(x))
            with pytest.raises(NotImplementedError, match=f"forward AD with {name}"):
                call(dual)
        with pytest.raises(NotImplementedError, match=f"forward AD with {name}"):
            torch.func.jvp(call, (x,), (torch.ones_like(x),))


class _NoGrad(torch.autograd.Function):
    """Identity whose backward sends no gradient on."""

    @staticmethod
    def forward(ctx, t):
        return t.clone()

    @staticmethod
    def backward(ctx, g):
        return None


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["sum", "sum_of_squares", "dot", "transpose"])
def test_undefined_grads_pass_through_eager_and_compiled(device, op):
    """A node that receives no gradient sends none on, eager or under compiled autograd (where
    the formula runs as a traced function: torch's own nodes pass this test too; two such paths
    into one tensor fail there for torch's nodes as for these)."""
    x = torch.randn(4, 5, device=device, requires_grad=True)
    z = torch.randn(3, device=device, requires_grad=True)
    call = {"sum": lambda: smem_ops.sum(x, 1), "sum_of_squares": lambda: smem_ops.sum_of_squares(x),
            "dot": lambda: smem_ops.dot(x[0], x[1].detach()),
            "transpose": lambda: smem_ops.transpose(x)}[op]

    def loss(a, b):
        return _NoGrad.apply(call()).sum() + (b * 2).sum()

    want = grads_of(loss, x, z)
    assert want[0] is None and torch.equal(want[1], torch.full_like(z, 2.0))
    with compiled_autograd._enable(lambda gm: torch.compile(gm, backend="eager", fullgraph=True)):
        got = grads_of(loss, x, z)
    assert got[0] is None and torch.equal(got[1], want[1])
