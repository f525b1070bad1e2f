#!/bin/bash
# The all-reduce fusion and the zero-copy all-reduce on 2 GPUs, in one device call: the fused kernel's
# and the zero-copy GPU tests, the all-reduce table (vdev auto, the fused all-reduce + add + rms_norm,
# sentinel, in-place, NCCL, NCCL symmetric) 4 KB-64 MB, the 10-layer transformer at 256 and 2048
# tokens (vdev fused / unfused / with NCCL, the PyTorch peer in the same call), --profile, --check
# with fusion on and off, and compute-sanitizer memcheck and racecheck on a bounded all-reduce run
# (one op per batch, 8-256 KB) that covers the fused kernel; last, the compiled channel plans against the
# hand-written kernels 4 KB-4 MB. Stage zerocopy (not in the default list) sets the in-place kernel
# against the copy-in kernels 4 KB-16 MB, and against the same kernel of the tree before where the pack
# holds bin/allreduce_bench_before.
# Run from the repository root after `bash scripts/gpu_pack.sh .gpu` here:
#   device run (kind nvidia-h100-x2): bash .gpu/scripts/gpu_fusion_run.sh   (carry .gpu)
# STAGES="test model torch check profile bench sanitize plans" selects stages. Logs go to $OUT.
set -u
# shellcheck source=gpu_step.sh
source "$(dirname "$0")/gpu_step.sh" gpu-fusion-out
cd "$root"
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 VDEV_TIMEOUT_MS=60000
export CUDA_VISIBLE_DEVICES=0,1
show_step_log() { grep -vE "^\[ (RUN|      OK) " "$out/$1.log" | tail -n 30; }
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; nvidia-smi topo -m; } | tee "$out/machine.txt"
# The model in bf16 (the PyTorch peer's dtype) and at 2048 tokens: the example with its shapes replaced.
model=examples/memory/tp_transformer_10.vdev
sed 's/f16\[/bf16[/g' "$model" > "$out/tp256.vdev"
sed 's/\[256,/[2048,/g; s/1048576/8388608/g' "$out/tp256.vdev" > "$out/tp2048.vdev"
run_model() {  # NAME FILE ARGS...
  local name=$1 file=$2; shift 2
  step "$name" 120 "$bin/vdev" run "$file" --backend cuda --workers 2 "$@"
}
for stage in ${STAGES:-test model torch check profile bench sanitize plans}; do
  case $stage in
    test)
      step test 120 "$bin/runtime_cuda_test" --gtest_filter='*FusedNorm*OnTwo*:*ZeroCopy*OnTwo*:*GraphReplays*:*EdgeValues*OnTwo*'
      # The fused op's CUDA epilogue (vdev.add_rms_norm) against its CPU reference.
      if [ -x "$bin/cuda_kernels_test" ]; then step kernels 60 "$bin/cuda_kernels_test" --gtest_filter='*NormsMatchTheCpu*'; fi ;;
    bench)
      step bench 120 "$bin/vdev" launch -n 2 -- "$bin/allreduce_bench" --csv "$out/bench2.csv" --min-bytes 4096 \
        --max-bytes 67108864 --no-llm --no-eager --reps 9 --variants \
        vdev-auto,vdev-fused-norm,vdev-1shot-sentinel,vdev-inplace,nccl,nccl-symm ;;
    model)
      for tokens in 256 2048; do
        f=$out/tp$tokens.vdev
        run_model "vdev_${tokens}_fused" "$f" --repeat 100
        run_model "vdev_${tokens}_unfused" "$f" --repeat 100 --no-fuse-allreduce
        run_model "vdev_${tokens}_nccl" "$f" --repeat 100 --allreduce-strategy nccl
        run_model "vdev_${tokens}_nccl_unfused" "$f" --repeat 100 --allreduce-strategy nccl --no-fuse-allreduce
      done
      run_model vdev_256_f16_fused "$model" --repeat 100 ;;
    torch)
      for tokens in 256 2048; do
        step "torch_$tokens" 120 torchrun --nproc-per-node 2 bench/torch_tp_transformer.py --tokens "$tokens"
      done ;;
    check)
      run_model check_fused "$out/tp256.vdev" --check --repeat 3
      run_model check_unfused "$out/tp256.vdev" --check --repeat 3 --no-fuse-allreduce ;;
    profile)
      run_model profile_fused "$out/tp256.vdev" --repeat 3 --profile
      run_model profile_unfused "$out/tp256.vdev" --repeat 3 --profile --no-fuse-allreduce ;;
    zerocopy)
      for build in before after; do
        bench=$bin/allreduce_bench
        [ $build = after ] || bench=$bin/allreduce_bench_before
        [ -x "$bench" ] || continue
        step "zerocopy_$build" 150 "$bin/vdev" launch -n 2 -- "$bench" --csv "$out/zerocopy_$build.csv" \
          --min-bytes 4096 --max-bytes 16777216 --no-llm --no-eager --reps 9 --variants \
          vdev-auto,vdev-1shot-sentinel,vdev-1shot,vdev-2shot,vdev-inplace,vdev-inplace-noexit
      done ;;
    plans)
      # Compiled channel plans (NVRTC on the device) against the hand-written kernels of their algorithm.
      step plans 180 "$bin/vdev" launch -n 2 -- "$bin/allreduce_bench" --csv "$out/plans2.csv" --min-bytes 4096 \
        --max-bytes 4194304 --max-plan-bytes 4194304 --no-llm --no-eager --reps 9 --plan-kernel compiled --variants \
        vdev-1shot-ll,vdev-1shot,vdev-inplace,vdev-2shot,plan-one_shot_ll,plan-one_shot,plan-one_shot_push,plan-two_shot ;;
    sanitize)
      for tool in memcheck racecheck; do
        step "sanitize_$tool" 90 "$bin/vdev" launch -n 2 -- compute-sanitizer --tool $tool --report-api-errors no \
          --error-exitcode 9 "$bin/allreduce_bench" --only-vdev --min-bytes 8192 --max-bytes 262144 --reps 1 --iters 1 \
          --no-llm --no-eager --variants vdev-fused-norm,vdev-auto,vdev-inplace
      done ;;
  esac
done
exit $status
