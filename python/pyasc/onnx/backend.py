"""pyasc as an ONNX backend (``onnx.backend.base.Backend``), for ONNX's own test harness.

``onnx.backend.test.BackendTest(pyasc.onnx.backend, __name__)`` runs the official node and
model tests through :func:`prepare`, :func:`run_model`, :func:`run_node` and
:func:`supports_device`. Models run on the host CPU; ``device="CPU"`` is the one device.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np
from onnx import ModelProto, NodeProto, helper
from onnx.backend.base import Backend, BackendRep

from . import Model, load


class PyascRep(BackendRep):
    """A prepared model: ``run(inputs)`` takes the inputs in order (or a dict by name)."""

    def __init__(self, model: Model) -> None:
        """Wrap a loaded :class:`Model`."""
        self.model = model

    def run(self, inputs: Any, **kwargs: Any) -> Tuple[Any, ...]:
        """Run the model; returns its outputs in the graph's order."""
        if isinstance(inputs, dict):
            feeds = inputs
        else:
            seq = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            feeds = {v.name: x for v, x in zip(self.model.inputs, seq)}
        return tuple(np.asarray(o) for o in self.model.run(None, feeds))


class PyascBackend(Backend):
    """The backend class; the module-level functions below are its methods."""

    @classmethod
    def is_compatible(cls, model: ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        """Return whether the model can run here (any model on the CPU; unsupported nodes raise at prepare)."""
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model: ModelProto, device: str = "CPU", **kwargs: Any) -> PyascRep:
        """Check and load ``model`` for ``device``."""
        super().prepare(model, device, **kwargs)
        return PyascRep(load(model))

    @classmethod
    def run_model(cls, model: ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> Tuple[Any, ...]:
        """Prepare and run ``model`` once."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Optional[Sequence[Tuple[Any, Any]]] = None, **kwargs: Dict[str, Any]) -> Tuple[Any, ...]:
        """Run one node on ``inputs`` (a model of that node alone)."""
        arrays = [np.asarray(x) for x in inputs]
        ins = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
               for name, a in zip(node.input, arrays) if name]
        outs = [helper.make_tensor_value_info(name, 0, None) for name in node.output if name]
        graph = helper.make_graph([node], "node", ins, outs)
        model = helper.make_model(graph)
        return PyascRep(load(model)).run([a for name, a in zip(node.input, arrays) if name])

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """Return whether ``device`` is the CPU."""
        return str(device).upper() == "CPU"


is_compatible = PyascBackend.is_compatible
prepare = PyascBackend.prepare
run_model = PyascBackend.run_model
run_node = PyascBackend.run_node
supports_device = PyascBackend.supports_device
