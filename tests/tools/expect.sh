# The command-line tests' harness, sourced by run_test.sh and optimize_run_test.sh: a scratch
# directory $work (removed on exit), counters, and `expect`, which runs a command and checks its
# exit status, standard output and standard error against regular expressions.
work=$(mktemp -d "${TMPDIR:-/tmp}/vdev_$(basename "$0" .sh).XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
passes=0

fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# expect NAME EXPECTED_STATUS EXPECTED_STDOUT_REGEX EXPECTED_STDERR_REGEX -- COMMAND...
expect() {
  local name=$1 status=$2 out_re=$3 err_re=$4
  shift 5
  local out err rc
  out=$("$@" 2>"$work/stderr"); rc=$?
  err=$(cat "$work/stderr")
  if [ "$rc" != "$status" ] || ! [[ "$out" =~ $out_re ]] || ! [[ "$err" =~ $err_re ]]; then
    fail "$name: status $rc (want $status)"; echo "  stdout: $out"; echo "  stderr: $err"
  else
    passes=$((passes + 1))
  fi
}
