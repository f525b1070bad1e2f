#!/bin/bash
# Where the model's misses come from, in the device call after scripts/gpu_predict_run.sh (whose
# probe and decoder hand placements it reads from PREDICT_OUT):
# - peer access: the decoder split over both GPUs (optimised placement, and the hand placement with
#   everything on the GPUs), by this vdev and by VDEV_BEFORE (a vdev built without peer access
#   enabled between a worker's GPUs), alternating, twice each;
# - the heterogeneous example, taken apart: as shipped; without its `if`; with @block inlined; both;
#   both and the lookup on cuda:0 (then replayed). Each row's measured time next to the model's, so
#   the difference between two rows says what the removed part costs, measured and predicted.
# Comes back in $OUT: diag.tsv and diag_logs.tgz.
#   device run: OUT=$OUT/p bash .gpu/scripts/gpu_predict_run.sh; PREDICT_OUT=$OUT/p OUT=$OUT/d \
#     VDEV_BEFORE=.gpu/bin/vdev_before bash .gpu/scripts/gpu_predict_diag.sh
set -u
# shellcheck source=gpu_step.sh
source "$(dirname "$0")/gpu_step.sh" gpu-predict-diag-out
cd "$root"
export VDEV_TIMEOUT_MS=60000 CUDA_VISIBLE_DEVICES=0,1
ex=$pack/examples
logs=$out/diag_logs
mkdir -p "$logs"
machine=$PREDICT_OUT/probe.json
small=$PREDICT_OUT/probe_small.json
before=${VDEV_BEFORE:-}
rows=()  # NAME BINARY FILE MACHINE [--optimize]
for round in 1 2; do
  for binary in after before; do
    b=$bin/vdev
    if [ "$binary" = before ]; then
      [ -x "$before" ] || continue
      b=$before
    fi
    step "peer_decoder_opt_${binary}_$round" 120 "$b" run "$ex/planner/decoder_pipeline.vdev" --backend cuda \
      --repeat 500 --optimize --machine "$small"
    step "peer_decoder_hand_gpu_${binary}_$round" 120 "$b" run "$ex/planner/decoder_pipeline_hand_gpu.vdev" \
      --backend cuda --repeat 500
  done
done
# The heterogeneous example's parts.
python3 - "$ex/run/heterogeneous.vdev" "$out" <<'PY'
import sys
src = open(sys.argv[1]).read()
head, main = src.split("def @main", 1)
main = "def @main" + main
config = head[head.index("config"):head.index("def @block")]
block = "  %n{k} = rms_norm({h}, %g)\n  %y{k} = matmul(%n{k}, {w})\n  %z{k} = silu(%y{k})\n  %h{k} = add({h}, %z{k})\n"
calls = "  %h1 = @block(%rows, %g, %w1)\n  %h2 = @block(%h1, %g, %w2)\n"
inline = block.format(k=1, h="%rows", w="%w1") + block.format(k=2, h="%h1", w="%w2")
branch = main[main.index("  %out = if"):main.index("  %logits")]
no_if = "  %out = multiply(%h2, 0.5)\n"
variants = {
    "het_full": src,
    "het_noif": src.replace(branch, no_if),
    "het_inline": config + main.replace(calls, inline),
    "het_inline_noif": config + main.replace(calls, inline).replace(branch, no_if),
}
variants["het_gpu"] = variants["het_inline_noif"].replace("on_device(%e, cpu:0)", "on_device(%e, cuda:0)")
for name, text in variants.items():
    assert name == "het_full" or text != src, name
    open(f"{sys.argv[2]}/{name}.vdev", "w").write(text)
PY
het=(het_full het_noif het_inline het_inline_noif het_gpu)
for name in "${het[@]}"; do
  "$bin/vdev" plan "$out/$name.vdev" --optimize --machine "$machine" --json > "$logs/$name.plan.json" 2> "$logs/$name.plan.err"
  for round in 1 2; do
    step "${name}_$round" 120 "$bin/vdev" run "$out/$name.vdev" --backend cuda --repeat 1000
  done
done
step het_full_profile 120 "$bin/vdev" run "$out/het_full.vdev" --backend cuda --repeat 3 --profile
mv "$out"/*.log "$out"/*.vdev "$logs/"
python3 - "$out" "${het[@]}" <<'EOF' | tee "$out/diag.tsv"
import glob, json, re, sys
out, het = sys.argv[1], sys.argv[2:]
def best(pattern):
    times = []
    for f in sorted(glob.glob(f"{out}/diag_logs/{pattern}.log")):
        m = re.search(r"then ([0-9.]+) ms per run", open(f).read())
        if m: times.append(float(m.group(1)))
    return (min(times) if times else float("nan")), times
print("row\tpredicted_ms\tmeasured_ms\tratio\trounds_ms")
for name in ("peer_decoder_opt", "peer_decoder_hand_gpu"):
    for binary in ("after", "before"):
        t, times = best(f"{name}_{binary}_*")
        print(f"{name}_{binary}\t-\t{t:.4f}\t-\t{','.join(f'{x:.4f}' for x in times)}")
for name in het:
    try:
        cost = json.load(open(f"{out}/diag_logs/{name}.plan.json"))["default_cost"]
        predicted = (cost["total"] + cost["run"]) * 1e3
        launch = cost.get("launch", "?")
    except Exception:
        predicted, launch = float("nan"), "?"
    t, times = best(f"{name}_[12]")
    print(f"{name} ({launch})\t{predicted:.4f}\t{t:.4f}\t{predicted / t:.2f}\t{','.join(f'{x:.4f}' for x in times)}")
EOF
tar -C "$out" -czf "$out/diag_logs.tgz" diag_logs && rm -rf "$logs"
exit $status
