#!/usr/bin/env python3
"""What reading inputs in place saves: one vdev.Executor.run of `negative` on an f32 tensor given
(a) a C-ordered NumPy array (read where it is, copied once into @main's parameter), (b) a DLPack
producer that is not a NumPy array (the same), and (c) the same array behind one extra full copy
made first (np.array(x, copy=True)): the cost every input paid before, when it was copied into a
HostTensor and then into the parameter. Rounds alternate the three so that load drift hits all;
each figure is the median wall time of a run over all rounds.

    PYTHONPATH=build/python python3 bench/python_run_inputs.py [--side 2048] [--rounds 7] [--calls 10]
"""

import argparse
import statistics
import time

import numpy as np

import vdev


class Producer:
    def __init__(self, array):
        self.array = array

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    n = args.side
    program = f"def @main(%a: f32[{n},{n}] on cpu:0) {{\n  %0 = negative(%a)\n  return %0\n}}\n"
    executor = vdev.Executor(vdev.compile(program).lowered)
    x = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    sides = {
        "NumPy array, read in place": lambda: executor.run(x),
        "DLPack producer, read in place": lambda: executor.run(Producer(x)),
        "one extra copy first (the former path)": lambda: executor.run(np.array(x, copy=True)),
    }
    for run in sides.values():
        run()  # warm-up: the pools' first touch
    times = {name: [] for name in sides}
    for _ in range(args.rounds):
        for name, run in sides.items():
            for _ in range(args.calls):
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
    base = statistics.median(times["one extra copy first (the former path)"])
    print(f"f32[{n},{n}] ({4 * n * n / 2**20:.1f} MiB), {args.rounds} rounds x {args.calls} calls, median ms per run:")
    for name, t in times.items():
        m = statistics.median(t)
        print(f"  {name:40s} {m * 1e3:8.2f} ms   ratio to the former path {m / base:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
