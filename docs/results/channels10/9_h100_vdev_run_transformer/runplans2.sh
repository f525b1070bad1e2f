#!/bin/bash
# Run 18 call 9: as call 8's runplans.sh for tp_transformer_10 on PlanKernel::kAuto (call 8's summary
# did not come back), one summary file; seconds per run of vdev (5 repeats with --check).
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH}
for k in auto generic; do
  for n in 2 4; do
    for p in one_shot_ll one_shot two_shot one_shot_push; do
      start=$(date +%s%N)
      VDEV_PLAN_KERNEL=$k timeout 120 bin/vdev run examples/tp_transformer_10.vdev --backend cuda --workers $n --check \
        --repeat 5 --allreduce-strategy plan:$p > /tmp/run.log 2>&1
      rc=$?
      printf "%-8s tp_transformer_10 workers %d plan:%-14s exit %d  %d ms  %s\n" $k $n $p $rc $(( ($(date +%s%N) - start) / 1000000 )) \
        "$(grep -E "^check|failed" /tmp/run.log | head -1 | cut -c1-110)"
    done
  done
done
