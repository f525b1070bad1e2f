#!/usr/bin/env bash
# Installs dependencies, checks that every C++/CUDA source follows .clang-format (scripts/check_format.sh)
# and that no function in src/ or tools/ is over 80 lines beyond an allowlist
# (scripts/check_function_length.py; both take seconds), builds everything, runs the
# whole test suite, checks that an outside project can find_package(vdev) from an installed tree,
# then builds the CPU tree again with clang under AddressSanitizer + UBSan (build-asan/) and runs its
# whole suite there (VDEV_TEST_SANITIZE=0 leaves that stage out, saying so), then the fuzzers
# (fuzz/README.md), which that build also holds. Each stage prints its start, in seconds since the
# script began.
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { echo "== $* [${SECONDS} s]"; }
stage "dependencies"
bash scripts/deps.sh
stage "format (.clang-format) and function length"
bash scripts/check_format.sh | tail -n 20
python3 scripts/check_function_length.py
stage "build"
bash scripts/build.sh
stage "tests"
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600

stage "install + find_package(vdev) consumer"
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install build --prefix "$prefix" >/dev/null
cmake -S examples/consumer -B "$prefix/consumer-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
"$prefix/consumer-build/join_devices" cuda:3 'cuda[cuda]/global'

if ls build/python/vdev/_vdev*.so >/dev/null 2>&1; then
  stage "install: import vdev from the installed site-packages"
  python=$(sed -n 's/^Python3_EXECUTABLE:FILEPATH=//p' build/CMakeCache.txt)
  site="$prefix/$(sed -n 's/^VDEV_PYTHON_INSTALL_DIR:STRING=//p' build/CMakeCache.txt)"
  (cd "$prefix" && PYTHONPATH="$site" "$python" -c \
    "import vdev; assert vdev.__file__.startswith('$site'), vdev.__file__; print(vdev.join('cuda:3', 'cuda[cuda]/global'))
with vdev.Session.process(2) as s:
    ids = s.call_packed(s.get_global_func('vdev.worker.id'))
    print('installed vdev_worker:', [ids.debug_get_from_remote(w) for w in range(2)])")
fi

if [ "${VDEV_TEST_SANITIZE:-1}" = 0 ]; then
  stage "sanitizers: left out (VDEV_TEST_SANITIZE=0)"
else
  stage "build + tests under address,undefined (build-asan)"
  bash scripts/sanitize.sh address,undefined
fi
# The fuzzers (built in build-asan/, the sanitizer build): FUZZ_SECONDS (20) on the parser, FUZZ_PIPELINE_SECONDS (10)
# each on the PlanDevices, LowerMemory and channel-plan targets (0 leaves those three out, saying so).
parser_seconds=${FUZZ_SECONDS:-20}
pipeline_seconds=${FUZZ_PIPELINE_SECONDS:-10}
targets="parser"
if [ "$pipeline_seconds" -gt 0 ]; then
  targets="parser plan lower channels"
else
  stage "plan, lower and channels fuzzers: left out (FUZZ_PIPELINE_SECONDS=0)"
fi
for target in $targets; do
  seconds=$parser_seconds
  [ "$target" = parser ] || seconds=$pipeline_seconds
  stage "$target fuzzer, $seconds s"
  if ! bash scripts/fuzz.sh "$seconds" "$target" > "build/fuzz-$target.log" 2>&1; then
    tail -n 60 "build/fuzz-$target.log"
    echo "$target fuzzer failed (log: build/fuzz-$target.log)"
    exit 1
  fi
  grep -E "^(Done|stat::)" "build/fuzz-$target.log" || tail -n 5 "build/fuzz-$target.log"
done

stage "done"
