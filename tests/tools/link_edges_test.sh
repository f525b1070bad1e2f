#!/usr/bin/env bash
# The libraries' edges seen from the dynamic loader: a program that uses only controller sessions
# loads no Z3 (the planner's solver), and the `vdev` command loads none of cuBLASLt, NVRTC, OpenBLAS
# and NCCL at start (the kernels, the plan compiler and the CUDA all-reduce open them on first use).
# Usage: link_edges_test.sh CONTROLLER_ONLY_BINARY VDEV_BINARY
set -u
controller_only=$1
vdev=$2
failures=0
# refuses BINARY REGEX WHY: fails when ldd lists a library matching REGEX for BINARY.
refuses() {
  local found
  found=$(ldd "$1" | grep -E "$2")
  if [ -n "$found" ]; then
    echo "FAIL $(basename "$1") loads $found: $3"
    failures=$((failures + 1))
  fi
}
refuses "$controller_only" 'libz3' 'a controller-only program must not link the planner'
refuses "$vdev" 'libcublasLt|libnvrtc|libopenblas|libnccl' \
  'cuBLASLt, NVRTC, OpenBLAS and NCCL are loaded on first use, not at start'
echo "link_edges_test: $failures failed"
[ "$failures" -eq 0 ]
