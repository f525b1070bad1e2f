#!/usr/bin/env bash
# A GPT-2-style decoder from PyTorch through ONNX into vdev, checked against PyTorch's own logits.
#   examples/gpt2/run.sh [VDEV] [--backend cuda] [more vdev run flags]
# Builds the model with PyTorch (python3-torch), imports it with the token embedding placed on the
# CPU (`--place /wte/Gather_output_0=cpu`, one annotation), runs it with `vdev run --check` (the
# outputs recomputed on the CPU kernels and compared) and compares the logits with PyTorch's to
# 1e-4. Exit 77 (skipped) when PyTorch is not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vdev=${1:-$here/../../build/tools/vdev}
shift || true
python=${PYTHON:-/usr/bin/python3}
if ! "$python" -c "import torch" 2>/dev/null; then
  echo "gpt2 example: skipped (PyTorch is not installed: apt-get install python3-torch)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -W ignore "$here/make_model.py" "$work" >/dev/null
"$vdev" import "$work/model.onnx" --out "$work/imported" --place /wte/Gather_output_0=cpu
cp "$work/input_ids.npy" "$work/imported/"
grep -c "on_device" "$work/imported/program.vdev" | grep -qx 1
"$vdev" run "$work/imported/program.vdev" --inputs "$work/imported" --check --outputs "$work/out" "$@"
"$python" - "$work/out/rank0/output0.npy" "$work/expected_logits.npy" <<'PY'
import sys
import numpy as np
actual, expected = np.load(sys.argv[1]), np.load(sys.argv[2])
assert actual.shape == expected.shape, (actual.shape, expected.shape)
err = float(np.abs(actual - expected).max())
print(f"logits {actual.shape}: max |vdev - pytorch| = {err:.3g} (max |logit| {np.abs(expected).max():.3g})")
sys.exit(0 if err <= 1e-4 else 1)
PY
