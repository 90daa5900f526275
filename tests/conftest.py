import subprocess
import sys

import pytest
import torch

import smem_ops

HAS_CUDA = torch.cuda.is_available() and smem_ops.cuda_compiled()

# Every CUDA test carries the `cuda` mark: the GPU job selects them with `-m cuda`.
_skip_without_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device and a CUDA build")

DEVICES = ["cpu", pytest.param("cuda", marks=[_skip_without_cuda, pytest.mark.cuda])]


def requires_cuda(test):
    return pytest.mark.cuda(_skip_without_cuda(test))


def pytest_configure(config):
    # Registered here, not in pyproject.toml, so that the tests run from a copy outside the
    # source tree (CI tests the installed wheel that way) know their marks too.
    config.addinivalue_line(
        "markers", "cuda: runs on a CUDA device (tools/gpu_check.sh selects these with -m cuda)")
    config.addinivalue_line("markers", "slow: large tensors or subprocesses")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def raised_from(exc, etype, message):
    """Whether exc, or an exception it was raised from or during, is an etype with the message
    (torch.compile wraps an op's error in its own)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, etype) and message in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def make_tensor(shape, dtype, device, low=None, high=None):
    """Random (never all-zero) data of any dtype."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, device=device).bool()
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype.is_floating_point:
        x = torch.randn(shape, device=device, dtype=torch.float32)
        if low is not None:
            x = torch.rand(shape, device=device) * (high - low) + low
        return x.to(dtype)
    info = torch.iinfo(dtype)
    lo = max(info.min, -100 if low is None else low)
    hi = min(info.max, 100 if high is None else high)
    return torch.randint(lo, hi + 1, shape, device=device).to(dtype)


def run_python(code, *flags, timeout=300, **kwargs):
    """Runs `code` in a fresh interpreter (with interpreter `flags`) and asserts that it exits 0,
    showing the end of its stderr if not."""
    r = subprocess.run([sys.executable, *flags, "-c", code], check=False, capture_output=True,
                       text=True, timeout=timeout, **kwargs)
    assert r.returncode == 0, r.stderr[-3000:]


def cuda_kernels(fn):
    """The names of the CUDA kernels fn() launches (fn launches at least one). Skips the test
    where the profiler records none: CUPTI is taken there, e.g. by compute-sanitizer."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    if not names:
        pytest.skip("the profiler records no CUDA kernels here (CUPTI taken, e.g. by compute-sanitizer)")
    return names


def eps(dtype):
    """The machine epsilon of dtype (of its real part, for complex dtypes)."""
    if dtype.is_complex:
        dtype = torch.float32 if dtype == torch.complex64 else torch.float64
    return torch.finfo(dtype).eps


def reference_counts(x, bins, lo, hi, math=None):
    """Exact counts with torch's bin formula, (v - lo) * bins / (hi - lo) truncated, evaluated
    in torch's arithmetic type (float32 for fp16/bf16/fp32 input, float64 otherwise, so edge
    values land where torch puts them), or in `math`."""
    if math is None:
        math = torch.float32 if x.dtype in (torch.float16, torch.bfloat16, torch.float32) else torch.float64
    if x.dtype in (torch.float16, torch.bfloat16):  # torch casts the bounds to the input dtype
        lo, hi = (torch.tensor(b, dtype=x.dtype).item() for b in (lo, hi))
    v = x.flatten().to(math)
    if lo == hi:
        finite = v[torch.isfinite(v)]
        lo, hi = (finite.min().item(), finite.max().item()) if finite.numel() else (0.0, 0.0)
        if lo == hi:
            lo, hi = lo - 1, hi + 1
    lo_t, hi_t = (torch.tensor(b, dtype=math, device=v.device) for b in (lo, hi))
    keep = (v >= lo_t) & (v <= hi_t)
    scaled = (v[keep] - lo_t) * torch.tensor(bins, dtype=math, device=v.device) / (hi_t - lo_t)
    return torch.bincount(scaled.long().clamp_(max=bins - 1), minlength=bins)
