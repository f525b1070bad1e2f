#!/bin/bash
# One-off device call on four GPUs (issue 17, run 15): runtime_cuda_test on all four; the channel plans
# against the hand-written kernels and NCCL (allreduce_bench's plan-* variants), twice; memcheck of
# the plan variants on four workers.
set -u
FINAL=$OUT; export OUT=/tmp/r; mkdir -p $OUT
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 VDEV_TIMEOUT_MS=60000 LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64
for z in lib/*.xz; do xz -d -f "$z" 2>/dev/null || python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$z"; done
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvidia-smi topo -m; } > $OUT/env.log 2>&1
head -3 $OUT/env.log
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 150 bin/runtime_cuda_test > $OUT/runtime_cuda_test.log 2>&1
echo "runtime_cuda_test $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/runtime_cuda_test.log | tr '\n' ' ')"
V=vdev-1shot-ll,plan-one_shot_ll,vdev-inplace,plan-one_shot,vdev-1shot,plan-one_shot_push,vdev-2shot,plan-two_shot,vdev-auto,nccl
for i in 1 2; do
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 120 bin/vdev launch -n 4 -- bin/allreduce_bench --min-bytes 1024 --max-bytes 4194304 \
    --no-llm --no-eager --variants $V --csv $OUT/plans4_$i.csv > $OUT/plans4_$i.log 2>&1
  echo "bench4 $i $? $(date -u +%T)"
done
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 200 bin/vdev launch -n 4 -- compute-sanitizer --tool memcheck --report-api-errors no \
  --error-exitcode 9 bin/allreduce_bench --only-vdev --max-bytes 65536 --reps 1 --no-llm --no-eager \
  --variants plan-one_shot_ll,plan-one_shot,plan-one_shot_push,plan-two_shot > $OUT/memcheck4.log 2>&1
echo "memcheck4 $? $(grep -c 'ERROR SUMMARY: 0 errors' $OUT/memcheck4.log) workers with 0 errors"
grep -E "^graph" $OUT/plans4_2.log | head -14
tar czf $FINAL/results.tgz -C $OUT .
