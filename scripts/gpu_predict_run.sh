#!/bin/bash
# The machine model against the GPUs, in one device call: `vdev machine probe`, then for each program
# and worker count the default placement and `vdev run --optimize --machine probe.json`, each timed
# with --repeat twice (alternating), next to the model's prediction of both placements (`vdev plan
# --optimize --json`: "default_cost" and "cost", plus the machine's run_us). The decoder runs on the
# probed machine with GPUs of 6 MB (its 8.4 MB of weights then split over both).
# Run from the repository root after `bash scripts/gpu_pack.sh .gpu` here:
#   device run (kind nvidia-h100-x2): bash .gpu/scripts/gpu_predict_run.sh   (carry .gpu)
# Also the executor's per-op time with 1 and 2 workers (chains of adds run by `vdev run`). Comes back
# in $OUT: machine.txt, probe.json, summary.tsv (one row per program, workers and placement),
# chains.tsv and logs.tgz (every step's log and plan).
set -u
# shellcheck source=gpu_step.sh
source "$(dirname "$0")/gpu_step.sh" gpu-predict-out
cd "$root"
export VDEV_TIMEOUT_MS=60000 CUDA_VISIBLE_DEVICES=0,1
ex=$pack/examples
logs=$out/logs
mkdir -p "$logs"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; nvidia-smi topo -m; } > "$out/machine.txt"
step probe 120 "$bin/vdev" machine probe --out "$out/probe.json" --repetitions 5
python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
for d in m["devices"]:
    if d["device"].startswith("cuda"): d["memory_gb"] = 0.006
json.dump(m, open(sys.argv[2], "w"), indent=1)
' "$out/probe.json" "$out/probe_small.json"
# The decoder's default placement ignores the 6 MB the machine declares; its peers are two hand
# placements that fit: layers 0-3 on cuda:0, 4-7 and the output matmul on cuda:1, the lookup and
# the softmax on cpu:0 (hand_cpu) or on the GPUs (hand_gpu). Each annotation pins a layer boundary.
python3 - "$ex/planner/decoder_pipeline.vdev" "$ex/planner" <<'PY'
import sys
text = open(sys.argv[1]).read()
free = ", ?, constrain_body=false, constrain_result=false)"
def pin(s, value, device):
    return s.replace(f"{value}{free}", f"{value}, {device}, constrain_body=false, constrain_result=true)")
for name, host in (("hand_cpu", "cpu:0"), ("hand_gpu", None)):
    s = text
    for k in range(8):
        s = pin(s, f"on_device({'%e' if k == 0 else f'%x{k - 1}'}", "cuda:0" if k < 4 else "cuda:1")
    s = pin(s, "on_device(%x7", "cuda:1")
    s = pin(s, "on_device(%logits", host or "cuda:1")
    if host:
        s = s.replace("%e = take(%table, %tokens, axis=0)", "%e0 = take(%table, %tokens, axis=0)\n  %e = on_device(%e0, cpu:0)")
    assert free not in s, name
    open(f"{sys.argv[2]}/decoder_pipeline_{name}.vdev", "w").write(s)
PY
# NAME FILE MACHINE WORKERS REPEAT [--check]
programs=(
  "tp_transformer_10 memory/tp_transformer_10.vdev probe.json 1 200"
  "tp_transformer_10 memory/tp_transformer_10.vdev probe.json 2 200"
  "tp_pp_transformer_10 memory/tp_pp_transformer_10.vdev probe.json 1 200"
  "decoder_pipeline planner/decoder_pipeline.vdev probe_small.json 1 500 --check"
  "decoder_hand_cpu planner/decoder_pipeline_hand_cpu.vdev probe_small.json 1 500"
  "decoder_hand_gpu planner/decoder_pipeline_hand_gpu.vdev probe_small.json 1 500"
  "heterogeneous run/heterogeneous.vdev probe.json 1 500 --check"
  "heterogeneous run/heterogeneous.vdev probe.json 2 500 --check"
  "two_devices planner/two_devices.vdev probe.json 1 1000 --check"
  "tp_mlp run/tp_mlp.vdev probe.json 1 1000 --check"
  "tp_mlp run/tp_mlp.vdev probe.json 2 1000 --check"
)
for row in "${programs[@]}"; do
  read -r name file machine workers repeat check <<< "$row"
  tag=${name}_w$workers
  "$bin/vdev" plan "$ex/$file" --optimize --machine "$out/$machine" --json > "$logs/$tag.plan.json" 2> "$logs/$tag.plan.err"
  for round in 1 2; do
    # --check once, on the first optimised run: the placement computes what the reference does.
    extra=""
    [ "$round" = 1 ] && extra=${check:-}
    step "${tag}_default_$round" 120 "$bin/vdev" run "$ex/$file" --backend cuda --workers "$workers" --repeat "$repeat"
    # shellcheck disable=SC2086
    step "${tag}_optimized_$round" 120 "$bin/vdev" run "$ex/$file" --backend cuda --workers "$workers" --repeat "$repeat" \
      --optimize --machine "$out/$machine" $extra
  done
  [ "$name" = heterogeneous ] && step "${tag}_optimized_profile" 120 "$bin/vdev" run "$ex/$file" --backend cuda \
    --workers "$workers" --repeat 3 --profile --optimize --machine "$out/$machine"
done
# The per-op time with 1 and 2 workers (each on its own GPU, sharing the host's CPU): chains of 65
# and of 1 one-element add on cpu:0, and on cuda:0 op by op (inside an if) and replayed.
chain() {  # DEVICE OPS FORM(if|line)
  local body="" i
  for ((i = 0; i < $2; i++)); do body+="  %x$i = add($([ $i = 0 ] && echo %a || echo %x$((i - 1))), %a)"$'\n'; done
  body+="  return %x$(($2 - 1))"$'\n'
  printf 'config { targets = [llvm, cuda], default = %s, host = cpu:0 }\n' "$1"
  if [ "$3" = if ]; then
    printf 'def @main(%%a: f32[1], %%c: bool[]) -> f32[1] {\n  %%r = if %%c {\n%s  } else {\n%s  }\n  return %%r\n}\n' \
      "$body" "${body//%x/%y}"
  else
    printf 'def @main(%%a: f32[1]) -> f32[1] {\n%s}\n' "$body"
  fi
}
for kind in "cpu:0 line" "cuda:0 if" "cuda:0 line"; do
  read -r device form <<< "$kind"
  for ops in 1 65; do
    f=$out/chain_${device%%:*}_${form}_$ops.vdev
    chain "$device" "$ops" "$form" > "$f"
    for workers in 1 2; do
      step "chain_${device%%:*}_${form}_${ops}_w$workers" 60 "$bin/vdev" run "$f" --backend cuda --workers "$workers" --repeat 2000
    done
  done
done
mv "$out"/*.log "$out"/*.vdev "$logs/"
python3 - "$out" "${programs[@]}" <<'EOF' | tee "$out/summary.tsv"
import json, re, sys
out, rows = sys.argv[1], sys.argv[2:]
probe = json.load(open(f"{out}/probe.json"))
print("program\tworkers\tplacement\tpredicted_ms\tmeasured_ms\tratio\tlaunch\tmeasured_rounds_ms")
for row in rows:
    name, _, machine, workers = row.split()[:4]
    tag = f"{name}_w{workers}"
    run_us = json.load(open(f"{out}/{machine}")).get("run_us", 0)
    try:
        plan = json.load(open(f"{out}/logs/{tag}.plan.json"))
    except Exception:
        plan = {}
    # The default placement's prediction is the plan's; the optimised one's is what the run printed
    # (with W workers the optimiser shares the CPU's rates among them).
    for placement, key in (("default", "default_cost"), ("optimized", "cost")):
        cost = plan.get(key) or {}
        predicted = (cost["total"] + run_us * 1e-6) * 1e3 if "total" in cost else float("nan")
        measured = []
        for r in (1, 2):
            text = open(f"{out}/logs/{tag}_{placement}_{r}.log").read()
            m = re.search(r"then ([0-9.]+) ms per run", text)
            if m: measured.append(float(m.group(1)))
            m = re.search(r"the machine model predicts ([0-9.]+) ms per run", text)
            if m: predicted = float(m.group(1))
        best = min(measured) if measured else float("nan")
        print(f"{name}\t{workers}\t{placement}\t{predicted:.4f}\t{best:.4f}\t{predicted / best:.2f}\t"
              f"{cost.get('launch', '?')}\t{','.join(f'{x:.4f}' for x in measured)}")
EOF
python3 - "$out" <<'EOF' | tee "$out/chains.tsv"
import re, sys
out = sys.argv[1]
print("chain\tworkers\tper_op_us\tper_run_us")
for kind in ("cpu_line", "cuda_if", "cuda_line"):
    for workers in (1, 2):
        t = {}
        for ops in (1, 65):
            m = re.search(r"then ([0-9.]+) ms per run", open(f"{out}/logs/chain_{kind}_{ops}_w{workers}.log").read())
            t[ops] = float(m.group(1)) * 1e3 if m else float("nan")
        per_op = (t[65] - t[1]) / 64
        print(f"{kind}\t{workers}\t{per_op:.3f}\t{t[1] - per_op:.3f}")
EOF
tar -C "$out" -czf "$out/logs.tgz" logs && rm -rf "$logs"
exit $status
