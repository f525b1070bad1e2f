#!/bin/bash
# One-off device call: this build's tests (8-source plans in blocks of <= 256 threads run an instance
# without the 512-thread register cap) and its benchmark against run 11's build (bin/base), two
# passes in turn.
set -u
FINAL=$OUT; export OUT=/tmp/r; mkdir -p $OUT
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64 CUDA_VISIBLE_DEVICES=0 NCCL_NVLS_ENABLE=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } > $OUT/env.log 2>&1
timeout 120 bin/channels_cuda_one_gpu_test > $OUT/test.log 2>&1; echo "test $? $(grep -E 'PASSED|FAILED' $OUT/test.log | head -2 | tr '\n' ' ')"
timeout 120 bin/channels_cuda_executor_test > $OUT/executor.log 2>&1; echo "executor $? $(grep -E 'PASSED|FAILED' $OUT/executor.log | head -2 | tr '\n' ' ')"
i=0
for v in base . base .; do
  i=$((i+1))
  timeout 100 bin/$v/channels_one_gpu_bench > $OUT/bench_${i}_${v/./this}.log 2>&1
  echo "$i $v $(grep -c ^ratio $OUT/bench_${i}_${v/./this}.log) $(date -u +%T)"
done
tar czf $FINAL/results.tgz -C $OUT .
