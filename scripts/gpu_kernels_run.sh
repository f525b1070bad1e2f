#!/bin/bash
# One device call for the CUDA kernels (tests/kernels/cuda_kernels_test.cc, bench/layer_bench.cc):
# the tests, compute-sanitizer memcheck and racecheck on them, and the layer benchmark. Runs from a
# folder holding bin/ (the two binaries) and lib/ (the Abseil and OpenBLAS libraries they link,
# OpenBLAS xz-compressed), with scripts/ beside them; results go to $OUT.
cd "$(dirname "$0")/.."
for packed in lib/*.xz; do if [ -e "$packed" ]; then xz -dkf "$packed"; fi; done
# cuBLAS comes with the machine: the CUDA toolkit's, else the Python wheel's.
blas=$(find /usr/local/cuda/lib64 /usr/local/lib /usr/lib /opt -name 'libcublasLt.so.13*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${blas:+$(dirname "$blas"):}${LD_LIBRARY_PATH}
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  ldd bin/cuda_kernels_test bin/layer_bench | grep -E "cublas|cudart|openblas|not found"
} > "$OUT/env.log" 2>&1
cat "$OUT/env.log"
echo "=== test $(date -u +%T)"
timeout 100 bin/cuda_kernels_test 2>&1 | tee "$OUT/cuda_kernels_test.log" | grep -E "OK \]|FAILED|PASSED|Failure|element|rror" | head -60
echo "=== bench $(date -u +%T)"
timeout 100 bin/layer_bench --samples ${SAMPLES:-30} --csv "$OUT/layer_bench.csv" 2>&1 | tee "$OUT/layer_bench.log"
echo "=== sanitize $(date -u +%T)"
for tool in memcheck racecheck; do
  filter=$([ $tool = memcheck ] && echo "*" || echo "*Attention*:*Norm*:*Softmax*:*Capture*")
  timeout $([ $tool = memcheck ] && echo 70 || echo 60) compute-sanitizer --tool $tool --error-exitcode 9 bin/cuda_kernels_test --gtest_filter="$filter" 2>&1 \
    | grep -vE "^\[ RUN|^\[       OK" | tail -15
  echo "$tool exit ${PIPESTATUS[0]}"
done 2>&1 | tee "$OUT/sanitize.log"
