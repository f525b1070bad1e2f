#!/bin/bash
# Adds to .gpu/ (after scripts/gpu_pack.sh) what scripts/gpu_onnx_run.sh needs: ONNX's node tests
# (xz, ~27 MB unpacked) and the GPT-2-style example imported here with PyTorch's logits (~14 MB).
set -e
SRC=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$SRC/.gpu}
mkdir -p "$DEST/onnx" "$DEST/scripts"
tar -C /usr/share/libonnx-testdata/data -cJf "$DEST/onnx/node.tar.xz" node
KEEP="$DEST/onnx/gpt2" bash "$SRC/examples/gpt2/run.sh" "$SRC/build/tools/vdev" >/dev/null
rm -rf "$DEST/onnx/gpt2/model.onnx" "$DEST/onnx/gpt2/out"
cp "$SRC/scripts/gpu_onnx_run.sh" "$DEST/scripts/"
du -sh "$DEST"
