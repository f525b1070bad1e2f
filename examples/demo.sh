#!/usr/bin/env bash
# The main demo: plan a program's devices, look at the report, lower it to explicit memory.
# Usage: examples/demo.sh PATH_TO_VDEV
set -euo pipefail
vdev=${1:-build/tools/vdev}
here=$(dirname "$0")
show() { echo; echo "\$ vdev $*"; "$vdev" "$@"; }

show plan "$here/planner/two_devices.vdev"
show plan "$here/planner/two_devices.vdev" --json
show lower "$here/planner/two_devices.vdev"
show lower "$here/memory/allreduce_reshape.vdev" --json
