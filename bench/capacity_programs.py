#!/usr/bin/env python3
"""Writes the optimiser's capacity cases as files for `vdev plan --optimize`: the transformer of
bench/optimize_bench.cc (same text) and a machine of 1 CPU + 2 H100s whose GPUs hold MEMORY_GB each.

  capacity_programs.py OUT_DIR
    OUT_DIR/layers300.vdev   300 layers of a 7B-like model (94 GB of f16 weights), OUT_DIR/h100x2.json (80 GB)
    OUT_DIR/layers6250.vdev  6,250 small layers (10^5 bindings, 1.9 GB), OUT_DIR/small_gpus.json (1.2 GB)

  vdev plan --optimize --machine OUT_DIR/h100x2.json OUT_DIR/layers300.vdev --json
"""
import json
import os
import sys


def transformer(layers, t, h, f, v):
    def ty(a, b):
        return f"f16[{a},{b}]"

    def free(name, of):
        return f"  {name} = on_device({of}, ?, constrain_body=false, constrain_result=false)\n"

    params = [f"%tokens: i64[{t}]", f"%table: {ty(v, h)}", f"%w_out: {ty(h, v)}"]
    body = ["  %x0 = take(%table, %tokens)\n  %e = on_device(%x0, cpu:0)\n"]
    x = "%e"
    for l in range(layers):
        params += [f"%g1_{l}: f16[{h}]", f"%wqkv{l}: {ty(h, 3 * h)}", f"%wo{l}: {ty(h, h)}",
                   f"%g2_{l}: f16[{h}]", f"%wup{l}: {ty(h, f)}", f"%wdown{l}: {ty(f, h)}"]
        s = str(l)
        body += [free(f"%m1_{s}", x), f"  %n1_{s} = rms_norm(%m1_{s}, %g1_{s})\n",
                 f"  %qkv{s} = matmul(%n1_{s}, %wqkv{s})\n", f"  %a{s}: {ty(t, h)} = sdpa(%qkv{s})\n",
                 f"  %o{s} = matmul(%a{s}, %wo{s})\n", free(f"%om{s}", f"%o{s}"), free(f"%xr{s}", x),
                 f"  %r{s} = add(%xr{s}, %om{s})\n", free(f"%m2_{s}", f"%r{s}"),
                 f"  %n2_{s} = rms_norm(%m2_{s}, %g2_{s})\n", f"  %up{s} = matmul(%n2_{s}, %wup{s})\n",
                 f"  %s{s} = silu(%up{s})\n", f"  %d{s} = matmul(%s{s}, %wdown{s})\n", free(f"%dm{s}", f"%d{s}"),
                 free(f"%rr{s}", f"%r{s}"), f"  %x{s}n = add(%rr{s}, %dm{s})\n"]
        x = f"%x{s}n"
    body += [free("%mf", x), "  %logits = matmul(%mf, %w_out)\n", free("%lm", "%logits"),
             f"  %next: i64[{t}] = sample(%lm)\n", "  %out = on_device(%next, cpu:0)\n  return %out\n"]
    return f"def @main({', '.join(params)}) -> i64[{t}] {{\n{''.join(body)}}}\n"


def machine(memory_gb):
    gpu = {"memory_gb": memory_gb, "bandwidth_gbs": 3350, "default_tflops": 67,
           "tflops": {"f16": 989, "bf16": 989, "f32": 67, "f64": 34, "i8": 1979}}
    return {"devices": [{"device": "cpu:0", "memory_gb": 1024, "bandwidth_gbs": 600, "default_tflops": 5,
                         "tflops": {"f32": 5, "f64": 2.5}}] +
            [dict(device=f"cuda:{g}", **gpu) for g in range(2)],
            "links": [{"between": ["cpu", "cuda"], "bandwidth_gbs": 64, "latency_us": 10},
                      {"between": ["cuda", "cuda"], "bandwidth_gbs": 450, "latency_us": 3}],
            "ops": {"take": ["cpu"], "sample": ["cpu"]}}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, text in [("layers300.vdev", transformer(300, 256, 4096, 11008, 32000)),
                       ("layers6250.vdev", transformer(6250, 256, 128, 344, 32000))]:
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    for name, gb in [("h100x2.json", 80), ("small_gpus.json", 1.2)]:
        with open(os.path.join(out, name), "w") as f:
            json.dump(machine(gb), f, indent=1)


if __name__ == "__main__":
    main()
