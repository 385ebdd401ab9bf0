"""ONNX operators as pyasc ops: one function per operator type.

Each function takes the node's inputs (NumPy arrays for constants, traced tensors inside the
model's operator; ``None`` for an omitted optional input), its attributes as a dict and the
model's opset for the default domain, and returns the node's outputs as a list. The bodies use
NumPy functions and pyasc's NN ops, which work on both: so the same table folds constant
subgraphs at load time (on arrays) and builds the model's trace (on traced tensors), where
NumPy calls dispatch to pyasc and fuse.
"""

# Each module registers its operators in OPS when imported.
from . import (  # noqa: F401
    attention,
    convolution,
    creation,
    elementwise,
    indexing,
    losses,
    movement,
    normalization,
    pooling,
    quantization,
    recurrent,
    reductions,
    resize,
)
from ._base import OPS, Op, ints, join, op, traced

__all__ = ["OPS", "Op", "ints", "join", "op", "traced"]
