#!/usr/bin/env bash
# Builds the CPU tree under sanitizers in a build directory of its own and runs its tests there.
# Usage: scripts/sanitize.sh [--configure-only] [SANITIZERS [CTEST_ARGS...]]
#   SANITIZERS  address,undefined (default; build-asan/) or thread (build-tsan/); SANITIZE_BUILD_DIR
#               overrides the directory. CTEST_ARGS (e.g. -R 'Session|Launch') select tests;
#               SANITIZE_TARGETS="a b" builds only those targets (select their tests with -R then).
#   --configure-only  configures the directory and stops (scripts/fuzz.sh builds its fuzzer there).
# address,undefined builds with clang-14 (SANITIZE_CXX overrides) and includes the libFuzzer targets of
# fuzz/ (VDEV_BUILD_FUZZERS), so the code under test compiles once for the sanitizer tests and the fuzzers;
# without clang it builds with the default compiler and no fuzzers.
# -O1 with line tables (the reports' stack traces keep file:line) and assertions on, RapidCheck
# properties at 250 cases each (VDEV_RC_CASES; 1,000 in the main build). CUDA is off
# (compute-sanitizer covers the device code on the GPU machine) and so are the benchmarks (not tests). Python is off too: its extension would load into an
# uninstrumented /usr/bin/python3, which needs the sanitizer runtime preloaded and then reports
# CPython's and NumPy's own allocations; the C++ behind the bindings runs under the C++ tests.
# The vdev CLI, the examples and the shell tests that drive them (cli_test, run_test, vdev_lower_cli)
# run instrumented, as ctest entries of this build.
set -euo pipefail
cd "$(dirname "$0")/.."
configure_only=0
if [ "${1:-}" = --configure-only ]; then configure_only=1; shift; fi
sanitizers=${1:-address,undefined}
[ $# -gt 0 ] && shift
case $sanitizers in
  *thread*) build=${SANITIZE_BUILD_DIR:-build-tsan} ;;
  *) build=${SANITIZE_BUILD_DIR:-build-asan} ;;
esac
mkdir -p "$build"

# Findings fail the test that hits them: every sanitizer halts on its first report.
# LeakSanitizer needs ptrace-like access to stop the process; where a container forbids it, LSan
# dies with a fatal error on every exit, so probe once and say so when leaks cannot be checked.
leaks=0
if [[ $sanitizers == *address* ]]; then
  echo 'int main() { return 0; }' > "$build/lsan_probe.cc"
  c++ -fsanitize=address "$build/lsan_probe.cc" -o "$build/lsan_probe"
  if ASAN_OPTIONS=detect_leaks=1 "$build/lsan_probe" 2>"$build/lsan_probe.log"; then
    leaks=1
  else
    echo "sanitize: LeakSanitizer does not work here ($(head -c 200 "$build/lsan_probe.log")): leaks are not checked"
  fi
fi
export ASAN_OPTIONS="detect_leaks=$leaks:halt_on_error=1:abort_on_error=0:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

compiler_args=()
if [[ $sanitizers == *address* ]]; then
  cxx=${SANITIZE_CXX:-clang++-14}
  if command -v "$cxx" >/dev/null; then
    compiler_args=(-DCMAKE_CXX_COMPILER="$cxx" -DVDEV_BUILD_FUZZERS=ON)
  else
    echo "sanitize: $cxx not found: building with the default compiler, without the fuzzers"
  fi
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DVDEV_SANITIZE="$sanitizers" -DVDEV_ENABLE_CUDA=OFF -DVDEV_BUILD_BENCH=OFF -DVDEV_BUILD_PYTHON=OFF \
  -DVDEV_RC_CASES="${VDEV_RC_CASES:-250}" "${compiler_args[@]}" >/dev/null
[ $configure_only = 1 ] && exit 0
targets=()
for t in ${SANITIZE_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "${JOBS:-$(nproc)}" "${targets[@]}"
echo "sanitize: $sanitizers; the python_* tests are not part of this build (see scripts/sanitize.sh)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 600 "$@"
