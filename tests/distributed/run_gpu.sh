#!/usr/bin/env bash
# The distributed job on one host with 2 GPUs (NCCL): the DTensor suite on real ranks, the TP
# example, the cuda:1 device-guard test, the DTensor sum timing. Logs and results go to $OUT
# (default /tmp/smem_dist_out). Steps run in the order given (default: test example guard bench):
#
#   tests/distributed/run_gpu.sh                    # everything but build and sanitize
#   tests/distributed/run_gpu.sh build test         # build in place first (tools/gpu_check.sh build)
#   tests/distributed/run_gpu.sh sanitize           # compute-sanitizer memcheck on each rank
#   NPROC=4 tests/distributed/run_gpu.sh test       # more ranks (meshes (W,) and (1, W))
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/smem_dist_out}
NPROC=${NPROC:-2}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 SMEM_DIST_BACKEND=nccl
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
TORCHRUN=(python3 -m torch.distributed.run --standalone --nproc-per-node "$NPROC")
PYTEST=(-m pytest -q -rs -p no:cacheprovider)
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(test example guard bench)
status=0

run() {  # run LOG CMD...: tee the output to $OUT/LOG, remember a failure
  local log=$1; shift
  echo "+ $*" | tee "$OUT/$log"
  "$@" 2>&1 | tee -a "$OUT/$log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -ne 0 ] && { echo "!!! $log: exit $rc"; status=1; }
  return 0
}

for step in "${steps[@]}"; do
  t0=$(date +%s)
  echo "=== $step"
  case "$step" in
    build)
      tools/gpu_check.sh build || exit 1
      ;;
    test)
      nvidia-smi --query-gpu=index,name,driver_version --format=csv | tee "$OUT/gpus.txt"
      python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())" | tee -a "$OUT/gpus.txt"
      run dist_tests.log "${TORCHRUN[@]}" "${PYTEST[@]}" tests/test_distributed.py
      ;;
    example)
      run tp_block.log "${TORCHRUN[@]}" examples/tp_block.py
      ;;
    guard)  # skips on one GPU; must pass here
      run guard.log python3 "${PYTEST[@]}" tests/test_cuda.py -k other_device_index_guard
      grep -q "1 passed" "$OUT/guard.log" || { echo "!!! guard: did not run"; status=1; }
      ;;
    bench)
      run dtensor_sum.log "${TORCHRUN[@]}" benchmarks/dtensor_sum.py --json "$OUT/dtensor_sum.json"
      ;;
    sanitize)  # each rank under its own compute-sanitizer; compile tests left out (slow)
      run sanitize.log python3 -m torch.distributed.run --standalone --nproc-per-node "$NPROC" \
        --no-python compute-sanitizer --tool memcheck --error-exitcode 1 \
        python3 "${PYTEST[@]}" tests/test_distributed.py -k "not compile"
      ;;
    *)
      echo "unknown step: $step"; exit 2
      ;;
  esac
  echo "=== $step: $(( $(date +%s) - t0 )) s"
done
echo "logs in $OUT"
exit $status
