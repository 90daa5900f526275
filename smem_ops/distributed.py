"""torch.ops.smem.* on DTensors (torch.distributed.tensor): sharding rules and the histc handler.

Per mesh dim (DTensor expands each rule over every dim of the mesh and picks the candidate that
needs the least redistribution of the inputs it was given):

  sum            Shard(d), d reduced       -> Partial("sum")    no communication
                 Shard(d), d kept          -> Shard(d')         d' = d less the reduced dims before it
                 Partial("sum"/"avg")      -> the same Partial  (a sum is linear)
                 Replicate                 -> Replicate
  sum_of_squares as sum, except a Partial input, which is reduced first (x*x is not linear)
  dot            Shard(0) x Shard(0)       -> Partial("sum");   Partial x Replicate -> Partial
  transpose      Shard(d)                  -> Shard(d with dim0 and dim1 swapped), no communication;
                 Partial(op)               -> Partial(op)
  histc          Shard(any d)              -> Partial("sum") counts; a Partial input is reduced first
                 (a reduce-scatter). Auto-range (min == max): one all-reduce of the local
                 finite (min, max), then local histograms over that range, then Partial("sum").

A placement no rule names (a Partial with another reduce op for a sum, _StridedShard, ...) is
redistributed by DTensor, as for its own aten ops; histc, which runs its own handler, raises an
error naming a placement it does not know. Never a wrong result.

Importing this module (smem_ops does) registers nothing and imports nothing from
torch.distributed.tensor: the rules are registered when torch.distributed.tensor is imported
(that import costs seconds, which a user of smem_ops without DTensor should not pay), or at once
if it already is. ``register()`` does it explicitly.
"""

from __future__ import annotations

import math
import threading

import torch

from ._on_import import call_after_import

__all__ = ["register"]

_ops = torch.ops.smem
_lock = threading.Lock()
_registered = False


# ----------------------------------------------------------------------------- helpers

def _reduced(ndim: int, dim) -> list[int]:
    """The dims a sum reduces, wrapped (all of them for None or []; none of a 0-dim tensor)."""
    if ndim == 0:
        return []
    if not dim:
        return list(range(ndim))
    return sorted({d % ndim for d in dim})


def _sum_out_dtype(in_dtype: torch.dtype, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        return dtype
    if in_dtype == torch.bool or not (in_dtype.is_floating_point or in_dtype.is_complex):
        return torch.int64
    return in_dtype


# (significand bits, frexp exponent of the smallest normal, largest finite) of the float types
# a histc bound is cast to; float64 and integer inputs keep the bound as it is.
_FLOAT_FORMATS = {torch.float32: (24, -125, 3.4028234663852886e38),
                  torch.float16: (11, -13, 65504.0),
                  torch.bfloat16: (8, -125, 3.3895313892515355e38)}


def _round_float(v: float, dtype: torch.dtype) -> float:
    """v rounded to nearest-even in `dtype` (inf past its range). Plain Python arithmetic, not a
    tensor op: it runs inside the histc handler, which torch.compile traces."""
    bits, min_exp, biggest = _FLOAT_FORMATS[dtype]
    if v == 0 or not math.isfinite(v):
        return v
    m, e = math.frexp(v)
    p = bits - max(0, min_exp - e)  # fewer bits for a subnormal
    r = math.ldexp(round(math.ldexp(m, p)), e - p)  # round(): ties to even
    return r if abs(r) <= biggest else math.copysign(math.inf, r)


def _histc_bound(v: float, dtype: torch.dtype) -> float:
    """A histc range bound as the kernel sees it: cast to the input dtype, as torch does
    (csrc/histogram.h, histc_cast_bound: double -> float -> half/bfloat16)."""
    v = float(v)
    if dtype in _FLOAT_FORMATS:
        v = _round_float(v, torch.float32)
        if dtype != torch.float32:
            v = _round_float(v, dtype)
    return v


def _is_auto_range(dtype: torch.dtype, lo, hi) -> bool:
    return _histc_bound(lo, dtype) == _histc_bound(hi, dtype)


# ----------------------------------------------------------------------------- rules
# Each gets the op's arguments with DTensorSpecs in place of tensors and returns the
# (output placements, input placements) a single mesh dim accepts.

def _sum_rule(linear: bool):
    def rule(x, dim=None, keepdim=False, *, dtype=None):
        from torch.distributed.tensor import Partial, Replicate, Shard

        out_dtype = _sum_out_dtype(x.tensor_meta.dtype, dtype)
        # A bool result is an "any": Partial("sum") of bools is not what DTensor's all-reduce
        # computes on every backend, so reduced dims are gathered instead (a rare case).
        partial_ok = out_dtype != torch.bool
        red = _reduced(x.ndim, dim)
        rules = [([Replicate()], [Replicate()])]
        for d in range(x.ndim):
            if d in red:
                if partial_ok:
                    rules.append(([Partial("sum")], [Shard(d)]))
            else:
                new_d = d if keepdim else d - sum(r < d for r in red)
                rules.append(([Shard(new_d)], [Shard(d)]))
        if linear and partial_ok:
            for p in _plain_partials(x, _linear_partials(x.tensor_meta.dtype, out_dtype)):
                rules.append(([p], [p]))
        return rules
    return rule


def _linear_partials(in_dtype: torch.dtype, out_dtype: torch.dtype) -> tuple[str, ...]:
    """The Partial reductions a sum into out_dtype passes through: where the cast of each rank's
    share to out_dtype adds up to the cast of the whole. A float sum does (up to rounding); a cast
    to an integer dtype truncates each share (0.5 + 0.5 would count 0 + 0) unless the shares are
    integers already, and then only for "sum" ("avg" divides in out_dtype)."""
    if out_dtype.is_floating_point or out_dtype.is_complex:
        return ("sum", "avg")
    if in_dtype.is_floating_point or in_dtype.is_complex:
        return ()
    return ("sum",)


def _plain_partials(spec, reduce_ops=None) -> list:
    """The Partial placements of spec (plain Partial only: subclasses carry other semantics)."""
    from torch.distributed.tensor import Partial

    seen = []
    for p in spec.placements:
        if type(p) is Partial and (reduce_ops is None or p.reduce_op in reduce_ops) and p not in seen:
            seen.append(p)
    return seen


def _dot_rule(x, other):
    from torch.distributed.tensor import Partial, Replicate, Shard

    rules = [([Replicate()], [Replicate(), Replicate()]),
             ([Partial("sum")], [Shard(0), Shard(0)])]
    for p in _plain_partials(x, ("sum", "avg")):
        rules.append(([p], [p, Replicate()]))
    for p in _plain_partials(other, ("sum", "avg")):
        rules.append(([p], [Replicate(), p]))
    return rules


def _transpose_rule(x, dim0=-2, dim1=-1):
    from torch.distributed.tensor import Replicate, Shard

    rules = [([Replicate()], [Replicate()])]
    n = x.ndim
    if n == 0 or not (-n <= dim0 < n and -n <= dim1 < n):
        return rules  # the op itself raises its error
    d0, d1 = dim0 % n, dim1 % n
    swap = {d0: d1, d1: d0}
    for d in range(n):
        rules.append(([Shard(swap.get(d, d))], [Shard(d)]))
    for p in _plain_partials(x):  # data movement: any reduce op commutes with it
        rules.append(([p], [p]))
    return rules


def _histc_rule(x, bins=100, min=0, max=0, *, dtype=None):  # the schema's argument names
    # Serves only what reaches DTensor's propagation past _histc_handler (which handles every
    # histc on a DTensor in eager mode); with auto-range a local histogram would use a local
    # range, so only Replicate is offered there: correct, never a wrong result.
    from torch.distributed.tensor import Partial, Replicate, Shard

    rules = [([Replicate()], [Replicate()])]
    if not _is_auto_range(x.tensor_meta.dtype, min, max):
        rules += [([Partial("sum")], [Shard(d)]) for d in range(x.ndim)]
    return rules


# ----------------------------------------------------------------------------- histc handler

def _histc_args(args, kwargs):
    x, bins, lo, hi = (list(args) + [100, 0, 0][len(args) - 1:])[:4]
    bins = kwargs.get("bins", bins)
    lo = kwargs.get("min", lo)
    hi = kwargs.get("max", hi)
    return x, bins, lo, hi, kwargs.get("dtype")


def _histc_handler(cls, func, types, args, kwargs):
    """smem.histc on a DTensor. Counts are additive, so each rank counts its own elements and
    the result is Partial("sum") on every mesh dim the input is sharded on. A Partial input
    (not additive under a histogram) is first reduce-scattered (_scatter_target)."""
    from torch.distributed.tensor import DTensor, Partial, Replicate

    from .ops import _histc_out_dtype

    x, bins, lo, hi, dtype = _histc_args(args, kwargs)
    if not isinstance(x, DTensor):
        raise TypeError(f"smem.histc: expected a DTensor input here, got {type(x).__name__}")
    mesh = x.device_mesh
    placements = []
    for i, p in enumerate(x.placements):
        if p.is_shard() or p.is_replicate():
            placements.append(p)
        elif p.is_partial():
            placements.append(_scatter_target(x, i))
        else:
            raise NotImplementedError(
                f"smem.histc: no DTensor rule for placement {p!r} (of {tuple(x.placements)}); "
                "redistribute the input to Shard or Replicate first")
    if tuple(placements) != tuple(x.placements):
        x = x.redistribute(mesh, placements)
    local = x.to_local()
    _histc_out_dtype(local, bins, lo, hi, dtype)  # the op's errors, before a global auto-range
    sharded = [p.is_shard() for p in placements]
    if any(sharded) and _is_auto_range(local.dtype, lo, hi):
        lo, hi = _global_finite_range(local, mesh, sharded)
    out = func(local, bins, lo, hi, dtype=dtype)
    out_placements = [Partial("sum") if s else Replicate() for s in sharded]
    return DTensor.from_local(out, mesh, out_placements, run_check=False,
                              shape=torch.Size([bins]), stride=(1,))


def _scatter_target(x, mesh_dim: int):
    """Where a Partial on mesh_dim goes for histc: a reduce-scatter to Shard(d), d a tensor dim no
    later mesh dim shards (so no other mesh dim's shards move), preferring one no mesh dim
    shards and then the largest; Replicate (an all-reduce) if there is none."""
    from torch.distributed.tensor import Replicate, Shard

    later = {p.dim for p in x.placements[mesh_dim + 1:] if p.is_shard()}
    anywhere = {p.dim for p in x.placements if p.is_shard()}
    dims = [d for d in range(x.ndim) if d not in later]
    if not dims:
        return Replicate()
    return Shard(min(dims, key=lambda d: (d in anywhere, -x.shape[d], d)))


def _global_finite_range(local: torch.Tensor, mesh, sharded: list[bool]) -> tuple[float, float]:
    """The (min, max) that histc's auto-range finds on the whole tensor: the finite min and max
    over every rank, from one all-reduce (min of (min, -max)) per sharded mesh dim.

    This is the one host sync of the distributed histc: the range goes back to the host to be
    passed as histc's Scalar min/max. It is removed by an op variant taking the range as a
    device tensor (docs/DISTRIBUTED.md, "histc auto-range").

    Returns (0, 0) (auto-range again, locally) when the global range is a single value or there
    is no finite value: then every rank's finite values, if any, are that one value, and the
    local auto-range (v - 1, v + 1) is the global one; a rank with none counts nothing.
    """
    from torch.distributed.tensor import DTensor, Partial, Replicate

    # Both bounds as minima, [min(x), min(-x)], over the finite values, in one reduction; a +inf
    # appended so an empty shard gives +inf rather than an error. -x is exact in every float
    # type; integers go through float64, as the kernel bins them. (Some passes over the shard:
    # the op variant described in docs/DISTRIBUTED.md would find the range in the kernel.)
    flat = local.reshape(-1)
    if not flat.dtype.is_floating_point:
        flat = flat.double()
    flat = torch.cat([flat, flat.new_full((1,), math.inf)])
    both = torch.stack([flat, flat.neg()])
    both.masked_fill_(~torch.isfinite(both), math.inf)
    lohi = both.amin(1).double()  # [min, -max], exact in float64
    placements = [Partial("min") if s else Replicate() for s in sharded]
    lohi = DTensor.from_local(lohi, mesh, placements, run_check=False).full_tensor()
    # The host sync. Under torch.compile it is a graph break; with fullgraph=True, a
    # data-dependent error here (pass min and max to compile histc in one graph).
    lo, neg_hi = lohi.tolist()
    hi = -neg_hi
    return (lo, hi) if lo < hi else (0.0, 0.0)


# ----------------------------------------------------------------------------- registration

# Which non-tensor arguments change a rule's answer (so must be in DTensor's sharding cache key):
# (first positional index hashed, kwarg-only names hashed). register_sharding derives this from
# the schema but hashes only int / int? / ScalarType? arguments: for sum it hashed neither `dim`
# (int[1]?) nor `keepdim` (bool), and sum(x, [1]) then sum(x, [0]) on one Shard(0) DTensor got
# the first call's placement back.
_CACHE_KEYS = {
    "sum": (1, ["dtype"]),
    "sum_of_squares": (1, ["dtype"]),
    "dot": (100, None),
    "transpose": (1, None),
    "histc": (1, ["dtype"]),
}


def _set_cache_key(op, static_argnum: int, static_kwargkey) -> None:
    """The one private DTensor API smem uses (checked on torch 2.11 and 2.13): DTensor's sharding
    propagator keys its cache on the args from static_argnum on and the named kwargs."""
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor._op_schema import RuntimeSchemaInfo

    prop = DTensor._op_dispatcher.sharding_propagator
    prop.op_to_schema_info[op] = RuntimeSchemaInfo(static_argnum, static_kwargkey,
                                                   needs_pytree=True)


def register() -> None:
    """Register smem's sharding rules and the histc handler with DTensor. Idempotent."""
    global _registered
    with _lock:
        if _registered:
            return
        from torch.distributed.tensor import DTensor
        from torch.distributed.tensor.experimental import register_sharding

        rules = {
            "sum": _sum_rule(linear=True),
            "sum_of_squares": _sum_rule(linear=False),
            "dot": _dot_rule,
            "transpose": _transpose_rule,
            "histc": _histc_rule,
        }
        for name, rule in rules.items():
            op = getattr(_ops, name).default
            register_sharding(op)(rule)
            _set_cache_key(op, *_CACHE_KEYS[name])
        torch.library.register_torch_dispatch("smem::histc", DTensor, _histc_handler)
        _registered = True


def _install() -> None:
    if torch.distributed.is_available():
        call_after_import("torch.distributed.tensor", register, "DTensor sharding rules")


_install()
