"""The column kernels of sum and sum_of_squares against float64 references on CPU and CUDA: long
columns split over blocks, the fp16 and bf16 kernels (8-byte, 16-byte and scalar vectors) with
their special values, many short slabs a thread per vector or a warp per slab (with the kernel each
takes), and the CPU's column tree."""

import math

import pytest
import torch

import smem_ops

from conftest import DEVICES, cuda_kernels, eps, make_tensor, requires_cuda


def assert_compensated_close(out, ref, magnitude, dtype):
    """out (of dtype) within one rounding of the float64 reference ref, plus 4 ulps of the
    accumulate type (fp64 for fp64, else fp32) times magnitude, the sum of the terms' sizes."""
    acc_eps = 2.3e-16 if dtype == torch.float64 else 1.2e-7
    bound = eps(dtype) * ref.abs() + 4 * acc_eps * magnitude
    assert ((out.double() - ref).abs() <= bound).all()


def assert_same_specials(got, want):
    """NaN where want is NaN, the same infinities, finite elsewhere; returns where want is not
    finite."""
    special = ~want.isfinite()
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(got[special].nan_to_num(), want[special].nan_to_num())
    assert got[~special].isfinite().all()
    return special


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
    for y in (x, -0.5 * x.flip(dim)):
        out = smem_ops.sum(y, dim)
        assert out.dtype == dtype
        assert_compensated_close(out, y.double().sum(dim), y.abs().double().sum(dim), dtype)
        assert torch.equal(smem_ops.sum(y, dim), out)
        flat = y.flatten()  # a split row in between
        assert_compensated_close(smem_ops.sum(flat), flat.double().sum(),
                                 flat.abs().double().sum(), dtype)
    n = shape[dim]
    for spots in ([(7, math.nan)], [(n - 1, math.inf)], [(3, math.inf), (n - 2, -math.inf)]):
        y = x.clone()
        for at, v in spots:
            y.select(dim, at).select(-1, 1).fill_(v)  # column 1 of every outer index
        assert_same_specials(smem_ops.sum(y, dim), y.double().sum(dim).to(dtype))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [(2, 3000, 128), (5000, 132), (3, 700, 1004), (4100, 260),
                                   (200, 256), (3, 100, 1004), (600, 64, 128)], ids=str)
@pytest.mark.parametrize("offset", [0, 4, 2])
def test_half_columns(device, dtype, shape, offset):
    """fp16 and bf16 sums and sums of squares over columns of 128 or more (on CUDA: 8-byte
    vectors of 4 columns, split (the first four shapes) and whole (the last three: short
    columns, or 600 tiles), from a start 16-byte aligned (offset 0) or only 8-byte aligned (4
    elements in), and the scalar kernel where a start is 4-byte aligned (2 elements in); rows
    of 132, 1004 and 260 columns are not whole 16-byte vectors): a float64 reference,
    repeatable bits, and NaN and infinities in one column."""
    n = math.prod(shape)
    x = make_tensor((n + offset,), dtype, device)[offset:].view(shape)
    dim = len(shape) - 2
    for square in (False, True):
        fn = smem_ops.sum_of_squares if square else smem_ops.sum
        terms = x.double() ** 2 if square else x.double()
        out = fn(x, dim)
        assert out.dtype == dtype
        assert_compensated_close(out, terms.sum(dim), terms.abs().sum(dim), dtype)
        assert torch.equal(fn(x, dim), out)
    y = x.clone()
    y.select(dim, 5).select(-1, 120).fill_(math.inf)
    y.select(dim, shape[dim] - 1).select(-1, 121).fill_(math.nan)
    y.select(dim, 0).select(-1, 122).fill_(math.inf)
    y.select(dim, 1).select(-1, 122).fill_(-math.inf)
    special = assert_same_specials(smem_ops.sum(y, dim), y.double().sum(dim).to(dtype))
    assert special.sum() == 3 * (n // (shape[dim] * shape[-1]))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [(1200, 33, 8), (1100, 40, 16), (2000, 70, 4), (1056, 32, 64)],
                         ids=str)
@pytest.mark.parametrize("offset", [0, 1])
def test_slab_warps(device, dtype, shape, offset):
    """Many narrow slabs (on CUDA with 132 SMs, a warp each where the start is aligned and the
    rows are whole vectors: rows of 1 to 16 vectors, one row a lane to several, rows that end
    mid-warp; offset 1, and fp16 and bf16 rows of 4, the other kernels): sums and sums of squares
    against float64, repeatable bits, and an infinity, a NaN and opposite infinities in three
    columns of slab 0's rows."""
    n = math.prod(shape)
    x = make_tensor((n + offset,), dtype, device)[offset:].view(shape)
    for square in (False, True):
        fn = smem_ops.sum_of_squares if square else smem_ops.sum
        terms = x.double() ** 2 if square else x.double()
        out = fn(x, 1)
        assert out.dtype == dtype
        assert_compensated_close(out, terms.sum(1), terms.abs().sum(1), dtype)
        assert torch.equal(fn(x, 1), out)
    y = x.clone()
    last, cols = shape[1] - 1, shape[2]
    y[0, last, cols - 1] = math.inf
    y[0, 1, 0] = math.nan
    y[0, 0, cols // 2] = math.inf
    y[0, last, cols // 2] = -math.inf
    special = assert_same_specials(smem_ops.sum(y, 1), y.double().sum(1).to(dtype))
    assert special.flatten().nonzero().flatten().tolist() == sorted({0, cols // 2, cols - 1})


# fp16/bf16 column kernels with one split and the rows one thread adds, on CUDA: columns, the
# step between a thread's rows (its block's row slices), and the start's offset in elements. The
# 8-byte kernel (32 lanes x 8 slices), the 16-byte one of 8 lanes (x 32 slices; rows under 128
# columns) and the scalar ones (a 2-byte aligned start: 32 x 8, and 8 x 32 for 16 columns).
HALF_COLUMN_KERNELS = {"8-byte": (128, 8, 0), "16-byte": (64, 32, 0), "scalar": (128, 8, 1),
                       "scalar-8-lanes": (16, 32, 1)}


def half_columns(rows, kernel, dtype, device, fill=None):
    """An (outer, rows * step, columns) input for `kernel`, random or `fill`, summed over dim 1;
    returns it and step. On CUDA an outer index per SM: fewer than 2 * kMinRowsPerThread rows a
    thread leave one split by work, and more than a quarter of the SMs with a block leave the
    rows unsplit by launch_cols' rule for a device short of blocks."""
    columns, step, offset = HALF_COLUMN_KERNELS[kernel]
    props = torch.cuda.get_device_properties(device) if device == "cuda" else None
    outer = props.multi_processor_count if props else 1
    n = outer * rows * step * columns
    flat = (make_tensor((n + offset,), dtype, device) if fill is None
            else torch.full((n + offset,), fill, dtype=dtype, device=device))
    return flat[offset:].view(outer, rows * step, columns), step


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("kernel", list(HALF_COLUMN_KERNELS))
def test_half_column_specials_in_one_thread(device, dtype, kernel):
    """Infinities, NaN and overflows among the rows that one thread adds (rows 0, step, ..., 7 *
    step of column 7 of outer index 0 on CUDA): torch's infinity or NaN in that column, finite
    sums in the others, for sums and sums of squares."""
    big, inf, nan = torch.finfo(dtype).max, math.inf, math.nan
    root = math.sqrt(0.66 * big)  # two squares of it overflow
    cases = [(False, {1: -inf}), (False, {0: inf, 1: -inf}), (False, {1: -inf, 7: inf}),
             (False, {0: big, 1: big}), (False, {6: big, 7: big}), (False, {0: -big, 1: -big}),
             (False, {2: nan}), (True, {0: root, 1: root}), (True, {0: big}),
             (True, {1: -inf}), (True, {0: inf, 2: nan})]
    x, step = half_columns(8, kernel, dtype, device)
    for square, rows in cases:
        y = x.clone()
        for r, v in rows.items():
            y[0, r * step, 7] = v
        fn = smem_ops.sum_of_squares if square else smem_ops.sum
        terms = y.double() ** 2 if square else y.double()
        special = assert_same_specials(fn(y, 1), terms.sum(1).to(dtype))
        assert special.flatten().nonzero().flatten().tolist() == [7]


@requires_cuda
@pytest.mark.parametrize("kernel", list(HALF_COLUMN_KERNELS))
def test_half_columns_fallback_has_headroom(kernel):
    """The bf16 column sums fall back to a plain sum (halved) once their compensated sum is not
    finite. With one thread's rows summing to exactly the float maximum (which a plain float sum
    rounds to inf), then -inf: -inf, as float64 says, not inf - inf = NaN (also with a row after
    it). Two maxima cancelled by a third: the maximum (the compensated sum overflows; torch's
    plain sum says inf)."""
    big = torch.finfo(torch.bfloat16).max  # 255 * 2^120
    at_flt_max = {0: big, 1: 255 * 2.0**112, 2: 255 * 2.0**103, 3: 255 * 2.0**103}
    for rows, want in (({**at_flt_max, 4: -math.inf}, -math.inf),
                       ({**at_flt_max, 4: -math.inf, 5: 1.0}, -math.inf),
                       ({0: big, 1: big, 2: -big}, big)):
        x, step = half_columns(8, kernel, torch.bfloat16, "cuda", fill=0.0)
        for r, v in rows.items():
            x[0, r * step, 7] = v
        got = smem_ops.sum(x, 1).flatten()
        assert got[7].item() == want
        assert (got[:7] == 0).all() and (got[8:] == 0).all()


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


@requires_cuda
@pytest.mark.parametrize("shape,kernel", [((1 << 16, 2, 8), "reduce_short_cols_kernel"),
                                          ((6007, 5, 7), "reduce_short_cols_kernel"),
                                          ((8192, 128, 8), "reduce_slab_warps_kernel")], ids=str)
def test_short_column_kernels(shape, kernel):
    """bf16 sums over dim 1 of many slabs take the kernel named, on any GPU of 32 to 1024 SMs:
    64 tiles per row or more a thread per vector (rows of 1 vector and 7 columns, 2 and 5 rows);
    8192 slabs of 128 rows of 1 vector a warp each (8 slabs per SM or more, and one batch a lane
    per slab against a thread's 32, in at most 16 waves of warps: both bounds exact at the ends
    of that range, with the warp kernel's 2 blocks per SM)."""
    x = make_tensor(shape, torch.bfloat16, "cuda")
    names = " ".join(cuda_kernels(lambda: smem_ops.sum(x, 1)))
    assert kernel in names, names
    assert_compensated_close(smem_ops.sum(x, 1), x.double().sum(1), x.abs().double().sum(1),
                             torch.bfloat16)
