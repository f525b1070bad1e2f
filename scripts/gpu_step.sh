# Sourced by the one-call GPU scripts (gpu_exec_run.sh, gpu_verify.sh) run from a pack made by
# gpu_pack.sh: sets root (the tree), pack, bin and out ($OUT), puts the pack's libraries on the
# loader path (unpacking the xz-compressed ones, with Python's lzma where xz-utils is missing), keeps
# NVLink multicast off, and defines `step`.
root=$(cd "$(dirname "$0")/../.." && pwd)
pack=$(cd "$(dirname "$0")/.." && pwd)
bin=$pack/bin
out=${OUT:-$root/$1}
mkdir -p "$out"
export LD_LIBRARY_PATH="$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
for z in "$pack"/lib/*.xz; do
  [ -e "$z" ] || continue
  if command -v xz >/dev/null; then xz -d -f "$z"; else python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" "$z"; fi
done
: > "$out/status.txt"
status=0
# step NAME TIMEOUT COMMAND...: runs, logs to $out/NAME.log, shows it (show_step_log NAME, which a
# script may define; default: its last 25 lines), records the exit status in $out/status.txt and
# sets status=1 on a failure.
show_step_log() { tail -n 25 "$out/$1.log"; }
step() {
  local name=$1 limit=$2; shift 2
  echo "=== $name: $* ($(date -u +%T))"
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  show_step_log "$name"
  echo "=== $name: exit $rc"
  echo "$name $rc" >> "$out/status.txt"
  [ $rc -eq 0 ] || status=1
}
