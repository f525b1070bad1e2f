#!/bin/bash
# One device call for the channel plan executor on ONE GPU (kind nvidia-h100-x1 or nvidia-h200):
# the one-GPU plan test (2..8 ranks sharing GPU 0), the benchmark against the hand-written kernels,
# and compute-sanitizer memcheck + racecheck of the test at small sizes and of the executor's test
# (a process per rank). Runs from a folder packed by
# scripts/gpu_pack_channels.sh (bin/, lib/); logs go to $OUT. NVLink multicast stays off.
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH}
STAGES=${STAGES:-"test bench sanitize sanitize_executor bench_again"}
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv; } \
  > "$OUT/channels_env.log" 2>&1
cat "$OUT/channels_env.log"
for stage in $STAGES; do
  echo "=== $stage $(date -u +%T)"
  case $stage in
    test)
      timeout 200 bin/channels_cuda_one_gpu_test 2>&1 | tee "$OUT/channels_test.log" | grep -E "OK \]|FAILED|Failure|rror" ;;
    executor)
      # CudaPlanExecutor: worker processes sharing GPU 0, every shipped plan against the host executor.
      timeout 300 bin/channels_cuda_executor_test 2>&1 | tee "$OUT/channels_executor.log" | grep -E "OK \]|FAILED|Failure|rror|SKIP" ;;
    old_test)
      # The earlier build's test with as many work queues as the new one sets: whether the queues
      # alone make its port-channel plan pass.
      CUDA_DEVICE_MAX_CONNECTIONS=32 timeout 150 bin/old/channels_cuda_one_gpu_test 2>&1 \
        | tee "$OUT/channels_old_test.log" | grep -E "OK \]|FAILED|Failure|rror" ;;
    repeat)
      # The exactness test 10 times over, for each build named in REPEAT_BINS (folders under bin/;
      # "." is this build): a wrong element that comes and goes is a race.
      for b in ${REPEAT_BINS:-.}; do
        echo "--- $b" | tee -a "$OUT/channels_repeat.log"
        timeout 100 bin/$b/channels_cuda_one_gpu_test --gtest_repeat=10 --gtest_filter='*IsExact*' 2>&1 \
          | tee -a "$OUT/channels_repeat.log" | grep -E "^(INTERNAL|DEADLINE)|FAILED  \]" | sort | uniq -c
      done ;;
    old_bench)
      # Appends: named twice in STAGES, both passes stay.
      CUDA_DEVICE_MAX_CONNECTIONS=32 timeout 200 bin/old/channels_one_gpu_bench 2>&1 \
        | tee -a "$OUT/channels_old_bench.log" | grep -E "^ratio|rror" ;;
    variant_bench)
      # Another build of this code (bin/$VARIANT/), e.g. a constant changed, in the same call.
      # Appends: named twice in STAGES, both passes stay.
      timeout 200 bin/$VARIANT/channels_one_gpu_bench 2>&1 | tee -a "$OUT/channels_${VARIANT}_bench.log" \
        | grep -E "^ratio|rror" ;;
    bench|bench_again)
      # bench_again: the same run a second time, for the spread between two runs of one version.
      timeout 200 bin/channels_one_gpu_bench --csv "$OUT/channels_$stage.csv" 2>&1 | tee "$OUT/channels_$stage.log" \
        | grep -E "^ratio|rror" ;;
    compiled_test)
      # Compiled plans (internal/compiled_plan.h): exact on every world, taking turns with the generic
      # kernel, a timeout reported alike; the NVRTC they need (packed lib/, the toolkit's headers).
      ls -l lib/libnvrtc* /usr/local/cuda/include/cuda_fp16.h 2>&1 | tee "$OUT/channels_nvrtc.log"
      timeout ${COMPILED_TEST_TIMEOUT_S:-500} bin/channels_cuda_one_gpu_test --gtest_filter='*Compiled*:*TakeTurns*:*HalfTypes*' 2>&1 \
        | tee "$OUT/channels_compiled_test.log" | grep -E "OK \]|FAILED|Failure|rror" ;;
    executor_compiled)
      # CudaPlanExecutor with PlanKernel::kCompiled: worker processes (2..8) sharing GPU 0, each
      # compiling its rank's kernels, every shipped plan against the host executor.
      timeout 200 bin/channels_cuda_executor_test --gtest_filter='*Compiled*' 2>&1 \
        | tee "$OUT/channels_executor_compiled.log" | grep -E "OK \]|FAILED|Failure|rror|SKIP" ;;
    sanitize_compiled)
      # memcheck and racecheck of compiled plans (every rank in one process), small counts.
      for tool in memcheck racecheck; do
        VDEV_ONE_GPU_MAX_COUNT=4099 VDEV_PLAN_WORLD_TIMEOUT_S=60 timeout 120 compute-sanitizer --tool $tool \
          bin/channels_cuda_one_gpu_test \
          --gtest_filter='*ExactCompiled/world2:*ExactCompiled/world3' 2>&1 \
          | tee "$OUT/channels_sanitize_compiled_$tool.log" | grep -E "OK \]|FAILED|ERROR SUMMARY|RACECHECK SUMMARY|Hazard"
      done ;;
    compiled_bench)
      # The plans compiled for each shape beside the generic kernel and the hand-written kernels.
      timeout ${COMPILED_BENCH_TIMEOUT_S:-500} bin/channels_one_gpu_bench --compiled --csv "$OUT/channels_compiled_bench.csv" 2>&1 \
        | tee "$OUT/channels_compiled_bench.log" | grep -E "^ratio|rror" ;;
    bench_f16|bench_bf16)
      # The same benchmark summing f16 or bf16 (the hand-written kernels and the plans alike).
      timeout 200 bin/channels_one_gpu_bench --dtype ${stage#bench_} --csv "$OUT/channels_$stage.csv" 2>&1 \
        | tee "$OUT/channels_$stage.log" | grep -E "^ratio|rror" ;;
    trace)
      # Where one execution's time goes (block 0 of each rank; channels_one_gpu_bench --trace).
      timeout 100 bin/channels_one_gpu_bench --trace 2>&1 | tee "$OUT/channels_trace.log" | grep -E "^trace|rror" ;;
    probe)
      # Whether a running kernel sees each kind of writer its waits depend on (another kernel, the copy
      # engine): plainly, then under memcheck.
      timeout 60 bin/channels_cuda_one_gpu_test --gtest_filter='*SeesEveryWriter*' 2>&1 | tee "$OUT/channels_probe.log" \
        | grep -E "seen after|OK \]|FAILED|Failure|rror"
      timeout 120 compute-sanitizer --tool memcheck bin/channels_cuda_one_gpu_test --gtest_filter='*SeesEveryWriter*' 2>&1 \
        | tee "$OUT/channels_probe_memcheck.log" | grep -E "seen after|OK \]|FAILED|Failure|rror|SUMMARY" ;;
    ports_bench)
      # Port channels against memory channels (all_gather_port / all_gather), this build and bin/old/'s
      # in turn, twice.
      for pass in 1 2; do
        for b in . old; do
          echo "--- $b pass $pass" | tee -a "$OUT/channels_ports_bench.log"
          timeout 100 bin/$b/channels_one_gpu_bench --ports --reps 5 --csv "$OUT/channels_ports_${b/./new}_$pass.csv" 2>&1 \
            | tee -a "$OUT/channels_ports_bench.log" | grep -E "^ratio|rror"
        done
      done ;;
    sanitize_executor)
      # memcheck with one process per rank (CudaPlanExecutor; the test forks workers sharing GPU 0):
      # every shipped plan, the port plan included, on 2..8 workers (EXECUTOR_TOOLS: memcheck racecheck;
      # both take about 5 minutes on one H100).
      for tool in ${EXECUTOR_TOOLS:-memcheck racecheck}; do
        VDEV_HARNESS_TIMEOUT_S=60 timeout 300 compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 \
          bin/channels_cuda_executor_test --gtest_filter='*EveryShippedPlanMatches*' 2>&1 | grep -vE "^\[ RUN" | tail -20
        echo "$tool (executor, a process per rank) exit ${PIPESTATUS[0]}"
      done 2>&1 | tee "$OUT/channels_sanitize_executor.log" ;;
    sanitize_api)
      # memcheck without its checks of the CUDA API calls' memory (--check-api-memory-access no): the
      # port proxies' copies are such calls, and port plans time out under the full memcheck.
      VDEV_ONE_GPU_MAX_COUNT=4099 timeout 100 compute-sanitizer --tool memcheck --check-api-memory-access no \
        --error-exitcode 9 bin/channels_cuda_one_gpu_test --gtest_filter="*IsExact/world3:*IsExact/world5:*IsExact/world8" \
        2>&1 | grep -vE "^\[ RUN" | tail -12 | tee "$OUT/channels_sanitize_api.log"
      echo "memcheck (no API checks) exit ${PIPESTATUS[0]}" ;;
    sanitize_ports)
      # memcheck of the port plan alone (PortPlanAtSmallCounts): which counts and instances time out.
      timeout 250 compute-sanitizer --tool memcheck --error-exitcode 9 bin/channels_cuda_one_gpu_test \
        --gtest_filter="*PortPlanAtSmallCounts/world2:*PortPlanAtSmallCounts/world3" 2>&1 \
        | grep -E "DEADLINE|INTERNAL|OK \]|FAILED \]|SUMMARY" | tee "$OUT/channels_sanitize_ports.log"
      echo "memcheck (port plan) exit ${PIPESTATUS[0]}" ;;
    sanitize_queues)
      # memcheck of worlds 3, 5 and 8 with the 32 work queues given in the environment rather than
      # set by the test binary itself (which may be too late once the sanitizer has started CUDA).
      CUDA_DEVICE_MAX_CONNECTIONS=32 VDEV_ONE_GPU_MAX_COUNT=4099 timeout 150 compute-sanitizer --tool memcheck \
        --error-exitcode 9 bin/channels_cuda_one_gpu_test --gtest_filter="*world3:*world5:*world8" 2>&1 \
        | grep -vE "^\[ RUN" | tail -14 | tee "$OUT/channels_sanitize_queues.log"
      echo "memcheck (32 queues from the environment) exit ${PIPESTATUS[0]}" ;;
    sanitize)
      # memcheck: worlds 2, 3, 5, 8 (back-to-back runs too) without the port plan, which memcheck
      # stalls with every rank in one process (docs/channels.md; sanitize_executor runs it, a process
      # per rank); racecheck (slower): the exactness test of worlds 2, 3 and 8 and the timeout path.
      for tool in memcheck racecheck; do
        skip=$([ $tool = memcheck ] && echo all_gather_port)
        filter=$([ $tool = memcheck ] && echo "*IsExact/world2:*IsExact/world3:*IsExact/world5:*IsExact/world8:*BackToBack*/world8:*HalfTypes*/world3:*NeverLaunches*" \
          || echo "*IsExact/world2:*IsExact/world3:*IsExact/world8:*NeverLaunches*")
        VDEV_ONE_GPU_SKIP_PLANS=$skip VDEV_ONE_GPU_MAX_COUNT=4099 timeout 150 compute-sanitizer --tool $tool \
          --error-exitcode 9 bin/channels_cuda_one_gpu_test --gtest_filter="$filter" 2>&1 | grep -vE "^\[ RUN" | tail -25
        echo "$tool exit ${PIPESTATUS[0]}"
      done 2>&1 | tee "$OUT/channels_sanitize.log" ;;
  esac
done
