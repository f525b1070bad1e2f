#!/bin/bash
# Experiment: LL packet waits one source after another (kept) or all pending sources polled together
# (-DVDEV_AWAIT_TOGETHER), compiled plans only (VDEV_NVRTC_OPTIONS), worlds 8, then 2 and 4.
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH}
for w in 8 2,4; do
  for opt in "" "-DVDEV_AWAIT_TOGETHER"; do
    echo "=== worlds $w options '$opt' $(date -u +%T)"
    VDEV_NVRTC_OPTIONS="$opt" timeout 150 bin/channels_one_gpu_bench --compiled --worlds $w --plans one_shot_ll 2>&1 | grep -E "^ratio|rror"
  done
done
