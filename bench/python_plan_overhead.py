#!/usr/bin/env python3
"""Overhead of planning from Python: vdev.plan(module) against the same C++ call
(PlanDevices(const Module&, {}), bench/plan_call_peer.cc) on the 10^5-binding chain of
tests/ir/ir_generators.h, measured in one run. Both sides count the CPU time of the calling
thread (vdev.plan plans in the thread that calls it, with the GIL released), call and destruction
of the result. Rounds alternate the two sides so that drift in the machine's load hits both; each
side's figure is the median over all its calls.

    PYTHONPATH=build/python python3 bench/python_plan_overhead.py [--peer build/bench/plan_call_peer]
        [--bindings 100000] [--rounds 5] [--calls 5]
"""

import argparse
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import vdev


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", default="build/bench/plan_call_peer")
    parser.add_argument("--bindings", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        program = pathlib.Path(tmp) / "chain.vdev"
        subprocess.run([args.peer, "--emit", str(args.bindings), str(program)], check=True)
        module = vdev.parse(program.read_text(), file=str(program))
        vdev.plan(module)  # warm-up: first-touch page faults, interned devices
        cpp, python = [], []
        for _ in range(args.rounds):
            out = subprocess.run([args.peer, str(program), str(args.calls + 1)], check=True, capture_output=True,
                                 text=True).stdout.split()
            cpp += [float(t) for t in out[1:]]  # the first call of each process warms it up
            for _ in range(args.calls):
                start = time.thread_time()
                plan = vdev.plan(module)
                del plan
                python.append(time.thread_time() - start)
    c, p = statistics.median(cpp), statistics.median(python)
    print(f"bindings: {args.bindings}, calls per side: {len(cpp)}")
    print(f"C++ PlanDevices:  median {c * 1e3:.2f} ms (min {min(cpp) * 1e3:.2f})")
    print(f"Python vdev.plan: median {p * 1e3:.2f} ms (min {min(python) * 1e3:.2f})")
    print(f"ratio Python / C++: {p / c:.3f} (goal: at most 1.2)")
    return 0 if p / c <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
