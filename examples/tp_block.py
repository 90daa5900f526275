"""A tensor-parallel MLP block with smem ops inside, checked against the same block on one device.

    torchrun --nproc-per-node 2 examples/tp_block.py          # NCCL on GPUs, gloo on CPU

The block (x: batch x tokens x dim, the same on every rank):

    x = x * rsqrt(smem.sum_of_squares(x, [-1], keepdim=True) / dim + eps)      RMSNorm
    h = relu(up(x))                  ColwiseParallel: h is a DTensor, Shard(2) (hidden split)
    h = h * rsqrt(smem.sum_of_squares(h, [-1], True) / hidden + eps)
                                     over the sharded dim: Partial("sum"), so only the
                                     (batch, tokens, 1) result is all-reduced, never h
    h = smem.transpose(bmm(smem.transpose(h, 1, 2), mix), 1, 2)
                                     token mixing: transpose moves the shard Shard(2) <-> Shard(1),
                                     no communication
    return x + down(h)               RowwiseParallel: one all-reduce of the output

A training step (forward, backward through the smem ops on DTensors) runs on the TP block and on
an unsharded copy on one device; outputs and every gradient must agree. A histogram of the
sharded up-projection weight (smem.histc, Partial counts) must equal the unsharded one.
"""

from __future__ import annotations

import contextlib
import copy
import os

import torch
from torch import nn

import smem_ops  # torch.ops.smem.*, and their DTensor rules

smem = torch.ops.smem
EPS = 1e-6


class Block(nn.Module):
    def __init__(self, dim=32, hidden=64, tokens=8):
        super().__init__()
        self.dim, self.hidden = dim, hidden
        self.up = nn.Linear(dim, hidden, bias=False)
        self.mix = nn.Parameter(torch.eye(tokens) + 0.05 * torch.randn(tokens, tokens))
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        x = x * torch.rsqrt(smem.sum_of_squares(x, [-1], True) / self.dim + EPS)
        h = torch.relu(self.up(x))
        h = h * torch.rsqrt(smem.sum_of_squares(h, [-1], True) / self.hidden + EPS)
        ht = smem.transpose(h, 1, 2)  # (B, hidden, T)
        h = smem.transpose(torch.bmm(ht, self.mix.expand(ht.shape[0], -1, -1)), 1, 2)
        return x + self.down(h)


def tensor_parallel(block: Block, mesh) -> Block:
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    block = parallelize_module(block, mesh, {
        "up": ColwiseParallel(use_local_output=False),   # keep h a DTensor for the smem ops
        "down": RowwiseParallel(input_layouts=Shard(2)),
    })
    block.mix = nn.Parameter(distribute_tensor(block.mix.data, mesh, [Replicate()]))
    return block


def check(mesh, device, ranks=contextlib.nullcontext, plain=lambda t: t) -> dict:
    """One step of the TP block on `mesh` vs the same block unsharded. `ranks` is the context the
    DTensor part runs in and `plain` turns a replicated result into a tensor (both for the test
    suite's simulated ranks); the reference part runs outside `ranks`."""
    from torch.distributed.tensor import Shard

    torch.manual_seed(0)
    ref = Block().to(device)
    tp = copy.deepcopy(ref)
    x = torch.randn(4, 8, 32, device=device)
    out_ref = ref(x)
    out_ref.square().sum().backward()
    hist_ref = smem.histc(ref.up.weight.detach(), 16, -0.2, 0.2, dtype=torch.int64)

    with ranks():
        tp = tensor_parallel(tp, mesh)
        out = tp(x)
        out.square().sum().backward()
        assert tuple(tp.up.weight.grad.placements) == (Shard(0),)
        assert tuple(tp.down.weight.grad.placements) == (Shard(1),)
        hist = smem.histc(tp.up.weight.detach(), 16, -0.2, 0.2, dtype=torch.int64)
        assert hist.placements[0].is_partial()
        got = {"out": out, "up": tp.up.weight.grad.full_tensor(),
               "down": tp.down.weight.grad.full_tensor(), "mix": tp.mix.grad.full_tensor(),
               "hist": hist.full_tensor()}
    want = {"out": out_ref, "up": ref.up.weight.grad, "down": ref.down.weight.grad,
            "mix": ref.mix.grad, "hist": hist_ref}
    diffs = {k: (plain(got[k]).detach().cpu() - want[k].detach().cpu()).abs().max().item()
             for k in want}
    return {"max_abs_diff": max(diffs.values()), "tolerance": 1e-3, "hist_diff": diffs["hist"],
            **{f"diff_{k}": v for k, v in diffs.items()}}


def main():
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    use_cuda = torch.cuda.is_available() and smem_ops.cuda_compiled()
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if use_cuda else "gloo")
    device = f"cuda:{torch.cuda.current_device()}" if use_cuda else "cpu"
    mesh = init_device_mesh("cuda" if use_cuda else "cpu", (dist.get_world_size(),))
    report = check(mesh, device)
    ok = report["max_abs_diff"] <= report["tolerance"] and report["hist_diff"] == 0
    if dist.get_rank() == 0:
        print(f"tp_block on {dist.get_world_size()} ranks ({dist.get_backend()}, {device}): "
              + ", ".join(f"{k}={v:.3g}" for k, v in report.items())
              + (" OK" if ok else " MISMATCH"))
    dist.destroy_process_group()
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
