#!/bin/bash
# Run 18 call 8: vdev run's CUDA backend with plan:NAME strategies on PlanKernel::kAuto (compiled
# here) and on the generic kernel, --check against the CPU reference, 5 runs (the 2nd captured in a
# CUDA graph, later ones replayed); 2 and 4 workers sharing GPU 0; then the executor's kAuto tests.
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH}
for k in auto generic; do
  for ex in tp_mlp tp_transformer_10; do
    for n in 2 4; do
      for p in one_shot_ll one_shot two_shot one_shot_push; do
        start=$(date +%s.%N)
        VDEV_PLAN_KERNEL=$k timeout 120 bin/vdev run examples/$ex.vdev --backend cuda --workers $n --check --repeat 5 \
          --allreduce-strategy plan:$p > $OUT/run_${k}_${ex}_${n}_$p.log 2>&1
        rc=$?
        printf "%-8s %-18s workers %d plan:%-14s exit %d  %.1f s  %s\n" $k $ex $n $p $rc "$(echo "$(date +%s.%N) - $start" | bc)" \
          "$(grep -E "^check|failed" $OUT/run_${k}_${ex}_${n}_$p.log | head -1 | cut -c1-110)"
      done
    done
  done
done
timeout 120 bin/channels_cuda_executor_test --gtest_filter='*Auto*' 2>&1 | grep -E "OK \]|FAILED|Failure"
