#!/usr/bin/env bash
# Installs the Debian packages vdev builds and tests with (skips apt when all are present).
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libabsl-dev libz3-dev libgtest-dev libgmock-dev librapidcheck-dev
          libbenchmark-dev nlohmann-json3-dev libcli11-dev clang-14 libclang-rt-14-dev graphviz
          libopenblas-dev clang-format-14
          python3 python3-dev pybind11-dev python3-pybind11 python3-pytest python3-hypothesis python3-numpy
          python3-matplotlib libdlpack-dev
          libonnx-dev libonnx-testdata libprotobuf-dev python3-onnx)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
