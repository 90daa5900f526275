"""Dispatcher integration: opcheck, gradcheck, torch.compile, torch.export."""

import inspect
import os
import subprocess
import sys

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import smem_ops

from conftest import DEVICES, make_tensor, run_python

OPS = torch.ops.smem


def samples(device):
    f = lambda *s: make_tensor(s, torch.float32, device)
    return [
        (OPS.sum.default, (f(5, 7),), {}),
        (OPS.sum.default, (f(5, 7, 3), [0, 2], True), {}),
        (OPS.sum.default, (make_tensor((9, 4), torch.int32, device), [1]), {"dtype": torch.float64}),
        (OPS.sum.default, (f(4, 6).t(), [0]), {}),
        (OPS.sum_of_squares.default, (f(33,),), {}),
        (OPS.sum_of_squares.default, (f(6, 10), [-1], False), {}),
        (OPS.sum_of_squares.default, (f(6, 10).to(torch.float64), [0]), {"dtype": torch.float32}),
        (OPS.dot.default, (f(17), f(17)), {}),
        (OPS.dot.default, (f(40)[::2], f(20)), {}),
        (OPS.transpose.default, (f(5, 9),), {}),
        (OPS.transpose.default, (f(3, 5, 9), 0, 2), {}),
        (OPS.transpose.default, (f(3, 5, 9).transpose(0, 1), 1, -1), {}),
        (OPS.histc.default, (f(100), 10, -1.0, 1.0), {}),
        (OPS.histc.default, (f(100),), {}),
        (OPS.histc.default, (f(10, 10), 7, -2, 2), {"dtype": torch.int64}),
    ]


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    for op, args, kwargs in samples(device):
        grad_args = tuple(a.requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point()
                          and op is not OPS.histc.default else a for a in args)
        for a in (args, grad_args):
            torch.library.opcheck(op, a, kwargs)


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device):
    d = lambda *s: torch.randn(*s, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: smem_ops.sum(x, [0, 2], keepdim=False), (d(3, 4, 5),))
    assert torch.autograd.gradcheck(lambda x: smem_ops.sum(x, 1, keepdim=True), (d(3, 4),))
    assert torch.autograd.gradcheck(lambda x: smem_ops.sum(x), (d(7),))
    assert torch.autograd.gradcheck(lambda x: smem_ops.sum_of_squares(x, 0), (d(6, 3),))
    assert torch.autograd.gradcheck(smem_ops.dot, (d(9), d(9)))
    assert torch.autograd.gradcheck(lambda x: smem_ops.transpose(x, 0, 2), (d(2, 3, 4),))
    c = torch.randn(5, dtype=torch.complex128, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: smem_ops.sum_of_squares(x), (c,))
    c2 = torch.randn(5, dtype=torch.complex128, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(smem_ops.dot, (c, c2))
    # every dim reduced, kept or not, or named by an empty list: the grad expands from 0-dim
    assert torch.autograd.gradcheck(lambda x: smem_ops.sum(x, keepdim=True), (d(3, 4),))
    assert torch.autograd.gradcheck(lambda x: smem_ops.sum(x, []), (d(3, 4),))
    assert torch.autograd.gradcheck(lambda x: smem_ops.sum_of_squares(x, [1, 0]), (d(3, 4),))
    # dtype= casts back in backward
    x = torch.randn(4, 3, device=device, requires_grad=True)
    smem_ops.sum(x, 0, dtype=torch.float64).sum().backward()
    assert x.grad.dtype == torch.float32 and torch.equal(x.grad, torch.ones_like(x))
    x.grad = None
    smem_ops.sum_of_squares(x, 1, dtype=torch.float64).sum().backward()
    assert x.grad.dtype == torch.float32
    torch.testing.assert_close(x.grad, 2 * x.detach())


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward(device):
    d = lambda *s: torch.randn(*s, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda x: smem_ops.transpose(x, 0, 1), (d(3, 4),))
    assert torch.autograd.gradgradcheck(lambda x: smem_ops.sum_of_squares(x, 1), (d(3, 4),))
    assert torch.autograd.gradgradcheck(lambda x: smem_ops.sum(x, 0, keepdim=True), (d(3, 4),))
    assert torch.autograd.gradgradcheck(smem_ops.dot, (d(5), d(5)))


@pytest.mark.parametrize("device", DEVICES)
def test_graph_only_when_needed(device):
    # the C++ autograd kernels skip the graph when nothing requires grad, or grad is off
    x = torch.randn(4, 5, device=device)
    w = x.clone().requires_grad_()
    assert smem_ops.sum(x, 1).grad_fn is None
    with torch.no_grad():
        assert smem_ops.sum_of_squares(w).grad_fn is None
        assert smem_ops.transpose(w).grad_fn is None
    assert smem_ops.sum(w, 1).grad_fn is not None
    out = smem_ops.dot(w[0], x[1])  # one input needs grad: only it gets one
    out.backward()
    assert torch.equal(w.grad[0], x[1]) and torch.equal(w.grad[1:], torch.zeros_like(w.grad[1:]))


@pytest.mark.parametrize("device", DEVICES)
def test_eager_wrappers_reach_the_overloads(device):
    """In eager mode the wrappers call each OpOverload's C++ handle and leave out arguments equal
    to the defaults: a dispatch mode still sees every call as the OpOverload, and the results are
    torch's."""
    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x = make_tensor((4, 6), torch.float32, device)
    ids = torch.randint(0, 5, (30,), device=device)
    row0, row1 = x[0], x[1]
    with Record():
        got = [smem_ops.sum(x), smem_ops.sum(x, 1), smem_ops.sum(x, (0, 1), keepdim=True),
               smem_ops.sum(x, [0], dtype=torch.float64), smem_ops.sum_of_squares(x, -1),
               smem_ops.sum_of_squares(x, keepdim=True), smem_ops.dot(row0, row1),
               smem_ops.transpose(x), smem_ops.transpose(x, 1, 0), smem_ops.histc(x, 5),
               smem_ops.histc(x, 5, -1, 1, dtype=torch.int64), smem_ops.bincount(ids, 5)]
    assert seen == [OPS.sum.default] * 4 + [OPS.sum_of_squares.default] * 2 + [
        OPS.dot.default, OPS.transpose.default, OPS.transpose.default, OPS.histc.default,
        OPS.histc.default, OPS.histc.default]
    want = [x.sum(), x.sum(1), x.sum((0, 1), keepdim=True), x.double().sum(0),
            (x * x).sum(-1), (x * x).sum((0, 1), keepdim=True), torch.dot(x[0], x[1]), x.t(), x.t(),
            torch.histc(x.cpu(), 5).to(device), torch.histc(x.cpu(), 5, -1, 1).long().to(device),
            torch.bincount(ids, minlength=5)]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("device", DEVICES)
def test_fast_calls_match_the_overloads(device):
    """sum / sum_of_squares over every dim or one int dim, and dot, go through smem_ops._C's typed
    calls for plain tensors (Parameters too): the same results, dtypes, gradients and errors as
    the OpOverloads."""
    x = make_tensor((5, 7), torch.float32, device)
    inputs = (x, torch.nn.Parameter(x.clone()), x.t(), x[:, ::2], x.to(torch.int32),
              x.to(torch.bfloat16), x.to(torch.bool), make_tensor((), torch.float64, device))
    for t in inputs:
        for dim in ((None,) if t.dim() == 0 else (None, 0, -1)):
            for f, op in ((smem_ops.sum, OPS.sum.default),
                          (smem_ops.sum_of_squares, OPS.sum_of_squares.default)):
                got = f(t) if dim is None else f(t, dim)
                want = op(t) if dim is None else op(t, [dim])
                assert got.dtype == want.dtype and torch.equal(got, want)
    a = make_tensor((33,), torch.float64, device).requires_grad_()
    b = make_tensor((33,), torch.float64, device)
    assert torch.equal(smem_ops.dot(a, b), OPS.dot.default(a, b))
    assert torch.equal(smem_ops.dot(x[0].int(), x[1].int()), OPS.dot.default(x[0].int(), x[1].int()))
    (smem_ops.sum_of_squares(a) + smem_ops.dot(a, b) + smem_ops.sum(a, 0)).backward()
    torch.testing.assert_close(a.grad, 2 * a.detach() + b + 1)
    for dim in (2**63, -(2**63) - 1):  # past int64: the schema parser's error, on every path
        with pytest.raises(RuntimeError) as fast:
            smem_ops.sum(x, dim)
        with pytest.raises(RuntimeError) as overload:
            OPS.sum.default(x, dim)
        assert str(fast.value) == str(overload.value)
    assert torch.equal(smem_ops.sum(x, -2), OPS.sum.default(x, [-2]))
    with pytest.raises(IndexError, match="smem.sum_of_squares: dim -3 is out of range"):
        smem_ops.sum_of_squares(x, -3)
    with pytest.raises(ValueError, match="smem.dot: 1D tensors expected"):
        smem_ops.dot(x, x)
    # smem_ops.dot is a C function: keywords and bad calls go to its Python wrapper
    assert str(inspect.signature(smem_ops.dot)) == "(x, other)"
    assert torch.equal(smem_ops.dot(other=b, x=a), OPS.dot.default(a, b))
    with pytest.raises(TypeError, match=r"dot\(\) missing 1 required positional argument"):
        smem_ops.dot(a)
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument 'other'"):
        smem_ops.dot(a, 1.0)


def test_import_without_docstrings():
    """python -OO strips docstrings, smem_ops.dot's C function takes its doc from one."""
    code = ("import torch, smem_ops\n"
            "x = torch.arange(4.0)\n"
            "assert smem_ops.dot(x, x).item() == 14.0\n")
    run_python(code, "-OO")


def test_dot_compiles_when_dynamo_comes_after_smem_ops():
    """torch.compile traces smem_ops.dot through the stand-in registered when torch._dynamo is
    first imported, which importing smem_ops does not do (it costs a second)."""
    code = ("import sys, torch, smem_ops\n"
            "assert 'torch._dynamo' not in sys.modules\n"
            "x = torch.randn(8)\n"
            "f = torch.compile(lambda a, b: smem_ops.dot(a, b) * 2, fullgraph=True)\n"
            "assert torch.equal(f(x, x), smem_ops.dot(x, x) * 2)\n")
    run_python(code)


def test_fast_calls_leave_torch_function_to_the_overloads():
    """A torch function mode, or a tensor subclass with its own __torch_function__, sees every
    wrapper call as the OpOverload: the fast calls are taken only where neither exists."""
    seen = []

    def record(func):
        if isinstance(func, torch._ops.OpOverload) and func.namespace == "smem":
            seen.append(func)

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            record(func)
            return func(*args, **(kwargs or {}))

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            record(func)
            return super().__torch_function__(func, types, args, kwargs)

    x = torch.randn(4, 6)
    calls = (lambda t: smem_ops.sum(t), lambda t: smem_ops.sum(t, 1),
             lambda t: smem_ops.sum_of_squares(t), lambda t: smem_ops.dot(t[0], t[1]))
    want = [OPS.sum.default, OPS.sum.default, OPS.sum_of_squares.default, OPS.dot.default]
    with Mode():
        for call in calls:
            call(x)
    assert seen == want
    seen.clear()
    logged = x.as_subclass(Logged)
    for call in calls:
        call(logged)
    assert seen == want


def model(x, y):
    # pointwise ops on both sides of every op
    t = smem_ops.transpose(torch.relu(x) + 1, 0, 1) * 2
    s = smem_ops.sum(t.sin(), 1) + smem_ops.sum_of_squares(t, 1, keepdim=True).squeeze(1)
    d = smem_ops.dot(torch.tanh(s * 0.01), (y - 1).flatten()[: s.numel()])
    h = smem_ops.histc(y.detach() * 3, 16, -4, 4, dtype=torch.float32)
    return s.cos() * d + h.sum() + smem_ops.sum(smem_ops.transpose(x))  # default arguments


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_fullgraph(device, dynamic):
    torch._dynamo.reset()
    x = torch.randn(9, 13, device=device, requires_grad=True)
    y = torch.randn(30, device=device, requires_grad=True)
    compiled = torch.compile(model, fullgraph=True, dynamic=dynamic)
    expected = model(x, y)
    got = compiled(x, y)
    torch.testing.assert_close(got, expected)
    gx_e, gy_e = torch.autograd.grad(expected.sum(), (x, y))
    gx, gy = torch.autograd.grad(compiled(x, y).sum(), (x, y))
    torch.testing.assert_close(gx, gx_e)
    torch.testing.assert_close(gy, gy_e)
    # a second shape: dynamic reuses the graph, static recompiles; both stay right
    x2 = torch.randn(11, 6, device=device)
    y2 = torch.randn(30, device=device)
    torch.testing.assert_close(compiled(x2, y2), model(x2, y2))


class ExportModel(torch.nn.Module):
    def forward(self, x):
        t = smem_ops.transpose(x, 0, 1)
        return (smem_ops.sum(t, 1) + smem_ops.sum_of_squares(t, 1), smem_ops.dot(t[0], t[1]),
                smem_ops.histc(x, 8, -2, 2))


@pytest.mark.parametrize("device", DEVICES)
def test_export_save_load_fresh_process(device, tmp_path):
    x = torch.randn(6, 10, device=device)
    ep = torch.export.export(ExportModel(), (x,))
    path = str(tmp_path / "smem.pt2")
    torch.export.save(ep, path)
    expected = ExportModel()(x)
    torch.save({"x": x.cpu(), "expected": [e.cpu() for e in expected]}, str(tmp_path / "io.pt"))
    script = f"""
import torch, smem_ops
io = torch.load({str(tmp_path / 'io.pt')!r})
ep = torch.export.load({path!r})
out = ep.module()(io["x"].to({device!r}))
for o, e in zip(out, io["expected"]):
    torch.testing.assert_close(o.cpu(), e)
print("ok")
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                       timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith("ok")
