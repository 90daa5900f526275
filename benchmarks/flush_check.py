"""Whether the benchmark's L2 flush leaves an input in the L2 (GPU, device time).

torch.compile's transposes load with an evict-last hint; such lines are marked persisting, and a
flush by plain writes does not evict them (docs/PERFORMANCE.md, "The flush and evict-last
loads"). Three ways of timing the same calls (benchmarks.timing.time_device):

    plain    the same input every call, the flush without the persisting-line reset
    rotate   as plain, but a different copy of the input each call (copies cycling over
             400 MB), so no call finds its input in the L2
    reset    the same input, the flush as the sweep runs it (persisting lines reset first)

A flush that does its job gives plain == rotate == reset. On the wall clock: `wall` is
benchmarks.timing.time_wall (the same flush, reset first), `do_bench` triton's, whose flush
does not reset (skipped without triton).

    python -m benchmarks.flush_check
"""

from __future__ import annotations

import itertools
import math

import torch

from benchmarks import timing


def _cases():
    transpose = torch.compile(lambda t: t.transpose(-2, -1).contiguous(), fullgraph=True,
                              dynamic=False)
    total = torch.compile(lambda t: t.sum(), fullgraph=True, dynamic=False)
    def eager(t):
        return t.transpose(-2, -1).contiguous()

    return [
        ("compile_t bf16 33x65536", transpose, (33, 65536), torch.bfloat16),
        ("compile_t bf16 65536x33", transpose, (65536, 33), torch.bfloat16),
        ("compile_t fp32 1024x1024", transpose, (1024, 1024), torch.float32),
        ("compile_t fp32 8192x1000", transpose, (8192, 1000), torch.float32),
        ("compile_t bf16 64x512x512", transpose, (64, 512, 512), torch.bfloat16),
        ("eager_t bf16 33x65536", eager, (33, 65536), torch.bfloat16),
        ("compile_sum fp32 1M", total, (1 << 20,), torch.float32),
    ]


def main() -> int:
    try:
        from triton.testing import do_bench
    except ImportError:
        do_bench = None
    reset = timing.reset_persisting_l2
    if not reset():
        raise SystemExit("flush_check: libcudart not found, so the reset column would be plain")
    for rnd in range(2):
        for name, f, shape, dt in _cases():
            x = torch.randn(shape, device="cuda").to(dt)
            nbytes = x.numel() * x.element_size()
            copies = [x.clone() for _ in range(min(400, max(2, math.ceil(400e6 / nbytes))))]
            f(x)
            torch.cuda.synchronize()
            timing.reset_persisting_l2 = lambda: False  # the flush as it was before ac907e4
            try:
                plain = timing.time_device(lambda f=f, x=x: f(x), calls=60).us
                it = itertools.cycle(copies)
                rotate = timing.time_device(lambda f=f, it=it: f(next(it)), calls=60).us
            finally:
                timing.reset_persisting_l2 = reset
            with_reset = timing.time_device(lambda f=f, x=x: f(x), calls=60).us
            wall = timing.time_wall(lambda f=f, x=x: f(x))
            line = (f"round {rnd} {name:28} plain {plain:7.2f}  rotate {rotate:7.2f}  "
                    f"reset {with_reset:7.2f} us; wall {wall:7.2f}")
            if do_bench is not None:
                line += f"  do_bench {1000 * do_bench(lambda f=f, x=x: f(x), return_mode='median'):7.2f}"
            print(line + " us", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
