#!/usr/bin/env bash
# Faults of `vdev run` and of sizes, tried as a hostile user would, each bounded and named:
#   1. a worker stopped with SIGSTOP (worker 1, then worker 0) under the default 600 s timeout:
#      the run fails within 15 s naming that worker, its pid and its state;
#   2. the controller's temporary directory is gone after SIGINT, SIGTERM and SIGHUP, and a
#      SIGKILLed controller's is swept by the next run, never a live run's;
#   3. errors found before any worker starts: an empty program, no @main, an unwritable
#      --outputs, a malformed --workers;
#   4. a tensor type over 2^63 bytes is a located error (exit 2, FILE:LINE:COL and caret) for plan,
#      plan --optimize --json, lower and run;
#   5. errors in JSON inputs have positions: a channel plan that is not an object (100,000 arrays
#      deep), an op that no device of an --optimize machine implements (in the --json report too).
# Waits are on events (a worker's pid appearing, a process ending), each bounded.
# Usage: faults_test.sh PATH_TO_VDEV
set -u
vdev=$1
examples=$(cd "$(dirname "$0")/../../examples" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/vdev_faults_test.XXXXXX")
# Only jobs still running are killed: a pid already waited for may belong to another process now.
cleanup() {
  local running
  running=$(jobs -p)
  [ -n "$running" ] && kill -9 $running 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
passes=0

fail() { echo "FAIL $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }

# expect NAME EXPECTED_STATUS EXPECTED_STDERR_REGEX -- COMMAND...
expect() {
  local name=$1 status=$2 err_re=$3
  shift 4
  local rc
  "$@" >"$work/stdout" 2>"$work/stderr"; rc=$?
  if [ "$rc" != "$status" ] || ! [[ "$(cat "$work/stderr")" =~ $err_re ]]; then
    fail "$name: status $rc (want $status)"; echo "  stdout: $(cat "$work/stdout")"; echo "  stderr: $(cat "$work/stderr")"
  else
    pass
  fi
}

# worker_pid CONTROLLER RANK: the pid of the controller's worker RANK once it runs (after its exec:
# the name is set by it), within 30 s; empty if it never appears.
worker_pid() {
  local pid=""
  for _ in $(seq 300); do
    pid=$(pgrep -P "$1" -fx "vdev-worker-$2" | head -1)
    [ -n "$pid" ] && break
    sleep 0.1
  done
  echo "$pid"
}

# await_end PID SECONDS: waits for PID (a child of this shell) to end; false if it outlives SECONDS.
await_end() {
  timeout "$2" tail --pid="$1" -f /dev/null
}

# Runs far longer than any bound here: only a fault ends them.
long_run=("$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --repeat 1000000000)
long_run_1=("$vdev" run "$examples/run/tp_mlp.vdev" --workers 1 --repeat 1000000000)

# 1. A stopped worker, the timeout left at its default of 600 s.
for rank in 1 0; do
  TMPDIR=$work "${long_run[@]}" >"$work/stop_out" 2>"$work/stop_err" &
  controller=$!
  victim=$(worker_pid "$controller" "$rank")
  if [ -z "$victim" ]; then
    fail "stopped_worker_$rank: worker $rank never appeared"
    continue
  fi
  kill -STOP "$victim"
  if ! await_end "$controller" 15; then
    fail "stopped_worker_$rank: the run still waits 15 s after worker $rank (pid $victim) was stopped"
    kill -9 "$controller" "$victim" 2>/dev/null
  fi
  wait "$controller"; status=$?
  if [ "$status" = 1 ] &&
     grep -Eq "worker $rank \(pid $victim\) was stopped \(state T[^)]*\) for [0-9.]+m?s while the controller waited" "$work/stop_err"; then
    pass
  else
    fail "stopped_worker_$rank: status $status, stderr: $(cat "$work/stop_err")"
  fi
done

# 2. The temporary directory, whatever ends the controller.
run_dirs() { ls -d "$work"/vdev-run-* 2>/dev/null; }
set -m  # background jobs in groups of their own, so SIGINT reaches them (not ignored)
for sig in INT TERM HUP; do
  TMPDIR=$work "${long_run_1[@]}" >/dev/null 2>&1 &
  controller=$!
  if [ -z "$(worker_pid "$controller" 0)" ] || [ -z "$(run_dirs)" ]; then
    fail "temp_dir_$sig: no workers or no temporary directory (dirs: $(run_dirs))"
  else
    kill -"$sig" "$controller"
    await_end "$controller" 15 || fail "temp_dir_$sig: the controller outlived SIG$sig by 15 s"
    wait "$controller" 2>/dev/null
    [ -z "$(run_dirs)" ] && pass || fail "temp_dir_$sig: left $(run_dirs)"
  fi
done
set +m
# SIGKILL runs nothing of the controller: its directory stays until the next run sweeps it; a live
# run's directory stays.
TMPDIR=$work "${long_run_1[@]}" >/dev/null 2>&1 &
killed=$!
TMPDIR=$work "${long_run_1[@]}" >/dev/null 2>&1 &
live=$!
if [ -z "$(worker_pid "$killed" 0)" ] || [ -z "$(worker_pid "$live" 0)" ]; then
  fail "sweep: the runs did not start"
else
  killed_dir=$(ls -d "$work"/vdev-run-"$killed"-* 2>/dev/null)
  live_dir=$(ls -d "$work"/vdev-run-"$live"-* 2>/dev/null)
  kill -9 "$killed"
  wait "$killed" 2>/dev/null
  # A directory named after a pid that is in use by another process since (start time 1).
  mkdir "$work/vdev-run-$$-1-AAAAAA"
  [ -n "$killed_dir" ] && [ -d "$killed_dir" ] || fail "sweep: the killed run had no directory ($(run_dirs))"
  expect sweep_run 0 '' -- env TMPDIR="$work" "$vdev" run "$examples/run/tp_mlp.vdev" --workers 2
  [ -d "$killed_dir" ] && fail "sweep: $killed_dir survived the next run" || pass
  [ -d "$work/vdev-run-$$-1-AAAAAA" ] && fail "sweep: a reused pid's directory survived" || pass
  [ -n "$live_dir" ] && [ -d "$live_dir" ] && pass || fail "sweep: the live run's directory '$live_dir' was removed"
fi
kill -TERM "$live" 2>/dev/null
await_end "$live" 15
wait "$live" 2>/dev/null

# 3. Errors found before any worker starts: located, exit 2, no worker process started (a worker
# would be named in the message: "worker N").
: >"$work/empty.vdev"
expect empty_program 2 "empty\.vdev:1:1: error: the program has no function @main to run" -- \
  "$vdev" run "$work/empty.vdev" --workers 2
printf 'def @other(%%x: f32[4]) -> f32[4] {\n  return %%x\n}\n' >"$work/no_main.vdev"
expect no_main 2 "no_main\.vdev:1:1: error: the program has no function @main to run" -- \
  "$vdev" run "$work/no_main.vdev" --workers 2
grep -q worker "$work/stderr" && fail "no_main: a worker was started: $(cat "$work/stderr")"
expect unwritable_outputs 2 "--outputs /proc/self: cannot write in this directory" -- \
  "$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --outputs /proc/self
expect workers_word 2 "expected a whole number of workers from 1 to 8, found 'abc'" -- \
  "$vdev" run "$examples/run/tp_mlp.vdev" --workers abc
expect workers_nine 2 "expected a whole number of workers from 1 to 8, found '9'" -- \
  "$vdev" run "$examples/run/tp_mlp.vdev" --workers 9

# 4. A type over 2^63 bytes (2^62 + 1 f32 elements times 4 bytes): located at its parameter, with
# the line and a caret, for every command that reads programs.
printf 'def @main(%%x: f32[4611686018427387905,4]) -> f32[4611686018427387905,4] {\n  %%y = relu(%%x)\n  return %%y\n}\n' \
  >"$work/huge_type.vdev"
# The caret is under column 11, after the two spaces that indent the quoted line.
located="huge_type\.vdev:1:11: error: parameter '%x' has type f32\[4611686018427387905,4\], which is larger than 2\^63-1 bytes"$'\n'"[^"$'\n'"]*"$'\n'" {12}\^"
expect huge_plan 2 "$located" -- "$vdev" plan "$work/huge_type.vdev"
expect huge_optimize 2 "$located" -- "$vdev" plan --optimize --json "$work/huge_type.vdev"
expect huge_lower 2 "$located" -- "$vdev" lower "$work/huge_type.vdev"
expect huge_run 2 "$located" -- "$vdev" run "$work/huge_type.vdev"
# Inferred, not written: a broadcast whose result is too large (2^61 elements of 4 bytes), located at
# its binding, its operands being 2^62 and 8 bytes.
printf 'def @main(%%x: f32[1152921504606846976,1], %%y: f32[1,2]) {\n  %%z = add(%%x, %%y)\n  return %%z\n}\n' \
  >"$work/huge_result.vdev"
expect huge_inferred 2 "huge_result\.vdev:2:3: error: '%z' has type f32\[1152921504606846976,2\]" -- \
  "$vdev" plan "$work/huge_result.vdev"

# 5. Positions in JSON inputs.
{ head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'; } >"$work/c_nested.json"
expect deep_channel_plan 1 "c_nested\.json:1:1: error: expected a plan \(a JSON object\) at the top level, found array" -- \
  "$vdev" channels check "$work/c_nested.json"
cat >"$work/machine.json" <<'JSON'
{"devices": [{"device": "cpu:0", "memory_gb": 1, "bandwidth_gbs": 1, "default_tflops": 1},
             {"device": "cuda:0", "memory_gb": 1, "bandwidth_gbs": 1, "default_tflops": 1}],
 "links": [{"between": ["cpu:0", "cuda:0"], "bandwidth_gbs": 1, "latency_us": 1}],
 "ops": {"relu": ["cuda"]}}
JSON
printf 'def @main(%%x: f32[4] on cpu:0) -> f32[4] {\n  %%y = relu(%%x)\n  return %%y\n}\n' >"$work/cpu_relu.vdev"
expect unplaceable_op 1 "cpu_relu\.vdev:2:8: error: relu at 2:8 is implemented on no device" -- \
  "$vdev" plan --optimize --machine "$work/machine.json" "$work/cpu_relu.vdev"
"$vdev" plan --optimize --json --machine "$work/machine.json" "$work/cpu_relu.vdev" >"$work/report.json" 2>/dev/null
grep -Pzq '"line": 2,\s*"col": 8,\s*"message": "relu at 2:8' "$work/report.json" && pass ||
  fail "unplaceable_op_json: the report has no line 2, col 8: $(cat "$work/report.json")"

echo "faults: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
