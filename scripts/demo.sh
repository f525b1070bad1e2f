#!/usr/bin/env bash
# Installs what building vdev needs, builds only the `vdev` command (scripts/test.sh builds the
# rest into the same build/ directory), and shows vdev at work on the worked examples.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh build
BUILD_TARGETS=vdev bash scripts/build.sh
vdev=build/tools/vdev
echo "\$ vdev join cuda:3 'cuda[cuda]/global'"; $vdev join cuda:3 'cuda[cuda]/global'
echo "\$ vdev default cuda /global";          $vdev default cuda /global
bash examples/demo.sh "$vdev"
