"""Bad input raises a clear error, with the same type and message eager and compiled."""

import re

import pytest
import torch

import smem_ops

from conftest import DEVICES, HAS_CUDA, raised_from


def _cases(device, grad=False):
    f = lambda *s: torch.randn(s, device=device, requires_grad=grad)
    cases = [
        ("dot length", lambda: smem_ops.dot(f(3), f(4)), ValueError,
         "smem.dot: inconsistent tensor size, expected self of size 3 and other of size 4 to be equal"),
        ("dot dtype", lambda: smem_ops.dot(f(3), f(3).double()), TypeError,
         ("smem.dot: expected both tensors to have the same dtype, but got self torch.float32 and "
         "other torch.float64")),
        ("dot rank", lambda: smem_ops.dot(f(3, 1), f(3)), ValueError,
         "smem.dot: 1D tensors expected, but got 2D and 1D tensors"),
        ("dot bool", lambda: smem_ops.dot(f(3) > 0, f(3) > 0), TypeError,
         "smem.dot: input dtype torch.bool is not supported"),
        ("sum dim range", lambda: smem_ops.sum(f(2, 3), 2), IndexError,
         "smem.sum: dim 2 is out of range for a tensor of dimension 2"),
        ("sum dim repeated", lambda: smem_ops.sum(f(2, 3), [1, -1]), ValueError,
         "smem.sum: dim 1 appears multiple times in the list of dims"),
        ("sum_of_squares dim range", lambda: smem_ops.sum_of_squares(f(2), -2), IndexError,
         "smem.sum_of_squares: dim -2 is out of range for a tensor of dimension 1"),
        ("sum dtype", lambda: smem_ops.sum(f(2).to(torch.uint16)), TypeError,
         "smem.sum: input dtype torch.uint16 is not supported"),
        ("transpose 0-dim", lambda: smem_ops.transpose(f()), ValueError,
         "smem.transpose: expected a tensor with at least one dimension, but got a 0-dim tensor"),
        ("transpose dim range", lambda: smem_ops.transpose(f(2, 3), 0, 2), IndexError,
         ("smem.transpose: dim 2 is out of range for a tensor of dimension 2 (expected to be in "
         "range of [-2, 1])")),
        ("transpose 1-d default dims", lambda: smem_ops.transpose(f(4)), IndexError,
         ("smem.transpose: dim -2 is out of range for a tensor of dimension 1 (expected to be in "
         "range of [-1, 0])")),
        ("histc bins", lambda: smem_ops.histc(f(5), 0), ValueError,
         "smem.histc: bins must be > 0, but got 0"),
        ("histc min > max", lambda: smem_ops.histc(f(5), 10, 2, 1), ValueError,
         "smem.histc: max must be larger than min, but got min=2 and max=1"),
        ("histc inf", lambda: smem_ops.histc(f(5), 10, 0, float("inf")), ValueError,
         "smem.histc: range of [0, inf] is not finite"),
        ("histc nan", lambda: smem_ops.histc(f(5), 10, float("nan"), 1.5), ValueError,
         "smem.histc: range of [nan, 1.5] is not finite"),
        ("histc complex bound", lambda: smem_ops.histc(f(5), 10, 0, 1 + 2j), TypeError,
         "smem.histc: min and max must be real numbers, but got a complex bound"),
        ("histc int bounds equal in float64",
         lambda: smem_ops.histc(f(5).long(), 10, -2**60 - 1, -2**60), ValueError,
         ("smem.histc: min=-1152921504606846977 and max=-1152921504606846976 round to the same "
          "float64 bound; give bounds that differ there")),
        ("histc unsigned bound equal in float64",
         lambda: smem_ops.histc(f(5).long(), 10, 2**63 - 1, 2**63), ValueError,
         ("smem.histc: min=9223372036854775807 and max=9223372036854775808 round to the same "
          "float64 bound; give bounds that differ there")),
        ("histc bound past fp16", lambda: smem_ops.histc(f(5).half(), 10, 0, 1e5), ValueError,
         "smem.histc: range of [0, 100000] overflows the input dtype torch.float16"),
        ("histc bound past bf16", lambda: smem_ops.histc(f(5).bfloat16(), 10, -1e39, 0), ValueError,
         "smem.histc: range of [-1e+39, 0] overflows the input dtype torch.bfloat16"),
        ("histc bound past fp32", lambda: smem_ops.histc(f(5), 10, 0, 1e39), ValueError,
         "smem.histc: range of [0, 1e+39] overflows the input dtype torch.float32"),
        ("histc bool", lambda: smem_ops.histc(f(5) > 0), TypeError,
         ("smem.histc: input dtype torch.bool is not supported (expected a floating point or "
         "integer dtype other than bool)")),
        ("histc complex", lambda: smem_ops.histc(f(5).to(torch.complex64)), TypeError,
         "smem.histc: input dtype torch.complex64 is not supported"),
    ]
    if HAS_CUDA:
        cases.append(("dot devices", lambda: smem_ops.dot(torch.randn(3), torch.randn(3, device="cuda")),
                      ValueError, ("smem.dot: expected both tensors on the same device, but got self "
                      "on cpu and other on cuda:0")))
    return cases


def _ids():
    return [c[0] for c in _cases("cpu")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("index", range(len(_ids())), ids=_ids())
def test_eager_error(device, grad, index):
    # with grad, the call goes through the autograd node's forward
    _, fn, etype, message = _cases(device, grad)[index]
    with pytest.raises(etype, match=re.escape(message)):
        fn()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("index", range(len(_ids())), ids=_ids())
def test_compiled_error(device, index):
    # The fake kernel raises the same error while torch.compile traces the call.
    torch._dynamo.reset()
    _, fn, etype, message = _cases(device)[index]
    with pytest.raises(Exception) as info:
        torch.compile(fn, fullgraph=True, backend="aot_eager")()
    assert raised_from(info.value, etype, message), repr(info.value)


@pytest.mark.parametrize("device", DEVICES)
def test_fake_kernel_raises_directly(device):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(3, device=device)
        with pytest.raises(ValueError, match=re.escape("smem.histc: bins must be > 0, but got -1")):
            smem_ops.histc(x, -1)
        with pytest.raises(IndexError, match="smem.sum: dim 5 is out of range"):
            smem_ops.sum(x, 5)


_ALL_DTYPES = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)
_OPS = {
    "reduce": lambda x: smem_ops.sum(x),
    "transpose": lambda x: smem_ops.transpose(x.reshape(1, 1)),
    "histogram": lambda x: smem_ops.histc(x, 4, 0, 1),
}


def _accepts(fn, x):
    """(whether fn takes x, the message of the TypeError where it doesn't)."""
    try:
        fn(x)
    except TypeError as e:
        assert "is not supported" in str(e), str(e)
        return False, str(e)
    return True, None


def _one_of(dtype):
    """A one-element CPU tensor of dtype (bits and sub-byte dtypes: a view of bytes), or None for
    the quantized dtypes, which take other backends."""
    if str(dtype).startswith(("torch.qint", "torch.quint")):
        return None
    try:
        return torch.zeros(1, dtype=dtype)
    except (RuntimeError, TypeError):
        return torch.zeros(dtype.itemsize, dtype=torch.uint8).view(dtype)


@pytest.mark.filterwarnings("ignore::UserWarning")  # complex32 and quantized dtypes warn
@pytest.mark.parametrize("family", _OPS)
def test_fake_kernels_accept_what_cpp_accepts(family):
    # The fake kernels' dtype sets come from the C++ checks (smem::_supported_dtypes): for every
    # dtype torch has, tracing and running on the CPU agree on accept or reject.
    from torch._subclasses.fake_tensor import FakeTensorMode

    # Where both reject, the messages are the same word for word (the dtype as Python prints it).
    listed = set(torch.ops.smem._supported_dtypes(family))
    seen = 0
    for dtype in _ALL_DTYPES:
        x = _one_of(dtype)
        if x is None:
            continue
        seen += 1
        with FakeTensorMode() as mode:
            fake = _accepts(_OPS[family], mode.from_tensor(x))
        real = _accepts(_OPS[family], x)
        assert fake == real and real[0] == (str(dtype) in listed), (dtype, fake, real)
        if not real[0]:
            assert str(dtype) in real[1], (dtype, real[1])
    assert seen > 30  # bits8, float4_e2m1fn_x2, int1..uint7 among them


def test_supported_dtypes_rejects_unknown_family():
    with pytest.raises(ValueError, match="unknown family 'sort'"):
        torch.ops.smem._supported_dtypes("sort")
