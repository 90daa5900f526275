"""The harness of test_distributed.py: the ranks (simulated in this process, or this rank of a
torchrun job), inputs that are the same on every rank, the placement cases, the op runner that
counts collectives, the result check and the oracles for what each placement becomes."""

from __future__ import annotations

import contextlib
import itertools
import os

import pytest
import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.debug import CommDebugMode

import smem_ops

dist = torch.distributed
REAL = all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR"))
QUICK = os.environ.get("SMEM_DIST_QUICK") == "1"  # the CI gloo run: 1-D meshes, fewer cases
R, S0, S1, S2 = Replicate(), Shard(0), Shard(1), Shard(2)
PSUM, PMAX = Partial("sum"), Partial("max")


# ----------------------------------------------------------------------------- the ranks

def _sim_support():
    """The private torch pieces that simulate ranks in one process (tests only)."""
    try:
        from torch.distributed._local_tensor import LocalTensor, LocalTensorMode
        from torch.testing._internal.distributed.fake_pg import FakeStore
    except ImportError as e:  # torch < 2.10
        pytest.skip(f"torch {torch.__version__} has no LocalTensorMode ({e}): the simulated-rank "
                    "tests need it; run this file under torchrun instead", allow_module_level=False)
    return LocalTensor, LocalTensorMode, FakeStore


class Env:
    """Simulated ranks in this process, or this rank of a torchrun job."""

    def __init__(self):
        if REAL:
            backend = os.environ.get("SMEM_DIST_BACKEND") or (
                "nccl" if torch.cuda.is_available() and smem_ops.cuda_compiled() else "gloo")
            if backend == "nccl":
                local = int(os.environ["LOCAL_RANK"])
                torch.cuda.set_device(local)
                self.device = f"cuda:{local}"
            else:
                self.device = "cpu"
            import datetime
            dist.init_process_group(backend, timeout=datetime.timedelta(seconds=120))
            self.world = dist.get_world_size()
            self.backend = backend
            self._local_tensor = None
            self.mesh1 = init_device_mesh(self.device.split(":")[0], (self.world,))
            self.mesh2 = init_device_mesh(self.device.split(":")[0], (1, self.world))
        else:
            self._local_tensor, self._mode_cls, fake_store = _sim_support()
            self.world, self.device, self.backend = 4, "cpu", "fake"
            dist.init_process_group("fake", rank=0, world_size=self.world, store=fake_store())
            self.mesh1 = init_device_mesh("cpu", (4,))
            self.mesh2 = init_device_mesh("cpu", (2, 2))

    def mesh(self, name):
        return self.mesh1 if name == "1d" else self.mesh2

    def ranks(self):
        """The context every DTensor step runs in."""
        if REAL:
            return contextlib.nullcontext()
        return self._mode_cls(frozenset(range(self.world)))

    def plain(self, t):
        """A result every rank holds, as a plain tensor (asserting the ranks agree)."""
        if self._local_tensor is not None and isinstance(t, self._local_tensor):
            return t.reconcile()
        return t

    def close(self):
        dist.destroy_process_group()



def rand(shape, seed, dtype=torch.float32, device="cpu", lo=-64, hi=64):
    """Multiples of 1/8 in [lo/8, hi/8) (integers for integer dtypes): the same on every rank."""
    g = torch.Generator().manual_seed(seed)
    v = torch.randint(lo, hi, shape, generator=g)
    if dtype.is_floating_point:
        v = v.to(torch.float64) / 8
    return v.to(dtype).to(device)


def make_input(x_parts, mesh, placements):
    """A DTensor with the given placements whose full value is x_parts.sum(0) (or .amax(0) for
    Partial("max")). A Partial(op) mesh dim comes from reducing a Shard(0) of x_parts over dim 0,
    so every rank holds a different, non-trivial part."""
    red = "max" if PMAX in placements else "sum"
    src = [S0 if p.is_partial() else (Shard(p.dim + 1) if p.is_shard() else R) for p in placements]
    d = distribute_tensor(x_parts, mesh, src)
    d = d.amax(0) if red == "max" else d.sum(0)
    assert tuple(d.placements) == tuple(placements), (d.placements, placements)
    return d


def full_of(x_parts, placements):
    return x_parts.amax(0) if PMAX in placements else x_parts.sum(0)


def placement_sets(mesh_name, singles):
    if mesh_name == "1d":
        return [(p,) for p in singles]
    return [c for c in itertools.product(singles, repeat=2) if not (PSUM in c and PMAX in c)]


def names(pls):
    return "-".join({"R": "R", "S": "S", "P": "P"}[type(p).__name__[0]] +
                    (str(p.dim) if p.is_shard() else p.reduce_op if p.is_partial() else "")
                    for p in pls)


MESHES = ["1d"] if QUICK else ["1d", "2d"]


def _cases(singles, singles_2d=None):
    """(mesh, placements) for every combination of `singles` (on a 2-D mesh: of `singles_2d`,
    a smaller set where the 1-D cases already cover each placement)."""
    return [pytest.param(m, pls, id=f"{m}-{names(pls)}")
            for m in MESHES
            for pls in placement_sets(m, singles if m == "1d" or singles_2d is None else singles_2d)]


def run_op(fn, *args, **kwargs):
    """fn(*args, **kwargs) under CommDebugMode: (output, collectives it issued, their kinds)."""
    with CommDebugMode() as comm:
        out = fn(*args, **kwargs)
    return out, comm.get_total_counts(), comm.get_comm_counts()


def n_collectives(mesh, pls):
    """One per sharded mesh dim of more than one rank (DTensor skips the others)."""
    return sum(p.is_shard() and mesh.size(i) > 1 for i, p in enumerate(pls))


def check(env, out, ref, expected, comm, exact=True):
    if expected is not None:
        assert tuple(out.placements) == tuple(expected), (out.placements, expected)
        assert comm == 0, f"expected no communication, got {comm} collectives"
    got = env.plain(out.full_tensor())
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, ref.shape, got.dtype)
    if exact:
        assert torch.equal(got.cpu(), ref.cpu()), (got, ref)
    else:
        torch.testing.assert_close(got.cpu(), ref.cpu())


# ----------------------------------------------------------------------------- oracles
# What the contract says each mesh dim becomes, or None where a redistribution is expected.

def reduced(ndim, dim):
    return list(range(ndim)) if not dim else sorted({d % ndim for d in dim})


def expect_sum(pls, ndim, dim, keepdim, linear, bool_out=False):
    red, out = reduced(ndim, dim), []
    for p in pls:
        if p.is_replicate():
            out.append(R)
        elif p.is_shard() and p.dim in red and not bool_out:
            out.append(PSUM)
        elif p.is_shard() and p.dim not in red:
            out.append(Shard(p.dim if keepdim else p.dim - sum(r < p.dim for r in red)))
        elif p == PSUM and linear and not bool_out:
            out.append(PSUM)
        else:
            return None
    return out
