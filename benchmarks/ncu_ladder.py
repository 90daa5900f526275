"""Shared-memory bank conflicts of each transpose ladder variant, read by Nsight Compute.

    python -m benchmarks.ncu_ladder [--out DIR | --save]

Runs itself under `ncu --clock-control none` (leaves the GPU's clocks alone) with one launch
of every variant on the same fp32 8192 x 8192 input, and prints, per variant, the shared
load/store instructions and the bank conflicts they caused. Writes <gpu>_ncu_ladder.json and
.log into bench-out/ (or --out DIR), or with --save into benchmarks/results/.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys

from benchmarks.provenance import RESULTS, SCRATCH, commit, slug

METRICS = {
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "smem load bank conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "smem store bank conflicts",
    "smsp__sass_inst_executed_op_shared_ld.sum": "smem load instructions",
    "smsp__sass_inst_executed_op_shared_st.sum": "smem store instructions",
    "gpu__time_duration.sum": "duration (ns, under ncu)",
}


def worker():
    import torch

    import smem_ops

    x = torch.randn(8192, 8192, device="cuda")
    for variant in smem_ops.variants("transpose"):
        torch.cuda.nvtx.range_push(variant)
        torch.ops.smem._transpose_variant(x, variant)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help=f"output folder (default {SCRATCH})")
    ap.add_argument("--save", action="store_true", help="write into benchmarks/results/")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker()
    ncu = shutil.which("ncu")
    if ncu is None:
        print("ncu not found: no bank-conflict counts")
        return 0
    import smem_ops

    variants = smem_ops.variants("transpose")
    cmd = [ncu, "--clock-control", "none", "--csv", "--kernel-name", "regex:transpose",
           "--metrics", ",".join(METRICS), sys.executable, "-m", "benchmarks.ncu_ladder",
           "--worker"]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))
    rows = [r for r in csv.reader(io.StringIO(p.stdout)) if len(r) > 5]
    if p.returncode != 0 or not rows:
        print(p.stdout[-3000:], p.stderr[-3000:])
        return 1
    head = rows[0]
    ki, mi, vi = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
    idi = head.index("ID")
    kernels: dict[str, dict] = {}
    for r in rows[1:]:
        kernels.setdefault(r[idi], {"kernel": r[ki]})[METRICS.get(r[mi], r[mi])] = r[vi]
    # launches come in variant order, one kernel each
    table = []
    for variant, (_, k) in zip(variants, sorted(kernels.items(), key=lambda kv: int(kv[0]))):
        table.append({"variant": variant, **k})
    import torch

    sha, dirty = commit()
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "commit": sha, "dirty": dirty,
           "command": "python -m benchmarks.ncu_ladder (ncu --clock-control none)"}
    lines = ["# " + ", ".join(f"{k} {v}" for k, v in env.items())]
    lines += [f"{t['variant']:<14} " + "  ".join(f"{name}: {t.get(name, '-')}" for name in
                                                 METRICS.values()) + f"  [{t['kernel'][:60]}]"
              for t in table]
    print("\n".join(lines))
    out = RESULTS if args.save else (args.out or SCRATCH)
    os.makedirs(out, exist_ok=True)
    stem = os.path.join(out, slug(env["gpu"]) + "_ncu_ladder")
    with open(stem + ".json", "w") as f:
        json.dump({"environment": env, "input": "fp32 8192x8192", "metrics": METRICS,
                   "variants": table}, f, indent=1)
    with open(stem + ".log", "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"# wrote {stem}.json, {stem}.log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
