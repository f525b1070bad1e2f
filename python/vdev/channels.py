"""The channel language (include/vdev/channels/channel_program.h, docs/channels.md): collectives written as
programs over point-to-point channels, validated, shipped as JSON execution plans and run.

    from vdev import channels as ch
    p = ch.Program("one_shot", "allreduce", world_size=2)
    for r in range(2):
        c = p.add_memory_channel(dst=1 - r, src=r)
        c.signal(0); c.wait(0)                          # entry barrier
        c.reduce(0, p.output(r, 0), [p.input(0, 0), p.input(1, 0)])
        c.signal(0); c.wait(0)                          # nobody rewrites its input while the peer reads
    plan = p.build()                                    # ChannelError naming rank, tb and op if wrong
    plan.to_json(); ch.Plan.from_json(text, file="plan.json")
    outs = ch.run(plan, [x0, x1])                       # host executor, one thread per rank

Buffers are "input", "output" and "scratch"; syncs "none", "before", "after" and "both"; collectives
"allreduce", "reducescatter", "allgather" and "broadcast". A thread block is an int, or a
(first, count) tuple for a group sharing an op's data.
"""

from typing import List, Sequence

import numpy as np

from vdev._errors import ChannelError
from vdev._vdev import ChannelChunk as Chunk
from vdev._vdev import ChannelMemoryChannel as MemoryChannel
from vdev._vdev import ChannelPlan as Plan
from vdev._vdev import ChannelPortChannel as PortChannel
from vdev._vdev import ChannelProgram as Program
from vdev._vdev import run_channel_plan, shipped_channel_plan, shipped_channel_plan_names, validate_channel_plan

__all__ = ["ChannelError", "Chunk", "MemoryChannel", "Plan", "PortChannel", "Program", "run", "shipped",
           "shipped_names", "validate"]


def validate(plan: Plan) -> None:
    """Checks a plan (ValidateProgram); raises ChannelError naming rank, thread block and op."""
    validate_channel_plan(plan)


def shipped(name: str, world_size: int) -> Plan:
    """A plan shipped with vdev (channel_algorithms.h: one_shot, two_shot, …) for `world_size` ranks."""
    return shipped_channel_plan(name, world_size)


def shipped_names() -> List[str]:
    """The shipped plans' names."""
    return shipped_channel_plan_names()


def run(plan: Plan, inputs: Sequence[np.ndarray], *, instances: int = 1, timeout: float = 8.0) -> List[np.ndarray]:
    """Runs `plan` once on the host executor, each rank a thread with its own session: `inputs[r]` is
    rank r's input (1-D, float32, float64, int32, float16 or uint16 holding bf16 bits, the
    collective's input segments of `count` elements); returns each rank's output (f16 and bf16 are
    summed in f32 and rounded once). ChannelError naming the rank when a rank fails (a wait that
    no signal satisfies ends after `timeout` seconds)."""
    return run_channel_plan(plan, list(inputs), instances=instances, timeout=timeout)
