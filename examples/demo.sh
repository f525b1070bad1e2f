#!/usr/bin/env bash
# The main demo: plan a program's devices, look at the report, lower it to explicit memory, and run
# the tensor-parallel MLP on 2 workers (the CUDA backend when a GPU is visible, else the host one).
# Usage: examples/demo.sh PATH_TO_VDEV
set -euo pipefail
vdev=${1:-build/tools/vdev}
here=$(dirname "$0")
show() { echo; echo "\$ vdev $*"; "$vdev" "$@"; }

show plan "$here/planner/two_devices.vdev"
show plan "$here/planner/two_devices.vdev" --json
show lower "$here/planner/two_devices.vdev"
show lower "$here/memory/allreduce_reshape.vdev" --json
# The all-reduce fusion: each allreduce -> add -> rms_norm chain becomes one vdev.allreduce_add_rms_norm.
show lower "$here/memory/tp_block.vdev"
# Example (1) of examples/run: runs for real, checked against the CPU reference. The CUDA backend
# when this vdev has it (`vdev version` says so) and a GPU is visible, else the host one.
backend=host
if "$vdev" version | grep -q '^backends:.* cuda' && command -v nvidia-smi >/dev/null 2>&1 &&
  nvidia-smi -L >/dev/null 2>&1; then
  backend=cuda
fi
show run "$here/run/tp_mlp.vdev" --workers 2 --backend "$backend" --check
show run "$here/memory/tp_block.vdev" --workers 2 --backend "$backend" --check
