#!/usr/bin/env bash
# Runs ONNX's backend node tests (Debian's libonnx-testdata, ONNX 1.12) through the ONNX importer
# and the host executor in one process (build/tests/frontend/onnx_backend_tests), and on CUDA too
# when this vdev has the CUDA backend and a GPU is present. Prints the failures, the skips grouped
# by the unsupported op or dtype, and the counts; exits 1 when a test failed.
#   scripts/onnx_backend_tests.sh [--filter SUBSTRING] [--verbose]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
data=${ONNX_NODE_TESTS:-/usr/share/libonnx-testdata/data/node}
driver="$build_dir/tests/frontend/onnx_backend_tests"
if [ ! -d "$data" ]; then
  echo "onnx_backend_tests: $data is missing (apt-get install libonnx-testdata)" >&2
  exit 2
fi
if [ ! -x "$driver" ]; then
  echo "onnx_backend_tests: $driver is missing (build the onnx_backend_tests target; needs libonnx-dev)" >&2
  exit 2
fi
"$driver" --backend host "$@" "$data"
if "$build_dir/tools/vdev" version 2>/dev/null | grep -q cuda && nvidia-smi -L >/dev/null 2>&1; then
  "$driver" --backend cuda "$@" "$data"
else
  echo "onnx backend node tests (cuda): skipped (no CUDA backend in this build or no GPU)"
fi
