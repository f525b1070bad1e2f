"""vdev from Python: where every value of an ML program lives.

    import vdev
    module = vdev.parse(open("program.vdev").read(), file="program.vdev")
    plan = vdev.plan(module)                  # PlanDevices; vdev.PlanningError if none exists
    plan.device_of("x")                       # VirtualDevice.parse('cuda:0')
    lowered = vdev.lower(plan)                # explicit allocation, memory pools per (device, scope)
    outputs = vdev.run(lowered, *arrays)      # NumPy/DLPack arrays in, NumPy out (CPU kernels)
    compiled = vdev.compile(text)             # the whole pipeline at once (.plan, .lowered, .diagnostics)

The lattice: ``VirtualDevice(device_type="cuda", device_id=0)``, ``a.join(b)``, ``a.default(b)``.
Programs are also built in Python with ``vdev.Builder``; ``vdev.testing`` has Hypothesis strategies.
``vdev.Session.threaded(n)`` / ``.process(n)`` drive workers (include/vdev/controller/controller.h);
``vdev.channels`` writes, validates and runs collectives in the channel language.
``vdev.from_onnx(path)`` / ``vdev.from_fx(graph_module, example_inputs)`` import models (vdev.frontends).
Errors are vdev.Error subclasses whose text is ``FILE:LINE:COL: error: …``.
"""

from vdev._vdev import (Compiled, DRef, Executor, Global, Lowered, Machine, Module, Plan, RemoteFunc, Session, Target,
                        Type, Value, VirtualDevice, compile, default, join, lower, parse, plan, run, run_workers)
from vdev._errors import (BuildError, ChannelError, Error, LoweringError, ParseError, PlanningError, RunError,
                          SessionError)
from vdev._records import AllReduce, Conflict, Copy, PlanCost, PlanWarning, Pool
from vdev.builder import Builder
from vdev.frontends import ImportedModel, from_fx, from_onnx, from_torch
from vdev import channels

__version__ = "0.1.0"

__all__ = [
    "AllReduce", "BuildError", "Builder", "ChannelError", "Compiled", "Conflict", "Copy", "DRef", "Error", "Executor", "Global", "Lowered",
    "LoweringError", "Machine", "Module", "ParseError", "Plan", "PlanCost", "PlanWarning", "PlanningError",
    "Pool", "RemoteFunc", "RunError", "Session", "SessionError", "Target", "Type", "Value", "VirtualDevice",
    "channels", "compile", "default", "join", "lower", "parse", "plan", "run", "run_workers",
    "ImportedModel", "from_fx", "from_onnx", "from_torch",
]
