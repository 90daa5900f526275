"""A/B of smem.sum (or dot) against torch's on the CPU, timed alternately.

On a shared machine the memory bandwidth drifts within minutes, so a sweep that times each row
apart from its baseline can disagree with itself by 5-10%; here the two take turns, round by
round, with x.amax() (a plain read of the same memory) as the bandwidth reference.

    python tools/cpu_sum_ab.py [--shape 16777216] [--dim D] [--dtype bfloat16] [--rounds 10] [--calls 40]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import smem_ops  # noqa: F401  (registers torch.ops.smem)


def main(argv=None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shape", type=int, nargs="+", default=[1 << 24])
    p.add_argument("--op", choices=["sum", "dot"], default="sum")
    p.add_argument("--dim", type=int, default=None, help="sum over this dim (default: all)")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--calls", type=int, default=40, help="calls per round; a round reports their median")
    args = p.parse_args(argv)
    if args.op == "dot" and (args.dim is not None or len(args.shape) != 1):
        p.error("--op dot takes a 1-D --shape and no --dim")
    torch.manual_seed(0)
    x = torch.randn(args.shape).to(getattr(torch, args.dtype))
    dims = None if args.dim is None else [args.dim]
    if args.op == "dot":
        y = torch.randn(args.shape).to(x.dtype)
        nbytes = 2 * x.nbytes
        fns = {"torch": lambda: torch.dot(x, y), "smem": lambda: torch.ops.smem.dot(x, y),
               "amax": lambda: (x.amax(), y.amax())}
    else:
        nbytes = x.nbytes
        fns = {"torch": lambda: torch.sum(x) if dims is None else torch.sum(x, dims),
               "smem": lambda: torch.ops.smem.sum(x, dims), "amax": lambda: x.amax()}
    for fn in fns.values():
        fn()
    rounds: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(args.rounds):
        for name, fn in fns.items():
            times = []
            for _ in range(args.calls):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            rounds[name].append(statistics.median(times) * 1e6)
    print(f"# {args.op} {args.dtype} {tuple(x.shape)}, dim {args.dim}, {torch.get_num_threads()} "
          f"threads, torch {torch.__version__}")
    for name, us in rounds.items():
        med = statistics.median(us)
        print(f"{name:10} median of rounds {med:8.0f} us ({nbytes / med / 1e3:5.1f} GB/s)  rounds:",
              " ".join(f"{t:.0f}" for t in us))
    ratio = [a / b for a, b in zip(rounds["torch"], rounds["smem"])]
    print("torch / smem per round:", " ".join(f"{r:.2f}" for r in ratio),
          f" median {statistics.median(ratio):.3f}")


if __name__ == "__main__":
    main()
