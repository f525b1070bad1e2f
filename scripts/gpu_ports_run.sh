#!/bin/bash
# Port channels and channel plans on 2 GPUs in one device call. test: the executor's tests of ranks
# with uneven thread blocks (the same instances on every rank), of 4 MB segments on two GPUs and of
# the shipped plans on 2-8 workers, and every rank in one process (port plans with 2-8 proxies on
# one GPU). stall: the put that used to stall (the executor's own instances, 16 copy blocks), also
# with the tree before the fix where the pack holds bin/port_put_bench_before. bench: the put
# against cudaMemcpyAsync 4 KB-64 MB, the "output free" signal over a memory and over a port
# channel, 16/64/128 copy blocks, and the put over a memory channel (no proxy). plans: compiled
# channel plans against the hand-written kernels 1-16 MB (allreduce_bench), also with the tree
# before instances above 1 MB went past 32 where the pack holds bin/allreduce_bench_before.
# sanitize: memcheck and racecheck, a process per rank. (No Nsight Systems stage: the machine's
# nsys, from Nsight Compute, writes a .qdstrm it cannot import.) Logs go to $OUT/logs.tgz.
# Run from the repository root after `bash scripts/gpu_pack.sh .gpu` here:
#   device run (kind nvidia-h100-x2): bash .gpu/scripts/gpu_ports_run.sh   (carry .gpu)
# STAGES="test stall bench plans sanitize" selects stages.
set -u
# shellcheck source=gpu_step.sh
source "$(dirname "$0")/gpu_step.sh" gpu-ports-out
cd "$root"
final=$out
out=$final/logs
mkdir -p "$out"
: > "$out/status.txt"
export CUDA_VISIBLE_DEVICES=0,1 VDEV_TIMEOUT_MS=20000
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; nvidia-smi topo -m; } > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
put() {  # NAME LIMIT ARGS...: port_put_bench on 2 workers
  local name=$1 limit=$2; shift 2
  step "$name" "$limit" "$bin/vdev" launch -n 2 -- "$bin/port_put_bench" "$@"
}
for stage in ${STAGES:-test stall bench plans sanitize}; do
  case $stage in
    test)
      step test 200 "$bin/channels_cuda_executor_test" \
        --gtest_filter='*UnevenThreadBlocks*:*WideSegments*:*GraphReplays*:*EveryShippedPlanMatchesTheHostExecutor/*'
      # Every rank in one process (PlanWorld): port plans with 2..8 proxies on one GPU.
      if [ -x "$bin/channels_cuda_one_gpu_test" ]; then
        step test_one_process 200 "$bin/channels_cuda_one_gpu_test" --gtest_filter='*Port*:*EveryShippedPlanIsExact/*'
      fi ;;
    sanitize)
      # memcheck and racecheck with one process per rank, the port plans included.
      for tool in memcheck racecheck; do
        step "sanitize_$tool" 150 env VDEV_HARNESS_TIMEOUT_S=60 compute-sanitizer --tool $tool --target-processes all \
          --error-exitcode 9 "$bin/channels_cuda_executor_test" \
          --gtest_filter='*EveryShippedPlanMatchesTheHostExecutor/workers2:*UnevenThreadBlocks*'
      done ;;
    stall)
      if [ -x "$bin/port_put_bench_before" ]; then
        step stall_before 60 env VDEV_TIMEOUT_MS=5000 "$bin/vdev" launch -n 2 -- "$bin/port_put_bench_before" \
          --reps 1 --iters 2 --instances 0 --copy-blocks 16
      fi
      put stall_16 60 --reps 3 --iters 5 --instances 0 --copy-blocks 16
      put stall_4 60 --reps 3 --iters 5 --instances 0 --copy-blocks 4 ;;
    bench)
      put put_memory_64 90 --reps 11 --iters 20 --instances 1 --copy-blocks 64 --ack memory
      put put_port_64 90 --reps 11 --iters 20 --instances 1 --copy-blocks 64 --ack port
      put put_memory_16 90 --reps 11 --iters 20 --instances 1 --copy-blocks 16 --ack memory
      put put_memory_128 90 --reps 11 --iters 20 --instances 1 --copy-blocks 128 --ack memory
      # The same plan with the put over a memory channel: its cost without the proxy (small sizes).
      put put_over_memory 90 --reps 11 --iters 20 --instances 1 --copy-blocks 64 --ack memory --put memory ;;
    plans)
      for build in before after; do
        bench=$bin/allreduce_bench
        [ $build = after ] || bench=$bin/allreduce_bench_before
        [ -x "$bench" ] || continue
        step "plans_$build" 150 "$bin/vdev" launch -n 2 -- "$bench" --csv "$out/plans_$build.csv" --min-bytes 1048576 \
          --max-bytes 16777216 --max-plan-bytes 16777216 --no-llm --no-eager --reps 9 --plan-kernel compiled \
          --variants vdev-1shot,vdev-inplace,vdev-2shot,plan-one_shot,plan-one_shot_push,plan-two_shot
      done ;;
  esac
done
tar czf "$final/logs.tgz" -C "$final" logs && rm -rf "$out"
exit $status
