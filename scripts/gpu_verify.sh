#!/bin/bash
# One device call that checks a merged tree on one GPU, with no benchmarks and no sanitizers: every GPU
# test binary (the all-reduce kernels, the 2..8 workers sharing GPU 0, the CUDA kernels, the channel
# plans), the executor's examples with --check on 1 and 2 workers, and, when .gpu-python/ travelled
# (scripts/gpu_pack_python.sh), the whole pytest suite on the GPU machine's interpreter, where the
# CUDA backend's test runs instead of skipping.
# Here: scripts/build.sh && scripts/gpu_pack.sh [&& scripts/gpu_pack_python.sh HEADERS]
# Device: run(command="bash .gpu/scripts/gpu_verify.sh", carry=[".gpu", ".gpu-python"])
# Logs go to $OUT; the last lines are a table of each step's exit status.
set -u
export PYTHONUNBUFFERED=1
# shellcheck source=gpu_step.sh
source "$(dirname "$0")/gpu_step.sh" gpu-verify-out
cd "$root"
nvidia-smi -L | tee "$out/gpu.txt"
show_step_log() {  # the test runners' summary lines
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^[0-9]+ (passed|failed)|passed|failed" "$out/$1.log" | tail -n 12
}
for test in runtime_cuda_test runtime_cuda_one_gpu_test cuda_kernels_test channels_cuda_one_gpu_test channels_cuda_executor_test; do
  [ -x "$bin/$test" ] && step "$test" 300 "$bin/$test"
done
for example in examples/run/tp_mlp.vdev examples/run/heterogeneous.vdev examples/memory/tp_transformer_10.vdev; do
  for n in 1 2; do
    step "run_$(basename "$example" .vdev)_$n" 120 "$bin/vdev" run "$example" --backend cuda --workers "$n" --check
  done
done
# The all-reduces as channel plans run by the CUDA plan executor (two workers sharing the GPU).
for plan in one_shot_ll two_shot; do
  step "run_tp_mlp_plan_$plan" 120 "$bin/vdev" run examples/run/tp_mlp.vdev --backend cuda --workers 2 --check \
    --allreduce-strategy "plan:$plan"
done
python_pack=$root/.gpu-python
if [ -d "$python_pack/vdev" ]; then
  python=$(command -v python3)
  for candidate in /opt/*/.venv/bin/python3; do  # an interpreter with NumPy, pytest and Hypothesis
    if [ -x "$candidate" ] && "$candidate" -c "import numpy, pytest, hypothesis" 2>/dev/null; then python=$candidate; fi
  done
  "$python" --version
  step python_suite 300 env PYTHONPATH="$python_pack" VDEV_CLI="$bin/vdev" "$python" -m pytest -q -p no:cacheprovider -rs \
    tests/python
  grep -E "cuda" "$out/python_suite.log" | head -n 5
fi
echo "=== exit status per step"
cat "$out/status.txt"
! grep -qv " 0$" "$out/status.txt"
