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
expect version 0 "^vdev [0-9]+\.[0-9]+\.[0-9]+"$'\n'"backends: host( cuda)?$" '^$' -- "$vdev" version

# Bad inputs: each subcommand answers with a one-line error and exit 2, before reading anything.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkfifo "$tmp/fifo"
truncate -s 5G "$tmp/huge.vdev"   # sparse: takes no disk
: >"$tmp/empty.vdev"
for cmd in fmt parse plan lower; do
  expect ${cmd}_directory 2 '^$' "^$tmp: error: is a directory[^"$'\n'"]*$" -- "$vdev" $cmd "$tmp"
  expect ${cmd}_fifo 2 '^$' "^$tmp/fifo: error: not a regular file[^"$'\n'"]*$" -- "$vdev" $cmd "$tmp/fifo"
  expect ${cmd}_missing 2 '^$' "^$tmp/gone.vdev: error: cannot open: No such file or directory$" -- "$vdev" $cmd "$tmp/gone.vdev"
  expect ${cmd}_too_large 2 '^$' "^$tmp/huge.vdev: error: is 5368709120 bytes, larger than 4294967294" -- "$vdev" $cmd "$tmp/huge.vdev"
  expect ${cmd}_dev_zero 2 '^$' '^/dev/zero: error: not a regular file' -- "$vdev" $cmd /dev/zero
  # A file that opens but cannot be read (as root too): /proc/self/mem at offset 0.
  expect ${cmd}_unreadable 2 '^$' '^/proc/self/mem: error: cannot read: ' -- "$vdev" $cmd /proc/self/mem
  # /proc files report size 0 but have text: it is read (and is not a program).
  expect ${cmd}_proc_file 2 '^$' "^/proc/self/status:1:1: error: expected 'def'" -- "$vdev" $cmd /proc/self/status
done
expect plan_empty 0 '^$' "^$tmp/empty.vdev: warning: the file is empty: no functions, no @main$" -- "$vdev" plan "$tmp/empty.vdev"
expect lower_empty 0 '^$' 'the file is empty' -- "$vdev" lower "$tmp/empty.vdev"
expect plan_comment_only 0 '^$' 'warning: the program has no functions, no @main$' -- "$vdev" plan - <<<'# nothing'
# A file that vanishes between listing and reading is a missing file; one that cannot be opened says so.
expect plan_no_permission_dir 2 '^$' "^$tmp/fifo/x: error: cannot open: Not a directory$" -- "$vdev" plan "$tmp/fifo/x"

# Echoed input: control bytes escaped, a long line shown as a window around the column.
printf 'def @main() {
  %%0 = [31mred
}
' >"$tmp/escape.vdev"
expect escaped_control 2 '^$' '\x1b\[31mred' -- "$vdev" plan "$tmp/escape.vdev"
if "$vdev" plan "$tmp/escape.vdev" 2>&1 | grep -q $'\033'; then
  echo "FAIL raw_escape_echoed"; failures=$((failures + 1))
else
  passes=$((passes + 1))
fi
{ printf 'def @main() {
  %%0 = add('; head -c 3000000 /dev/zero | tr '\0' 'x'; printf ' $
}
'; } >"$tmp/long.vdev"
err_bytes=$("$vdev" plan "$tmp/long.vdev" 2>&1 >/dev/null | wc -c)
if [ "$err_bytes" -gt 2000 ]; then
  echo "FAIL long_line_echoed: $err_bytes bytes of stderr"; failures=$((failures + 1))
else
  passes=$((passes + 1))
fi

# Sizes past int64: a located error (exit 2 while typing, 1 while lowering), never a wrapped size.
# A type of 2^63 bytes or more is refused where it is written, before any rule computes with it.
expect tensor_bytes_overflow 2 '^$' "<stdin>:1:11: error: parameter '%a' has type f32\[4611686018427387904,4\], which is larger than 2\^63-1 bytes" -- \
  "$vdev" lower --json - <<<$'def @main(%a: f32[4611686018427387904,4]) {\n  %0 = exp(%a)\n  return %0\n}'
expect elements_overflow 2 '^$' "<stdin>:1:11: error: parameter '%a' has type f32\[9223372036854775807,9223372036854775807\], which is larger" -- \
  "$vdev" parse - <<<$'def @main(%a: f32[9223372036854775807,9223372036854775807]) {\n  %0 = reshape(%a, newshape=[-1])\n  return %0\n}'
expect reshape_newshape_overflow 2 '^$' "%0 = reshape\\(%a, newshape=\\[4611686018427387904, 4\\]\\): newshape has more than 2\^63-1 elements" -- \
  "$vdev" parse - <<<$'def @main(%a: f32[4]) {\n  %0 = reshape(%a, newshape=[4611686018427387904, 4])\n  return %0\n}'
expect conv2d_padding_overflow 2 '^$' "<stdin>:2:8: error: %0 = nn.conv2d\\(%a, %w, padding=\\[4611686018427387904\\]\\): padding is larger than 2\^63-1" -- \
  "$vdev" parse - <<<$'def @main(%a: f32[1,1,4,4], %w: f32[1,1,3,3]) {\n  %0 = nn.conv2d(%a, %w, padding=[4611686018427387904])\n  return %0\n}'
expect concat_axis_overflow 2 '^$' "%0 = concatenate\\(%a, %a\\): the concatenated axis 0 is longer than 2\^63-1" -- \
  "$vdev" parse - <<<$'def @main(%a: i8[4611686018427387904]) {\n  %0 = concatenate(%a, %a)\n  return %0\n}'
expect alignment_overflow 1 '^$' 'aligned to 4611686018427387904 bytes, need more than 2\^63-1 bytes' -- \
  "$vdev" lower --alignment 4611686018427387904 - <<<$'def @main(%a: f32[2], %b: f32[2]) {\n  %0 = exp(%a)\n  %1 = exp(%b)\n  %2 = add(%0, %1)\n  return %2\n}'

# vdev channels: the shipped plans, and plan files checked as the executors load them.
expect channels_list 0 $'^one_shot\none_shot_push\ntwo_shot\none_shot_ll\n.*broadcast$' '^$' -- "$vdev" channels list
"$vdev" channels show two_shot -n 3 > "$tmp/two_shot.json"
expect channels_check 0 '^two_shot: allreduce on 3 ranks, 3 thread blocks, [0-9]+ ops, 6 memory and 0 port channels: valid$' '^$' -- \
  "$vdev" channels check "$tmp/two_shot.json"
expect channels_check_stdin 0 '^two_shot: allreduce on 3 ranks' '^$' -- "$vdev" channels check - < "$tmp/two_shot.json"
sed '0,/"op": "signal"/s//"op": "sginal"/' "$tmp/two_shot.json" > "$tmp/bad_op.json"
expect channels_bad_field 1 '^$' 'bad_op.json: ranks\[0\]\.thread_blocks\[0\]\.ops\[[0-9]+\]\.op: expected one of put, get' -- \
  "$vdev" channels check "$tmp/bad_op.json"
sed '0,/"op": "signal"/s//"op": "wait"/' "$tmp/two_shot.json" > "$tmp/deadlock.json"
expect channels_deadlock 1 '^$' 'deadlock.json: program two_shot: rank 0 .* a wait with no matching signal deadlocks' -- \
  "$vdev" channels check "$tmp/deadlock.json"
printf '{\n  "format": ,\n}' > "$tmp/syntax.json"
expect channels_syntax 1 '^$' 'syntax.json:2:13: error:' -- "$vdev" channels check "$tmp/syntax.json"
expect channels_unknown_plan 2 '^$' "no shipped plan named 'nope'" -- "$vdev" channels show nope
expect channels_world_size 2 '^$' 'world size 9: expected 1\.\.8' -- "$vdev" channels show one_shot -n 9
expect channels_no_file 2 '^$' 'cannot open' -- "$vdev" channels check "$tmp/none.json"
# vdev channels run: the plan on the host executor, every output element checked.
expect channels_run 0 '^one_shot: allreduce on 4 ranks, .*; 1001 f32 elements a segment, 1 instance, 3 executions on the host executor: exact$' \
  '^$' -- "$vdev" channels run one_shot -n 4
expect channels_run_port_i32 0 '^all_gather_port: allgather on 3 ranks, .* [0-9]+ port channels; 77 i32 elements a segment, 2 instances, 5 executions .*: exact$' \
  '^$' -- "$vdev" channels run all_gather_port -n 3 --count 77 --dtype i32 --instances 2 --executions 5
expect channels_run_file 0 '^two_shot: allreduce on 3 ranks, .*: exact$' '^$' -- "$vdev" channels run "$tmp/two_shot.json" --dtype f64
expect channels_run_stdin 0 '^two_shot: allreduce on 3 ranks, .*: exact$' '^$' -- "$vdev" channels run - < "$tmp/two_shot.json"
expect channels_run_deadlock 1 '^$' 'deadlock.json: program two_shot: rank 0 .* deadlocks' -- "$vdev" channels run "$tmp/deadlock.json"
expect channels_run_dtype 2 '^$' '--dtype f16: f32, f64 or i32' -- "$vdev" channels run one_shot --dtype f16
expect channels_run_unknown 2 '^$' "no shipped plan named 'nope'" -- "$vdev" channels run nope

# Placement you can understand: the annotation-spread warning, --explain, and pinning one op. The
# planner examples state their expected placement in their first comment lines; these check it.
planner="$(dirname "$0")/../../examples/planner"
expect spread_warning 0 '%x: f32\[64,512\] on cpu:0, %w1: f32\[512,256\] on cpu:0, %w2: f32\[256,512\] on cpu:0\) -> f32\[64,512\] on cpu:0' \
  "mlp_one_pin\.vdev:10:8: warning: on_device\(%r, cpu:0\) puts 8 of the program's 8 values on cpu:0 instead of the default cuda:0: they share a device with %r through %r = relu\(%h\) at 9:3" -- \
  "$vdev" plan "$planner/mlp_one_pin.vdev"
expect spread_warning_json 0 '"warnings": \[.*"line": 10,.*"col": 8,.*puts 8 of the program' 'warning' -- \
  "$vdev" plan "$planner/mlp_one_pin.vdev" --json
expect explain_chain 0 $'^%out is on cpu:0:\n  on_device\\(%r, cpu:0\\) at 10:8 puts %r on cpu:0\n  %r = relu\\(%h\\) at 9:3: an op.s operands and result share one device, so %h is there too\n  %h = matmul\\(%x, %w1\\) at 8:3: .*, so %x is there too\n  %out = add\\(%x, %s\\) at 13:3: .*, so %out is there too$' \
  'warning' -- "$vdev" plan "$planner/mlp_one_pin.vdev" --explain out
expect pin_one_op 0 '%r = relu\(%h_gpu\).*%a = device_copy\(%r, src=cpu:0, dst=cuda:0\).*%out = add\(%x, %s\)' '^$' -- \
  "$vdev" plan "$planner/mlp_pin_one_op.vdev"
expect pin_one_op_placement 0 '"r":"cpu:0".*"y":"cuda:0".*"copies":\[\{"of":"h","src":"cuda:0","dst":"cpu:0".*\{"of":"r","src":"cpu:0","dst":"cuda:0"' '^$' -- \
  sh -c "'$vdev' plan '$planner/mlp_pin_one_op.vdev' --json | tr -d ' \n'"
expect explain_default 0 '^%2 is on cuda:0 by default: no annotation reaches it' '' -- \
  "$vdev" plan "$planner/two_devices.vdev" --explain 2
expect explain_param 0 '^%a is on cpu:0:' '' -- "$vdev" plan "$planner/two_devices.vdev" --explain %a
expect explain_unknown 2 '^$' 'vdev plan: --explain: no value %nope in @main' -- "$vdev" plan "$planner/two_devices.vdev" --explain nope
expect explain_not_with_json 2 '' 'excludes' -- "$vdev" plan "$planner/two_devices.vdev" --explain a --json

echo "cli: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
