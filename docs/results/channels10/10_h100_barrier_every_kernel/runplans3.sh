#!/bin/bash
# Run 18 call 10: the CUDA backend's per-count barrier now taken whichever kernel a worker runs:
# tp_mlp and tp_transformer_10, 2 and 4 workers, plan:one_shot_ll and plan:two_shot, auto and generic.
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH}
for k in auto generic; do
  for ex in tp_mlp tp_transformer_10; do
    for n in 2 4; do
      for p in one_shot_ll two_shot; do
        start=$(date +%s%N)
        VDEV_PLAN_KERNEL=$k timeout 100 bin/vdev run examples/$ex.vdev --backend cuda --workers $n --check --repeat 3 \
          --allreduce-strategy plan:$p > /tmp/run.log 2>&1
        rc=$?
        printf "%-8s %-18s workers %d plan:%-12s exit %d  %d ms  %s\n" $k $ex $n $p $rc $(( ($(date +%s%N) - start) / 1000000 )) \
          "$(grep -E "^check|failed" /tmp/run.log | head -1 | cut -c1-100)"
      done
    done
  done
done
