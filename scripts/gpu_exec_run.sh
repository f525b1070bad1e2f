#!/bin/bash
# The executor on one GPU, in one device call (issue 14): every example with --check on the CUDA
# backend with 1 and 2 workers (2 share the GPU), the C++ frontend, compute-sanitizer memcheck on
# one example, a profiled 10-layer transformer, and the layer benchmark (executor with graph replay
# against the hand-written layer, matmul against cuBLAS). Run from the repository root after
# `bash scripts/gpu_pack.sh .gpu` here:  device run: bash .gpu/scripts/gpu_exec_run.sh   (carry .gpu)
# Logs and CSV go to $OUT (or ./gpu-exec-out).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
pack=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-exec-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
for z in "$pack"/lib/*.xz; do
  [ -e "$z" ] || continue
  if command -v xz >/dev/null; then xz -d -f "$z"; else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$z"; fi
done
bin=$pack/bin
cd "$root"
nvidia-smi -L | tee "$out/gpu.txt"
status=0
step() {  # step NAME TIMEOUT COMMAND...: runs, logs to $out/NAME.log, records the exit status
  local name=$1 limit=$2; shift 2
  echo "=== $name: $* ($(date -u +%T))"
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$out/$name.log"
  echo "=== $name: exit $rc"
  echo "$name $rc" >> "$out/status.txt"
  [ $rc -eq 0 ] || status=1
}
for example in examples/run/tp_mlp.vdev examples/run/heterogeneous.vdev examples/memory/tp_transformer_10.vdev; do
  for n in 1 2; do
    step "run_$(basename "$example" .vdev)_$n" 180 "$bin/vdev" run "$example" --backend cuda --workers "$n" --check --repeat 3
  done
done
step frontend 60 "$bin/frontend" --cuda
step memcheck 300 compute-sanitizer --tool memcheck --target-processes all --error-exitcode 9 \
  "$bin/vdev" run examples/run/heterogeneous.vdev --backend cuda --workers 1 --check
step profile 120 "$bin/vdev" run examples/memory/tp_transformer_10.vdev --backend cuda --repeat 20 --profile
step layer_bench 300 "$bin/layer_bench" --samples 30 --csv "$out/layer.csv"
exit $status
