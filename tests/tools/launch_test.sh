#!/usr/bin/env bash
# `vdev launch` and the job's processes: a launcher killed with SIGKILL, SIGINT and SIGTERM with
# grandchildren (`sh -c 'sleep'`), SIGPIPE from a closed stdout or stderr. Each case waits with a
# deadline and then checks that no process of the job and no rendezvous directory is left.
# Usage: launch_test.sh PATH_TO_VDEV
set -u
vdev=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/vdev_launch_test.XXXXXX")
export TMPDIR=$work  # the launcher's rendezvous directories (vdev-XXXXXX) go here, where we can see them
# The workers' children run this link to sleep: its name marks the processes of this test.
sleeper=$work/vdev-launch-test-$$-sleep
ln -s "$(command -v sleep)" "$sleeper"
failures=0
passes=0

sleepers() { pgrep -f -- "$sleeper 300" | wc -l; }
rendezvous_dirs() { find "$work" -maxdepth 1 -name 'vdev-*' -type d | wc -l; }
# Kills (by pid) whatever of this test is still running, so a failure leaves nothing behind.
cleanup() {
  for p in $(pgrep -f -- "$sleeper"); do kill -9 "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# wait_for SECONDS COMMAND...: polls COMMAND every 50 ms until it succeeds; false after SECONDS.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.05
  done
}
sleepers_are() { [ "$(sleepers)" = "$1" ]; }
nothing_left() { sleepers_are 0 && [ "$(rendezvous_dirs)" = 0 ]; }

# start_job N: a launcher of N workers, each running `sh -c 'sleeper 300; true'` (a grandchild);
# returns once every sleeper runs. Sets $job.
start_job() {
  "$vdev" launch -n "$1" -- sh -c '"$0" 300; true' "$sleeper" 2>"$work/stderr" &
  job=$!
  wait_for 60 sleepers_are "$1" || fail "start_job $1: $(sleepers) sleepers after 60 s"
}

# 1. kill -9 of the launcher: the workers die of their parent-death signal, and the guardian kills
#    their children and removes the rendezvous directory.
start_job 3
[ "$(rendezvous_dirs)" = 1 ] || fail "kill9: no rendezvous directory while the job runs"
kill -9 "$job"; wait "$job" 2>/dev/null
if wait_for 30 nothing_left; then passes=$((passes + 1)); else
  fail "kill9: $(sleepers) sleepers and $(rendezvous_dirs) rendezvous directories 30 s after kill -9"
fi

# 2. SIGINT and SIGTERM: the workers' process group is stopped, grandchildren included; exit 128+sig.
for sig in INT TERM; do
  start_job 2
  kill -s $sig "$job"
  wait "$job"; rc=$?
  want=$((128 + $(kill -l $sig)))
  if [ $rc = $want ] && wait_for 30 nothing_left && grep -q "stopping the workers" "$work/stderr"; then
    passes=$((passes + 1))
  else
    fail "sig$sig: status $rc (want $want), $(sleepers) sleepers, $(rendezvous_dirs) directories left"
    cat "$work/stderr"
  fi
done

# 3. SIGPIPE. (a) The launcher's stderr closes before it reports a failed worker: it carries on,
#    stops the other worker after --grace and exits with the failed worker's status (a launcher
#    killed by SIGPIPE would leave the other worker's sleeper running).
timeout 60 "$vdev" launch -n 2 --grace 0.5 -- \
  sh -c 'if [ "$VDEV_RANK" = 1 ]; then sleep 0.2; exit 3; fi; "$0" 300; true' "$sleeper" 2>&1 | true
rc=${PIPESTATUS[0]}
if [ "$rc" = 3 ] && wait_for 30 nothing_left; then passes=$((passes + 1)); else
  fail "sigpipe_stderr: status $rc (want 3), $(sleepers) sleepers, $(rendezvous_dirs) directories left"
fi
# (b) `| head`: workers writing to a closed stdout die of SIGPIPE (the disposition they inherit),
#     and the job ends with it (128 + 13).
timeout 60 "$vdev" launch -n 2 -- sh -c 'while :; do echo "$VDEV_RANK"; done; "$0"' "$sleeper" 2>/dev/null | head -n 1 >/dev/null
rc=${PIPESTATUS[0]}
if [ "$rc" = 141 ] && wait_for 30 nothing_left && [ -z "$(pgrep -f -- "$sleeper")" ]; then passes=$((passes + 1)); else
  fail "sigpipe_head: status $rc (want 141); left: $(pgrep -f -- "$sleeper" | tr '\n' ' ')"
fi

# 4. A worker's child still running when the job ends goes with the job.
timeout 60 "$vdev" launch -n 2 -- sh -c '"$0" 300 & exit 0' "$sleeper"
rc=$?
if [ "$rc" = 0 ] && wait_for 30 nothing_left; then passes=$((passes + 1)); else
  fail "background_child: status $rc (want 0), $(sleepers) sleepers left"
fi

echo "launch_test: $passes passed, $failures failed"
[ "$failures" = 0 ]
