"""torch.ops.smem.* on DTensors: sharding rules, collectives, autograd, torch.compile.

One suite, two ways to run it:
  * simulated ranks (the default, CPU CI): this process plays 4 ranks, through a fake process
    group and LocalTensorMode; meshes (4,) and (2, 2);
  * real ranks, under torchrun: gloo on CPU, NCCL on GPUs (SMEM_DIST_BACKEND overrides);
    meshes (W,) and (1, W):
        torchrun --standalone --nproc-per-node 2 -m pytest -q -p no:cacheprovider \\
            tests/test_distributed.py
    (tests/test_distributed_gloo.py runs a quick subset so with 2 gloo ranks in CI;
    tests/distributed/run_gpu.sh runs all of it with NCCL.)

Every result is compared with the same op on the full tensor, on every rank. Data is made of
multiples of 1/8 (or integers), so sums are exact in any order and the comparisons are exact.
Where a rule serves the input's placements, the test also asserts the output placements and
that the op itself communicated nothing (CommDebugMode).
"""

from __future__ import annotations

import importlib.util
import math
import os
import pathlib

import pytest
import torch

if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available in this torch build", allow_module_level=True)

from dtensor_harness import (
    MESHES,
    PMAX,
    PSUM,
    QUICK,
    REAL,
    S0,
    S1,
    S2,
    Env,
    R,
    _cases,
    check,
    expect_sum,
    full_of,
    make_input,
    n_collectives,
    names,
    placement_sets,
    rand,
    run_op,
)
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.debug import CommDebugMode

ROOT = pathlib.Path(__file__).resolve().parents[1]
ops = torch.ops.smem


@pytest.fixture(scope="module")
def env():
    e = Env()
    yield e
    e.close()



# ----------------------------------------------------------------------------- sums

SUM_DIMS = [(None, False), ([0], False), ([1], False), ([0, 1], False), ([-1], True),
            (None, True)]


@pytest.mark.parametrize("op", ["sum", "sum_of_squares"])
@pytest.mark.parametrize("mesh_name,pls", _cases([R, S0, S1, PSUM, PMAX]))
def test_sum_placements(env, op, mesh_name, pls):
    parts = rand((4, 8, 12), seed=1, device=env.device)
    x = full_of(parts, pls)
    f = getattr(ops, op)
    dims = SUM_DIMS[:3] if QUICK else SUM_DIMS
    with env.ranks():
        dx = make_input(parts, env.mesh(mesh_name), pls)
        for dim, keepdim in dims:
            out, comm, _ = run_op(f, dx, dim, keepdim)
            expected = expect_sum(pls, 2, dim, keepdim, linear=op == "sum")
            check(env, out, f(x, dim, keepdim), expected, comm)


@pytest.mark.parametrize("mesh_name,pls", _cases([R, S0, S1, S2, PSUM], [R, S1, S2, PSUM]))
def test_sum_3d(env, mesh_name, pls):
    parts = rand((4, 4, 6, 8), seed=2, device=env.device)
    x = full_of(parts, pls)
    with env.ranks():
        dx = make_input(parts, env.mesh(mesh_name), pls)
        for op, linear in (("sum", True), ("sum_of_squares", False)):
            for dim, keepdim in ([1], False), ([0, 2], False), ([0, 2], True), ([2, 0], False):
                out, comm, _ = run_op(getattr(ops, op), dx, dim, keepdim)
                check(env, out, getattr(ops, op)(x, dim, keepdim),
                      expect_sum(pls, 3, dim, keepdim, linear), comm)


@pytest.mark.parametrize("case", ["int64", "bool_in", "dtype_f64", "dtype_bool", "f16", "0d"])
def test_sum_dtypes(env, case):
    mesh = env.mesh1
    x = rand((8, 6), seed=3, device=env.device)
    kw, exact, pls = {}, True, (S0,)
    if case == "int64":
        x = rand((8, 6), seed=3, dtype=torch.int64, device=env.device)
    elif case == "bool_in":
        x = x > 0
    elif case == "dtype_f64":
        kw = {"dtype": torch.float64}
    elif case == "dtype_bool":
        kw = {"dtype": torch.bool}
    elif case == "f16":
        x, exact = x.half(), False
    elif case == "0d":
        x, pls = x[0, 0].clone(), (R,)
    bool_out = kw.get("dtype") == torch.bool
    with env.ranks():
        dx = distribute_tensor(x, mesh, pls)
        for op, linear in (("sum", True), ("sum_of_squares", False)):
            f = getattr(ops, op)
            for dim in ([None] if case == "0d" else [None, [0], [1]]):
                out, comm, _ = run_op(f, dx, dim, False, **kw)
                check(env, out, f(x, dim, False, **kw),
                      expect_sum(pls, x.dim(), dim, False, linear, bool_out), comm, exact)


def test_sum_uneven_and_empty_shards(env):
    # 5 rows over 4 ranks: 2, 2, 1, 0 (the last rank's shard is empty); 2 ranks: 3, 2
    x = rand((5, 7), seed=4, device=env.device)
    with env.ranks():
        dx = distribute_tensor(x, env.mesh1, [S0])
        for op in ("sum", "sum_of_squares"):
            for dim in (None, [0], [1]):
                out, comm, _ = run_op(getattr(ops, op), dx, dim)
                check(env, out, getattr(ops, op)(x, dim), expect_sum((S0,), 2, dim, False, True),
                      comm)


def test_sum_to_replicate_is_one_all_reduce(env):
    """The reduction Partial implies is the only communication: one all-reduce of the result."""
    x = rand((16, 8), seed=5, device=env.device)
    with env.ranks():
        dx = distribute_tensor(x, env.mesh1, [S0])
        with CommDebugMode() as comm:
            out = ops.sum(dx).redistribute(env.mesh1, [R])
        counts = {str(k): v for k, v in comm.get_comm_counts().items()}
        assert comm.get_total_counts() == 1 and "c10d_functional.all_reduce" in counts, counts
        got = env.plain(out.to_local())
    assert torch.equal(got.cpu(), ops.sum(x).cpu())


def test_sum_cache_key_sees_dim_keepdim_dtype(env):
    """Regression: register_sharding's cache key ignored int[]? and bool arguments, so the second
    call here returned the first call's placement (and, on torch 2.11, silently wrong values)."""
    x = rand((8, 12), seed=6, device=env.device)
    with env.ranks():
        dx = distribute_tensor(x, env.mesh1, [S0])
        calls = [([1], False, None, (S0,)), ([0], False, None, (PSUM,)),
                 ([1], True, None, (S0,)), ([0], True, None, (PSUM,)),
                 (None, False, None, (PSUM,)), ([1], False, torch.float64, (S0,)),
                 ([1], False, None, (S0,))]
        for dim, keepdim, dtype, expected in calls:
            for op in (ops.sum, ops.sum_of_squares):
                out = op(dx, dim, keepdim, dtype=dtype)
                ref = op(x, dim, keepdim, dtype=dtype)
                assert tuple(out.placements) == expected, (op, dim, keepdim, dtype, out.placements)
                assert out.shape == ref.shape and out.dtype == ref.dtype
                assert torch.equal(env.plain(out.full_tensor()).cpu(), ref.cpu())


def test_partial_avg_inputs(env):
    """Partial("avg") (from a mean over a sharded dim) stays Partial("avg") through the linear
    ops; sum_of_squares reduces it first."""
    parts = rand((4, 12, 8), seed=20, device=env.device)
    x = parts.mean(0)
    pavg = Partial("avg")
    with env.ranks():
        dx = distribute_tensor(parts, env.mesh1, [S0]).mean(0)
        assert tuple(dx.placements) == (pavg,)
        dr = distribute_tensor(x[:, 1].contiguous(), env.mesh1, [R])
        for fn, ref, expected in (
                (lambda: ops.sum(dx, [1]), ops.sum(x, [1]), (pavg,)),
                (lambda: ops.sum(dx), ops.sum(x), (pavg,)),
                (lambda: ops.transpose(dx), ops.transpose(x), (pavg,)),
                (lambda: ops.dot(dr, dx[:, 0]), ops.dot(x[:, 1], x[:, 0]), (pavg,)),
                (lambda: ops.sum_of_squares(dx, [1]), ops.sum_of_squares(x, [1]), None)):
            out, comm, _ = run_op(fn)
            check(env, out, ref, expected, comm, exact=False)


@pytest.mark.parametrize("reduce_op", ["sum", "avg"])
def test_partial_input_summed_into_an_integer_dtype(env, reduce_op):
    """A cast of each rank's share to an integer dtype does not add up to the cast of the whole
    (0.5 + 0.5 would count 0 + 0): a float Partial input is reduced before such a sum."""
    parts = rand((4, 12, 8), seed=21, device=env.device)  # multiples of 1/8: fractional shares
    x = parts.sum(0) if reduce_op == "sum" else parts.mean(0)
    with env.ranks():
        dp = distribute_tensor(parts, env.mesh1, [S0])
        dx = dp.sum(0) if reduce_op == "sum" else dp.mean(0)
        assert tuple(dx.placements) == (Partial(reduce_op),)
        for dim in (None, [1]):
            out, comm, _ = run_op(ops.sum, dx, dim, False, dtype=torch.int64)
            check(env, out, ops.sum(x, dim, False, dtype=torch.int64), None, comm)
        # integer shares add up exactly: a Partial("sum") of int64 stays Partial
        di = distribute_tensor(parts.round().to(torch.int64), env.mesh1, [S0]).sum(0)
        out, comm, _ = run_op(ops.sum, di, None, False, dtype=torch.int64)
        check(env, out, ops.sum(parts.round().to(torch.int64).sum(0)), (PSUM,), comm)


# ----------------------------------------------------------------------------- dot

def expect_dot(px, py):
    out = []
    for a, b in zip(px, py):
        if a == S0 and b == S0:
            out.append(PSUM)
        elif a.is_replicate() and b.is_replicate():
            out.append(R)
        elif (a == PSUM and b.is_replicate()) or (a.is_replicate() and b == PSUM):
            out.append(PSUM)
        else:
            return None
    return out


def _dot_cases():
    out = []
    for m in MESHES:
        for px in placement_sets(m, [R, S0, PSUM]):
            for py in placement_sets(m, [R, S0, PSUM]):
                out.append(pytest.param(m, px, py, id=f"{m}-{names(px)}-x-{names(py)}"))
    return out


@pytest.mark.parametrize("mesh_name,px,py", _dot_cases())
def test_dot_placements(env, mesh_name, px, py):
    xp, yp = rand((4, 20), seed=7, device=env.device), rand((4, 20), seed=8, device=env.device)
    x, y = xp.sum(0), yp.sum(0)
    with env.ranks():
        mesh = env.mesh(mesh_name)
        dx, dy = make_input(xp, mesh, px), make_input(yp, mesh, py)
        out, comm, _ = run_op(ops.dot, dx, dy)
        check(env, out, ops.dot(x, y), expect_dot(px, py), comm)


# ----------------------------------------------------------------------------- transpose

TRANSPOSE_DIMS = [(-2, -1), (0, 2), (1, 1), (2, 0)]


@pytest.mark.parametrize("mesh_name,pls", _cases([R, S0, S1, S2, PSUM, PMAX], [R, S0, S2, PMAX]))
def test_transpose_placements(env, mesh_name, pls):
    parts = rand((4, 4, 6, 8), seed=9, device=env.device)
    x = full_of(parts, pls)
    with env.ranks():
        dx = make_input(parts, env.mesh(mesh_name), pls)
        for d0, d1 in TRANSPOSE_DIMS:
            swap = {d0 % 3: d1 % 3, d1 % 3: d0 % 3}
            expected = [Shard(swap.get(p.dim, p.dim)) if p.is_shard() else p for p in pls]
            out, comm, _ = run_op(ops.transpose, dx, d0, d1)
            check(env, out, ops.transpose(x, d0, d1), expected, comm)
            assert out.to_local().is_contiguous()


def test_transpose_dtypes_and_uneven(env):
    dtypes = [torch.float16, torch.int8, torch.bool]
    if env.backend != "nccl":  # gathering the result for the check: NCCL may refuse complex
        dtypes.append(torch.complex64)
    for dtype in dtypes:
        x = rand((5, 7), seed=10, device=env.device).to(dtype)
        with env.ranks():
            dx = distribute_tensor(x, env.mesh1, [S0])
            out, comm, _ = run_op(ops.transpose, dx)
            check(env, out, ops.transpose(x), [S1], comm)


# ----------------------------------------------------------------------------- histc

def _histc_data(seed, shape=(8, 12), device="cpu"):
    x = rand(shape, seed=seed, device=device).float()
    x.view(-1)[3], x.view(-1)[17], x.view(-1)[40] = math.inf, -math.inf, math.nan
    return x


@pytest.mark.parametrize("mesh_name,pls", _cases([R, S0, S1, PSUM]))
def test_histc_placements(env, mesh_name, pls):
    parts = rand((4, 8, 12), seed=11, device=env.device)
    x = full_of(parts, pls)
    has_partial = any(p.is_partial() for p in pls)
    with env.ranks():
        mesh = env.mesh(mesh_name)
        n_sharded = n_collectives(mesh, pls)
        dx = make_input(parts, mesh, pls)
        for bins, lo, hi, dtype in ((16, -4, 4, None), (7, -1.5, 2, torch.int64),
                                    (10, 0, 0, None), (5, 3, 3, torch.int64)):
            out, comm, counts = run_op(ops.histc, dx, bins, lo, hi, dtype=dtype)
            ref = ops.histc(x, bins, lo, hi, dtype=dtype)
            kinds = {str(k) for k in counts}
            assert not any("all_gather" in k for k in kinds), f"the input was gathered: {kinds}"
            if not has_partial:
                expected = [PSUM if p.is_shard() else R for p in pls]
                check(env, out, ref, expected, 0)
                auto = lo == hi
                # auto-range: one all-reduce of (min, max) per sharded mesh dim; else nothing
                assert comm == (n_sharded if auto else 0), counts
            else:  # a Partial input is reduce-scattered first (histc is not linear)
                check(env, out, ref, None, comm)


@pytest.mark.parametrize("case", ["inf_nan", "int", "f16", "bf16_cast_bounds", "constant",
                                  "all_nan", "uneven_empty", "one_rank_only"])
def test_histc_auto_range(env, case):
    x = _histc_data(12, device=env.device)
    bins, lo, hi, kw = 13, 0, 0, {}
    if case == "int":
        x = rand((8, 12), seed=12, dtype=torch.int64, device=env.device)
    elif case == "f16":
        x = x.half()
        kw = {"dtype": torch.int64}
    elif case == "bf16_cast_bounds":  # 1 and 1.001 are the same bf16 value: auto-range
        x, lo, hi = x.bfloat16(), 1.0, 1.001
    elif case == "constant":  # global min == max: the range is widened to (v - 1, v + 1)
        x = torch.full((8, 12), 2.5, device=env.device)
        x[0, 0] = math.nan
    elif case == "all_nan":
        x = torch.full((8, 12), math.nan, device=env.device)
    elif case == "uneven_empty":  # 3 rows over 4 ranks: chunks of 1, the last rank empty
        x = _histc_data(13, shape=(5, 9), device=env.device)
    elif case == "one_rank_only":  # the finite values all sit in the first rank's rows
        x = torch.full((8, 12), math.inf, device=env.device)
        x[0, :5] = torch.tensor([1.0, -3.0, 7.5, 2.0, 2.0])
    ref = ops.histc(x, bins, lo, hi, **kw)
    with env.ranks():
        for pls, mesh in (((S0,), env.mesh1), ((S1,), env.mesh1), ((S0, S1), env.mesh2)):
            dx = distribute_tensor(x, mesh, pls)
            out, comm, counts = run_op(ops.histc, dx, bins, lo, hi, **kw)
            check(env, out, ref, [PSUM] * len(pls), 0)
            assert comm == n_collectives(mesh, pls), counts
            assert all("all_reduce" in str(k) for k in counts), counts


def test_histc_sharded_raises_the_ops_errors(env):
    # int bounds that round to one float64 raise on a sharded input too, not a global auto-range
    x = torch.full((8, 12), 2**60, dtype=torch.int64, device=env.device)
    with env.ranks():
        for pls, mesh in (((S0,), env.mesh1), ((R,), env.mesh1), ((S0, S1), env.mesh2)):
            dx = distribute_tensor(x, mesh, pls)
            with pytest.raises(ValueError, match="round to the same float64 bound"):
                ops.histc(dx, 4, 2**60, 2**60 + 1)
            with pytest.raises(ValueError, match="bins must be > 0"):
                ops.histc(dx, 0)


def test_histc_unknown_placement_raises_naming_it(env):
    from smem_ops.distributed import _histc_handler

    class Odd(Replicate):  # a placement type no rule knows
        def is_replicate(self):
            return False

        def __repr__(self):
            return "Odd()"

    x = rand((8, 4), seed=14, device=env.device)
    with env.ranks():
        dx = distribute_tensor(x, env.mesh1, [R])
        fake = DTensor.from_local(dx.to_local(), env.mesh1, [Odd()], run_check=False)
        with pytest.raises(NotImplementedError, match=r"placement Odd\(\)"):
            _histc_handler(DTensor, ops.histc.default, (DTensor,), (fake, 10, 0, 1), {})


# ----------------------------------------------------------------------------- autograd

def test_autograd_sum_transpose_sharded_grads(env):
    x = rand((8, 12), seed=15, device=env.device)
    g_rows, g_t = rand((8,), seed=16, device=env.device), rand((12, 8), seed=17, device=env.device)
    with env.ranks():
        mesh = env.mesh1
        # sum over a kept dim: Shard(0) -> Shard(0); the gradient is Shard(0) as well
        dx = distribute_tensor(x, mesh, [S0]).requires_grad_()
        y = ops.sum(dx, [1])
        assert tuple(y.placements) == (S0,)
        y.backward(distribute_tensor(g_rows, mesh, [S0]))
        assert tuple(dx.grad.placements) == (S0,), dx.grad.placements
        grad_sum = env.plain(dx.grad.full_tensor())
        # transpose: Shard(0) -> Shard(1), and back for the gradient
        dx2 = distribute_tensor(x, mesh, [S0]).requires_grad_()
        t = ops.transpose(dx2)
        assert tuple(t.placements) == (S1,)
        t.backward(distribute_tensor(g_t, mesh, [S1]))
        assert tuple(dx2.grad.placements) == (S0,), dx2.grad.placements
        grad_t = env.plain(dx2.grad.full_tensor())
        # sum over the sharded dim (Partial out), sum_of_squares and dot: values
        dx3 = distribute_tensor(x, mesh, [S0]).requires_grad_()
        (ops.sum(dx3, [0]).sum() + ops.sum_of_squares(dx3)).backward()
        grad_3 = env.plain(dx3.grad.full_tensor())
        da = distribute_tensor(x[:, 0].contiguous(), mesh, [S0]).requires_grad_()
        db = distribute_tensor(x[:, 1].contiguous(), mesh, [S0]).requires_grad_()
        ops.dot(da, db).backward()
        assert tuple(da.grad.placements) == (S0,)
        grad_a = env.plain(da.grad.full_tensor())
    xr = x.clone().requires_grad_()
    ops.sum(xr, [1]).backward(g_rows)
    assert torch.equal(grad_sum.cpu(), xr.grad.cpu())
    assert torch.equal(grad_t.cpu(), g_t.t().cpu())
    assert torch.equal(grad_3.cpu(), (1 + 2 * x).cpu())
    assert torch.equal(grad_a.cpu(), x[:, 1].cpu())


# ----------------------------------------------------------------------------- torch.compile

def test_compile_function_of_dtensors(env):
    backend = os.environ.get("SMEM_DIST_COMPILE_BACKEND") or (
        "inductor" if env.device.startswith("cuda") else "aot_eager")
    x = rand((8, 12), seed=18, device=env.device)

    def f(dx):
        t = ops.transpose(dx)                     # Shard(0) -> Shard(1)
        rows = ops.sum(t, [0], True)              # over the unsharded dim: Shard(1)
        total = ops.sum_of_squares(dx, None)      # Partial
        h = ops.histc(dx, 8, -4, 4)               # Partial counts
        return t, rows, total, h

    torch._dynamo.reset()
    with env.ranks():
        dx = distribute_tensor(x, env.mesh1, [S0])
        eager = f(dx)
        compiled = torch.compile(f, backend=backend, fullgraph=True)(dx)
        for e, c in zip(eager, compiled):
            assert tuple(e.placements) == tuple(c.placements), (e.placements, c.placements)
            assert torch.equal(env.plain(e.full_tensor()).cpu(), env.plain(c.full_tensor()).cpu())
    assert tuple(compiled[0].placements) == (S1,) and tuple(compiled[2].placements) == (PSUM,)


def test_compile_histc_auto_range_breaks_the_graph(env):
    """Auto-range on a sharded DTensor syncs with the host for the global range: under
    torch.compile it is a graph break, with the right result."""
    if not REAL:
        pytest.skip("LocalTensorMode does not survive this graph break (aot_eager); real ranks only")
    x = _histc_data(19, device=env.device)
    torch._dynamo.reset()
    dx = distribute_tensor(x, env.mesh1, [S0])
    out = torch.compile(lambda t: ops.histc(t, 12), backend="aot_eager")(dx)
    assert tuple(out.placements) == (PSUM,)
    assert torch.equal(out.full_tensor().cpu(), ops.histc(x, 12).cpu())


# ----------------------------------------------------------------------------- the TP example

def test_tp_block_example(env):
    example = ROOT / "examples" / "tp_block.py"
    if not example.exists():  # CI runs a copy of tests/ against the installed wheel
        pytest.skip("examples/tp_block.py is not beside these tests: run them from the source tree")
    spec = importlib.util.spec_from_file_location("tp_block", example)
    tp_block = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tp_block)
    report = tp_block.check(env.mesh1, env.device, ranks=env.ranks, plain=env.plain)
    assert report["max_abs_diff"] <= report["tolerance"] and report["hist_diff"] == 0, report


# ----------------------------------------------------------------------------- registration

def test_rules_registered_lazily():
    """Importing smem_ops does not import torch.distributed.tensor (seconds); importing that
    registers the rules. (The other order, DTensor first, registers at smem_ops' import: the
    docs/DISTRIBUTED.md snippet takes that path.)"""
    from conftest import run_python

    if REAL:
        pytest.skip("checked by the simulated run")
    code = ("import sys, smem_ops\n"
            "assert 'torch.distributed.tensor' not in sys.modules\n"
            "assert not smem_ops.distributed._registered\n"
            "import torch.distributed.tensor\n"
            "assert smem_ops.distributed._registered\n")
    run_python(code, cwd=ROOT, timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])})
