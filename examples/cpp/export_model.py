"""Export a small model that calls smem ops and package it with AOTInductor, for aoti_run.

    python3 examples/cpp/export_model.py --out DIR [--device cpu|cuda] [--lib libsmem_ops.so]

Writes DIR/model.pt2 (torch._inductor.aoti_compile_and_package) and DIR/io.pt (the inputs and
the outputs of the eager model, as CPU tensors) for `aoti_run DIR/model.pt2 DIR/io.pt`, which
runs the package from C++ and checks its outputs equal these. The script also runs the package
from Python and checks the same.

The smem ops come from the installed smem_ops package, or with --lib from the plain library
(libsmem_ops.so, the CMake build): it is loaded with torch.ops.load_library and the fake kernels
that torch.export needs are taken from smem_ops/ in this checkout, without the extension.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import types

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_smem_ops(lib: str | None) -> None:
    if lib is None:
        import smem_ops  # noqa: F401  (defines torch.ops.smem.*, registers the fake kernels)
        return
    torch.ops.load_library(lib)
    # The fake kernels torch.export needs live in smem_ops/{ops,histograms}.py, which only need
    # torch.ops.smem defined. They are imported as modules of a stand-in package, not of
    # smem_ops, whose __init__ would load the Python extension too.
    package = types.ModuleType("_smem_ops_fakes")
    package.__path__ = [os.path.join(ROOT, "smem_ops")]
    sys.modules[package.__name__] = package
    for name in ("ops", "histograms"):
        importlib.import_module(f"{package.__name__}.{name}")


# Before pytorch/pytorch#173562 (in 2.13.0, not in 2.11.0; 2.12 untried) AOTInductor's proxy
# executor handed custom ops a wrong `dtype=` (torch.float64 arrived as complex32): the model
# passes dtype arguments only on a torch that decodes them.
DTYPE_ARGS = torch.__version__ >= (2, 13)  # TorchVersion: compared as a version, local tag ignored


class Model(torch.nn.Module):
    """A transpose feeding an inductor-generated kernel feeding a sum, and histograms."""

    def forward(self, x: torch.Tensor, w: torch.Tensor):
        t = torch.ops.smem.transpose(x, 0, 1)                           # (N, B), contiguous
        s = torch.ops.smem.sum(t * w, [1], True)                        # (N, 1)
        h = torch.ops.smem.histc(x, 16, -3.0, 3.0)                      # float counts
        b = torch.ops.smem.batched_histc(x, 10, -2.0, 2.0, dim=0)       # (N, 10), per column
        if DTYPE_ARGS:
            q = torch.ops.smem.sum_of_squares(x, [0], dtype=torch.float64)  # (N,)
            hi = torch.ops.smem.histc(x, 8, 0, 0, dtype=torch.int64)        # auto range, exact
        else:
            q = torch.ops.smem.sum_of_squares(x.double(), [0])
            hi = torch.ops.smem.histc(x, 8, 0, 0)
        return t, s, q, h, hi, b


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory for model.pt2 and io.pt")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--lib", help="path of libsmem_ops.so (default: import the smem_ops package)")
    args = ap.parse_args()
    load_smem_ops(args.lib)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("export_model: no CUDA device", file=sys.stderr)
        return 77  # ctest's "skipped"
    os.makedirs(args.out, exist_ok=True)

    torch.manual_seed(0)
    x = torch.randn(64, 48, device=args.device)
    w = torch.randn(48, 1, device=args.device)
    model = Model().eval()
    ep = torch.export.export(model, (x, w))
    called = sorted({str(n.target) for n in ep.graph.nodes
                     if n.op == "call_function" and str(n.target).startswith("smem.")})
    note = "" if DTYPE_ARGS else " (no dtype= arguments: this torch's AOTInductor mis-decodes them)"
    print("export_model: the exported graph calls", ", ".join(called) + note)
    wanted = {"smem.transpose.default", "smem.sum.default", "smem.histc.default",
              "smem.batched_histc.default"}
    assert wanted <= set(called), called

    package = torch._inductor.aoti_compile_and_package(
        ep, package_path=os.path.join(args.out, "model.pt2"))
    expected = model(x, w)
    compiled = torch._inductor.aoti_load_package(package)(x, w)
    for i, (a, b) in enumerate(zip(compiled, expected, strict=True)):
        assert a.dtype == b.dtype and torch.equal(a, b), f"output {i}: package != eager"
    torch.save({"inputs": [x.cpu(), w.cpu()], "outputs": [e.cpu() for e in expected]},
               os.path.join(args.out, "io.pt"))
    print(f"export_model: wrote {package} and io.pt ({args.device}); Python runs the package "
          "with outputs equal to eager")
    return 0


if __name__ == "__main__":
    sys.exit(main())
