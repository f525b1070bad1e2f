#!/bin/bash
# One device call on a machine of 4 GPUs (nvidia-h100-x4 / nvidia-h200-x4): the all-reduce table on 4
# GPUs (every vdev kernel, the channel plans, NCCL, NCCL symmetric), `vdev run --check` of the
# examples on 4 workers, the 10-layer transformer on 4 workers (vdev, vdev with NCCL, the PyTorch
# peer) and compute-sanitizer on a bounded 4-worker all-reduce run. WORLD=8 on an 8-GPU machine.
# Stages run while DEADLINE seconds (default 540) have not passed, each bounded.
# Here: scripts/build.sh && scripts/gpu_pack.sh
# Device: run(command="bash .gpu/scripts/gpu_four_gpu.sh", carry=[".gpu"], kind=nvidia-h100-x4)
set -u
# shellcheck source=gpu_step.sh
source "$(dirname "$0")/gpu_step.sh" gpu-four-out
cd "$root"
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 VDEV_TIMEOUT_MS=60000
n=${WORLD:-4}
deadline=${DEADLINE:-540}
export CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1)))
show_step_log() { grep -vE "^\[ (RUN|      OK) " "$out/$1.log" | tail -n 40; }
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; nvidia-smi topo -m; } | tee "$out/machine$n.txt"
budget() { [ $((deadline - SECONDS)) -ge "$1" ] || { echo "=== skipped ($1 s needed, $((deadline - SECONDS)) s left): ${*:2}"; return 1; }; }
for stage in ${STAGES:-bench check model sanitize}; do
  case $stage in
    bench)
      budget 150 bench && step "bench$n" 150 "$bin/vdev" launch -n "$n" -- "$bin/allreduce_bench" --csv "$out/bench$n.csv" \
        --min-bytes 4096 --max-bytes 268435456 --no-llm --no-eager --reps 9 --variants \
        vdev-auto,vdev-inplace,vdev-1shot-ll,vdev-1shot-ll128,vdev-1shot-sentinel,vdev-2shot-ll,vdev-1shot,vdev-2shot,plan-one_shot_ll,plan-one_shot,plan-two_shot,nccl,nccl-symm ;;
    check)
      for example in examples/memory/tp_transformer_10.vdev examples/memory/tp_pp_transformer_10.vdev \
          examples/memory/allreduce_reshape.vdev examples/run/tp_mlp.vdev examples/run/heterogeneous.vdev; do
        budget 60 "$example" && step "check_$(basename "$example" .vdev)_w$n" 60 "$bin/vdev" run "$example" --backend cuda \
          --workers "$n" --check --repeat 3
      done ;;
    model)
      budget 40 model && step "model_w${n}_vdev" 40 "$bin/vdev" run examples/memory/tp_transformer_10.vdev --backend cuda --workers "$n" --repeat 100
      budget 40 model && step "model_w${n}_nccl" 40 "$bin/vdev" run examples/memory/tp_transformer_10.vdev --backend cuda --workers "$n" \
        --repeat 100 --allreduce-strategy nccl
      budget 60 torch && [ -f bench/torch_tp_transformer.py ] && step "model_w${n}_torch" 60 torchrun --nproc-per-node "$n" \
        bench/torch_tp_transformer.py --tokens 256 ;;
    sanitize)
      for tool in memcheck racecheck; do
        budget 60 "$tool" && step "sanitize${n}_$tool" 60 "$bin/vdev" launch -n "$n" -- compute-sanitizer --tool $tool \
          --report-api-errors no --error-exitcode 9 "$bin/allreduce_bench" --only-vdev --min-bytes 4096 --max-bytes 262144 \
          --reps 1 --no-llm --no-eager --variants vdev-auto,vdev-1shot-ll,vdev-2shot-ll
      done ;;
  esac
done
echo "=== exit status per step"
cat "$out/status.txt"
exit $status
