#!/usr/bin/env python3
"""Builds a small program in Python, plans it, and prints where each value lives.

    PYTHONPATH=build/python python3 examples/python/plan_program.py

The program: a matmul annotated onto the CPU, an RMS norm, a second matmul and a residual add.
An op's operands and result share one device, so the annotation takes the first matmul's inputs
%x and %w1 to the CPU with it; its result is where the value moves, so the RMS norm, the second
matmul and the add stay on the config's default device cuda:0, and %h is copied there once.
EXPECTED_PLACEMENT states that; the example checks the plan against it (exit 1 otherwise).
"""

import sys

import vdev

EXPECTED_PLACEMENT = {"x": "cpu:0", "w1": "cpu:0", "w2": "cuda:0", "gamma": "cuda:0", "h": "cpu:0",
                      "n": "cuda:0", "y": "cuda:0", "out": "cuda:0"}


def build() -> vdev.Module:
    with vdev.Builder(file="two_matmuls") as b:
        b.config(targets=["llvm", "cuda"], default="cuda:0", host="cpu:0")
        act = b.tensor_type("f32", [64, 256])
        weight = b.tensor_type("f32", [256, 256])
        norm = b.tensor_type("f32", [256])
        with b.function("main", result=act):
            x = b.param("x", act)
            w1, w2 = b.param("w1", weight), b.param("w2", weight)
            gamma = b.param("gamma", norm)
            h = b.on_device(b.op("matmul", x, w1, name="h"), "cpu:0", name="h_cpu")
            n = b.op("rms_norm", h, gamma, name="n")
            y = b.op("matmul", n, w2, name="y")
            b.ret(b.op("add", y, n, name="out"))
    return b.module


def main() -> None:
    module = build()
    print(module)
    plan = vdev.plan(module)
    print("where each value lives:")
    for name, device in plan.placement().items():
        print(f"  %{name:<6} {device}")
    print(f"result   {plan.result_device()}")
    for copy in plan.copies:
        print(f"copy of %{copy.of}: {copy.src} -> {copy.dst} (into {copy.into})")
    for warning in plan.warnings:
        print(warning)
    placement = {name: str(device) for name, device in plan.placement().items()}
    if placement != EXPECTED_PLACEMENT:
        print(f"the placement differs from EXPECTED_PLACEMENT: {placement}", file=sys.stderr)
        sys.exit(1)
    print("placement as stated in EXPECTED_PLACEMENT")


if __name__ == "__main__":
    main()
