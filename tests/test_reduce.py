"""sum, sum_of_squares, dot against torch (and float64 references) on CPU and CUDA."""

import math
import re

import pytest
import torch

import smem_ops

from conftest import DEVICES, eps, make_tensor, requires_cuda

REDUCE_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                 torch.float16, torch.bfloat16, torch.float32, torch.float64,
                 torch.complex64, torch.complex128]

# (shape, dim): odd sizes, every kind of plan (rows, columns, middle dim, permuted, full)
CASES = [
    ((), None), ((), 0), ((1,), None), ((7,), 0), ((1000,), None), ((4099,), -1),
    ((33, 65), None), ((33, 65), 0), ((33, 65), 1), ((33, 65), [0, 1]), ((1, 257), 0),
    ((5, 300, 7), 1), ((5, 300, 7), [0, 2]), ((3, 4, 5, 6), [1, 3]), ((3, 4, 5, 6), [-1, 0]),
    ((2, 1, 9), 1), ((9000, 3), 0), ((3, 9000), 1), ((2, 5000, 3), [0, 1]),
    # rows of whole 16-byte vectors (the vectorized column kernel), with and without splits
    ((257, 144), 0), ((3, 1001, 64), 1), ((20000, 16), 0),
    # split column sums of several outer indices (partials of every outer index side by side),
    # scalar and vectorized columns; unsplit block-per-row sums of 4097..8192: 8191 (not whole
    # vectors: fp32's 8 loads in flight per thread, a guarded batch where the row ends mid-batch)
    # and 5000 (whole vectors: the vector rows for fp32, fp16 and bf16)
    ((3, 3001, 130), 1), ((4, 2000, 128), 1), ((400, 8191), 1), ((300, 5000), -1),
    # narrow columns of a few rows a thread, split further where the device is short of blocks
    ((4100, 96), 0),
    # short columns of many slabs, a thread per 16-byte vector of columns (scalar columns where a
    # slab's row is not whole vectors: 7 columns, and 8 of 1-byte types)
    ((6007, 5, 7), 1), ((5000, 3, 8), 1),
    # narrow slabs a warp each (fp32, fp16, bf16 rows of 1 to 16 aligned vectors, 8 slabs per SM)
    ((1200, 33, 8), 1), ((1100, 40, 16), 1),
]


def exact_dtype(dtype):
    return not (dtype.is_floating_point or dtype.is_complex)


def reference(x, dim, keepdim, dtype, square):
    """float64 (complex128) reference with torch's result dtype."""
    out_dtype = smem_ops.ops._sum_result_dtype(x, dtype)
    xd = x.to(dtype) if dtype is not None else x
    if xd.is_floating_point() or xd.is_complex():
        wide = xd.to(torch.complex128 if xd.is_complex() else torch.float64)
    else:
        wide = xd.to(torch.int64)
    if square:
        wide = wide * wide
    dims = dim if dim is not None else []
    return wide.sum(dims, keepdim=keepdim).to(out_dtype)


def assert_reduction_close(out, ref, x, dim):
    assert out.dtype == ref.dtype and out.shape == ref.shape
    if not (ref.is_floating_point() or ref.is_complex()):
        torch.testing.assert_close(out, ref, rtol=0, atol=0)
        return
    n = max(1, x.numel() // max(1, ref.numel()))
    scale = x.abs().double().max().item() if x.numel() else 0.0
    # accumulation error in fp32 plus one rounding to the output dtype
    atol = 4 * n * torch.finfo(torch.float32).eps * (scale * scale + scale) + 1e-30
    torch.testing.assert_close(out.to(ref.dtype), ref, rtol=2 * eps(ref.dtype), atol=atol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", CASES, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_matches_torch(device, dtype, shape, dim, keepdim):
    x = make_tensor(shape, dtype, device)
    out = smem_ops.sum(x, dim, keepdim)
    assert_reduction_close(out, reference(x, dim, keepdim, None, False), x, dim)
    if not (dtype.is_floating_point or dtype.is_complex):
        torch.testing.assert_close(out, torch.sum(x, dim if dim is not None else [], keepdim),
                                   rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", CASES[::2], ids=str)
def test_sum_of_squares(device, dtype, shape, dim):
    x = make_tensor(shape, dtype, device)
    out = smem_ops.sum_of_squares(x, dim)
    assert_reduction_close(out, reference(x, dim, False, None, True), x, dim)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("in_dtype,dtype", [
    (torch.int32, torch.float32), (torch.float32, torch.float64), (torch.float16, torch.float32),
    (torch.bool, torch.int32), (torch.float64, torch.float16), (torch.int64, torch.int8),
    (torch.float32, torch.complex64), (torch.uint8, torch.bfloat16),
])
def test_dtype_argument(device, in_dtype, dtype):
    x = make_tensor((17, 31), in_dtype, device)
    for fn, square in ((smem_ops.sum, False), (smem_ops.sum_of_squares, True)):
        out = fn(x, 1, dtype=dtype)
        assert out.dtype == dtype
        assert_reduction_close(out, reference(x, 1, False, dtype, square), x, 1)
    torch.testing.assert_close(smem_ops.sum(x, 1, dtype=dtype), torch.sum(x, 1, dtype=dtype),
                               rtol=2 * eps(dtype) if exact_dtype(dtype) is False else 0,
                               atol=1e-3 if exact_dtype(dtype) is False else 0)


@pytest.mark.parametrize("device", DEVICES)
def test_sum_of_squares_integers_do_not_wrap(device):
    # torch.sum(x * x) squares in int8 and wraps; smem squares in int64 (documented).
    x = torch.full((10,), 100, dtype=torch.int8, device=device)
    assert smem_ops.sum_of_squares(x).item() == 100_000
    assert torch.sum(x * x).item() != 100_000


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded", "offset"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bfloat16], ids=str)
def test_any_layout(device, layout, dtype):
    base = make_tensor((40, 66), dtype, device)
    x = {"transposed": base.t(), "sliced": base[1::3, ::2],
         "expanded": base[:, :1].expand(40, 300), "offset": base.flatten()[3:1003]}[layout]
    for dim in (None, 0, -1):
        if dim is not None and x.dim() == 1 and dim == 0:
            continue
        assert_reduction_close(smem_ops.sum(x, dim), reference(x, dim, False, None, False), x, dim)
        assert_reduction_close(smem_ops.sum_of_squares(x, dim), reference(x, dim, False, None, True),
                               x, dim)


@pytest.mark.parametrize("device", DEVICES)
def test_dims_as_torch_takes_them(device):
    # numpy ints and 0-d integer tensors are ints, alone or in a sequence, as torch.sum takes them
    np = pytest.importorskip("numpy")
    x = torch.randn(3, 4, 5, device=device)
    for dim in (np.int64(1), torch.tensor(-1), (np.int32(0), 2), [torch.tensor(1), 0]):
        for keepdim in (False, True):
            want = torch.sum(x, dim, keepdim)
            assert smem_ops.sum(x, dim, keepdim).shape == want.shape
            torch.testing.assert_close(smem_ops.sum(x, dim, keepdim), want)
            torch.testing.assert_close(smem_ops.sum_of_squares(x, dim, keepdim, dtype=torch.float64),
                                       torch.sum(x.double() ** 2, dim, keepdim))
    assert torch.equal(smem_ops.bincount(torch.tensor([1, 2, 2], device=device), np.int64(4)),
                       torch.tensor([0, 1, 2, 0], device=device))
    # what torch.sum rejects: a bool or a float dim (the wrapper checks before the op; under
    # torch.compile Dynamo reports the same TypeError as an exception in traced code)
    for op, dim, bad in ((smem_ops.sum, True, "True"), (smem_ops.sum, [True], "True"),
                         (smem_ops.sum_of_squares, [0, 1.0], "1.0")):
        message = f"smem.{op.__name__}: dim must be an int or a sequence of ints, but got {bad}"
        with pytest.raises(TypeError, match=re.escape(message)):
            op(x, dim)


@pytest.mark.parametrize("device", DEVICES)
def test_empty(device):
    x = torch.empty(0, 5, device=device)
    assert torch.equal(smem_ops.sum(x), torch.zeros((), device=device))
    assert torch.equal(smem_ops.sum(x, 0), torch.zeros(5, device=device))
    assert smem_ops.sum(x, 1).shape == (0,)
    assert smem_ops.sum(x, 1, keepdim=True).shape == (0, 1)
    assert smem_ops.sum_of_squares(torch.empty(0, dtype=torch.int8, device=device)).dtype == torch.int64
    assert smem_ops.dot(torch.empty(0, device=device), torch.empty(0, device=device)).item() == 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float16, torch.bfloat16,
                                   torch.float32, torch.float64, torch.complex64], ids=str)
@pytest.mark.parametrize("n", [1, 31, 1000, 100_003])
def test_dot(device, dtype, n):
    a, b = make_tensor((n,), dtype, device), make_tensor((n,), dtype, device)
    out = smem_ops.dot(a, b)
    assert out.dtype == dtype and out.shape == ()
    if dtype.is_floating_point or dtype.is_complex:
        wide = torch.complex128 if dtype.is_complex else torch.float64
        ref = (a.to(wide) * b.to(wide)).sum()
        scale = (a.abs().double().max() * b.abs().double().max()).item()
        torch.testing.assert_close(out.to(wide), ref.to(dtype).to(wide), rtol=2 * eps(dtype),
                                   atol=4 * n * 1.2e-7 * scale + 1e-30)
    else:
        assert out.item() == torch.dot(a.cpu(), b.cpu()).item()  # torch has no integer dot on CUDA


@pytest.mark.parametrize("device", DEVICES)
def test_dot_strided_inputs(device):
    a = make_tensor((3000,), torch.float32, device)[::3]
    b = make_tensor((1000, 2), torch.float32, device)[:, 1]
    torch.testing.assert_close(smem_ops.dot(a, b), torch.dot(a, b), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.complex64], ids=str)
def test_bitwise_repeatable(device, dtype):
    x = make_tensor((3, 70_001), dtype, device)
    for fn in (lambda: smem_ops.sum(x), lambda: smem_ops.sum(x, 1), lambda: smem_ops.sum(x, 0),
               lambda: smem_ops.sum_of_squares(x), lambda: smem_ops.dot(x[0], x[1])):
        first = fn()
        for _ in range(3):
            assert torch.equal(fn(), first)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16],
                         ids=str)
def test_infinite_sums_stay_infinite(device, dtype):
    """An infinity (or an overflow) early in a thread's compensated sum: inf, as torch says,
    not the NaN that inf - inf in the compensation would make. Every kernel: flat, split rows,
    warp rows, columns (fp16 and bf16: the 8-byte columns of 300 and 128), short columns (a
    thread per vector, and a warp per slab)."""
    big = torch.finfo(dtype).max
    for shape, dim in ((((1 << 20) + 3,), None), ((3, 70_001), 1), ((500, 1000), 1),
                       ((3001, 300), 0), ((4, 2000, 128), 1), ((6000, 8, 8), 1),
                       ((1200, 33, 8), 1)):
        x = make_tensor(shape, dtype, device)
        first = (0,) * len(shape)
        for v in (math.inf, -math.inf):
            y = x.clone()
            y[first] = v
            want = y.double().sum(dim) if dim is not None else y.double().sum()
            got = smem_ops.sum(y, dim) if dim is not None else smem_ops.sum(y)
            want = want.to(dtype)
            assert not got.isnan().any()
            assert torch.equal(got.isinf(), want.isinf()) and want.isinf().any()
            assert torch.equal(got[want.isinf()], want[want.isinf()])  # the same signs
        # An overflow, then many more finite adds: four maxima (they overflow in one 16-byte
        # vector's sum), and a whole reduced line of 0.15 max (each vector's sum is finite, the
        # thread's running sum overflows).
        at = [0] * len(shape)
        for line, value in ((slice(0, 4), big), (slice(None), 0.15 * big)):
            y = x.clone()
            at[dim or 0] = line
            y[tuple(at)] = value
            got = smem_ops.sum(y, dim) if dim is not None else smem_ops.sum(y)
            assert got.view(-1)[0].item() == math.inf


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64],
                         ids=str)
def test_sums_of_negative_zeros_are_positive_zero(device, dtype):
    """A sum of -0s is +0, as torch's (whose sums start from +0): every CUDA kernel starts its
    partial sums at +0 and never drops that start (block_sum's last tree leaves out the lanes
    above its warps only because their +0 changes no such total). Every kernel: flat sums (the
    block, the vector runs, the generic runs), rows (the groups, below and past a warp's batch;
    the vector rows one vector a thread and looping, in blocks of 128 and 512 threads; the split
    runs; the block rows), columns (scalar and vectorized, whole and split; short ones a thread
    per vector of columns, per column, and a warp per slab). Which kernel a shape takes depends on
    the SM count; these are those of an H100 or H200 (132 SMs)."""
    for shape, dim in (((7,), None), ((4096,), None), ((1 << 20,), None), (((1 << 20) + 3,), None),
                       ((1001, 8), 1), ((4000, 512), 1), ((3, 260), 1), ((600, 1000), 1),
                       ((300, 5000), 1), ((4, (1 << 18) + 1), 1), ((400, 8191), 1),
                       ((3001, 300), 0), ((20, 30), 0), ((100, 128), 0), ((257, 144), 0),
                       ((4, 2000, 128), 1), ((6000, 3, 8), 1), ((6007, 5, 7), 1),
                       ((1200, 33, 8), 1)):
        x = torch.full(shape, -0.0, dtype=dtype, device=device)
        got = smem_ops.sum(x, dim) if dim is not None else smem_ops.sum(x)
        want = x.sum(dim) if dim is not None else x.sum()
        assert torch.equal(got, want)  # -0 == +0: the signs are asked below
        assert torch.equal(got.signbit(), want.signbit()), (shape, dim)
        assert not got.signbit().any(), (shape, dim)


@pytest.mark.parametrize("device", DEVICES)
def test_fp32_precision_constant(device):
    # The seeds' case, scaled to the CPU budget: n copies of 1.23 in fp32.
    n = 10_000_000 if device == "cpu" else 100_000_000
    x = torch.full((n,), 1.23, dtype=torch.float32, device=device)
    exact = n * float(torch.tensor(1.23, dtype=torch.float32))
    ours = abs(smem_ops.sum(x).item() - exact) / exact
    theirs = abs(torch.sum(x).item() - exact) / exact
    assert ours <= max(theirs, 1e-7), (ours, theirs)


@pytest.mark.parametrize("device", DEVICES)
def test_fp32_precision_random(device):
    x = torch.rand(3_000_001, device=device)
    exact = x.double().sum().item()
    ours = abs(smem_ops.sum(x).item() - exact) / exact
    theirs = abs(torch.sum(x).item() - exact) / exact
    assert ours <= max(2 * theirs, 1e-7), (ours, theirs)


@requires_cuda
@pytest.mark.slow
def test_cuda_over_2_31_elements():
    n = 2**31 + 77
    x = torch.ones(n, dtype=torch.int8, device="cuda")
    x[-5:] = 3
    assert smem_ops.sum(x).item() == n + 10
    assert smem_ops.sum_of_squares(x).item() == n + 40
    rows = x[: 2**31 + 64].view(2, -1)  # each row > 2^30, two rows: row offsets pass 2^31
    assert smem_ops.sum(rows, 1).tolist() == [rows.shape[1]] * 2
    # short columns (a thread per 16 columns) whose last slab lies past 2^31
    x[2**31 + 63] = 5
    cols = smem_ops.sum(x[: 2**31 + 64].view(-1, 4, 16), 1)
    assert cols.shape == (2**25 + 1, 16) and cols[-1, -1].item() == 8
    cols[-1, -1] = 4
    assert (cols == 4).all()
    del x, rows, cols
    torch.cuda.empty_cache()


@requires_cuda
@pytest.mark.parametrize("variant", ["atomic", "global_tree", "static_smem", "dynamic_smem",
                                     "warp_shuffle", "final"])
@pytest.mark.parametrize("n", [1, 511, 513, 262_145, 3_000_017])
def test_ladder_variants(variant, n):
    assert variant in smem_ops.variants("reduce")
    x = torch.rand(n + 3, device="cuda")[3:]  # offset: the final rung's unaligned head
    out = torch.ops.smem._sum_variant(x, variant)
    assert out.shape == () and out.dtype == torch.float32
    exact = x.double().sum().item()
    # the seeds' rungs sum plainly in float: each pass of a tree adds ~eps of relative error,
    # a running float sum up to count * eps
    per_thread = n // (132 * 8 * 256) + 1 if variant in ("dynamic_smem", "warp_shuffle") else 1
    bound = 1e-7 * (math.log2(n + 1) + per_thread + (n if variant == "atomic" else 0)) * 2
    assert abs(out.item() - exact) <= bound * exact + 1e-6, (out.item(), exact)
    if variant == "final":
        assert torch.equal(out, smem_ops.sum(x))
    if variant != "atomic":  # the seeds' atomics add in arrival order
        assert torch.equal(torch.ops.smem._sum_variant(x, variant), out)


@requires_cuda
def test_ladder_errors():
    with pytest.raises(ValueError, match="unknown variant"):
        torch.ops.smem._sum_variant(torch.ones(4, device="cuda"), "fastest")
    with pytest.raises(TypeError, match="float32"):
        torch.ops.smem._sum_variant(torch.ones(4, device="cuda", dtype=torch.float64), "atomic")
    assert torch.ops.smem._sum_variant(torch.ones(0, device="cuda"), "static_smem").item() == 0
