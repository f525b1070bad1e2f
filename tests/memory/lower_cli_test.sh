#!/usr/bin/env bash
# `vdev lower` end to end: exit statuses of docs/spec/cli.md, the lowered text (a fixed point of
# `vdev fmt`), --json and --dot. Usage: lower_cli_test.sh VDEV EXAMPLES_DIR
set -uo pipefail
vdev=$1
examples=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() {  # check NAME EXPECTED_STATUS ACTUAL_STATUS
  if [ "$2" != "$3" ]; then echo "FAIL $1: exit $3, expected $2"; failures=$((failures + 1)); fi
}
contains() {  # contains NAME FILE TEXT
  if ! grep -qF -- "$3" "$2"; then echo "FAIL $1: no '$3' in:"; cat "$2"; failures=$((failures + 1)); fi
}

"$vdev" lower "$examples/allreduce_reshape.vdev" >"$tmp/lowered.vdev"; check lower 0 $?
contains lower "$tmp/lowered.vdev" "= vdev.ipc.alloc_storage(32768, 256, device=cuda:0/ipc_memory)"
contains lower "$tmp/lowered.vdev" '= vdev.allreduce(%1, op=sum, strategy="auto", out=%t1)'
"$vdev" fmt "$tmp/lowered.vdev" >"$tmp/again.vdev"; check fmt 0 $?
cmp -s "$tmp/lowered.vdev" "$tmp/again.vdev" || { echo "FAIL fmt: lowered text is not canonical"; failures=$((failures + 1)); }

"$vdev" lower --json - <"$examples/allreduce_reshape.vdev" >"$tmp/report.json"; check json 0 $?
contains json "$tmp/report.json" '"cuda:0/ipc_memory": 32768'
contains json "$tmp/report.json" '"strategy": "auto"'

"$vdev" lower --allreduce-strategy one-shot "$examples/allreduce_reshape.vdev" >"$tmp/one.vdev"; check strategy 0 $?
contains strategy "$tmp/one.vdev" 'strategy="one-shot"'
"$vdev" lower --allreduce-strategy plan:two_shot "$examples/allreduce_reshape.vdev" >"$tmp/plan.vdev"; check plan 0 $?
contains plan "$tmp/plan.vdev" 'strategy="plan:two_shot"'
"$vdev" lower --allreduce-strategy plan: "$examples/allreduce_reshape.vdev" 2>/dev/null; check plan-usage 2 $?
"$vdev" lower --no-ipc-allreduce "$examples/allreduce_reshape.vdev" >"$tmp/nccl.vdev"; check no-ipc 0 $?
if grep -q ipc "$tmp/nccl.vdev"; then echo "FAIL no-ipc: ipc memory used"; failures=$((failures + 1)); fi

"$vdev" lower "$examples/tp_block.vdev" >"$tmp/fused.vdev"; check fuse 0 $?
contains fuse "$tmp/fused.vdev" '= vdev.allreduce_add_rms_norm(%o, %x, %g, op=sum, strategy="auto")'
contains fuse "$tmp/fused.vdev" '= vdev.allreduce_add_rms_norm(%flat, %h, %g2, op=sum, epsilon=0.00001, strategy="auto")'
"$vdev" lower --no-fuse-allreduce "$examples/tp_block.vdev" >"$tmp/unfused.vdev"; check no-fuse 0 $?
if grep -q allreduce_add_rms_norm "$tmp/unfused.vdev"; then echo "FAIL no-fuse: fused anyway"; failures=$((failures + 1)); fi
contains no-fuse "$tmp/unfused.vdev" '= rms_norm(%h, %g, out='

"$vdev" lower --dot "$examples/tp_transformer_10.vdev" >"$tmp/tp.dot"; check dot 0 $?
contains dot "$tmp/tp.dot" "digraph"
contains dot "$tmp/tp.dot" "color=red"
"$vdev" lower --dot "$examples/tp_pp_transformer_10.vdev" >"$tmp/pp.dot"; check dot 0 $?
contains dot "$tmp/pp.dot" '[label="cuda:0 -> cuda:1", color=red'
"$vdev" lower --json "$examples/tp_pp_transformer_10.vdev" >"$tmp/pp.json"; check json 0 $?
contains json "$tmp/pp.json" '"cuda:1/ipc_memory": 2097152'

printf 'def @main(%%x: f32[2] on cpu:0) -> f32[2] {\n  %%0 = on_device(%%x, cuda:0)\n  return %%0\n}\n' >"$tmp/conflict.vdev"
"$vdev" lower "$tmp/conflict.vdev" 2>"$tmp/err"; check planning-error 1 $?
contains planning-error "$tmp/err" "conflict.vdev:2:18: error:"
printf 'def @main(%%x: f32[2]) -> f32[2] {\n  %%0 = add(%%x\n  return %%0\n}\n' >"$tmp/bad.vdev"
"$vdev" lower "$tmp/bad.vdev" 2>"$tmp/err"; check parse-error 2 $?
"$vdev" lower --allreduce-strategy bogus "$examples/allreduce_reshape.vdev" 2>/dev/null; check usage 2 $?
"$vdev" lower --alignment 3 "$examples/allreduce_reshape.vdev" 2>/dev/null; check alignment 2 $?

[ "$failures" = 0 ] && echo "vdev lower: all checks passed"
exit "$failures"
