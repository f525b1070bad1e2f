#!/usr/bin/env bash
# Runs the ctest suite of an existing build under load: at 4x the machine's cores in parallel, three
# times in a row, stopping at the first round that fails and naming its failed tests. A test that
# passes here does not depend on an idle machine (timing, start-up, thread counts).
# Usage: stress_tests.sh [CTEST_ARGS...]   e.g. stress_tests.sh -R 'Session|run_test'
# BUILD_DIR (default build), STRESS_ROUNDS (3) and STRESS_FACTOR (4) override the defaults.
set -uo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
rounds=${STRESS_ROUNDS:-3}
jobs=$(( $(nproc) * ${STRESS_FACTOR:-4} ))
if [ ! -f "$build_dir/CTestTestfile.cmake" ]; then
  echo "stress_tests.sh: no ctest suite in $build_dir (build it first: bash scripts/build.sh)" >&2
  exit 2
fi
for round in $(seq "$rounds"); do
  echo "== round $round of $rounds: ctest -j $jobs $* [${SECONDS} s]"
  log="$build_dir/stress-round$round.log"
  if ! ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" --timeout 900 "$@" >"$log" 2>&1; then
    tail -n 80 "$log" | sed -n '1,/The following tests FAILED:/p' | head -n -1
    echo "stress_tests.sh: round $round failed; failed tests:"
    sed -n '/The following tests FAILED:/,$p' "$log" | grep -E '^[[:space:]]+[0-9]+ - '
    echo "(whole log: $log)"
    exit 1
  fi
  grep -E "tests passed|tests failed" "$log"
done
echo "stress_tests.sh: $rounds rounds at -j $jobs passed [${SECONDS} s]"
