"""Benchmark runner: smem ops against their peers, on both clocks.

    python -m benchmarks                    # the full sweep for this device (CUDA if present)
    python -m benchmarks --quick            # a short sweep
    python -m benchmarks --goals            # only the cases of the goal table (GPU)
    python -m benchmarks --list             # the full GPU sweep's cases, without running them
    python -m benchmarks --ladder --save    # full sweep + technique ladders -> benchmarks/results/

Writes a table to stdout and, into bench-out/ at the repository root (or --out DIR), a JSON
file, a Markdown table and, with matplotlib, a PNG, named after the device. --save writes them
to benchmarks/results/ instead: the committed results, one current sweep per device.

Every op is memory-bound, so each case reports the bytes that must move (inputs read once,
outputs written once) over the time, as a % of the copy ceiling measured in the same process.
A GPU case has both clocks of benchmarks/timing.py: device time (kernel durations from CUPTI;
goals are judged on it) and wall time (CUDA events, L2 flushed), each against the ceiling
measured by the same clock. CPU cases have the host clock only. Peers: torch eager,
torch.compile, cuBLAS geam (fp32/fp64 transposes) and CUB through CuPy (fp32 sums and
histograms; skipped when cupy is not importable). Every implementation's output is checked
against the reference before it is timed; one that fails is reported, not timed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys

import torch

import smem_ops

from .cases import FAMILIES, GOALS, Case, Sweep, cupy_with_cub, dtype_name, is_goal, ladder_cases
from .provenance import RESULTS, SCRATCH, commit, slug
from .report import format_row, goal_summary, header, markdown, plot
from .timing import HEAD_START_US, copy_ceiling_gbs, device_copy, time_cpu, time_device, time_wall

# --------------------------------------------------------------------------- driver


def environment(sw: Sweep, ceiling, args) -> dict:
    sha, dirty = commit()
    env = {"device": sw.kind, "torch": torch.__version__, "python": platform.python_version(),
           "commit": sha, "dirty": dirty,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": "python -m benchmarks " + " ".join(sys.argv[1:] if args is None else args),
           "copy_ceiling_gbs_wall": round(ceiling["wall"], 1),
           # other work on the host moves host-clock numbers (CPU cases, wall-time floors)
           "load_avg_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}
    if sw.kind == "cuda":
        p = torch.cuda.get_device_properties(0)
        wall_timer = ("CUDA events, L2 flushed (persisting lines reset) behind a "
                      f"{HEAD_START_US:g} us spin before each, median")

        def empty():
            return torch.cuda._sleep(0)
        env.update(gpu=p.name, sms=p.multi_processor_count, cuda=torch.version.cuda,
                   l2_bytes=getattr(p, "L2_cache_size", None),
                   copy_ceiling_gbs_device=round(ceiling["device"], 1),
                   wall_timer=wall_timer,
                   device_timer="torch.profiler (CUPTI) kernel durations",
                   # each clock's floor: one empty kernel
                   empty_kernel_us_wall=round(time_wall(empty), 2),
                   empty_kernel_us_device=round(time_device(empty).us, 2),
                   cupy=getattr(sw.cupy, "__version__", None))
    else:
        env.update(cpu=platform.processor() or platform.machine(),
                   threads=torch.get_num_threads(), wall_timer="host perf_counter")
    return env


def copy_floor(nbytes: int) -> float:
    """Device time of the ceiling's own copy moving a case's `nbytes`, under the same flush (its
    launch ramp and the flush's dirty L2 lines weigh on small sizes as on the op's)."""
    return time_device(device_copy(nbytes)).us


def run_case(case: Case, sw: Sweep, ceiling: dict) -> list[dict]:
    """Verifies every impl of the case, runs each once more (on the GPU: a whole wall-time
    measurement) and discards that, then times them all for the report. Timing one impl can
    move the state the next one runs in: on the H100, after torch.compile's 8192x1000 transpose
    had been timed, smem's and cuBLAS geam's wall times fell from 29.7 / 29.8 us to 25.9 / 26.7
    us, and stayed there (why is not established). In the reported round each impl runs after
    all of them have run once."""
    gpu = sw.kind == "cuda"
    dtype = dtype_name(case.dtype)
    goal = gpu and is_goal(case.op, dtype, case.shape, case.params)
    rows, timed = [], {}
    ref_out = case.impls[case.reference]()
    for name, fn in case.impls.items():
        if name == case.reference and name.endswith("untimed)"):
            continue
        row = {"op": case.op, "impl": name, "dtype": dtype, "shape": list(case.shape),
               "params": case.params, "case": case.label, "bytes": case.bytes_moved, "goal": goal}
        rows.append(row)
        try:
            out = ref_out if name == case.reference else fn()
            if case.error is not None:
                row["rel_err"] = float(f"{case.error(out):.3g}")
            if name != case.reference:
                try:
                    case.checks.get(name, case.check)(out, ref_out)
                except AssertionError as e:  # a wrong answer is reported, and not timed
                    err = f", rel err {row['rel_err']:.2e} vs float64" if "rel_err" in row else ""
                    row["error"] = (f"wrong result, not timed (differs from {case.reference}"
                                    f"{err}): {str(e).splitlines()[0][:80]}")
                    continue
            if gpu:
                time_wall(fn)  # the discarded round
            else:
                fn()
            timed[name] = fn
        except Exception as e:  # noqa: BLE001  (a failed impl is reported, not fatal)
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    for row in rows:
        fn = timed.get(row["impl"])
        if fn is None:
            continue
        try:
            if gpu:
                wall = time_wall(fn)
                dev = time_device(fn, est_us=wall)
                row.update(device_us=round(dev.us, 2), activities_per_call=dev.activities)
            else:
                wall = time_cpu(fn)
                row["device_us"] = None
        except Exception as e:  # noqa: BLE001
            row["error"] = f"timing: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
            continue
        row["wall_us"] = round(wall, 2)
        for clock in ("device", "wall"):
            us, ceil = row[f"{clock}_us"], ceiling[clock]
            gbs = case.bytes_moved / us / 1e3 if us else None
            row[f"gbs_{clock}"] = None if gbs is None else round(gbs, 1)
            row[f"pct_ceiling_{clock}"] = None if gbs is None or not ceil else round(
                100 * gbs / ceil, 1)
    if goal:  # what the device's own copy reaches moving the case's bytes: the goal's floor
        floor = copy_floor(case.bytes_moved)
        for row in rows:
            row.update(copy_floor_device_us=round(floor, 2),
                       copy_floor_pct_ceiling_device=round(
                           100 * case.bytes_moved / floor / 1e3 / ceiling["device"], 1))
    eager = next((r for r in rows if r["impl"] == "torch eager" and "wall_us" in r), None)
    for row in rows:
        for clock in ("device", "wall"):
            mine = row.get(f"{clock}_us")
            base = eager.get(f"{clock}_us") if eager else None
            row[f"speedup_vs_eager_{clock}"] = (round(base / mine, 2) if base and mine else None)
        print(format_row(row, gpu), flush=True)
    return rows


def build_sweep(args, alloc: str | None = None) -> Sweep:
    kind = args.device or ("cuda" if torch.cuda.is_available() and smem_ops.cuda_compiled()
                           else "cpu")
    listing = alloc == "meta"
    return Sweep(kind=kind, alloc=alloc or kind, quick=args.quick,
                 compile=kind == "cuda" and not args.no_compile,
                 cupy=None if kind != "cuda" or args.no_cupy or listing else cupy_with_cub())


def cases_of(sw: Sweep, args):
    for family in args.only or list(FAMILIES):
        yield from FAMILIES[family](sw)
    if args.ladder:
        yield from ladder_cases(sw)


def list_cases(args) -> int:
    """Prints the cases of the sweep (inputs on the meta device, nothing runs) and checks that
    the goal table is covered when the sweep is the full GPU one."""
    if args.device is None:
        args.device = "cuda"
    sw = build_sweep(args, alloc="meta")
    found = set()
    for case in cases_of(sw, args):
        dtype = dtype_name(case.dtype)
        mark = "goal" if sw.kind == "cuda" and is_goal(case.op, dtype, case.shape,
                                                       case.params) else "    "
        print(f"{mark} {case.op:<16} {case.label:<34} {dtype:<9} {', '.join(case.impls)}")
        for g in GOALS:
            if (case.op, dtype, tuple(case.shape)) == g[:3] and all(
                    case.params.get(k) == v for k, v in g[3].items()):
                found.add(GOALS.index(g))
    if sw.kind == "cuda":
        print("(+ 'CuPy (CUB)' on fp32 sums and fixed-range fp32 histograms when cupy imports)")
        missing = [g for i, g in enumerate(GOALS) if i not in found]
        if not (args.quick or args.only):
            print(f"goal table: {len(GOALS) - len(missing)} of {len(GOALS)} rows are cases"
                  + "".join(f"\n  MISSING {g}" for g in missing))
            return 1 if missing else 0
    return 0


def _slug(env: dict, quick: bool) -> str:
    return slug(env.get("gpu") or f"cpu {env['threads']}threads") + ("_quick" if quick else "")


def run(args, argv=None) -> dict:
    sw = build_sweep(args)
    gpu = sw.kind == "cuda"
    if args.goals and not gpu:
        raise SystemExit("--goals: the goal table is for the GPU sweep")
    if args.save and args.quick and gpu:
        raise SystemExit("--save on the GPU keeps the full sweep: drop --quick")
    ceiling = copy_ceiling_gbs(sw.kind)
    env = environment(sw, ceiling, argv)
    print(f"# smem_ops benchmark on {env.get('gpu', env.get('cpu'))}, torch {env['torch']}"
          + (f", CUDA {env['cuda']}" if gpu else f", {env['threads']} threads")
          + f", commit {env['commit']}{' (dirty)' if env['dirty'] else ''}", flush=True)
    if gpu:
        print(f"# copy ceiling (read + write): {env['copy_ceiling_gbs_device']:.0f} GB/s by device "
              f"time, {env['copy_ceiling_gbs_wall']:.0f} GB/s by wall time; empty kernel "
              f"{env['empty_kernel_us_device']} us device, {env['empty_kernel_us_wall']} us wall; "
              f"cupy {env['cupy'] or 'not importable: no CUB rows'}", flush=True)
    else:
        print(f"# copy ceiling (read + write): {env['copy_ceiling_gbs_wall']:.1f} GB/s", flush=True)
    print(header(gpu), flush=True)
    rows = []
    for case in cases_of(sw, args):
        if args.goals and not is_goal(case.op, dtype_name(case.dtype), case.shape, case.params):
            continue
        rows += run_case(case, sw, ceiling)
    result = {"environment": env, "results": rows}
    if gpu and not (args.quick or args.only):
        result["goals"] = goal_summary(rows)
    out = RESULTS if args.save else (args.out or SCRATCH)
    os.makedirs(out, exist_ok=True)
    stem = os.path.join(out, _slug(env, args.quick))
    with open(stem + ".json", "w") as f:
        json.dump(result, f, indent=1)
    with open(stem + ".md", "w") as f:
        f.write(markdown(result, gpu))
    print(f"# wrote {stem}.json, {stem}.md", flush=True)
    plot(rows, stem, env, gpu)
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None)
    ap.add_argument("--quick", action="store_true", help="a short sweep")
    ap.add_argument("--only", nargs="*", choices=list(FAMILIES), help="families to run")
    ap.add_argument("--goals", action="store_true", help="only the goal table's cases (GPU)")
    ap.add_argument("--ladder", action="store_true", help="also time every technique-ladder rung")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile peers")
    ap.add_argument("--no-cupy", action="store_true", help="skip the CuPy (CUB) peers")
    ap.add_argument("--list", action="store_true",
                    help="print the cases (of the full GPU sweep unless --device cpu) and check "
                         "the goal table; runs nothing")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--out", default=None, help=f"output folder (default {SCRATCH})")
    where.add_argument("--save", action="store_true",
                       help="write into benchmarks/results/ (the committed results; full sweeps "
                            "only, --quick allowed on the CPU)")
    args = ap.parse_args(argv)
    if args.list:
        return list_cases(args)
    if args.save and (args.only or args.goals):
        ap.error("--save keeps one whole sweep per device: not with --only or --goals")
    run(args, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
