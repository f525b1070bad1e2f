#!/usr/bin/env bash
# `vdev run --optimize` and `vdev plan --optimize --machine` driven as a user would, on the host
# backend: the examples placed by the optimiser run and match the CPU reference; the decoder whose
# weights exceed one GPU of examples/planner/small_gpus.json is split over both GPUs with its
# lookup and sampling on the CPU; bad machines and programs that fit nowhere are exit 2 with the
# offending file or value named, before any worker starts; `vdev machine probe` writes a machine
# the optimiser accepts. 16 s on the loaded 2-core development machine.
# Usage: optimize_run_test.sh PATH_TO_VDEV
set -u
vdev=$1
examples=$(cd "$(dirname "$0")/../../examples" && pwd)
source "$(dirname "$0")/expect.sh"

predicted='the machine model predicts [0-9.]+ ms per run'
checked='match the CPU reference'
# 1. The examples, placed by the optimiser, checked against the CPU reference.
expect heterogeneous 0 "placed by the optimiser.*$predicted.*$checked" '' -- \
  "$vdev" run "$examples/run/heterogeneous.vdev" --optimize --check
expect tp_mlp_2_workers 0 "placed by the optimiser.*$predicted.*$checked" '' -- \
  "$vdev" run "$examples/run/tp_mlp.vdev" --workers 2 --optimize --check
expect two_devices 0 "$checked" '' -- "$vdev" run "$examples/planner/two_devices.vdev" --optimize --check

# 2. The decoder: over one GPU's memory, split over two, lookup and sampling on the CPU.
machine=$examples/planner/small_gpus.json
decoder=$examples/planner/decoder_pipeline.vdev
expect decoder_runs 0 "proven optimal.*$predicted.*$checked" '' -- \
  "$vdev" run "$decoder" --optimize --machine "$machine" --check --outputs "$work/decoder"
"$vdev" plan "$decoder" --optimize --machine "$machine" --json > "$work/decoder.json" 2>/dev/null
if python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
peaks, where = r["peak_bytes"], r["functions"]["main"]["bindings"]
assert r["optimal"], r
assert where["e"] == "cpu:0" and where["probs"] == "cpu:0", where
layers = {where["u%d" % l] for l in range(8)}
assert layers == {"cuda:0", "cuda:1"}, layers
assert max(peaks["cuda:0"], peaks["cuda:1"]) <= 6e6, peaks
' "$work/decoder.json"; then passes=$((passes + 1)); else fail "decoder: layers over both GPUs within 6 MB, lookup and softmax on the CPU"; fi

# 3. Bad input: exit 2, the file or value named, no worker started.
echo '{"devices": [{"device": "cpu:0", "memory_gb": 1, "bandwidth_gbs": 0, "default_tflops": 1}]}' > "$work/bad.json"
expect bad_machine 2 '^$' 'bad.json: error: machine: device cpu:0 needs memory, bandwidth and flop rates above 0' -- \
  "$vdev" run "$decoder" --optimize --machine "$work/bad.json"
sed -E 's/"memory_gb": [0-9.]+/"memory_gb": 0.0004/g' "$machine" > "$work/tiny.json"
expect fits_nowhere 2 '^$' 'decoder_pipeline.vdev:[0-9]+:[0-9]+: error: .*bytes.*(no placement fits|more than any device)' -- \
  "$vdev" run "$decoder" --optimize --machine "$work/tiny.json"
python3 -c '
import json
d = [{"device": "cuda:%d" % i, "memory_gb": 80, "bandwidth_gbs": 3350, "default_tflops": 67} for i in range(8193)]
print(json.dumps({"devices": d, "links": [{"between": ["cuda", "cuda"], "bandwidth_gbs": 450, "latency_us": 3}]}))
' > "$work/huge.json"
expect machine_over_the_limit 2 '^$' 'huge.json: error: machine: 8193 devices, more than the 8192 a machine may have' -- \
  "$vdev" plan "$examples/planner/two_devices.vdev" --optimize --machine "$work/huge.json"
expect machine_needs_optimize 2 '' 'requires --optimize|--optimize' -- \
  "$vdev" run "$decoder" --machine "$machine"

# 4. The probe: this machine's JSON, which the optimiser accepts; a GPU it cannot reach is exit 2.
expect probe 0 '' 'vdev machine probe: cpu:0: ' -- "$vdev" machine probe --out "$work/probed.json" --repetitions 1
printf 'config { targets = [llvm], default = cpu:0, host = cpu:0 }\ndef @main(%%a: f32[64,64], %%b: f32[64,64]) -> f32[64,64] {\n  %%0 = matmul(%%a, %%b)\n  %%1 = on_device(%%0, ?, constrain_body=false, constrain_result=false)\n  %%2 = add(%%1, %%a)\n  return %%2\n}\n' > "$work/cpu.vdev"
expect probed_machine_plans 0 '"optimal": true' '' -- "$vdev" plan "$work/cpu.vdev" --optimize --machine "$work/probed.json" --json
# The per-op time of each kind is measured (64 more ops take longer than 4) and counted in the plan's
# cost: the matmul at the matmul's, the add at the elementwise op's; the `if` wait is measured (>= 0).
# The host's run time and a call's are measured (>= 0; a CPU-only machine's run is the host's), and
# a plan on the CPU pays the host's run time and call_us per call (two here).
printf 'config { targets = [llvm], default = cpu:0, host = cpu:0 }\ndef @f(%%x: f32[8]) -> f32[8] {\n  %%y = add(%%x, %%x)\n  return %%y\n}\ndef @main(%%a: f32[8]) -> f32[8] {\n  %%b = @f(%%a)\n  %%c = @f(%%b)\n  return %%c\n}\n' > "$work/calls.vdev"
if python3 -c '
import json, subprocess, sys
m = json.load(open(sys.argv[1]))
cpu = m["devices"][0]
kinds = cpu["kernel_us_by_kind"]
assert cpu["device"] == "cpu:0" and cpu["kernel_us"] > 0 and cpu["graph_kernel_us"] == cpu["kernel_us"], cpu
assert sorted(kinds) == ["elementwise", "matmul", "norm"] and min(kinds.values()) > 0, cpu
assert cpu["graph_kernel_us_by_kind"] == kinds and cpu.get("if_us", 0) >= 0, cpu
assert m["host_run_us"] == m["run_us"] >= 0 and m.get("call_us", 0) >= 0, m
plan = lambda file: json.loads(subprocess.run([sys.argv[2], "plan", file, "--optimize", "--machine", sys.argv[1],
                                               "--json"], capture_output=True, text=True, check=True).stdout)["cost"]
r = plan(sys.argv[3])
assert r["compute"] >= (kinds["matmul"] + kinds["elementwise"]) * 1e-6, (r, cpu)
assert abs(r["run"] - m["host_run_us"] * 1e-6) <= 1e-12 and r["calls"] == 0, (r, m)
r = plan(sys.argv[4])
assert r["launch"] == "op_by_op" and abs(r["calls"] - 2 * m.get("call_us", 0) * 1e-6) <= 1e-12, (r, m)
' "$work/probed.json" "$vdev" "$work/cpu.vdev" "$work/calls.vdev"; then
  passes=$((passes + 1)); else fail "probe: per-kind kernel_us > 0, run and call times; each counted in the cost"; fi
if ! "$vdev" version | grep -q 'cuda' || ! nvidia-smi -L >/dev/null 2>&1; then
  expect probe_unreachable_gpu 2 '^$' 'cuda:0 cannot be reached' -- "$vdev" machine probe --gpus 1 --repetitions 1
  expect machine_gpu_not_here 2 '^$' 'small_gpus.json: error: cuda:0 is not on this host \(0 GPU\(s\) visible\)' -- \
    "$vdev" run "$decoder" --optimize --machine "$machine" --backend cuda
fi

echo "optimize_run_test: $passes passed, $failures failed"
[ "$failures" = 0 ]
