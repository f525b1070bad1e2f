#!/usr/bin/env python3
"""Notebook-style walk through a plan: the placement as a Graphviz picture, the memory pools as a
matplotlib chart. Each `# %%` cell runs as-is in Jupyter or VS Code; as a script:

    PYTHONPATH=build/python python3 examples/python/plot_placement.py [PROGRAM.vdev] [OUT_DIR]

PROGRAM defaults to examples/memory/tp_pp_transformer_10.vdev (one worker's share of a 10-layer
transformer in two pipeline stages, on cuda:0 and cuda:1); the pictures go to OUT_DIR
(default: ./vdev_plots): placement.dot (+ placement.svg when Graphviz's `dot` is installed) and
pools.png.
"""

# %% Plan the program
import pathlib
import shutil
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")  # files, not windows: the script also runs without a display
import matplotlib.pyplot as plt  # noqa: E402

import vdev  # noqa: E402

repo = pathlib.Path(__file__).resolve().parents[2]
program = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else repo / "examples/memory/tp_pp_transformer_10.vdev"
out = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else pathlib.Path("vdev_plots")
out.mkdir(parents=True, exist_ok=True)

plan = vdev.plan(vdev.parse(program.read_text(), file=str(program)))
devices = sorted({str(d) for d in plan.placement().values() if d is not None})
print(f"{program.name}: {len(plan.placement())} values on {', '.join(devices)}; {len(plan.copies)} copies")

# %% The placement, drawn by Graphviz: one colour per device, copies as red edges
dot_path = out / "placement.dot"
dot_path.write_text(plan.to_dot())
if shutil.which("dot"):
    subprocess.run(["dot", "-Tsvg", str(dot_path), "-o", str(out / "placement.svg")], check=True)
    print(f"placement: {out / 'placement.svg'}")
else:
    print(f"placement: {dot_path} (install graphviz to render it)")

# %% The memory pools after lowering: bytes per (device, scope)
lowered = vdev.lower(plan)
pools = [p for p in lowered.pools if p.bytes > 0]
labels = [f"{p.device}/{p.scope}" for p in pools]
mib = [p.bytes / 2**20 for p in pools]
fig, ax = plt.subplots(figsize=(7, 0.6 * len(pools) + 1.5))
bars = ax.barh(labels, mib, color=["tab:orange" if p.scope == "ipc_memory" else "tab:blue" for p in pools])
ax.bar_label(bars, labels=[f"{m:.1f} MiB, {p.storages} storages" for m, p in zip(mib, pools)], padding=3)
ax.set_xlabel("pool size (MiB)")
ax.set_title(f"{program.name}: {lowered.pool_bytes / 2**20:.1f} MiB of pools for "
             f"{lowered.tensor_bytes / 2**20:.1f} MiB of tensors")
ax.set_xlim(0, max(mib) * 1.6)
fig.tight_layout()
fig.savefig(out / "pools.png", dpi=100)
print(f"pools: {out / 'pools.png'}")

# %% The all-reduces: which run from IPC memory, which stay on NCCL and why
for a in lowered.allreduces:
    print(f"  %{a.binding}: {'ipc ' + a.strategy if a.ipc else 'nccl (' + a.reason + ')'}")
