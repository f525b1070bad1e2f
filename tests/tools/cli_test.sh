#!/usr/bin/env bash
# Drives the vdev binary as a user would and checks stdout, stderr and exit statuses.
# Usage: cli_test.sh PATH_TO_VDEV
set -u
vdev=$1
failures=0
passes=0

# expect NAME EXPECTED_STATUS EXPECTED_STDOUT_REGEX EXPECTED_STDERR_REGEX -- COMMAND...
expect() {
  local name=$1 status=$2 out_re=$3 err_re=$4
  shift 5
  local out err rc
  out=$("$@" 2>/tmp/vdev_cli_err.$$); rc=$?
  err=$(cat /tmp/vdev_cli_err.$$); rm -f /tmp/vdev_cli_err.$$
  if [ "$rc" != "$status" ] || ! [[ "$out" =~ $out_re ]] || ! [[ "$err" =~ $err_re ]]; then
    echo "FAIL $name: status $rc (want $status)"; echo "  stdout: $out"; echo "  stderr: $err"
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}

expect join_ok 0 '^cuda:3\[cuda\]/global$' '^$' -- "$vdev" join cuda:3 'cuda[cuda]/global'
expect join_none 1 '^none$' '^$' -- "$vdev" join cuda:3 cuda:4
expect join_bad_literal 2 '^$' 'A:1:6: error: .*device id.*cuda:x' -- "$vdev" join cuda:x cpu
expect join_bad_second 2 '^$' 'B:1:1: error: unknown device type' -- "$vdev" join cpu gpu
expect join_target_mismatch 2 '^$' 'A:1:5: error: .*disagrees with target' -- "$vdev" join 'cpu[cuda]' cpu
expect default_ok 0 '^cuda:0/global$' '^$' -- "$vdev" default cuda cpu:0/global
expect default_target 0 '^cpu:0$' '^$' -- "$vdev" default cpu 'cuda:0[cuda]'
expect default_bad 2 '^$' 'error' -- "$vdev" default cuda: cpu
expect help 0 'Usage' '' -- "$vdev" --help
expect join_help 0 'join' '' -- "$vdev" join --help
expect missing_arg 2 '' '' -- "$vdev" join cpu
expect unknown_command 2 '' '' -- "$vdev" frobnicate

echo "cli: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
