#!/usr/bin/env bash
# Installs the Debian packages vdev builds and tests with (skips apt when all are present).
# Usage: deps.sh [build|all]. `build` (what scripts/demo.sh asks for): what configuring the tree and
# building `vdev` need, the test frameworks' headers included (CMake looks for them when it
# configures); `all` (the default, scripts/test.sh): also the fuzzers' clang, clang-format, graphviz,
# the Python package's build and test dependencies and the optional ONNX frontend's.
set -euo pipefail
build_packages=(cmake ninja-build g++ pkg-config libabsl-dev libz3-dev nlohmann-json3-dev libcli11-dev libopenblas-dev
                libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev)
test_packages=(clang-14 libclang-rt-14-dev clang-format-14 graphviz
               python3 python3-dev pybind11-dev python3-pybind11 python3-pytest python3-hypothesis python3-numpy
               python3-matplotlib libdlpack-dev
               libonnx-dev libonnx-testdata libprotobuf-dev python3-onnx
               time)  # /usr/bin/time: bench/cli_bench.py's peak RSS
apt_options=()
case "${1:-all}" in
  build) packages=("${build_packages[@]}"); apt_options=(--no-install-recommends) ;;
  all) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: deps.sh [build|all]" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${apt_options[@]}" "${missing[@]}"
fi
