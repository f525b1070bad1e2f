#!/bin/bash
# One device call for the ONNX frontend on one GPU, from the tree scripts/gpu_pack.sh and
# scripts/gpu_onnx_pack.sh made (.gpu/): ONNX's backend node tests on the CUDA backend, and the
# GPT-2-style decoder (imported on the host with its PyTorch logits) run with --backend cuda --check.
# Results go to $OUT.
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH}
for packed in lib/*.xz; do
  if [ -e "$packed" ] && ! xz -dkf "$packed" 2>/dev/null; then
    python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read())' "$packed"
  fi
done
OUT=${OUT:-/tmp}
mkdir -p /tmp/onnx_node
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' onnx/node.tar.xz /tmp/onnx_node
bin/onnx_backend_tests --backend cuda /tmp/onnx_node/node 2>&1 | tee "$OUT/onnx_backend_cuda.log" | tail -40
bin/vdev run onnx/gpt2/imported/program.vdev --inputs onnx/gpt2/imported --backend cuda --check \
  --outputs "$OUT/gpt2" 2>&1 | tee "$OUT/gpt2_cuda.log"
python3 - "$OUT/gpt2/rank0/output0.npy" onnx/gpt2/expected_logits.npy <<'PY' 2>&1 | tee -a "$OUT/gpt2_cuda.log"
import sys
import numpy as np
a, e = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.abs(a - e).max())
print(f"gpt2 on cuda: max |vdev - pytorch| = {err:.3g}", "PASS" if err <= 1e-4 else "FAIL")
PY
