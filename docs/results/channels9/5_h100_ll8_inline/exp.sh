#!/bin/bash
# Call 5 (run 17): world 8 one_shot_ll, compiled plans with AwaitLine force-inlined ("base", kept)
# and as a call (-DVDEV_EXPERIMENT_AWAIT_CALL, a switch of that build only), in turn, twice.
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH}
for v in base await_call base await_call; do
  opts=""; [ $v = await_call ] && opts="-DVDEV_EXPERIMENT_AWAIT_CALL"
  echo "=== $v $(date -u +%T)" | tee -a $OUT/exp.log
  VDEV_NVRTC_OPTIONS="$opts" timeout 200 bin/channels_one_gpu_bench --compiled --worlds 8 --plans one_shot_ll --reps 5 2>&1 | tee -a $OUT/exp.log | grep -E "^ratio|rror"
done
