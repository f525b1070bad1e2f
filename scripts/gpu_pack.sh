#!/bin/bash
# Packs what scripts/gpu_run.sh needs into DEST (default .gpu/ under this checkout's root): the prebuilt binaries,
# the Abseil, Z3 and OpenBLAS (+ libgfortran) libraries they link (the GPU machine has none of them;
# OpenBLAS and Z3 travel xz-compressed and the run scripts unpack them), the scripts and the PyTorch peer.
set -e
SRC=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$SRC/.gpu}
rm -rf "$DEST" && mkdir -p "$DEST/bin" "$DEST/lib" "$DEST/scripts" "$DEST/bench"
# The binaries that exist in build/ (the GPU scripts skip a step whose binary did not travel): the CLI,
# the runtime's GPU tests, the all-reduce benchmark, the C++ frontend example, the layer benchmark, the
# CUDA kernels', the channel plans' and the executor's GPU tests, the port-channel put benchmark.
for binary in tools/vdev tests/runtime/runtime_cuda_test tests/runtime/runtime_cuda_one_gpu_test bench/allreduce_bench \
    examples/run/frontend bench/layer_bench tests/kernels/cuda_kernels_test tests/channels/channels_cuda_one_gpu_test \
    tests/channels/channels_cuda_executor_test tests/executor/executor_cross_device_test tests/frontend/onnx_backend_tests \
    bench/port_put_bench; do
  if [ -x "$SRC/build/$binary" ]; then cp "$SRC/build/$binary" "$DEST/bin/"; fi
done
[ -x "$DEST/bin/vdev" ] || { echo "gpu_pack.sh: build/tools/vdev is missing: build first" >&2; exit 1; }
strip --strip-debug "$DEST"/bin/*  # debug info is most of their size; a device call carries at most 64 MiB
for lib in $(ldd "$DEST"/bin/* | awk '/libabsl|libz3|libopenblas|libgfortran|libquadmath|libgtest|libgmock|libonnx|libprotobuf/ {print $3}' | sort -u); do
  cp -L "$lib" "$DEST/lib/"
done
for big in "$DEST"/lib/libopenblas* "$DEST"/lib/libz3*; do if [ -e "$big" ]; then xz -T0 -6 "$big"; fi; done
cp "$SRC/scripts/gpu_run.sh" "$SRC/scripts/gpu_exec_run.sh" "$SRC/scripts/gpu_fusion_run.sh" "$SRC/scripts/gpu_verify.sh" \
  "$SRC/scripts/gpu_step.sh" "$SRC/scripts/gpu_multi_gpu_check.sh" "$SRC/scripts/gpu_four_gpu.sh" \
  "$SRC/scripts/gpu_predict_run.sh" "$SRC/scripts/gpu_predict_diag.sh" "$SRC/scripts/gpu_ports_run.sh" "$DEST/scripts/"
cp -r "$SRC/examples" "$DEST/"  # the programs gpu_predict_run.sh runs, as this checkout has them
cp "$SRC/bench/torch_symm_bench.py" "$SRC/bench/derive_auto_table.py" "$DEST/bench/"
du -sh "$DEST"
