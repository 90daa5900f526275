"""tests/test_distributed.py on 2 real gloo ranks (torchrun), so the collectives run for real.

One launch, a quick subset (SMEM_DIST_QUICK=1: 1-D meshes, fewer dims): about 30 s on 2 cores.
The whole suite on real ranks: tests/distributed/run_gpu.sh (NCCL), or by hand:
    SMEM_DIST_BACKEND=gloo torchrun --standalone --nproc-per-node 2 -m pytest -q \\
        -p no:cacheprovider tests/test_distributed.py
"""

import os
import pathlib
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not torch.distributed.is_available() or
                       not torch.distributed.is_gloo_available(),
                       reason="needs torch.distributed with gloo"),
    pytest.mark.skipif("RANK" in os.environ, reason="already inside a torchrun job"),
]


def test_suite_on_two_gloo_ranks():
    env = {**os.environ, "SMEM_DIST_BACKEND": "gloo", "SMEM_DIST_QUICK": "1",
           "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
               [str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_distributed.py"]
    r = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert out.count(" passed") >= 2 and " failed" not in out, out[-3000:]
