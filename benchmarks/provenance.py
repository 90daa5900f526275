"""Where results go, and what they record about the code and the machine that made them."""

from __future__ import annotations

import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRATCH = os.path.join(REPO, "bench-out")  # default output: never committed
RESULTS = os.path.join(REPO, "benchmarks", "results")  # --save: the committed results


def _git(*args) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO,
                              check=False).stdout.strip()
    except OSError:
        return ""


def commit() -> tuple[str, bool]:
    """(short commit, whether tracked files other than benchmarks/results differ from it; results
    written by an earlier run of the same checkout don't change what is measured). SMEM_COMMIT
    names the commit for a copy without a current .git (the GPU machine's copy of a working
    tree), whose own status would compare against another commit: `<sha>` for a copy of that
    commit, `<sha>+dirty` for one with uncommitted changes (the sender knows which)."""
    if os.environ.get("SMEM_COMMIT"):
        sha, _, mark = os.environ["SMEM_COMMIT"].partition("+")
        return sha, mark == "dirty"
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ".",
                  ":(exclude)benchmarks/results")
    return _git("rev-parse", "--short", "HEAD") or "unknown", bool(status)


def slug(name: str) -> str:
    """A file-name stem for a device: 'NVIDIA H100 80GB HBM3' -> 'nvidia_h100_80gb_hbm3'."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def save_json(out: str, name: str, module: str, argv: list[str] | None, env: dict,
              body: dict) -> str:
    """Writes {"environment": ..., **body} to out/name, the environment being `env` plus what
    every result file records: torch, CUDA, the commit (+dirty), the smem_ops build and the
    command. Returns the path."""
    import json
    import sys

    import torch

    import smem_ops

    sha, dirty = commit()
    env = {**env, "torch": torch.__version__, "cuda": torch.version.cuda,
           "commit": sha + ("+dirty" if dirty else ""), "smem_ops": smem_ops.build_info(),
           "command": f"python -m {module} " + " ".join(sys.argv[1:] if argv is None else argv)}
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, name)
    with open(path, "w") as f:
        json.dump({"environment": env, **body}, f, indent=1)
    print(f"wrote {path}")
    return path
