"""The read floor of a size: the least device time found for a kernel that reads `nbytes` once
and writes almost nothing (one word per program), the bound for any op that must read its whole
input once (a sum, a histogram). The copy floor (timing.device_copy) moves half its bytes each
way, so for a read-only op it is not a bound. Triton kernels over 32-bit words in a few tile
shapes (one tile per program, or a few in a row), the L2 flushed before each call as for every
case; the minimum over the shapes is the floor. Triton is on the GPU machines; this module needs
it only when a floor is asked for.

    python -m benchmarks.read_floor 4194304 67108864   # bytes; prints every shape and the floor
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import torch

from .timing import time_device

# (words per tile, tiles per program, warps): 16-byte loads, 8-32 words per thread
SHAPES = ((1024, 1, 4), (2048, 1, 4), (2048, 1, 8), (4096, 1, 8), (8192, 1, 8),
          (2048, 2, 4), (4096, 2, 8), (1024, 4, 4), (4096, 4, 8))

_kernel = None


def _read_kernel():
    """The Triton kernel, built on first use: program p sums its `tiles` tiles of words (int32,
    wrapping) and stores the sum, so that no load can be dropped."""
    global _kernel
    if _kernel is None:
        import triton
        import triton.language as tl

        @triton.jit
        def read_words(x, out, n, WORDS: tl.constexpr, TILES: tl.constexpr):
            first = tl.program_id(0).to(tl.int64) * WORDS * TILES
            acc = tl.zeros([WORDS], dtype=tl.int32)
            for t in tl.static_range(TILES):
                at = first + t * WORDS + tl.arange(0, WORDS)
                acc += tl.load(x + at, mask=at < n, other=0)
            tl.store(out + tl.program_id(0), tl.sum(acc, axis=0))

        _kernel = read_words
    return _kernel


def device_read(nbytes: int, shape: tuple[int, int, int],
                device: str = "cuda") -> Callable[[], torch.Tensor]:
    """A call reading `nbytes` (a multiple of 4) once in tiles of `shape`, checked once: the
    per-program sums add up, modulo 2^32, to the sum of the words."""
    words, tiles, warps = shape
    x = torch.randint(-(1 << 31), 1 << 31, (nbytes // 4,), dtype=torch.int32, device=device)
    grid = (-(-x.numel() // (words * tiles)),)
    out = torch.empty(grid[0], dtype=torch.int32, device=device)
    kernel = _read_kernel()

    def call():
        kernel[grid](x, out, x.numel(), WORDS=words, TILES=tiles, num_warps=warps)
        return out

    got = call().long().sum().item() % (1 << 32)
    assert got == x.long().sum().item() % (1 << 32), f"read kernel {shape} is wrong"
    return call


def read_floor(nbytes: int, device: str = "cuda") -> tuple[float, dict[tuple, float]]:
    """(floor us, {shape: device us}) for reading `nbytes` once."""
    times = {shape: time_device(device_read(nbytes, shape, device)).us for shape in SHAPES}
    return min(times.values()), times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("nbytes", nargs="+", type=int)
    args = p.parse_args(argv)
    for nbytes in args.nbytes:
        floor, times = read_floor(nbytes)
        for (words, tiles, warps), us in times.items():
            print(f"read {nbytes:>12} B  words {words:>5} tiles {tiles} warps {warps}  "
                  f"device {us:8.2f} us", flush=True)
        print(f"read {nbytes:>12} B  floor device {floor:8.2f} us  "
              f"({nbytes / floor / 1e3:.0f} GB/s read)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
