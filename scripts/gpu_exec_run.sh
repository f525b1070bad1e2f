#!/bin/bash
# The executor on one GPU, in one call on the GPU machine: every example with --check on the CUDA
# backend with 1 and 2 workers (2 share the GPU), the C++ frontend, compute-sanitizer memcheck on
# one example, a profiled 10-layer transformer, and the layer benchmark (executor with graph replay
# against the hand-written layer, matmul against cuBLAS). Run from the repository root after
# `bash scripts/gpu_pack.sh .gpu` here:  device run: bash .gpu/scripts/gpu_exec_run.sh   (carry .gpu)
# Logs and CSV go to $OUT (or ./gpu-exec-out).
set -u
# shellcheck source=gpu_step.sh
source "$(dirname "$0")/gpu_step.sh" gpu-exec-out
cd "$root"
nvidia-smi -L | tee "$out/gpu.txt"
for example in examples/run/tp_mlp.vdev examples/run/heterogeneous.vdev examples/memory/tp_transformer_10.vdev; do
  for n in 1 2; do
    step "run_$(basename "$example" .vdev)_$n" 180 "$bin/vdev" run "$example" --backend cuda --workers "$n" --check --repeat 3
  done
done
step frontend 60 "$bin/frontend" --cuda
step memcheck 300 compute-sanitizer --tool memcheck --target-processes all --error-exitcode 9 \
  "$bin/vdev" run examples/run/heterogeneous.vdev --backend cuda --workers 1 --check
step profile 120 "$bin/vdev" run examples/memory/tp_transformer_10.vdev --backend cuda --repeat 20 --profile
step layer_bench 300 "$bin/layer_bench" --samples 30 --csv "$out/layer.csv"
exit $status
