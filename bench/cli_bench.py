#!/usr/bin/env python3
"""The command line as a user meets it: wall time and peak RSS of `vdev` commands and of
`import vdev`, each run as a fresh process, against the bare cost of starting a process
(`/bin/true`) and an interpreter (`python3 -c pass`) measured in the same run. Needs /usr/bin/time
(Debian's `time` package) for the peak RSS.

    python3 bench/cli_bench.py [--vdev build/tools/vdev] [--python-path build/python]
        [--python /usr/bin/python3] [--runs 7] [--chains 100000,1000000]

The `plan` rows plan the add chain of bench/plan_bench.cc (BM_ParseAndPlan, variant 1: N adds, every
tenth pinned to cpu:0), written to a temporary file. Runs of the cases alternate round by round so
that drift in the machine's load hits every case alike; each figure is the median over the runs, and
the peak RSS the largest seen. Prints a Markdown table.
"""

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time


def chain_text(adds: int) -> str:
    """The program of plan_bench.cc's Chain(adds, 1)."""
    def name(i: int) -> str:
        return "%p" if i == -1 else "%q" if i == -2 else f"%{i}"

    lines = ["def @main(%p: f32[4], %q: f32[4]) -> f32[4] {"]
    for i in range(adds):
        a, b = name(i - 1), name(i - 2)
        if i % 10 == 9:
            lines.append(f"  %a{i} = add({a}, {b})")
            lines.append(f"  %{i} = on_device(%a{i}, cpu:0)")
        else:
            lines.append(f"  %{i} = add({a}, {b})")
    lines.append(f"  return %{adds - 1}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def run_once(argv, env, want_status):
    """Wall seconds and peak RSS (MB) of one run of argv, its output discarded; stops the benchmark
    when it exits with another status than want_status. The RSS comes from /usr/bin/time, a small
    parent: a child forked from this interpreter would carry the interpreter's peak in ru_maxrss."""
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%x %M", *argv], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    code, kilobytes = (int(v) for v in done.stderr.strip().splitlines()[-1].split())
    if code != want_status:
        sys.exit(f"{' '.join(argv)}: exit status {code}, expected {want_status}: {done.stderr[-2000:]}")
    return wall, kilobytes / 1024


def want_status(label: str) -> int:
    return 1 if "exit 1" in label else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vdev", default="build/tools/vdev")
    parser.add_argument("--python-path", default="build/python")
    # The interpreter the extension was built for (CMake prefers /usr/bin/python3: BUILD_NOTES.md).
    parser.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--chains", default="100000,1000000", help="adds of the planned chains, comma-separated")
    args = parser.parse_args()
    vdev = str(pathlib.Path(args.vdev).resolve())
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(args.python_path).resolve()))

    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ("process start (peer): /bin/true", ["/bin/true"]),
            ("vdev join cuda:3 cuda:4 (exit 1: no join)", [vdev, "join", "cuda:3", "cuda:4"]),
            ("vdev version", [vdev, "version"]),
            ("interpreter start (peer): python3 -c pass", [args.python, "-c", "pass"]),
            ("python3 -c 'import vdev'", [args.python, "-c", "import vdev; vdev.join"]),
        ]
        for adds in (int(a) for a in args.chains.split(",") if a):
            program = pathlib.Path(tmp) / f"chain{adds}.vdev"
            program.write_text(chain_text(adds))
            bindings = adds + adds // 10
            cases.append((f"vdev plan: chain of {bindings:,} bindings", [vdev, "plan", str(program)]))
        walls = {label: [] for label, _ in cases}
        rss = {label: 0.0 for label, _ in cases}
        for label, argv in cases:  # warm-up: page cache, first-touch faults
            run_once(argv, env, want_status(label))
        for _ in range(args.runs):
            for label, argv in cases:
                wall, peak = run_once(argv, env, want_status(label))
                walls[label].append(wall)
                rss[label] = max(rss[label], peak)

    print(f"{args.runs} runs each, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| command | median wall ms | min wall ms | peak RSS MB |")
    print("| --- | ---: | ---: | ---: |")
    for label, _ in cases:
        print(f"| {label} | {statistics.median(walls[label]) * 1e3:.1f} | {min(walls[label]) * 1e3:.1f} "
              f"| {rss[label]:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
