#!/usr/bin/env bash
# `vdev run` driven as a user would: the examples with --check on 1, 2 and 4 workers (the transformer on 2; host
# backend), the C++ frontend, bad inputs (each a clear message and a non-zero exit), and a worker
# killed mid-run (the run fails at once, not after its timeout; no worker process or /dev/shm segment is left).
# Usage: run_test.sh PATH_TO_VDEV PATH_TO_FRONTEND
set -u
vdev=$1
frontend=$2
examples=$(cd "$(dirname "$0")/../../examples" && pwd)
source "$(dirname "$0")/expect.sh"

# npy FILE DESCR SHAPE BYTES: a version 1.0 .npy file of BYTES zero data bytes.
npy() {
  local header="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  local pad=$(( (64 - (10 + ${#header} + 1) % 64) % 64 ))
  header="$header$(printf '%*s' "$pad" '')"$'\n'
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf '%02x' $(( ${#header} % 256 )))\\x$(printf '%02x' $(( ${#header} / 256 )))";
    printf '%s' "$header"; head -c "$4" /dev/zero; } > "$1"
}

# 1. The examples, checked against the CPU reference. The 10-layer transformer once, on 2 workers:
# each worker runs the full-size layers (about 260 GFLOP in f16, then as much again for the
# reference), minutes on a 2-core machine per extra worker count.
ok_re='check: the outputs of [0-9]+ worker\(s\) match the CPU reference'
for workers in 1 2 4; do
  for example in run/tp_mlp.vdev run/heterogeneous.vdev; do
    expect "$example/$workers" 0 "worker $((workers - 1)) output 0: .*$ok_re" '' -- \
      "$vdev" run "$examples/$example" --backend host --workers "$workers" --check
  done
done
expect "memory/tp_transformer_10.vdev/2" 0 "worker 1 output 0: .*$ok_re" '' -- \
  "$vdev" run "$examples/memory/tp_transformer_10.vdev" --backend host --workers 2 --check
# The fused all-reduce runs (its op in the profile) and checks; --no-fuse-allreduce runs the three ops.
expect fused 0 "vdev\.allreduce_add_rms_norm +2 .*$ok_re" '' -- \
  "$vdev" run "$examples/memory/tp_block.vdev" --workers 2 --check --profile
expect unfused 0 "rms_norm +2 .*$ok_re" '' -- \
  "$vdev" run "$examples/memory/tp_block.vdev" --workers 2 --check --profile --no-fuse-allreduce
# A run that outlasts --timeout fails, naming the worker and the bound; the bound is checked. A
# million repeats outlast 1 s on any machine; one worker has no peer whose lateness could end the
# run first, and the workers' start is not bounded by --timeout.
expect timeout 1 '' 'vdev run: failed: worker 0 did not finish .* within 1s' -- \
  "$vdev" run "$examples/memory/tp_transformer_10.vdev" --workers 1 --repeat 1000000 --timeout 1
expect timeout_zero 2 '' 'timeout' -- "$vdev" run "$examples/run/tp_mlp.vdev" --timeout 0
# The example checks its placement against the one its comment states (exit 1 otherwise).
expect frontend 0 'placement: %x cuda:0, .*; 2 copies.*backend host: y = f32\[4,8\].*row 3 sums to 1' '' -- "$frontend"
# The same seed gives the same checksums; another seed others.
a=$("$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --inputs random:3 2>&1 | grep output)
b=$("$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --inputs random:3 2>&1 | grep output)
c=$("$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --inputs random:4 2>&1 | grep output)
if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" != "$c" ]; then passes=$((passes + 1)); else fail "seeded checksums: '$a' '$b' '$c'"; fi
# random:SEED gives every worker the same inputs (a tensor-parallel program's outputs then agree);
# random-per-rank:SEED each its own, worker 0's being random:SEED's.
same=$("$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --inputs random:3 2>&1 | grep output | sed 's/worker [0-9] //' | sort -u | wc -l)
[ "$same" = 1 ] && passes=$((passes + 1)) || fail "random:3: the two workers' outputs differ"
own=$("$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --inputs random-per-rank:3 2>&1 | grep output | sed 's/worker [0-9] //' | sort -u | wc -l)
[ "$own" = 2 ] && passes=$((passes + 1)) || fail "random-per-rank:3: the two workers' outputs agree"
expect per_rank_check 0 'match the CPU reference' '' -- "$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --inputs random-per-rank:1 --check
# The other spelling of a strategy is accepted with a note.
expect strategy_spelling 0 'worker 1 output 0' "vdev run: note: all-reduce strategy 'one_shot' is spelled 'one-shot'" -- \
  "$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --allreduce-strategy one_shot
# Outputs written with --outputs read back as inputs (tp_mlp's output has %x's type).
expect outputs 0 'worker 1 output 0' '' -- "$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --outputs "$work/out"
[ -f "$work/out/rank1/output0.npy" ] && passes=$((passes + 1)) || fail "outputs: no $work/out/rank1/output0.npy"
expect profile 0 'profile \(worker 0.*matmul.*copies [0-9.]+%, all-reduces [0-9.]+%' '' -- \
  "$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --profile

# 2. Bad input: a clear message naming the input, worker or location, and a non-zero exit.
prog="$work/add.vdev"
printf 'def @main(%%x: f32[2,3], %%y: f32[3]) -> f32[2,3] {\n  %%z = add(%%x, %%y)\n  return %%z\n}\n' > "$prog"
mkdir -p "$work/in"
npy "$work/in/x.npy" '<f4' '(2, 3)' 24
npy "$work/in/y.npy" '<f4' '(3,)' 12
expect inputs_ok 0 'worker 1 output 0: f32\[2,3\] sum=0' '' -- "$vdev" run "$prog" --workers 2 --inputs "$work/in" --check
mkdir -p "$work/rank_in/rank1" && cp "$work/in/x.npy" "$work/rank_in/" && cp "$work/in/y.npy" "$work/rank_in/rank1/"
expect fewer_inputs 2 '^$' 'input %y: no file .*rank_in/y\.npy.*rank0/y\.npy' -- \
  "$vdev" run "$prog" --workers 2 --inputs "$work/rank_in"
expect missing_dir 2 '^$' 'no directory .*absent' -- "$vdev" run "$prog" --inputs "$work/absent"
mkdir -p "$work/dir_in/y.npy" && cp "$work/in/x.npy" "$work/dir_in/"
expect unreadable_input 2 '^$' 'dir_in/y\.npy: not a regular file' -- "$vdev" run "$prog" --inputs "$work/dir_in"
mkdir -p "$work/fifo_in" && cp "$work/in/x.npy" "$work/fifo_in/" && mkfifo "$work/fifo_in/y.npy"
expect fifo_input 2 '^$' 'fifo_in/y\.npy: not a regular file' -- timeout 60 "$vdev" run "$prog" --inputs "$work/fifo_in"
mkdir -p "$work/dtype_in" && cp "$work/in/x.npy" "$work/dtype_in/" && npy "$work/dtype_in/y.npy" '<f2' '(3,)' 6
expect wrong_dtype 2 '^$' 'input %y \(.*y\.npy\): expected f32\[3\], the file holds f16\[3\]' -- \
  "$vdev" run "$prog" --inputs "$work/dtype_in"
mkdir -p "$work/shape_in" && cp "$work/in/x.npy" "$work/shape_in/" && npy "$work/shape_in/y.npy" '<f4' '(4,)' 16
expect wrong_shape 2 '^$' 'input %y \(.*y\.npy\): expected f32\[3\], the file holds f32\[4\]' -- \
  "$vdev" run "$prog" --inputs "$work/shape_in"
mkdir -p "$work/trunc_in" && cp "$work/in/x.npy" "$work/trunc_in/" && npy "$work/trunc_in/y.npy" '<f4' '(3,)' 5
expect truncated_input 2 '^$' 'y\.npy: holds 5 data bytes' -- "$vdev" run "$prog" --inputs "$work/trunc_in"
printf 'def @main(%%x: f32[4]) -> f32[4] {\n  %%y = relu(%%x)\n  %%z = my.op(%%y)\n  return %%z\n}\n' > "$work/nokernel.vdev"
expect no_kernel 2 '^$' "nokernel\.vdev:3:8: error: unknown op 'my\.op': no op of that name is registered and no kernel runs it" -- \
  "$vdev" run "$work/nokernel.vdev" --workers 2
printf 'def @main(%%x: f32[4]) -> f32[4] {\n  %%y = relu(%%x)\n  %%z = matmull(%%y, %%y)\n  return %%z\n}\n' > "$work/typo.vdev"
expect op_typo 2 '^$' "typo\.vdev:3:8: error: unknown op 'matmull': .*\(did you mean 'matmul'\?\)" -- "$vdev" run "$work/typo.vdev"
printf 'def @main(%%x: f32[4]) -> f32[4] {\n  %%s = allreduce(%%x, op=sum, workers=2)\n  return %%s\n}\n' > "$work/two.vdev"
expect workers_mismatch 2 '^$' 'two\.vdev:2:[0-9]+: error: the all-reduce %s is written for 2 workers \(workers=2\); it cannot run on 3' -- \
  "$vdev" run "$work/two.vdev" --workers 3
expect workers_match 0 'worker 1 output 0: f32\[4\]' '' -- "$vdev" run "$work/two.vdev" --workers 2 --check
printf 'def @main(%%x: f32[4]) -> f32[4] {\n  %%y = relu(%%x\n  return %%y\n}\n' > "$work/malformed.vdev"
expect malformed 2 '^$' 'malformed\.vdev:[0-9]+:[0-9]+: error' -- "$vdev" run "$work/malformed.vdev"
expect missing_program 2 '^$' 'absent\.vdev: error: cannot (open|read)' -- "$vdev" run "$work/absent.vdev"
# FILE is read as `vdev plan` reads it: anything but a regular file of at most 4 GiB is refused
# in one line, before anything is read (a FIFO or /dev/zero must not hang or fill memory).
one_line="[^"$'\n'"]*$"
expect run_directory 2 '^$' "^$work/in: error: is a directory$one_line" -- "$vdev" run "$work/in"
mkfifo "$work/prog_fifo"
expect run_fifo 2 '^$' "^$work/prog_fifo: error: not a regular file$one_line" -- timeout 60 "$vdev" run "$work/prog_fifo"
expect run_dev_zero 2 '^$' "^/dev/zero: error: not a regular file$one_line" -- timeout 60 "$vdev" run /dev/zero
truncate -s 5G "$work/huge.vdev"  # sparse: takes no disk
expect run_too_large 2 '^$' "^$work/huge\.vdev: error: is 5368709120 bytes, larger than 4294967294$one_line" -- \
  timeout 60 "$vdev" run "$work/huge.vdev"
expect run_stdin 2 '^$' "^<stdin>: error: this command needs a program file, not standard input$one_line" -- \
  "$vdev" run - <"$prog"
expect bad_seed 2 '^$' 'random:x' -- "$vdev" run "$prog" --inputs random:x
expect zero_workers 2 '' 'workers' -- "$vdev" run "$prog" --workers 0
# plan:NAME runs an all-reduce as the channel plan NAME; a plan of another collective is refused,
# naming the all-reduce plans, rather than run as an all-reduce.
expect plan_strategy 0 'match the CPU reference' '' -- \
  "$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --check --allreduce-strategy plan:two_shot
expect plan_not_allreduce 1 '' 'tp_mlp\.vdev:[0-9]+:[0-9]+: .*plan all_gather is an allgather, not an allreduce \(allreduce plans: one_shot, ' -- \
  "$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --check --allreduce-strategy plan:all_gather

# 3. A worker killed mid-run: the run fails at once, naming the worker, not after its 600 s timeout
# (the check allows 60 s for a loaded machine); nothing is left behind
# (the host backend unlinks its segments once every worker has mapped them, so the check is that
# none is left whatever moment the kill hits).
"$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --repeat 1000000 >"$work/kill_out" 2>"$work/kill_err" &
controller=$!
# The workers are the controller's children named vdev-worker-<i> (its guardian is another child);
# their shared memory (mapped, then unlinked by its owner) names the session:
# /dev/shm/vdev-<session>-<sequence>-<rank>.
# find_workers CONTROLLER: sets $workers and $session once both workers run (60 s at most).
find_workers() {
  workers=""
  session=""
  for _ in $(seq 600); do
    workers=$(pgrep -P "$1" -f '^vdev-worker-' | tr '\n' ' ')
    if [ "$(echo $workers | wc -w)" -ge 2 ]; then
      for p in $workers; do
        session=$(grep -o '/dev/shm/vdev-[0-9a-f]*-' "/proc/$p/maps" 2>/dev/null | head -1 | sed 's|/dev/shm/vdev-||; s|-$||')
        [ -n "$session" ] && break
      done
      [ -n "$session" ] && break
    fi
    sleep 0.1
  done
}
find_workers "$controller"
victim=$(echo $workers | awk '{print $2}')
if [ -z "$victim" ] || [ -z "$session" ]; then
  fail "kill: did not find 2 workers and their session (workers '$workers', session '$session')"
  kill -9 "$controller" $workers 2>/dev/null
else
  kill -9 "$victim"
  start=$(date +%s)
  status=0
  for _ in $(seq 600); do kill -0 "$controller" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$controller" 2>/dev/null; then
    fail "kill: the run still runs 60 s after worker $victim was killed"
    kill -9 "$controller" $workers 2>/dev/null
  fi
  wait "$controller"; status=$?
  elapsed=$(( $(date +%s) - start ))
  [ "$status" -ne 0 ] || fail "kill: the run exited 0"
  [ "$elapsed" -le 60 ] || fail "kill: the run took $elapsed s to fail"
  # The session may notice the death itself ("was killed by signal 9") or through the surviving
  # worker, whose all-reduce reports the peer it waited for ("is gone"): either names the victim.
  grep -Eq "worker [0-9] \(pid $victim\) (was killed by signal 9|is gone)" "$work/kill_err" || fail "kill: stderr does not name the worker: $(cat "$work/kill_err")"
  for p in $workers; do
    if kill -0 "$p" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; then fail "kill: worker $p is left running"; fi
  done
  leftover=$(ls /dev/shm | grep "^vdev-$session-")
  [ -z "$leftover" ] || fail "kill: shared memory left behind: $leftover"
  [ "$failures" -eq 0 ] && passes=$((passes + 1))
fi

# 4. The controller itself killed with SIGKILL (no code of it runs): its workers die of their
# parent-death signal at once (60 s allowed for a loaded machine), and no segment is left: the controller's guardian removes those
# of a worker killed between creating a segment and sharing it (within 5 s of the workers' end).
"$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --repeat 1000000 >/dev/null 2>&1 &
controller=$!
find_workers "$controller"
if [ "$(echo $workers | wc -w)" -lt 2 ] || [ -z "$session" ]; then
  fail "kill_controller: did not find 2 workers and their session (workers '$workers', session '$session')"
  kill -9 "$controller" $workers 2>/dev/null
else
  kill -9 "$controller"
  wait "$controller" 2>/dev/null
  alive=$workers
  for _ in $(seq 600); do
    alive=""
    for p in $workers; do
      if kill -0 "$p" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; then alive="$alive $p"; fi
    done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  for _ in $(seq 300); do
    [ -z "$(ls /dev/shm | grep "^vdev-$session-")" ] && break
    sleep 0.1
  done
  if [ -n "$alive" ]; then
    fail "kill_controller: workers$alive outlived their controller by 60 s"
    kill -9 $alive 2>/dev/null
  elif [ -n "$(ls /dev/shm | grep "^vdev-$session-")" ]; then
    fail "kill_controller: shared memory left behind: $(ls /dev/shm | grep "^vdev-$session-")"
  else
    passes=$((passes + 1))
  fi
fi

echo "run: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
