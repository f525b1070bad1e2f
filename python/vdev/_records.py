"""Plain records returned by vdev.Plan and vdev.Lowered (named tuples: comparable, unpackable)."""

from __future__ import annotations

from typing import NamedTuple

from vdev._vdev import VirtualDevice


class Copy(NamedTuple):
    """A device change the plan makes explicit with a ``device_copy`` binding."""
    function: str       # 'main', or 'main/f' for a local function
    of: str             # the value copied (input name, without '%')
    src: VirtualDevice
    dst: VirtualDevice
    into: str           # the first consumer's name, or 'return'
    written: bool       # written as device_copy in the input


class PlanWarning(NamedTuple):
    """A conflict between primitive uses that planning resolved with a copy."""
    file: str
    line: int
    col: int
    message: str
    text: str           # FILE:LINE:COL: warning: … with the line and a caret

    def __str__(self) -> str:
        return self.text.rstrip("\n")


class Conflict(NamedTuple):
    """One annotation of a planning error: where it is written and the device it asks for."""
    line: int
    col: int
    device: VirtualDevice
    annotation: str


class Pool(NamedTuple):
    """The memory pool of one (device, scope) in one function."""
    function: str
    device: VirtualDevice
    scope: str
    bytes: int
    storages: int


class AllReduce(NamedTuple):
    """An all-reduce after lowering: rewritten to IPC memory, or left on NCCL and why."""
    function: str
    binding: str
    op: str
    strategy: str
    ipc: bool
    reason: str


class PlanCost(NamedTuple):
    """A plan's cost on a machine, in seconds (optimize=True; the roofline of docs/machine.md).

    `launch` is how the executor runs the plan, whose per-op times the cost counts: "graph_replay"
    (a straight-line @main, every op on a GPU, captured once and replayed) or "op_by_op". `calls` is
    the time of calls of global functions (in `total`), `run` the machine's fixed time of one run
    (not in `total`: a run is predicted to take total + run)."""
    total: float
    compute: float
    copy: float
    unsupported_ops: int
    launch: str
    calls: float = 0.0
    run: float = 0.0
