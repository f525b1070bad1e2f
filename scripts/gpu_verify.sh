#!/bin/bash
# One device call that checks a merged tree on one GPU, with no benchmarks and no sanitizers: every GPU
# test binary (the all-reduce kernels, the 2..8 workers sharing GPU 0, the CUDA kernels, the channel
# plans), the executor's examples with --check on 1 and 2 workers, and, when .gpu-python/ travelled
# (scripts/gpu_pack_python.sh), the whole pytest suite on the GPU machine's interpreter, where the
# CUDA backend's test runs instead of skipping.
# Here: scripts/build.sh && scripts/gpu_pack.sh [&& scripts/gpu_pack_python.sh HEADERS]
# Device: run(command="bash .gpu/scripts/gpu_verify.sh", carry=[".gpu", ".gpu-python"])
# Logs go to $OUT; the last lines are a table of each step's exit status.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
pack=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/gpu-verify-out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
for z in "$pack"/lib/*.xz; do
  [ -e "$z" ] || continue
  if command -v xz >/dev/null; then xz -d -f "$z"; else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$z"; fi
done
bin=$pack/bin
cd "$root"
nvidia-smi -L | tee "$out/gpu.txt"
: > "$out/status.txt"
step() {  # step NAME TIMEOUT COMMAND...: runs, logs to $out/NAME.log, records the exit status
  local name=$1 limit=$2; shift 2
  echo "=== $name ($(date -u +%T))"
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^[0-9]+ (passed|failed)|passed|failed" "$out/$name.log" | tail -n 12
  echo "$name $rc" >> "$out/status.txt"
}
for test in runtime_cuda_test runtime_cuda_one_gpu_test cuda_kernels_test channels_cuda_one_gpu_test; do
  [ -x "$bin/$test" ] && step "$test" 300 "$bin/$test"
done
for example in examples/run/tp_mlp.vdev examples/run/heterogeneous.vdev examples/memory/tp_transformer_10.vdev; do
  for n in 1 2; do
    step "run_$(basename "$example" .vdev)_$n" 120 "$bin/vdev" run "$example" --backend cuda --workers "$n" --check
  done
done
python_pack=$root/.gpu-python
if [ -d "$python_pack/vdev" ]; then
  python=$(command -v python3)
  for candidate in /opt/*/.venv/bin/python3; do  # an interpreter with NumPy, pytest and Hypothesis
    if [ -x "$candidate" ] && "$candidate" -c "import numpy, pytest, hypothesis" 2>/dev/null; then python=$candidate; fi
  done
  "$python" --version
  step python_suite 300 env PYTHONPATH="$python_pack" VDEV_CLI="$bin/vdev" "$python" -m pytest -q -p no:cacheprovider -rs \
    tests/python
  grep -E "cuda" "$out/python_suite.log" | head -n 5
fi
echo "=== exit status per step"
cat "$out/status.txt"
! grep -qv " 0$" "$out/status.txt"
