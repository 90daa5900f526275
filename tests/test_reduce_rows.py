"""The row kernels of sum and sum_of_squares (and dot's split rows) against float64 references on
CPU and CUDA: long rows split over blocks (contiguous runs, vector runs, the interleaved kernel)
and whole rows a block each (the vector rows), with the kernel each takes."""

import math
import re

import pytest
import torch

import smem_ops

from conftest import DEVICES, cuda_kernels, eps, make_tensor, requires_cuda


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
    ulp = eps(dtype)
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


def _check_row_sums(x):
    """smem's sums and sums of squares of x's rows: large values at both ends of every row (a row
    that lost its first or last elements misses the bound by far), a float64 reference,
    repeatable bits, and a NaN and an infinity in rows of their own."""
    rows, n = x.shape
    dtype = x.dtype
    if n >= 4:
        x[..., :2] = torch.tensor([100.0, -200.0])
        x[..., -2:] = torch.tensor([300.0, 400.0])
    ulp = eps(dtype)
    ref = x.double().sum(-1)
    out = smem_ops.sum(x, -1)
    assert out.dtype == dtype and out.shape == (rows,)
    bound = ulp * ref.abs() + 4 * 1.2e-7 * x.abs().double().sum(-1)
    assert ((out.double() - ref).abs() <= bound).all()
    assert torch.equal(smem_ops.sum(x, -1), out)
    small = x * 0.01  # squares of a few thousand in all: no fp16 overflow
    ref_sq = small.double().square().sum(-1)
    sq = smem_ops.sum_of_squares(small, -1)
    assert ((sq.double() - ref_sq).abs() <= (ulp + 4 * 1.2e-7) * ref_sq + 1e-30).all()
    if rows >= 3 and n >= 4:
        x[1, n // 2] = math.nan
        x[2, -3] = math.inf
        want = x.double().sum(-1).to(dtype)
        torch.testing.assert_close(smem_ops.sum(x, -1), want, equal_nan=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [(600, 4104), (500, 8192), (420, 16384), (450, 20008),
                                   (300, 5000), (1, 4096), (1, 64), (1, 1000), (0, 8192), (5, 0)],
                         ids=str)
def test_whole_vector_rows(device, dtype, shape):
    """Rows of whole 16-byte vectors, stored aligned, that are not split (on CUDA the vector rows,
    a block of 512 threads per row, whose batch of loads is 8192 elements: 2048 vectors of fp32,
    1024 of 16-bit types; single short rows take blocks of 128 threads (64 and 1000 elements) or
    256 (16-bit 4096)). Rows too many to split (420-600; 396 split on 132 SMs): a partial batch
    only (4104 elements; for 16-bit types thread 0 alone takes a whole batch of its 2 loads), one
    whole batch (8192), two (16384), two and a partial one (20008). Rows too short to split
    (5000), and single rows, down to fewer vectors than threads (64 elements). No rows and empty
    rows are answered on the host. The checks of _check_row_sums."""
    _check_row_sums(make_tensor(shape, dtype, device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("shape", [(1001, 4), (1001, 8), (999, 32), (777, 64), (901, 128),
                                   (513, 136), (300, 256), (4000, 260), (700, 504), (4000, 504),
                                   (600, 512), (4000, 512), (3000, 512), (4000, 1000),
                                   (3000, 1000), (600, 516),
                                   (600, 1028),
                                   (600, 1032), (600, 2052), (1100, 1000), (1100, 2040),
                                   (1100, 4088), (257, 1000), (129, 1024), (65, 4096), (2, 32),
                                   (3, 4096), (3, 260), (3, 520)], ids=str)
def test_short_vector_rows(device, dtype, shape):
    """Short rows (at most 4096 elements) of whole 16-byte vectors, stored aligned, more than one.
    On CUDA, the vector groups, so many lanes a row that each has at most 2 vectors a batch: fp32
    rows of 4, 8, 32, 64, 128, 136 and 256 take 1, 1, 4, 8, 16, 32 and 32 lanes; 8 warps' rows a
    block; row counts that leave groups of the last warp without a row; lanes with a partial batch
    (136); 16-bit rows of 4 elements are not whole vectors and take the warp kernel. Rows past a
    warp's batch (65 to 128 vectors) take the groups only where there are more rows than one and
    a half waves of blocks of 128 threads (3168 on 132 SMs): fp32 rows of 260, 504 and 512 and
    16-bit rows of 1000 in 4000 rows, a whole batch and then a partial one (a whole one at 512);
    on 132 SMs, fewer such rows (fp32 260, 504 and 512 in 3, 600, 700 or 3000 rows, 16-bit 520,
    1000 and 1024 in 3, 1100, 129 or 3000) take the vector rows, 128 threads, a vector a thread
    (from 65 vectors: the last warps have none; 3000 rows are more than one wave). Longer rows
    take the vector rows, blocks of about 2 vectors a thread: 128 threads (fp32 rows of 516,
    1000 and 1024, also in 3000 rows; 16-bit 1032 and 2040), 256
    (fp32 1028, 1032 and 2040; 16-bit 4088 and 4096) and 512 (fp32 2052, 4088 and 4096), where
    the last threads have one vector, and at 129, 257 and 513 vectors all but the first. fp16 and
    bf16 rows of 516, 1028 and 2052 are not whole vectors: the warp kernel. The checks of
    _check_row_sums."""
    _check_row_sums(make_tensor(shape, dtype, device))


@requires_cuda
def test_whole_rows_kernel_choice():
    """Which kernel rows that are not split take: for aligned rows of whole 16-byte vectors of
    fp32, fp16 and bf16 (sums and sums of squares), the vector rows (many rows, one short one, or
    short rows past 128 vectors, in blocks of about 2 vectors a thread: 128, 256 or 512 threads,
    with the boundaries checked; rows of 65 to 128 vectors too, up to one and a half waves of
    blocks (the boundary checked), and
    single rows of up to 128, one vector a thread, a kernel argument of its own) or the
    vector groups (short rows of up to 64 vectors, and of up to 128 past that); the
    interleaved or warp kernel for rows off alignment or not whole vectors, fp64 rows and dots. A
    test that only checked values would pass on any."""

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
    # short rows: the groups up to 64 vectors, and up to 128 where the rows are more than one and
    # a half waves of blocks of 128 threads (kVectorRowMaxHalfWaves / 2 waves of
    # kVectorRowMinThreads, as tuning/reduce.h has them; a wave: as many as are resident at once,
    # which their launch bounds leave to the SM's thread limit; 3168 rows on 132 SMs; 200 rows
    # are within one wave from 25 SMs of 8 blocks); the vector rows past them, in blocks of 128,
    # 256 or 512 threads, about 2 vectors each, where rows of at most 128 vectors take one a
    # thread (kOneVector, the kernel's sixth argument; threads None: the groups)
    props = torch.cuda.get_device_properties()
    wave = props.multi_processor_count * (props.max_threads_per_multi_processor // 128)
    crossover = 3 * wave // 2
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        width = 128 // torch.finfo(dtype).bits  # elements per 16-byte vector
        for rows, nvec, threads in ((1001, 8, None), (3, 64, None), (5000, 64, None),
                                    (3, 65, 128), (200, 128, 128), (1, 128, 128), (1, 4, 128),
                                    (crossover, 65, 128), (crossover + 1, 65, None),
                                    (crossover, 128, 128), (crossover + 1, 128, None),
                                    (5000, 65, None),
                                    (5000, 128, None), (3, 129, 128), (5000, 256, 128),
                                    (5000, 257, 256), (5000, 512, 256), (5000, 513, 512),
                                    (5000, 1024, 512)):
            if nvec * width > 4096:  # past the short rows (16-bit rows of 513 vectors and more)
                continue
            x = make_tensor((rows, nvec * width), dtype, "cuda")
            names = launched(lambda x=x: smem_ops.sum(x, -1))
            if threads is None:
                assert "reduce_vector_groups_kernel" in names, (dtype, rows, nvec, names)
            else:
                one = "(true|1)" if nvec <= 128 else "(false|0)"
                block = rf"reduce_vector_rows_kernel<[^,<>]+, {threads}, \d+, \d+, \w+, {one},"
                assert re.search(block, names), (dtype, rows, nvec, threads, names)
    odd = make_tensor((1001, 30), torch.float32, "cuda")
    names = launched(lambda: smem_ops.sum(odd, -1))
    assert "reduce_rows_kernel" in names and "reduce_vector_groups_kernel" not in names, names
    one = make_tensor((4096,), torch.float32, "cuda")
    assert "reduce_vector_rows_kernel" in launched(lambda: smem_ops.sum(one))
    names = launched(lambda: smem_ops.dot(one, one))
    assert "reduce_rows_kernel" in names and "reduce_vector_rows_kernel" not in names, names


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
@pytest.mark.parametrize("rows,n", [((1 << 18) + 1, 8192), ((1 << 25) + 1, 64)], ids=str)
def test_cuda_vector_rows_over_2_31_elements(rows, n):
    """bf16 rows of whole vectors, too many to split, past 2^31 elements (2^31 + n; the vector
    rows, and for rows of 64 the vector groups; byte offsets past 2^32): the first, a middle and
    the last row's values land in their own outputs. The kernels index 16-byte vectors, under
    2^29 here, so this checks the launches and the 64-bit addresses, not a 32-bit vector index
    (which would pass here)."""
    x = torch.zeros(rows, n, dtype=torch.bfloat16, device="cuda")
    x[0, :8] = -7.0
    x[-1, -8:] = 1000.0
    x[rows // 2, n // 2] = 3.0
    out = smem_ops.sum(x, -1)
    assert out[0].item() == -56.0 and out[-1].item() == 8000.0 and out[rows // 2].item() == 3.0
    assert out.double().abs().sum().item() == 8059.0  # nothing anywhere else
    del x, out
    torch.cuda.empty_cache()
