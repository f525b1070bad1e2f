#!/bin/bash
# One device call: GPU tests (stage onegpu: every world size 2..8 on one GPU), the all-reduce bench on
# 2 and 4 GPUs (3 on request: stage bench3), the PyTorch peer, sanitizers (on 2 GPUs, and on 4 for the
# readers that only run with 3 or more workers).
# Runs from a copy of the tree with prebuilt binaries in bin/ and their libraries in lib/
# (scripts/gpu_pack.sh); results go to $OUT. NVLink multicast stays off throughout.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export VDEV_TIMEOUT_MS=60000  # session waits (NCCL set-up, graph instantiation); kernel waits stay bounded at 8 s
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH}
# OpenBLAS travels xz-compressed (gpu_pack.sh); Python's lzma unpacks it where xz-utils is missing.
for packed in lib/*.xz; do
  if [ -e "$packed" ] && ! xz -dkf "$packed" 2>/dev/null; then
    python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read())' "$packed"
  fi
done
STAGES=${STAGES:-"test onegpu bench2 bench4 torch sanitize sanitize4"}
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
      timeout 300 bin/runtime_cuda_test 2>&1 | tee -a "$OUT/cuda_test.log" | grep -E "OK|FAILED|SKIPPED|Failure|worker"
      # A kernel that fails its tests stays out of the benchmark (a timed-out wait would end it).
      variants=" vdev-1shot-ll vdev-1shot-ll128 vdev-1shot-sentinel vdev-2shot-ll vdev-1shot vdev-2shot vdev-auto vdev-auto-nopdl nccl nccl-symm "
      for pair in one-shot-ll128:vdev-1shot-ll128 one-shot-sentinel:vdev-1shot-sentinel one-shot-ll:vdev-1shot-ll two-shot-ll:vdev-2shot-ll; do
        if grep "want" "$OUT/cuda_test.log" | grep -qE "${pair%%:*}[ ,]"; then
          variants=$(echo "$variants" | sed "s/ ${pair##*:} / /")
          echo "${pair%%:*} failed its tests: benchmark without it"
        fi
      done
      BENCH_ARGS="$BENCH_ARGS --variants $(echo $variants | tr ' ' ,)" ;;
    onegpu)
      # The kernels of 2..8 workers on GPU 0 alone (tests/runtime/cuda_one_gpu_world_test.cc).
      # Then under compute-sanitizer: the readers of 5..8 workers run nowhere else.
      CUDA_VISIBLE_DEVICES=0 timeout 300 bin/runtime_cuda_one_gpu_test 2>&1 | tee "$OUT/one_gpu_test.log" \
        | grep -E "OK|FAILED|SKIPPED|Failure|rror"
      # Under memcheck a launch seems to wait for the stream's previous kernel: a test in which a worker
      # enqueues several calls before the next worker enqueues any (the random back-to-back one) then
      # times out, the later workers' kernels never starting. memcheck runs without it; racecheck runs all.
      for tool in memcheck racecheck; do
        filter=$([ $tool = memcheck ] && echo "-*RandomBackToBack*" || echo "*")
        CUDA_VISIBLE_DEVICES=0 timeout 400 compute-sanitizer --tool $tool --error-exitcode 9 bin/runtime_cuda_one_gpu_test \
          --gtest_filter="$filter" 2>&1 | grep -vE "^\[ RUN" | tail -20
        echo "$tool exit ${PIPESTATUS[0]}"
      done 2>&1 | tee "$OUT/one_gpu_sanitize.log" ;;
    bench2|bench3|bench4)
      # All variants; then kAuto's table derived from this run; then auto again with that table.
      n=${stage#bench}
      devs=$(seq -s, 0 $((n - 1)))
      CUDA_VISIBLE_DEVICES=$devs timeout 200 bin/vdev launch -n $n -- bin/allreduce_bench --csv "$OUT/bench$n.csv" \
        ${BENCH_ARGS} > "$OUT/bench$n.log" 2>&1
      table=$(python3 bench/derive_auto_table.py "$OUT/bench$n.csv")
      echo "derived VDEV_ALLREDUCE_AUTO=$table" | tee -a "$OUT/bench$n.log"
      CUDA_VISIBLE_DEVICES=$devs VDEV_ALLREDUCE_AUTO=$table timeout 120 bin/vdev launch -n $n -- bin/allreduce_bench \
        --csv "$OUT/auto$n.csv" ${BENCH_ARGS} --variants vdev-auto,vdev-auto-nopdl,nccl,nccl-symm >> "$OUT/bench$n.log" 2>&1
      grep -E "^graph|derived" "$OUT/bench$n.log" | tail -60 ;;
    torch)
      # PyTorch's symmetric-memory one-shot, same sizes up to 16 MB; rows appended to autoN.csv.
      for n in 2 4; do
        devs=$([ "$n" = 2 ] && echo 0,1 || echo 0,1,2,3)
        CUDA_VISIBLE_DEVICES=$devs timeout 120 torchrun --nproc-per-node $n bench/torch_symm_bench.py /tmp/torch$n.csv \
          2>&1 | grep -E "^graph|Error|error" | tail -20
        tail -n +2 /tmp/torch$n.csv >> "$OUT/auto$n.csv"
      done ;;
    sanitize)
      for tool in memcheck racecheck; do
        CUDA_VISIBLE_DEVICES=0,1 timeout 200 bin/vdev launch -n 2 -- compute-sanitizer --tool $tool \
          --report-api-errors no --error-exitcode 9 bin/allreduce_bench --only-vdev --max-bytes 1048576 --reps 1 --no-llm --no-eager 2>&1 \
          | grep -vE "^(graph|eager) " | head -120
        echo "$tool exit ${PIPESTATUS[0]}"
      done 2>&1 | tee "$OUT/sanitize.log" ;;
    sanitize4)
      # The one-shot LL readers load peers together only with 3 or more workers: those paths on 4 GPUs.
      for tool in memcheck racecheck; do
        CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 200 bin/vdev launch -n 4 -- compute-sanitizer --tool $tool \
          --report-api-errors no --error-exitcode 9 bin/allreduce_bench --only-vdev --max-bytes 1048576 --reps 1 --no-llm \
          --no-eager --variants vdev-1shot-ll,vdev-1shot-ll128,vdev-1shot-sentinel,vdev-auto 2>&1 | grep -vE "^(graph|eager) " | head -60
        echo "$tool exit ${PIPESTATUS[0]}"
      done 2>&1 | tee "$OUT/sanitize4.log" ;;
  esac
done
