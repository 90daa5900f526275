"""How the benchmark runner reports: the table rows it prints, the goal summary, the Markdown
table and the PNG plot."""

from __future__ import annotations

from .cases import GOALS


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def format_row(row: dict, gpu: bool) -> str:
    head = f"{row['op']:<16} {row['case']:<34} {row['dtype']:<9} {row['impl']:<22}"
    if "error" in row:
        # A peer's wrong answer is its own finding; any smem failure is this library's.
        peer_inexact = row["error"].startswith("wrong") and not row["impl"].startswith(
            ("smem", "ladder"))
        return f"{head} {'INEXACT' if peer_inexact else 'FAILED'} {row['error']}"
    if gpu:
        text = (f"{head} {_fmt(row['device_us'], '10.1f')} {_fmt(row['wall_us'], '10.1f')} "
                f"{_fmt(row['pct_ceiling_device'], '6.1f')} {_fmt(row['pct_ceiling_wall'], '6.1f')}"
                f" {_fmt(row['speedup_vs_eager_device'], '7.2f')}"
                f" {_fmt(row.get('activities_per_call'), '4g')}")
    else:
        text = (f"{head} {_fmt(row['wall_us'], '10.1f')} {_fmt(row['pct_ceiling_wall'], '6.1f')}"
                f" {_fmt(row['speedup_vs_eager_wall'], '7.2f')}")
    return text + (f"  rel err {row['rel_err']:.2e}" if "rel_err" in row else "")


def header(gpu: bool) -> str:
    head = f"{'op':<16} {'case':<34} {'dtype':<9} {'impl':<22}"
    if gpu:
        return (f"{head} {'device us':>10} {'wall us':>10} {'%dev':>6} {'%wall':>6} "
                f"{'x eager':>7} {'acts':>4}   (% of the copy ceiling, each by its own clock; "
                f"x eager on device time)")
    return f"{head} {'host us':>10} {'%ceil':>6} {'x eager':>7}"


def goal_met(goal: tuple, us: float | None, pct: float | None) -> bool | None:
    kind, value = goal
    if us is None:
        return None
    return pct >= value if kind == "pct" else us <= value


def goal_summary(rows: list[dict]) -> list[dict]:
    """One line per goal row: the goal, smem's device time, the copy floor (the device's own copy
    moving the same bytes) and the best peer's time, or MISSING."""
    summary = []
    print("# goal table (device time; floor: the device copy of the same bytes)", flush=True)
    for op, dtype, shape, params, goal in GOALS:
        sel = [r for r in rows if r["op"] == op and r["dtype"] == dtype
               and tuple(r["shape"]) == shape and r.get("device_us") is not None
               and all(r["params"].get(k) == v for k, v in params.items())]
        smem = next((r for r in sel if r["impl"] == "smem"), None)
        peers = [r for r in sel if r["impl"] != "smem" and r["device_us"]]
        best = min(peers, key=lambda r: r["device_us"], default=None)
        line = {"op": op, "dtype": dtype, "shape": list(shape), "params": params,
                "goal": f"{'>=' if goal[0] == 'pct' else '<='} {goal[1]}{'%' if goal[0] == 'pct' else ' us'}",
                "smem_device_us": smem and smem["device_us"],
                "smem_pct_ceiling_device": smem and smem["pct_ceiling_device"],
                "met": smem and goal_met(goal, smem["device_us"], smem["pct_ceiling_device"]),
                "copy_floor_device_us": smem and smem.get("copy_floor_device_us"),
                "copy_floor_pct_ceiling_device": smem and smem.get("copy_floor_pct_ceiling_device"),
                "best_peer": best and best["impl"], "best_peer_device_us": best and best["device_us"]}
        summary.append(line)
        print(f"#   {op:<15} {dtype:<9} {shape!s:<16} {params!s:<36} goal {line['goal']:<9} "
              + (f"smem {smem['device_us']:.1f} us ({smem['pct_ceiling_device']}%)"
                 f" {'met' if line['met'] else 'NOT met'}, floor "
                 f"{_fmt(line['copy_floor_device_us'], '.1f')} us "
                 f"({_fmt(line['copy_floor_pct_ceiling_device'], '.1f')}%)"
                 if smem else "MISSING")
              + (f", best peer {best['impl']} {best['device_us']:.1f} us" if best else ""),
              flush=True)
    return summary


def markdown(result: dict, gpu: bool) -> str:
    env = result["environment"]
    lines = [f"# smem_ops benchmark: {env.get('gpu', env.get('cpu'))}", ""]
    lines += [f"- {k}: {v}" for k, v in env.items()] + [""]
    if gpu:
        lines += [("Device time: kernel durations from CUPTI (torch.profiler), median over calls, "
                   "L2 flushed before each. Wall time: CUDA events around each call, median, the "
                   "same flush, queued behind a spin that lets the host queue the call first. "
                   "% of the copy ceiling measured by the same clock."), "",
                  ("| op | case | dtype | impl | device us | wall us | % ceiling (device) | "
                   "% ceiling (wall) | x eager (device) | x eager (wall) |"),
                  "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    else:
        lines += ["Host clock (perf_counter), median; % of the copy ceiling measured the same way.",
                  "", "| op | case | dtype | impl | us | % ceiling | x eager |",
                  "|---|---|---|---|---:|---:|---:|"]
    for r in result["results"]:
        lead = f"| {r['op']} | {r['case']} | {r['dtype']} | {r['impl']} |"
        if "error" in r:
            lines.append(f"{lead} failed: {r['error']} |" + " |" * (5 if gpu else 2))
        elif gpu:
            lines.append(f"{lead} {_fmt(r['device_us'], '.1f')} | {_fmt(r['wall_us'], '.1f')} | "
                         f"{_fmt(r['pct_ceiling_device'], '.1f')} | "
                         f"{_fmt(r['pct_ceiling_wall'], '.1f')} | "
                         f"{_fmt(r['speedup_vs_eager_device'], '.2f')} | "
                         f"{_fmt(r['speedup_vs_eager_wall'], '.2f')} |")
        else:
            lines.append(f"{lead} {_fmt(r['wall_us'], '.1f')} | {_fmt(r['pct_ceiling_wall'], '.1f')}"
                         f" | {_fmt(r['speedup_vs_eager_wall'], '.2f')} |")
    if result.get("goals"):
        lines += ["", "## Goal table (device time)", "",
                  ("Floor: the device's own copy (torch's `copy_`) moving the case's bytes, half read "
                  "and half written, timed the same way."), "",
                  ("| op | dtype | shape | params | goal | smem us | % ceiling | met | floor us | "
                  "floor % | best peer | peer us |"),
                  "|---|---|---|---|---|---:|---:|---|---:|---:|---|---:|"]
        for g in result["goals"]:
            lines.append(f"| {g['op']} | {g['dtype']} | {tuple(g['shape'])} | {g['params']} | "
                         f"{g['goal']} | {_fmt(g['smem_device_us'], '.1f')} | "
                         f"{_fmt(g['smem_pct_ceiling_device'], '.1f')} | "
                         f"{'yes' if g['met'] else 'no'} | {_fmt(g['copy_floor_device_us'], '.1f')} | "
                         f"{_fmt(g['copy_floor_pct_ceiling_device'], '.1f')} | "
                         f"{g['best_peer'] or '-'} | {_fmt(g['best_peer_device_us'], '.1f')} |")
    return "\n".join(lines) + "\n"


def plot(rows, stem, env, gpu):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# matplotlib not installed: no plot", flush=True)
        return
    key = "pct_ceiling_device" if gpu else "pct_ceiling_wall"
    rows = [r for r in rows if r.get(key) is not None]
    ops = list(dict.fromkeys(r["op"] for r in rows))
    if not ops:
        return
    fig, axes = plt.subplots(len(ops), 1, figsize=(13, 3.4 * len(ops)), squeeze=False)
    for ax, op in zip(axes[:, 0], ops, strict=True):
        sel = [r for r in rows if r["op"] == op]
        cases = list(dict.fromkeys(f"{r['case']} {r['dtype']}" for r in sel))
        impls = list(dict.fromkeys(r["impl"] for r in sel))
        width = 0.8 / max(1, len(impls))
        for k, impl in enumerate(impls):
            pts = [(cases.index(f"{r['case']} {r['dtype']}") + k * width, r)
                   for r in sel if r["impl"] == impl]
            ax.bar([x for x, _ in pts], [r[key] for _, r in pts], width, label=impl)
            if gpu:  # wall time as a dot on each bar
                ax.plot([x for x, r in pts if r.get("pct_ceiling_wall") is not None],
                        [r["pct_ceiling_wall"] for _, r in pts
                         if r.get("pct_ceiling_wall") is not None], "k.", markersize=4)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))])
        ax.set_xticklabels(cases, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("% of copy ceiling")
        ax.set_title(op)
        ax.legend(fontsize=7, ncol=min(len(impls), 6))
    clock = ("bars: device time (CUPTI), dots: wall time (CUDA events)" if gpu
             else "host clock")
    fig.suptitle(f"smem_ops on {env.get('gpu', env.get('cpu'))}, torch {env['torch']}, "
                 f"commit {env['commit']}: {clock}")
    fig.tight_layout()
    fig.savefig(stem + ".png", dpi=80)
    print(f"# wrote {stem}.png", flush=True)
