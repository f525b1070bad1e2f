#!/usr/bin/env bash
# Configures and builds vdev into ${BUILD_DIR:-build}; extra arguments go to cmake's configure step.
# BUILD_TARGETS (space-separated) builds only those targets and what they need (default: all).
# RelWithDebInfo with line tables only (-g1: backtraces and profiles keep file:line; BUILD_TYPE=Debug
# for a debugger's variables), which builds the tree markedly faster than -g.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" "$@" >/dev/null
targets=()
for target in ${BUILD_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "${JOBS:-$(nproc)}" "${targets[@]}"
