#!/usr/bin/env bash
# Builds a libFuzzer target in the sanitizer build (build-asan/, scripts/sanitize.sh: clang-14, ASan + UBSan;
# FUZZ_BUILD_DIR overrides) and runs it for SECONDS (default 60):
#   scripts/fuzz.sh [SECONDS] [TARGET]     TARGET: parser (default), plan, lower or channels
# parser = ir_parser_fuzzer (parse, verify, print), plan = plan_devices_fuzzer (PlanDevices),
# lower = lower_memory_fuzzer (compile.h through LowerMemory). Each runs on a scratch copy of
# fuzz/corpus plus the spec's and the repository's examples (for plan and lower each seed twice,
# behind an options byte: fuzz/README.md), with the token dictionary fuzz/ir.dict.
# channels = channel_plan_fuzzer (execution plans as JSON): its seeds are every shipped plan for
# 1..8 ranks (channel_plan_seeds) plus fuzz/corpus-channels, its dictionary fuzz/plan.dict.
# Exits non-zero when the fuzzer finds a crash; the reproducer is left in the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
target=${2:-parser}
case "$target" in
  parser) fuzzer=ir_parser_fuzzer; prefixes=() ;;
  plan) fuzzer=plan_devices_fuzzer; prefixes=('\x00' '\x01') ;;      # default options, --strict
  lower) fuzzer=lower_memory_fuzzer; prefixes=('\x08' '\x3e') ;;    # alignment 2^8, 2^62
  channels) fuzzer=channel_plan_fuzzer; prefixes=() ;;
  *) echo "fuzz.sh: unknown target '$target' (parser, plan, lower or channels)" >&2; exit 2 ;;
esac
build=${FUZZ_BUILD_DIR:-build-asan}
if [ ! -f "$build/build.ninja" ]; then
  SANITIZE_BUILD_DIR="$build" bash scripts/sanitize.sh --configure-only address,undefined
fi
if ! grep -q '^VDEV_BUILD_FUZZERS:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "fuzz.sh: $build is not configured with the fuzzers (scripts/sanitize.sh needs clang++-14)" >&2
  exit 2
fi
cmake --build "$build" --target "$fuzzer"
work="$build/corpus-$target"
seeds="$build/seeds-$target"
rm -rf "$work" "$seeds"
mkdir -p "$work" "$seeds"
dict=../fuzz/ir.dict
max_len=16384
if [ "$target" = channels ]; then
  max_len=65536  # the largest shipped plan (two_shot, 8 ranks) is 55 KB of JSON
  cmake --build "$build" --target channel_plan_seeds
  "$build/fuzz/channel_plan_seeds" "$seeds"
  cp fuzz/corpus-channels/* "$seeds"/ 2>/dev/null || true
  dict=../fuzz/plan.dict
else
  cp fuzz/corpus/* "$seeds"/
  find examples docs/spec -name '*.vdev' -exec cp {} "$seeds"/ \; 2>/dev/null || true
fi
if [ ${#prefixes[@]} -eq 0 ]; then
  cp "$seeds"/* "$work"/
else
  for f in "$seeds"/*; do
    for i in "${!prefixes[@]}"; do
      { printf "${prefixes[$i]}"; cat "$f"; } > "$work/$i-$(basename "$f")"
    done
  done
fi
cd "$build"
"./fuzz/$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=$max_len \
  -dict="$dict" -print_final_stats=1 "corpus-$target"
