"""Turns allreduce_bench CSVs into the BENCHMARKS.md table, the target checks and a latency plot.

Usage: python3 report_allreduce.py RESULTS_DIR OUT.png [TORCH_DIR]
RESULTS_DIR holds benchN.csv (all variants) and autoN.csv (vdev-auto with the derived table, NCCL and
NCCL symm, and PyTorch's symm-mem one-shot, same device call) for N in 2 and 4; TORCH_DIR, if given,
holds torchN.csv from another call instead.
Graph timings only; power-of-two sizes and the LLM shapes.
"""
import csv
import os
import sys


def load(path):
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["mode"] == "graph":
                rows[(int(r["bytes"]), r["label"], r["variant"])] = r
    return rows


def human(b):
    for unit, div in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div} {unit}"
    return f"{b} B"


def main(results, png, torch_dir):
    plots = {}
    for n in (2, 4):
        bench = load(os.path.join(results, f"bench{n}.csv"))
        auto = load(os.path.join(results, f"auto{n}.csv"))
        torch = load(os.path.join(torch_dir, f"torch{n}.csv")) or auto
        keys = sorted({(b, l) for (b, l, v) in auto if v == "vdev-auto"}, key=lambda k: (k[1] != "", k[1].split("x")[-1], k[0]))
        print(f"\n#### {n}× H200, bf16, CUDA graphs, µs per op (busbw GB/s at 256 MB)\n")
        print("| size | shape | vdev auto | picks | auto, no PDL | NCCL | NCCL symm | vdev one-shot LL | vdev one-shot LL128 "
              "| vdev one-shot | vdev two-shot | torch symm one-shot | auto / NCCL | auto / best |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        misses = []
        xs, series = [], {"vdev auto": [], "NCCL": [], "NCCL symm": []}
        for size, label in keys:
            def us(table, variant):
                r = table.get((size, label, variant))
                return float(r["us"]) if r and r["check"] == "ok" else None
            a, nc, ns = us(auto, "vdev-auto"), us(auto, "nccl"), us(auto, "nccl-symm")
            kernels = {v: us(bench, v) for v in ("vdev-1shot-ll", "vdev-1shot-ll128", "vdev-2shot-ll", "vdev-1shot", "vdev-2shot")}
            nopdl = us(auto, "vdev-auto-nopdl")
            t = us(torch, "torch-symm-1shot") if not label else None
            best = min(x for x in [a, nc, ns, *kernels.values()] if x is not None)
            picks = auto[(size, label, "vdev-auto")]["auto_choice"]
            cell = lambda x: "" if x is None else f"{x:.2f}"
            if size == 256 << 20 and not label:
                cell_bw = lambda x: "" if x is None else f"{x:.1f} ({size / x / 1e3 * 2 * (n - 1) / n:.0f})"
            else:
                cell_bw = cell
            print(f"| {human(size)} | {label.replace('llm:', '')} | {cell_bw(a)} | {picks} | {cell(nopdl)} | {cell_bw(nc)} "
                  f"| {cell_bw(ns)} | {cell(kernels['vdev-1shot-ll'])} | {cell(kernels['vdev-1shot-ll128'])} "
                  f"| {cell(kernels['vdev-1shot'])} | {cell_bw(kernels['vdev-2shot'])} "
                  f"| {cell(t)} | {a / nc:.2f} | {a / best:.2f} |")
            if not label:
                xs.append(size)
                series["vdev auto"].append(a)
                series["NCCL"].append(nc)
                series["NCCL symm"].append(ns)
                if 4096 <= size <= 256 << 10 and a / nc > 0.5:
                    misses.append(f"{human(size)}: {a / nc:.2f}x NCCL (target <= 0.5)")
                if size == 1 << 20 and a / nc > 0.8:
                    misses.append(f"1 MB: {a / nc:.2f}x NCCL (target <= 0.8)")
                if a / best > 1.02:
                    misses.append(f"{human(size)}: {a / best:.2f}x the fastest (target <= 1.02)")
                if picks != "nccl" and ns is not None and a > ns:
                    misses.append(f"{human(size)}: own kernel behind NCCL symm")
                if size == 256 << 20 and a / nc > 1.05:
                    misses.append(f"256 MB busbw {nc / a:.3f} of NCCL's (target >= 0.95)")
        print(f"\nTargets missed on {n} GPUs: " + ("; ".join(misses) if misses else "none"))
        plots[n] = (xs, series)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not found (try /usr/bin/python3): no plot written", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, (n, (xs, series)) in zip(axes, sorted(plots.items())):
        for name, ys in series.items():
            ax.plot(xs, ys, marker="o", markersize=3, label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes, bf16)")
        ax.set_ylabel("µs per all-reduce (CUDA graph)")
        ax.set_title(f"{n}× H200 (NVLink), sum")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
