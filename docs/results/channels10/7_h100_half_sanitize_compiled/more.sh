#!/bin/bash
# Run 18 call 7: the f16/bf16 test on worlds 5-8 (half its plans compiled), and memcheck + racecheck of
# compiled plans on worlds 5 and 8 (calls 4 and 5 covered worlds 2-4).
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH}
echo "=== half types $(date -u +%T)"
timeout 200 bin/channels_cuda_one_gpu_test --gtest_filter='*HalfTypes*/world5:*HalfTypes*/world6:*HalfTypes*/world7:*HalfTypes*/world8' 2>&1 \
  | tee $OUT/half.log | grep -E "OK \]|FAILED|Failure|rror"
for tool in memcheck racecheck; do
  echo "=== $tool $(date -u +%T)"
  VDEV_ONE_GPU_MAX_COUNT=4099 VDEV_PLAN_WORLD_TIMEOUT_S=60 timeout 170 compute-sanitizer --tool $tool --error-exitcode 9 \
    bin/channels_cuda_one_gpu_test --gtest_filter='*ExactCompiled/world5:*ExactCompiled/world8' 2>&1 \
    | tee $OUT/sanitize_compiled_$tool.log | grep -E "OK \]|FAILED|ERROR SUMMARY|RACECHECK SUMMARY|Hazard"
  echo "$tool exit ${PIPESTATUS[0]}"
done
