"""An ONNX model with a node no converter knows, run by pyasc with a user operator.

A small MLP block is built with ``onnx.helper``; its activation is ``GatedSilu``, an operator
of the custom domain ``com.example`` (``x * sigmoid(alpha * x) * gate``, ``alpha`` an
attribute). pyasc maps the node to a ``@pyasc.operator`` written here; the node fuses with the
matrix product before it and the residual add after it. onnxruntime cannot run the custom
node, so the check runs it on the same model with the node expanded into standard ops
(``Mul``, ``Sigmoid``).

    python examples/onnx_custom_op.py [--batch 64] [--width 256]
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, List, Optional

import numpy as np
import onnx
import pyasc
import pyasc.onnx
from onnx import TensorProto, helper, numpy_helper


@pyasc.operator
def gated_silu(x: Any, gate: Any, alpha: float = 1.0) -> Any:
    """``x * sigmoid(alpha * x) * gate``: the custom node's computation."""
    return x / (1 + np.exp(-alpha * x)) * gate


def build(width: int, alpha: float, expanded: bool, seed: int = 0) -> onnx.ModelProto:
    """Build ``x + GatedSilu(x @ W1, x @ W2) @ W3``; standard ops in place of the node when ``expanded``."""
    rng = np.random.default_rng(seed)
    weights = {f"w{i}": (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32) for i in (1, 2, 3)}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("MatMul", ["x", "w2"], ["g"])]
    if expanded:
        nodes += [helper.make_node("Constant", [], ["alpha"], value=numpy_helper.from_array(np.float32(alpha))),
                  helper.make_node("Mul", ["h", "alpha"], ["ah"]), helper.make_node("Sigmoid", ["ah"], ["sig"]),
                  helper.make_node("Mul", ["h", "sig"], ["silu"]), helper.make_node("Mul", ["silu", "g"], ["a"])]
    else:
        nodes.append(helper.make_node("GatedSilu", ["h", "g"], ["a"], domain="com.example", alpha=alpha))
    nodes += [helper.make_node("MatMul", ["a", "w3"], ["o"]), helper.make_node("Add", ["x", "o"], ["y"])]
    graph = helper.make_graph(nodes, "gated_block",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])],
                              initializer=[numpy_helper.from_array(w, k) for k, w in weights.items()])
    opsets = [helper.make_opsetid("", 17)] + ([] if expanded else [helper.make_opsetid("com.example", 1)])
    return helper.make_model(graph, opset_imports=opsets)


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    """Run the custom-op model with pyasc and the expanded one with onnxruntime; print and return the comparison."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--alpha", type=float, default=1.702)
    args = p.parse_args(argv)
    model = pyasc.onnx.load(build(args.width, args.alpha, expanded=False),
                            custom_ops={("com.example", "GatedSilu"): gated_silu})
    x = np.random.default_rng(1).standard_normal((args.batch, args.width)).astype(np.float32)
    (y,) = model.run(None, {"x": x})
    kernels = len(model.get_compiled_op(x).kernels())
    result: Dict[str, Any] = {"shape": y.shape, "kernels": kernels}
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime is not installed: pyasc's result alone", y.shape)
        return result
    expanded = build(args.width, args.alpha, expanded=True).SerializeToString()
    (want,) = ort.InferenceSession(expanded, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    result["max_abs_err"] = float(np.abs(y - want).max())
    result["scale"] = float(np.abs(want).max())
    print(f"GatedSilu as a pyasc operator: output {y.shape}, {kernels} kernels; "
          f"max |pyasc - onnxruntime (node expanded)| = {result['max_abs_err']:.2e} (|y| up to {result['scale']:.2f})")
    return result


if __name__ == "__main__":
    main()
