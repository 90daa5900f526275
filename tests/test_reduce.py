"""sum, sum_of_squares, dot against torch (and float64 references) on CPU and CUDA."""

import math
import re

import pytest
import torch

import smem_ops

from conftest import DEVICES, cuda_kernels, make_tensor, requires_cuda

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
    # scalar and vectorized columns; unsplit block-per-row sums of 4097..8192 (fp32: 8 loads
    # in flight per thread, a guarded batch where the row ends mid-batch)
    ((3, 3001, 130), 1), ((4, 2000, 128), 1), ((400, 8191), 1), ((300, 5000), -1),
]


def _eps(dtype):
    if dtype.is_complex:
        dtype = torch.float32 if dtype == torch.complex64 else torch.float64
    return torch.finfo(dtype).eps


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
    torch.testing.assert_close(out.to(ref.dtype), ref, rtol=2 * _eps(ref.dtype), atol=atol)


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
                               rtol=2 * _eps(dtype) if exact_dtype(dtype) is False else 0,
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
        torch.testing.assert_close(out.to(wide), ref.to(dtype).to(wide), rtol=2 * _eps(dtype),
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
@pytest.mark.parametrize("shape", [((1 << 20) + 3,), (4, (1 << 18) + 1), (3, 2, 1 << 17),
                                   (64, (1 << 16) + 1), ((1 << 24) + 3,), (2, (1 << 23) + 5),
                                   (1 << 20,), (1 << 24,), (2, 1 << 23), ((1 << 20) + 4,),
                                   (2, (1 << 23) + 4), (3, 1 << 23)], ids=str)
@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "offset"])
def test_split_float_rows(device, shape, offset):
    """fp32 rows long enough to be split over many blocks (contiguous runs on CUDA, whose
    partials pass through slots; tickets taken as the blocks start where the grid is one row
    or resident at once, as they finish where it is not), stored 16-byte aligned or one
    element off it, which moves every row's 16-byte phase. Rows of whole vectors stored aligned
    take the vector runs (one per 128 KB, at least 4 blocks per SM: the 64 MB row's 512 runs
    start at once; runs whose last batch of loads is partial: the rows of 2^20 + 4 and 2^23 + 4,
    which also end in a shorter run; 768 runs of the three 32 MB rows, more than are resident,
    take their tickets at the end); the rest the generic runs with their scalar heads and
    tails (on a 132-SM GPU, which holds 3 of those blocks of 512 per SM, the 64 rows and the
    two-row shapes take their tickets at the end; one run per 64 KB: the 64 MB offset row, 1024
    runs). Each against a float64 reference, with repeatable bits and no slot left holding a
    partial for the next call (new values, same shape); sums of squares and the dot (which keeps
    the generic runs) too."""
    numel = math.prod(shape)

    def stored_at_offset(t):  # t's values, `offset` elements into a fresh buffer
        return torch.empty(numel + offset, device=device)[offset:].view(t.shape).copy_(t)

    x = make_tensor(shape, torch.float32, device)
    # Large values at both ends of every row: a row that lost its first or last elements
    # misses the bound by far (the bound on a 16M row is about 6).
    x[..., :4] = torch.tensor([1e3, -2e3, 3e3, 4e3])
    x[..., -4:] = torch.tensor([5e3, -6e3, 7e3, 8e3])
    x = stored_at_offset(x)
    for y in (x, stored_at_offset(2 - x)):  # new values: no slot may keep an old partial
        ref = y.double().sum(-1)
        out = smem_ops.sum(y, -1)
        assert out.dtype == torch.float32
        assert ((out.double() - ref).abs() <= 4 * 1.2e-7 * y.abs().double().sum(-1) + 1e-30).all()
        assert torch.equal(smem_ops.sum(y, -1), out)
    sq = smem_ops.sum_of_squares(x, -1)
    assert ((sq.double() - x.double().square().sum(-1)).abs()
            <= 4 * 1.2e-7 * x.double().square().sum(-1)).all()
    flat = x.flatten()
    rev = stored_at_offset(flat.flip(0))  # the same 16-byte phase as flat
    d = smem_ops.dot(flat, rev)
    ref_d = (flat.double() * rev.double()).sum()
    assert (d.double() - ref_d).abs() <= 4 * 1.2e-7 * (flat.double() * rev.double()).abs().sum()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [((1 << 21) + 3,), (5, (1 << 18) + 1), (3, (1 << 23) + 1),
                                   ((1 << 21) + 8,), (3, 1 << 23)], ids=str)
def test_split_half_rows(device, dtype, shape):
    """16-bit rows split over blocks (float partials through slots on CUDA). Rows of an odd
    length: fp16 sums in contiguous runs, whose blocks take their tickets as they start, or for
    (3, 2^23 + 1), more blocks than are resident, as they finish; bf16 in the interleaved
    kernel. Rows of whole 16-byte vectors: the vector runs of both dtypes, the row of 2^21 + 8
    with a partial last batch of loads in its runs. Within one output ulp of a float64 sum,
    repeatable bits, and nothing left over for the next call. The same for sums of squares.
    Large values at both ends of every row: a row that lost its first or last elements misses
    the bound by far."""
    x = make_tensor(shape, dtype, device)
    x[..., :2] = torch.tensor([100.0, -200.0])
    x[..., -2:] = torch.tensor([300.0, 400.0])
    ulp = _eps(dtype)
    for y in (x, -0.5 * x.flip(-1)):  # sums of a few thousand: no fp16 overflow
        ref = y.double().sum(-1)
        out = smem_ops.sum(y, -1)
        assert out.dtype == dtype
        bound = ulp * ref.abs() + 4 * 1.2e-7 * y.abs().double().sum(-1)
        assert ((out.double() - ref).abs() <= bound).all()
        assert torch.equal(smem_ops.sum(y, -1), out)
    # squares summed in float: the ends' 100-1600 and the rest's ~1e-4 each, totals of a few
    # thousand (fp16 holds them)
    small = x * 0.01
    small[..., :2] = torch.tensor([10.0, -20.0])
    small[..., -2:] = torch.tensor([30.0, 40.0])
    sq = smem_ops.sum_of_squares(small, -1)
    ref_sq = small.double().square().sum(-1)
    assert sq.dtype == dtype
    assert ((sq.double() - ref_sq).abs() <= (ulp + 4 * 1.2e-7) * ref_sq).all()
    assert torch.equal(smem_ops.sum_of_squares(small, -1), sq)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [(600, 4104), (500, 8192), (450, 20008), (1, 4096), (3, 64),
                                   (0, 8192), (5, 0)], ids=str)
def test_whole_vector_rows(device, dtype, shape):
    """Rows too many to split, of whole 16-byte vectors, stored aligned (on CUDA the vector rows,
    a block of 512 threads per row): a partial batch of loads only (4104 elements), whole batches
    (fp32 8192: one; 16-bit: two), two whole batches and a partial one (20008), one row, rows of
    less than a vector per thread, no rows and empty rows. Large values at both ends of every row
    (a row that lost its first or last elements misses the bound by far), a float64 reference,
    repeatable bits, sums of squares, and a NaN and an infinity in rows of their own."""
    x = make_tensor(shape, dtype, device)
    if shape[1] >= 8:
        x[..., :2] = torch.tensor([100.0, -200.0])
        x[..., -2:] = torch.tensor([300.0, 400.0])
    ulp = _eps(dtype)
    ref = x.double().sum(-1)
    out = smem_ops.sum(x, -1)
    assert out.dtype == dtype and out.shape == shape[:1]
    bound = ulp * ref.abs() + 4 * 1.2e-7 * x.abs().double().sum(-1)
    assert ((out.double() - ref).abs() <= bound).all()
    assert torch.equal(smem_ops.sum(x, -1), out)
    small = x * 0.01  # squares of a few thousand in all: no fp16 overflow
    ref_sq = small.double().square().sum(-1)
    sq = smem_ops.sum_of_squares(small, -1)
    assert ((sq.double() - ref_sq).abs() <= (ulp + 4 * 1.2e-7) * ref_sq + 1e-30).all()
    if shape[0] >= 3 and shape[1] >= 8:
        x[1, shape[1] // 2] = math.nan
        x[2, -3] = math.inf
        want = x.double().sum(-1).to(dtype)
        torch.testing.assert_close(smem_ops.sum(x, -1), want, equal_nan=True)


@requires_cuda
def test_whole_rows_kernel_choice():
    """Which kernel whole rows take: the vector rows for aligned rows of whole 16-byte vectors of
    fp32, fp16 and bf16 (sums and sums of squares), the interleaved kernel for rows off alignment
    or not whole vectors, fp64 rows and dots. A test that only checked values would pass on any."""

    def launched(fn):
        return " ".join(cuda_kernels(fn))

    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = make_tensor((600, 8192), dtype, "cuda")
        assert "reduce_vector_rows_kernel" in launched(lambda x=x: smem_ops.sum(x, -1))
        assert "reduce_vector_rows_kernel" in launched(lambda x=x: smem_ops.sum_of_squares(x, -1))
        odd = make_tensor((600, 8190 + (dtype == torch.float32)), dtype, "cuda")
        names = launched(lambda odd=odd: smem_ops.sum(odd, -1))
        assert "reduce_rows_kernel" in names and "reduce_vector_rows_kernel" not in names, names
    off = make_tensor((600 * 8192 + 1,), torch.float32, "cuda")[1:].view(600, 8192)
    names = launched(lambda: smem_ops.sum(off, -1))
    assert "reduce_rows_kernel" in names and "reduce_vector_rows_kernel" not in names, names
    wide = make_tensor((600, 8192), torch.float64, "cuda")
    assert "reduce_vector_rows_kernel" not in launched(lambda: smem_ops.sum(wide, -1))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("n", [(1 << 21) + 5, (1 << 21) + 8], ids=["odd", "vectors"])
def test_split_float_rows_non_finite(device, dtype, n):
    """NaN and infinities in different blocks of a split row (on CUDA, rows of whole vectors take
    the vector runs, the others the generic runs or the interleaved kernel): torch's answer."""
    for spots in ([(7, math.nan)], [(n - 1, math.inf)], [(3, math.inf), (n - 2, -math.inf)],
                  [(1 << 20, -math.inf)], [(5, math.nan), (n // 2, math.inf)]):
        x = make_tensor((n,), dtype, device)
        for at, v in spots:
            x[at] = v
        want = x.double().sum().to(dtype)
        torch.testing.assert_close(smem_ops.sum(x), want, equal_nan=True)
        torch.testing.assert_close(smem_ops.sum(torch.stack([x, x.flip(0)]), 1),
                                   torch.stack([want, want]), equal_nan=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64],
                         ids=str)
@pytest.mark.parametrize("shape,dim", [((20000, 16), 0), ((4, 2000, 128), 1), ((3, 3001, 130), 1),
                                       ((1, 70_000, 24), 1), ((2, 9000, 1000), 1),
                                       ((16, 4000, 64), 1), ((3, 2100, 132), 1)], ids=str)
def test_split_float_columns(device, dtype, shape, dim):
    """Long columns split over blocks (on CUDA: vectorized and scalar columns, 8 and 32 lanes,
    fp32's 8 loads in flight with 32 lanes, a guarded batch where a split's rows end, and a
    tile whose last lanes have no column): a float64 reference (float64 input: torch's own
    sum), repeatable bits, nothing left over for the next call (new values, and a split row sum
    in between, which uses the same counters' workspace), and NaN and infinities in different
    splits' rows."""
    # float64 with 53-bit significands: a kernel that narrowed its loads would fail
    x = (torch.randn(shape, dtype=dtype, device=device) if dtype == torch.float64
         else make_tensor(shape, dtype, device))
    ulp = _eps(dtype)  # of the output dtype
    acc_eps = 2.3e-16 if dtype == torch.float64 else 1.2e-7  # of the accumulate type
    for y in (x, -0.5 * x.flip(dim)):
        ref = y.double().sum(dim)
        out = smem_ops.sum(y, dim)
        assert out.dtype == dtype
        bound = ulp * ref.abs() + 4 * acc_eps * y.abs().double().sum(dim)
        assert ((out.double() - ref).abs() <= bound).all()
        assert torch.equal(smem_ops.sum(y, dim), out)
        flat = y.flatten()  # a split row in between
        assert (smem_ops.sum(flat).double() - flat.double().sum()).abs() <= (
            ulp * flat.double().sum().abs() + 4 * acc_eps * flat.abs().double().sum())
    n = shape[dim]
    for spots in ([(7, math.nan)], [(n - 1, math.inf)], [(3, math.inf), (n - 2, -math.inf)]):
        y = x.clone()
        for at, v in spots:
            y.select(dim, at).select(-1, 1).fill_(v)  # column 1 of every outer index
        want, got = y.double().sum(dim).to(dtype), smem_ops.sum(y, dim)
        special = ~want.isfinite()
        assert torch.equal(got.isnan(), want.isnan())
        assert torch.equal(got[special].nan_to_num(), want[special].nan_to_num())
        assert got[~special].isfinite().all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_infinite_sums_stay_infinite(device, dtype):
    """An infinity (or an overflow) early in a thread's compensated sum: inf, as torch says,
    not the NaN that inf - inf in the compensation would make. Every kernel: flat, split rows,
    warp rows, columns."""
    big = torch.finfo(dtype).max
    for shape, dim in ((((1 << 20) + 3,), None), ((3, 70_001), 1), ((500, 1000), 1),
                       ((3001, 300), 0), ((4, 2000, 128), 1)):
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


def _column_tree_reference(x):
    """Column sums of a 2-D x as the CPU kernel defines them: float32 partial sums over a tree
    that halves the rows (left half floor(n/2)) down to leaves of 32 rows, each summed in row order."""
    def tree(r0, r1):
        if r1 - r0 <= 32:
            acc = torch.zeros(x.shape[1], dtype=torch.float32)
            for r in range(r0, r1):
                acc = acc + x[r].float()
            return acc
        mid = r0 + (r1 - r0) // 2
        return tree(r0, mid) + tree(mid, r1)
    return tree(0, x.shape[0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(5000, 37), (3001, 300), (70, 9000)], ids=str)
def test_cpu_column_sums_follow_one_tree(dtype, shape):
    # Column tiles with fewer tiles than threads run subtrees of the row tree in parallel; the
    # bits must be those of the whole tree, whatever the thread count.
    x = make_tensor(shape, dtype, "cpu")
    ref = _column_tree_reference(x).to(dtype)
    threads = torch.get_num_threads()
    try:
        for n in sorted({1, 2, threads}):
            torch.set_num_threads(n)
            assert torch.equal(smem_ops.sum(x, 0), ref), n
    finally:
        torch.set_num_threads(threads)


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
    del x, rows
    torch.cuda.empty_cache()


@requires_cuda
def test_split_rows_kernel_choice():
    """Which kernel a split row's sum takes: the vector runs for aligned rows of whole 16-byte
    vectors of fp32, fp16 and bf16 (sums and sums of squares), the generic runs for fp32 rows off
    alignment or of odd length and for fp32 dots, the fp16 runs for odd fp16 rows, and the
    interleaved kernel for odd bf16 rows. A test that only checked values would pass on any."""

    def launched(fn):
        return " ".join(cuda_kernels(fn))

    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = make_tensor((2, (1 << 21) + 8), dtype, "cuda")
        assert "reduce_vector_runs_kernel" in launched(lambda x=x: smem_ops.sum(x, -1))
        assert "reduce_vector_runs_kernel" in launched(lambda x=x: smem_ops.sum_of_squares(x))
        odd = make_tensor(((1 << 21) + 3,), dtype, "cuda")
        names = launched(lambda odd=odd: smem_ops.sum(odd))
        assert "reduce_vector_runs_kernel" not in names
        want = {torch.float32: "reduce_row_runs_kernel", torch.float16: "reduce_half_row_runs_kernel",
                torch.bfloat16: "reduce_rows_kernel"}[dtype]
        assert want in names, names
    x = make_tensor(((1 << 21) + 9,), torch.float32, "cuda")[1:]  # whole vectors, off alignment
    assert "reduce_row_runs_kernel" in launched(lambda: smem_ops.sum(x))
    y = make_tensor(((1 << 21) + 8,), torch.float32, "cuda")
    assert "reduce_row_runs_kernel" in launched(lambda: smem_ops.dot(y, y))


@requires_cuda
@pytest.mark.slow
def test_cuda_vector_runs_over_2_31_elements():
    """fp32 and bf16 rows of whole 16-byte vectors past 2^31 elements (the vector runs; byte
    offsets past 2^32): no run lost, one row or two. The kernel counts 16-byte vectors, 2^29 + 64
    and 2^28 + 32 here, so this checks the launch's arithmetic and the 64-bit addresses, not a
    32-bit vector index (which would pass here)."""
    n = 2**31 + 256  # 2^31 + 256 is a float: one ulp there is 256; a lost run is 2^19
    x = torch.ones(n, device="cuda")
    assert abs(smem_ops.sum(x).item() - n) <= 256
    assert abs(smem_ops.sum_of_squares(x).item() - n) <= 256
    assert (smem_ops.sum(x.view(2, -1), 1) - n // 2).abs().max().item() <= 128
    del x
    # bf16 cannot tell 2^31 ones from fewer: zeros with large values at both ends instead
    x = torch.zeros(n, dtype=torch.bfloat16, device="cuda")
    x[:8] = -7.0
    x[-8:] = 1000.0
    assert smem_ops.sum(x).item() == 7936.0  # 8000 - 56 = 7944, rounded to bf16
    assert smem_ops.sum(x.view(2, -1), 1).tolist() == [-56.0, 8000.0]
    del x
    torch.cuda.empty_cache()


@requires_cuda
@pytest.mark.slow
def test_cuda_vector_rows_over_2_31_elements():
    """bf16 rows of whole vectors, too many to split, past 2^31 elements (the vector rows; byte
    offsets past 2^32): the first and the last row's values land in their own outputs."""
    rows = (1 << 18) + 1  # x 8192 = 2^31 + 8192 elements
    x = torch.zeros(rows, 8192, dtype=torch.bfloat16, device="cuda")
    x[0, :8] = -7.0
    x[-1, -8:] = 1000.0
    x[rows // 2, 100] = 3.0
    out = smem_ops.sum(x, -1)
    assert out[0].item() == -56.0 and out[-1].item() == 8000.0 and out[rows // 2].item() == 3.0
    assert out.double().abs().sum().item() == 8059.0  # nothing anywhere else
    del x, out
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
