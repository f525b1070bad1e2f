#!/bin/bash
# The machine model against the GPUs, in one device call: `vdev machine probe`, then for each program
# and worker count the default placement and `vdev run --optimize --machine probe.json`, each timed
# with --repeat twice (alternating), next to the model's prediction of both placements (`vdev plan
# --optimize --json`: "default_cost" and "cost", each plus its "run"). The decoder runs on the
# probed machine with GPUs of 6 MB (its 8.4 MB of weights then split over both).
# Run from the repository root after `bash scripts/gpu_pack.sh .gpu` here:
#   device run (kind nvidia-h100-x2): bash .gpu/scripts/gpu_predict_run.sh   (carry .gpu)
# Comes back in $OUT: machine.txt, probe.json, summary.tsv (one row per program, workers and
# placement) and logs.tgz (every step's log and plan). scripts/gpu_predict_diag.sh, run after it,
# reads its probe and the decoder's hand placements.
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
# (hand_cpu, op by op and 3x slower, is written for gpu_predict_diag.sh's use, not timed here.)
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
mv "$out"/*.log "$logs/"
python3 - "$out" "${programs[@]}" <<'EOF' | tee "$out/summary.tsv"
import json, re, sys
out, rows = sys.argv[1], sys.argv[2:]
probe = json.load(open(f"{out}/probe.json"))
print("program\tworkers\tplacement\tpredicted_ms\tmeasured_ms\tratio\tlaunch\tmeasured_rounds_ms")
for row in rows:
    name, _, _, workers = row.split()[:4]
    tag = f"{name}_w{workers}"
    try:
        plan = json.load(open(f"{out}/logs/{tag}.plan.json"))
    except Exception:
        plan = {}
    # The default placement's prediction is the plan's; the optimised one's is what the run printed
    # (with W workers the optimiser shares the CPU's rates among them).
    for placement, key in (("default", "default_cost"), ("optimized", "cost")):
        cost = plan.get(key) or {}
        predicted = (cost["total"] + cost["run"]) * 1e3 if "total" in cost else float("nan")
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
tar -C "$out" -czf "$out/logs.tgz" logs && rm -rf "$logs"
exit $status
