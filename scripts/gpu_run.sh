#!/bin/bash
# One device call: GPU tests, the all-reduce bench on 2 and 4 GPUs, the PyTorch peer, sanitizers.
# Runs from a copy of the tree with prebuilt binaries in bin/ and their libraries in lib/
# (scripts/gpu_pack.sh); results go to $OUT. NVLink multicast stays off throughout.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export VDEV_TIMEOUT_MS=60000  # session waits (NCCL set-up, graph instantiation); kernel waits stay bounded at 8 s
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH}
STAGES=${STAGES:-"test bench2 bench4 torch sanitize"}
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nvidia-smi topo -m
  ls -l /usr/lib/x86_64-linux-gnu/libnccl.so* 2>&1
  ldd bin/allreduce_bench | grep -E "nccl|cudart|not found"
} > "$OUT/cuda_test.log" 2>&1
cat "$OUT/cuda_test.log"
for stage in $STAGES; do
  echo "=== $stage $(date -u +%T)"
  case $stage in
    test)
      timeout 300 bin/runtime_cuda_test 2>&1 | tee -a "$OUT/cuda_test.log" | grep -E "OK|FAILED|SKIPPED|Failure|worker" ;;
    bench2)
      CUDA_VISIBLE_DEVICES=0,1 timeout 300 bin/vdev launch -n 2 -- bin/allreduce_bench --csv "$OUT/bench2.csv" \
        ${BENCH_ARGS} 2>&1 | tee "$OUT/bench2.log" | tail -45 ;;
    bench4)
      timeout 300 bin/vdev launch -n 4 -- bin/allreduce_bench --csv "$OUT/bench4.csv" ${BENCH_ARGS} 2>&1 \
        | tee "$OUT/bench4.log" | tail -45 ;;
    torch)
      (CUDA_VISIBLE_DEVICES=0,1 timeout 150 torchrun --nproc-per-node 2 bench/torch_symm_bench.py "$OUT/torch2.csv";
       timeout 150 torchrun --nproc-per-node 4 bench/torch_symm_bench.py "$OUT/torch4.csv") 2>&1 | tail -40 ;;
    sanitize)
      for tool in memcheck racecheck; do
        CUDA_VISIBLE_DEVICES=0,1 timeout 200 bin/vdev launch -n 2 -- compute-sanitizer --tool $tool \
          --error-exitcode 9 bin/allreduce_bench --only-vdev --max-bytes 1048576 --reps 1 --no-llm --no-eager 2>&1 \
          | grep -vE "^(graph|eager) " | head -120
        echo "$tool exit ${PIPESTATUS[0]}"
      done 2>&1 | tee "$OUT/sanitize.log" ;;
  esac
done
