#!/usr/bin/env bash
# Builds the IR parser fuzzer with clang-14 (libFuzzer + ASan + UBSan) and runs it for SECONDS
# (default 60) on a scratch copy of fuzz/corpus, seeded from the spec and repository examples.
# Exits non-zero when the fuzzer finds a crash; the reproducer is left in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${FUZZ_BUILD_DIR:-build-fuzz}
CXX=${FUZZ_CXX:-clang++-14} cmake -S fuzz -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target ir_parser_fuzzer
work="$build/corpus"
rm -rf "$work"
mkdir -p "$work"
cp fuzz/corpus/* "$work"/
find examples ../shared/spec -name '*.vdev' -exec cp {} "$work"/ \; 2>/dev/null || true
cd "$build"
./ir_parser_fuzzer -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
  -dict=../fuzz/ir.dict -print_final_stats=1 corpus
