"""Derives kAuto's table from an allreduce_bench CSV (graph timings, power-of-two sizes).

For each size the fastest of vdev-1shot-ll, vdev-1shot-ll128, vdev-1shot-sentinel, vdev-2shot-ll, vdev-1shot, vdev-2shot and nccl wins (NCCL's symmetric
kernels need registered buffers, which an arbitrary caller's tensors are not, so auto cannot pick
them); runs of equal winners become one row. Near ties do not start a new row: where the algorithm of
the row so far is within TIE (1%) of the fastest, it keeps the size, so run-to-run noise between
near-equal kernels does not cut the table into alternating rows. Prints the VDEV_ALLREDUCE_AUTO
string.
Usage: python3 derive_auto_table.py bench.csv
"""
import csv
import sys

TIE = 1.01
NAMES = {"vdev-1shot-ll": "one-shot-ll", "vdev-1shot-ll128": "one-shot-ll128", "vdev-1shot-sentinel": "one-shot-sentinel", "vdev-2shot-ll": "two-shot-ll", "vdev-1shot": "one-shot", "vdev-2shot": "two-shot", "nccl": "nccl"}


def main(path):
    times = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            if row["mode"] != "graph" or row["label"] or row["variant"] not in NAMES or row["check"] != "ok":
                continue
            times.setdefault(int(row["bytes"]), {})[NAMES[row["variant"]]] = float(row["us"])
    best = {}
    previous = None
    for size in sorted(times):
        fastest = min(times[size], key=times[size].get)
        if previous in times[size] and times[size][previous] <= TIE * times[size][fastest]:
            fastest = previous
        best[size] = (fastest, times[size][fastest])
        previous = fastest
    rows = []
    for size in sorted(best):
        algo = best[size][0]
        if rows and rows[-1][0] == algo:
            rows[-1][1] = size
        else:
            rows.append([algo, size])
    if rows:
        rows[-1][1] = 1 << 40  # the last winner keeps every larger size
    while rows and rows[-1][0] == "nccl":
        rows.pop()  # past the last row is NCCL anyway
    print(",".join(f"{a}:{s}" for a, s in rows))


if __name__ == "__main__":
    main(sys.argv[1])
