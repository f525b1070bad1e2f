#!/bin/bash
# One device call on a machine of 2 GPUs that checks programs spanning GPUs: the cross-device test
# (random programs between cuda:0 and cuda:1, 1,000 runs on two GPUs and 1,000 on separate streams
# of one, the proof that separate streams catch a missing event, and every example on one worker,
# 20 runs each with alternating inputs, on two GPUs and on separate streams of one), then every
# example through `vdev run --check` on 1 and 2 workers, up to RUNS times each within BUDGET seconds
# (each run eager, captured and replayed: --repeat 3), on two GPUs and on one GPU with a stream per
# virtual device and delays. EXAMPLES narrows the list.
# Here: scripts/build.sh && scripts/gpu_pack.sh
# Device: run(command="RUNS=20 bash .gpu/scripts/gpu_multi_gpu_check.sh", carry=[".gpu"], kind=nvidia-h100-x2)
set -u
# shellcheck source=gpu_step.sh
source "$(dirname "$0")/gpu_step.sh" gpu-multi-gpu-out
cd "$root"
nvidia-smi -L | tee "$out/gpu.txt"
runs=${RUNS:-20}
step executor_cross_device_test 300 "$bin/executor_cross_device_test"
# runs N SECONDS COMMAND...: COMMAND up to N times, stopping early when SECONDS have passed; fails
# at the first failing run; prints how many ran.
cat > "$out/runs.sh" <<'RUNS'
n=$1 budget=$2; shift 2
start=$SECONDS
for i in $(seq "$n"); do
  "$@" > /tmp/run.log 2>&1 || { cat /tmp/run.log; echo "run $i of $n failed"; exit 1; }
  if [ $((SECONDS - start)) -ge "$budget" ] && [ "$i" -lt "$n" ]; then tail -n 3 /tmp/run.log; echo "$i of $n runs passed (time budget of ${budget}s reached)"; exit 0; fi
done
tail -n 3 /tmp/run.log
echo "$n of $n runs passed"
RUNS
budget=${BUDGET:-40}
examples=${EXAMPLES:-"examples/memory/tp_pp_transformer_10.vdev examples/memory/tp_transformer_10.vdev examples/memory/allreduce_reshape.vdev
  examples/run/tp_mlp.vdev examples/run/heterogeneous.vdev examples/planner/two_devices.vdev"}
for example in $examples; do
  name=$(basename "$example" .vdev)
  for n in ${WORKERS:-1 2}; do
    check=("$bin/vdev" run "$example" --backend cuda --workers "$n" --check --repeat 3)
    step "${name}_w${n}_2gpu" 300 bash "$out/runs.sh" "$runs" "$budget" "${check[@]}"
    step "${name}_w${n}_lanes" 300 env CUDA_VISIBLE_DEVICES=0 VDEV_CUDA_STREAMS=per-virtual-device VDEV_CUDA_PRODUCER_DELAY_US=20 \
      bash "$out/runs.sh" 3 "$budget" "${check[@]}"
  done
done
# Time per run of the two-stage program: one worker on two GPUs, two workers on two GPUs.
for n in 1 2; do
  step "tp_pp_time_w$n" 120 "$bin/vdev" run examples/memory/tp_pp_transformer_10.vdev --backend cuda --workers "$n" --repeat 50
done
echo "=== exit status per step"
cat "$out/status.txt"
! grep -qv " 0$" "$out/status.txt"
