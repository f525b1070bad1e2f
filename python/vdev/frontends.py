"""Models from other frameworks: ONNX files and PyTorch graphs.

    model = vdev.from_onnx("model.onnx", place={"/wte/Gather_output_0": "cpu"})
    model.text                      # the program, as `vdev import` writes program.vdev
    model.inputs                    # @main's graph-input parameters, in order
    model.constants                 # {name: ndarray}: initializers and materialised constants
    (logits,) = model.run(ids)      # plan, lower and run on the CPU kernels (or backend="cuda")

    model = vdev.from_fx(torch.fx.symbolic_trace(module), (example,))

``from_fx`` exports the graph module with ``torch.onnx.export`` and imports the result, so PyTorch
graphs and ONNX files share one op mapping (docs/frontends.md); ``from_torch`` does the same for any
``nn.Module``. PyTorch (python3-torch) is needed only by those two.
"""
import os
import tempfile
from typing import Dict, List, Mapping, Optional, Sequence

import numpy as np

from vdev._errors import Error


class ImportedModel:
    """An imported model: the program text, its module, and the constants it reads."""

    def __init__(self, text: str, inputs: List[str], constants: Dict[str, np.ndarray], file: str):
        from vdev import parse
        self.text = text
        self.inputs = inputs
        self.constants = constants
        self.module = parse(text, file=file)

    def run(self, *inputs: np.ndarray, backend: str = "host") -> List[np.ndarray]:
        """Plans, lowers and runs @main on the graph inputs (the constants are passed for you)."""
        from vdev import compile as compile_program, run
        if len(inputs) != len(self.inputs):
            raise Error(f"the model takes {len(self.inputs)} input(s) ({', '.join(self.inputs)}), got {len(inputs)}")
        lowered = compile_program(self.text).lowered
        return list(run(lowered, *inputs, *self.constants.values(), backend=backend))

    def write(self, directory: str) -> None:
        """DIR/program.vdev and DIR/NAME.npy per constant, as `vdev import` writes them."""
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "program.vdev"), "w") as f:
            f.write(self.text)
        for name, value in self.constants.items():
            np.save(os.path.join(directory, name + ".npy"), value)


def from_onnx(path: str, place: Optional[Mapping[str, str]] = None) -> ImportedModel:
    """Imports an ONNX file; `place` maps ONNX value names to devices (an on_device annotation each)."""
    try:
        from vdev import _onnx
    except ImportError as e:  # built without libonnx-dev
        raise Error("this vdev was built without the ONNX frontend (install libonnx-dev and rebuild)") from e
    text, inputs, constants = _onnx.import_onnx(os.fspath(path), dict(place or {}))
    return ImportedModel(text, list(inputs), dict(constants), os.fspath(path))


def from_torch(module, example_inputs: Sequence, place: Optional[Mapping[str, str]] = None,
               opset: int = 17) -> ImportedModel:
    """Exports an nn.Module with torch.onnx.export (static shapes of `example_inputs`) and imports it."""
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(module, tuple(example_inputs), path, opset_version=opset, do_constant_folding=True)
        return from_onnx(path, place)


def from_fx(graph_module, example_inputs: Sequence, place: Optional[Mapping[str, str]] = None,
            opset: int = 17) -> ImportedModel:
    """Imports a torch.fx GraphModule traced for `example_inputs` (through ONNX: one op mapping)."""
    import torch.fx
    if not isinstance(graph_module, torch.fx.GraphModule):
        raise Error(f"from_fx expects a torch.fx.GraphModule, not {type(graph_module).__name__}")
    return from_torch(graph_module, example_inputs, place, opset)
