"""transpose: bit-exact equality with x.transpose(d0, d1).contiguous()."""

import pytest
import torch

import smem_ops

from conftest import DEVICES, cuda_kernels, make_tensor, requires_cuda

TRANSPOSE_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                    torch.uint16, torch.uint32, torch.uint64, torch.float16, torch.bfloat16,
                    torch.float32, torch.float64, torch.complex32, torch.complex64,
                    torch.complex128, torch.float8_e4m3fn, torch.float8_e5m2]


def make_any(shape, dtype, device):
    if dtype in (torch.uint16, torch.uint32, torch.uint64):
        return torch.randint(0, 60000, shape, device=device).to(dtype)
    if dtype == torch.complex32:
        return torch.randn(shape, dtype=torch.complex64, device=device).to(dtype)
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return torch.randn(shape, device=device).to(dtype)
    return make_tensor(shape, dtype, device)


def same_bits(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.is_contiguous()
    expected = torch.empty_like(a).copy_(b)  # b's values with a's (contiguous) strides
    if a.dtype == torch.bool:
        assert torch.equal(a, expected)
    else:  # compare bits, so NaN payloads and -0.0 count too
        assert torch.equal(a.view(torch.uint8), expected.view(torch.uint8))


def check_transpose(x, dim0=-2, dim1=-1):
    """smem_ops.transpose(x, dim0, dim1) against torch, bit for bit; on CUDA also what is behind
    the kernels that need no tile, on the same geometry: without the interleave kernel (short
    sides then gather or are staged), without either (tiles, cells, skinny), and that with the
    word-cell kernels on 3 blocks, each striding over many tiles (the loop of paired tiles, which
    otherwise needs more tiles than a resident wave). Inputs this small or short-sided take the
    no-tile kernels, which would leave the others untested there."""
    want = x.transpose(dim0, dim1)
    same_bits(smem_ops.transpose(x, dim0, dim1), want)
    if x.is_cuda:
        # the variants transpose their input's last two dims back: the same geometry as want's
        for variant in ("final:gather", "final:staged", "final:few_blocks"):
            same_bits(torch.ops.smem._transpose_variant(want.transpose(-2, -1), variant), want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bits8, torch.bits16, torch.bits1x8, torch.bits2x4,
                                   torch.bits4x2, torch.float4_e2m1fn_x2], ids=str)
@pytest.mark.parametrize("shape", [(33, 65), (3, 48, 80), (129, 31)], ids=str)
def test_bits_and_fp4_pairs(device, dtype, shape):
    # dtypes torch copies but computes nothing with: moved as bytes, compared as bytes
    as_int = torch.int16 if dtype.itemsize == 2 else torch.uint8
    raw = make_any(shape, as_int, device)
    x = raw.view(dtype)
    got = smem_ops.transpose(x)
    assert got.dtype == dtype and got.shape == x.transpose(-2, -1).shape and got.is_contiguous()
    assert torch.equal(got.view(as_int), raw.transpose(-2, -1).contiguous())
    assert torch.equal(smem_ops.transpose(x[..., 1:], 0, -1).view(as_int),
                       raw[..., 1:].transpose(0, -1).contiguous())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", TRANSPOSE_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (1, 77), (77, 1), (33, 65), (64, 64), (129, 31)], ids=str)
def test_2d_every_dtype(device, dtype, shape):
    x = make_any(shape, dtype, device)
    check_transpose(x)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bool, torch.float8_e5m2, torch.bfloat16,
                                   torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("shape", [(144, 208), (16, 4112), (4112, 16), (3, 48, 80)], ids=str)
def test_16_byte_cells_with_ragged_tiles(device, dtype, shape):
    """Sizes whose rows are whole 16-byte vectors but whose tiles are cut by the edge."""
    x = make_any(shape, dtype, device)
    check_transpose(x)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bool, torch.float8_e4m3fn], ids=str)
@pytest.mark.parametrize("shape", [(136, 264), (8, 4104), (4104, 8), (3, 40, 72), (129, 136)], ids=str)
def test_1_byte_cells_of_8_byte_words(device, dtype, shape):
    """1-byte elements move in 8 x 8 cells of 8-byte words: strides that are multiples of 8 but
    not of 16, tiles (128 x 128) cut by the edge, and an input 8 but not 16 bytes aligned."""
    x = make_any(shape, dtype, device)
    check_transpose(x)
    flat = make_any((8 + 136 * 264,), dtype, device)
    off_16 = flat[8:].view(136, 264)
    check_transpose(off_16)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64,
                                   torch.complex128], ids=str)
@pytest.mark.parametrize("shape", [(33, 5000), (5000, 33), (2, 3001), (3001, 1), (3, 50001),
                                   (50001, 4), (5, 30001), (64, 999),
                                   (999, 64), (7, 3, 1000), (5, 1000, 3), (3, 33, 2000),
                                   (3, 2000, 33), (17, 9000), (9000, 48)], ids=str)
def test_skinny(device, dtype, shape):
    """One short side (<= 64): a chunk of the long side and the whole short side per block."""
    x = make_any(shape, dtype, device)
    check_transpose(x)
    sliced = make_any(shape[:-1] + (2 * shape[-1],), dtype, device)[..., ::2]
    check_transpose(sliced)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("shape", [(33, 5003), (64, 4099), (2, 5, 1001), (3, 7, 257)], ids=str)
def test_skinny_vectors_cut_at_the_edge(device, dtype, shape):
    """Aligned lines (16-byte vectors) whose long side ends inside a vector, in the last chunk."""
    x = make_any(shape[:-1] + (shape[-1] + 16 - shape[-1] % 16,), dtype, device)[..., :shape[-1]]
    check_transpose(x, -2, -1)
    # and the same data as the run: the short side is the input's last dim
    y = x.transpose(-2, -1).contiguous()[..., :shape[-2]]
    check_transpose(y, -2, -1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dims", [(0, 1), (0, 2), (1, 2), (-1, -3), (2, 2), (0, 3), (1, 3), (2, 3)])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.complex128],
                         ids=str)
def test_nd_any_pair_of_dims(device, dims, dtype):
    x = make_any((3, 35, 5, 37), dtype, device)
    check_transpose(x, *dims)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded", "offset", "permuted",
                                    "negative_free_channels_last"])
@pytest.mark.parametrize("dtype", [torch.int8, torch.float16, torch.float32, torch.float64], ids=str)
def test_non_contiguous_inputs(device, layout, dtype):
    base = make_any((6, 40, 50), dtype, device)
    x = {
        "transposed": base.transpose(1, 2),
        "sliced": base[:, 3:37:2, ::3],
        "expanded": base[:, :1, :].expand(6, 33, 50),
        "offset": base.flatten()[7:7 + 6 * 39 * 50].view(6, 39, 50),
        "permuted": base.permute(2, 0, 1),
        "negative_free_channels_last": make_any((2, 3, 9, 11), dtype, device).to(
            memory_format=torch.channels_last),
    }[layout]
    for dims in ((-2, -1), (0, 1), (0, -1)):
        check_transpose(x, *dims)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_and_1d(device):
    x = torch.empty(0, 5, device=device)
    out = smem_ops.transpose(x)
    assert out.shape == (5, 0)
    y = torch.arange(10, device=device)
    out = smem_ops.transpose(y, 0, -1)
    assert torch.equal(out, y) and out.data_ptr() != y.data_ptr()


@pytest.mark.parametrize("device", DEVICES)
def test_always_a_new_tensor(device):
    x = make_tensor((4, 4), torch.float32, device)
    out = smem_ops.transpose(x, 0, 0)
    assert torch.equal(out, x) and out.data_ptr() != x.data_ptr()


@pytest.mark.parametrize("device", DEVICES)
def test_many_batch_dims(device):
    # more collapsed dims than a kernel carries: falls back to a contiguous input
    x = make_tensor((2,) * 10, torch.float32, device)[..., ::1].transpose(0, 9)
    x = x[:, :, :, :, :, :, :, :, :, :1].expand(*([2] * 9), 3)
    check_transpose(x, 1, 8)


@pytest.mark.parametrize("device", DEVICES)
def test_bitwise_special_values(device):
    x = torch.tensor([[float("nan"), -0.0], [float("inf"), 1e-45]], device=device)
    check_transpose(x)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64,
                                   torch.complex128], ids=str)
@pytest.mark.parametrize("side", [2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17])
def test_short_side_interleave(device, dtype, side):
    """A side of 2..16 whose lines sit on the 16-byte grid moves in registers, either way: the
    lines read and their interleave (the run) written, the long side whole vectors or cut inside
    the last one; or the run read, the long side whole vectors. Batched: runs laid end to end
    (warps stage them across batches), runs apart (warps that span two batches do not), groups
    cut in every batch, two batch dims. (17, 16-byte elements and the layouts the kernel does not
    take run the kernels behind it, checked the same way.)"""
    # past 2^17 elements (tinier ones gather)
    n = 16 * 2801
    for length in (16 * 4200, 16 * 4200 + 5):
        lines = make_any((side, 16 * 4201), dtype, device)[:, :length]  # line stride on the grid
        check_transpose(lines)
        check_transpose(lines.t().contiguous())  # the run: the short side is the last dim
    batched = make_any((3, side, n), dtype, device)
    check_transpose(batched)
    check_transpose(batched.transpose(-2, -1).contiguous())
    check_transpose(make_any((3, 2 * n, side), dtype, device)[:, :n].transpose(-2, -1))
    check_transpose(make_any((3, side, n + 16), dtype, device)[..., :n + 5])
    check_transpose(make_any((4, 3, side, n), dtype, device)[:, :2])


@requires_cuda
def test_short_sides_interleave_where_aligned():
    """Past 2^17 elements, the interleave kernel takes a side of 2..16 with 16-byte vectors on
    both sides, in either direction and batched (an image batch to HWC and back, batches of 16
    groups); not a side of 17, not lines off the 16-byte grid (by their stride, the data pointer
    or a batch stride), not lines shorter than a vector, not 16-byte elements, not a tiny input
    (which gathers)."""
    def kernels(x):
        same_bits(smem_ops.transpose(x, -2, -1), x.transpose(-2, -1))
        return cuda_kernels(lambda: smem_ops.transpose(x, -2, -1))

    for x in [make_any((3, 50176), torch.float32, "cuda"),
              make_any((50176, 3), torch.float32, "cuda"),
              make_any((16, 16384), torch.bfloat16, "cuda"),
              make_any((8, 3, 224 * 224), torch.uint8, "cuda"),
              make_any((8, 224 * 224, 3), torch.uint8, "cuda"),
              make_any((512, 8, 64), torch.float32, "cuda")]:
        assert any("interleave" in k for k in kernels(x)), x.shape
    flat = make_any((5 * 150530,), torch.float32, "cuda")
    for x in [make_any((17, 16384), torch.float32, "cuda"),
              make_any((3, 50001), torch.float32, "cuda"),
              make_any((3, 50180), torch.float32, "cuda")[:, 1:50177],
              flat.as_strided((5, 3, 50176), (150530, 50176, 1)),
              make_any((50000, 4, 4), torch.float32, "cuda")[..., :3],
              make_any((3, 65536), torch.complex128, "cuda"),
              make_any((16, 8192), torch.bfloat16, "cuda")]:
        assert not any("interleave" in k for k in kernels(x)), (x.shape, x.dtype)


@requires_cuda
@pytest.mark.slow
def test_cuda_short_side_over_2_31_elements():
    """3 x (2^31 / 3 + 16) uint8 to its interleave and back, in registers both ways."""
    n = (2**31 // 3 + 16) // 16 * 16
    x = torch.empty(3, n, dtype=torch.uint8, device="cuda")
    x.view(-1)[:] = torch.arange(x.numel(), device="cuda", dtype=torch.int64).remainder_(251).to(torch.uint8)
    run = smem_ops.transpose(x)
    assert run.shape == (n, 3)
    for r, c in [(0, 0), (2, n - 1), (1, 12345), (2, n // 2 + 3)]:
        assert run[c, r].item() == x[r, c].item()
    assert torch.equal(run[-5:], x[:, -5:].t())
    assert torch.equal(smem_ops.transpose(run), x)
    del x, run
    torch.cuda.empty_cache()


@requires_cuda
@pytest.mark.slow
def test_cuda_over_2_31_elements():
    x = torch.empty(2**16 + 3, 2**15 + 1, dtype=torch.uint8, device="cuda")
    x.view(-1)[:] = torch.arange(x.numel(), device="cuda", dtype=torch.int64).remainder_(251).to(torch.uint8)
    out = smem_ops.transpose(x)
    assert out.shape == (2**15 + 1, 2**16 + 3)
    for r, c in [(0, 0), (2**16 + 2, 2**15), (12345, 2**15 - 7), (2**16, 1)]:
        assert out[c, r].item() == x[r, c].item()
    assert torch.equal(out[-3:], x[:, -3:].t())
    del x, out
    torch.cuda.empty_cache()


@requires_cuda
@pytest.mark.slow
def test_cuda_cells_over_2_31_elements():
    """(2^16 + 8) x (2^15 + 8) uint8: aligned to 8-byte words, so the word-cell kernel (deep
    tiles) moves it, with one block per tile and with 3 blocks striding over all of them."""
    x = torch.empty(2**16 + 8, 2**15 + 8, dtype=torch.uint8, device="cuda")
    x.view(-1)[:] = torch.arange(x.numel(), device="cuda", dtype=torch.int64).remainder_(251).to(torch.uint8)
    out = smem_ops.transpose(x)
    assert out.shape == (2**15 + 8, 2**16 + 8)
    for r, c in [(0, 0), (2**16 + 7, 2**15 + 7), (12345, 2**15 - 7), (2**16, 1)]:
        assert out[c, r].item() == x[r, c].item()
    assert torch.equal(out[-3:], x[:, -3:].t()) and torch.equal(out[:3], x[:, :3].t())
    few = torch.ops.smem._transpose_variant(x, "final:few_blocks")
    assert torch.equal(few, out)
    del x, out, few
    torch.cuda.empty_cache()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bool, torch.float16, torch.bfloat16,
                                   torch.float32, torch.int64], ids=str)
def test_cells_every_edge(device, dtype):
    # On CUDA elements move in P x P cells (16-byte words, 8-byte words for 1-byte types, else
    # 4-byte packed words):
    # every ragged edge size, batched, and misaligned views (which must fall back, not misread).
    for r in (1, 2, 3, 4, 5, 7, 8, 9, 127, 128, 129):
        for c in (1, 3, 4, 6, 8, 130, 131):
            x = make_any((r, c), dtype, device)
            check_transpose(x)
    x = make_any((3, 68, 132), dtype, device)
    check_transpose(x)
    check_transpose(x, 0, 2)
    flat = make_any((1 + 64 * 68,), dtype, device)
    misaligned = flat[1:].view(64, 68)  # data pointer off the 4-byte grid
    check_transpose(misaligned)
    odd_stride = make_any((64, 70), dtype, device)[:, 1:67]
    check_transpose(odd_stride)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float8_e4m3fn, torch.float32, torch.int32],
                         ids=str)
def test_cuda_deep_cells(dtype):
    """1- and 4-byte elements of matrices with many tiles move two cells a thread, in tiles of
    32 x 16 cells: tiles cut by the edge on both sides, batches, a strided view whose strides
    keep the cells aligned, and input lines that end in a part of a cell."""
    p = 8 if dtype.itemsize == 1 else 4
    wide = make_any((511 * p, 515 * p), dtype, "cuda")[:, p : 514 * p]
    inputs = [make_any((513 * p, 511 * p), dtype, "cuda"), make_any((3, 257 * p, 513 * p), dtype, "cuda"),
              wide, wide[:, :-3]]
    for x in inputs:
        check_transpose(x)
    if torch.cuda.get_device_properties(0).multi_processor_count <= 200:  # 528+ deep tiles each
        for x in inputs:
            launched = cuda_kernels(lambda x=x: smem_ops.transpose(x))
            assert any("transpose_cells_kernel" in n and ", 32, 16, 4>" in n for n in launched), launched


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bfloat16, torch.float32, torch.float64], ids=str)
def test_cuda_few_blocks_take_the_cells(dtype):
    """final:few_blocks runs the word-cell kernel (so check_transpose's third variant tests its
    loop over many tiles a block, not final:staged again). Sides past the skinny kernel's 64, in
    multiples of every cell side (8 elements at most)."""
    for shape in [(264, 136), (3, 320, 192), (1200, 1040)]:
        x = make_any(shape, dtype, "cuda")
        run = lambda x=x: torch.ops.smem._transpose_variant(x, "final:few_blocks")
        same_bits(run(), x.transpose(-2, -1))
        assert any("transpose_cells_kernel" in n for n in cuda_kernels(run))


@requires_cuda
@pytest.mark.parametrize("variant", ["naive", "smem_unpadded", "smem_padded", "final"])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float16, torch.float32, torch.float64,
                                   torch.complex128], ids=str)
def test_ladder_variants(variant, dtype):
    assert variant in smem_ops.variants("transpose")
    for shape in [(1, 1), (33, 65), (256, 4096), (5, 100, 37)]:
        x = make_any(shape, dtype, "cuda")
        same_bits(torch.ops.smem._transpose_variant(x, variant), x.transpose(-2, -1))
    with pytest.raises(ValueError, match="unknown variant"):
        torch.ops.smem._transpose_variant(x, "fastest")


@requires_cuda
def test_tiny_transposes_gather():
    """Up to 2^17 elements, or with a side of at most 4 that the interleave kernel does not
    take, one element is gathered per thread; otherwise other kernels run."""
    def kernels(shape):
        x = make_any(shape, torch.float32, "cuda")
        same_bits(smem_ops.transpose(x), x.t())
        return cuda_kernels(lambda: smem_ops.transpose(x))

    assert any("gather" in k for k in kernels((256, 512)))  # 2^17
    assert not any("gather" in k for k in kernels((257, 512)))
    # past 2^17 elements, a side of at most 4 still gathers where its lines are not on the
    # 16-byte grid (the interleave kernel's): skinny blocks would be tiny
    assert any("gather" in k for k in kernels((4, 50001)))
    assert not any("gather" in k for k in kernels((5, 50001)))


@requires_cuda
def test_layout_preserving_copy_fast_path():
    # (1, n) -> (n, 1) moves no element: one device copy, still a new tensor
    for shape in [(1, 1 << 20), (1 << 20, 1), (7, 1, 5)]:
        x = make_any(shape, torch.float32, "cuda")
        out = smem_ops.transpose(x, 0, 1)
        same_bits(out, x.transpose(0, 1))
        assert out.data_ptr() != x.data_ptr()
