"""An ONNX graph prepared for pyasc.

Attributes decoded, constants gathered, shapes inferred, constant subgraphs folded and batch
normalisations folded into the convolutions before them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from ..errors import UnsupportedError
from ._host import HOST_OPS
from ._ops import OPS

#: Operand positions that must be known when the model is traced: shapes, axes, pads, counts,
#: scales. A graph input feeding one is a *static* input: the model is traced for its value.
SHAPE_SLOTS: Dict[str, Tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "Pad": (1, 2, 3), "Squeeze": (1,),
    "Unsqueeze": (1,), "Split": (1,), "TopK": (1,), "ConstantOfShape": (0,), "Range": (0, 1, 2),
    "Resize": (1, 2, 3), "Upsample": (1,), "ReduceSum": (1,), "ReduceMean": (1,), "ReduceMax": (1,),
    "ReduceMin": (1,), "ReduceProd": (1,), "ReduceL1": (1,), "ReduceL2": (1,), "ReduceSumSquare": (1,),
    "ReduceLogSum": (1,), "ReduceLogSumExp": (1,), "OneHot": (1,), "CumSum": (1,), "CumProd": (1,),
    "Trilu": (1,), "CenterCropPad": (1,), "Attention": (6,), "HannWindow": (0,),
    "HammingWindow": (0,), "BlackmanWindow": (0,),
}

#: Operators whose result is not a function of their inputs (never folded).
_UNFOLDABLE = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}


@dataclass
class Node:
    """One node: its operator, inputs and outputs by name ('' for an omitted one), attributes."""

    name: str
    op_type: str
    domain: str
    inputs: List[str]
    outputs: List[str]
    attrs: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Value:
    """A graph input or output: its name, dims (ints, or names for symbolic ones) and dtype."""

    name: str
    shape: Optional[Tuple[Union[int, str, None], ...]]
    dtype: Optional[np.dtype]

    def __repr__(self) -> str:
        """Show the name, shape and dtype."""
        return f"Value({self.name!r}, shape={self.shape}, dtype={self.dtype})"


def _attr(a: Any) -> Any:
    from onnx import helper, numpy_helper

    v = helper.get_attribute_value(a)
    if a.type == a.TENSOR:
        return numpy_helper.to_array(v)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [x.decode() for x in v]
    if a.type in (a.GRAPH, a.GRAPHS, a.SPARSE_TENSOR, a.TYPE_PROTO):
        raise UnsupportedError(f"attribute {a.name!r} holds a graph, sparse tensor or type (not supported)")
    return v


def _value(vi: Any) -> Value:
    from onnx.helper import tensor_dtype_to_np_dtype

    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type"):
        return Value(vi.name, None, None)
    dtype = tensor_dtype_to_np_dtype(t.elem_type) if t.elem_type else None
    shape = None
    if t.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim)
    return Value(vi.name, shape, dtype)


def _caller(model: str, index: int, n: Node) -> Any:
    """Return a function calling its first argument from a frame that names node ``n``.

    The frame's file is ``<model>.onnx:<node name>(<op type>)`` and its line ``index + 1`` (no
    spaces: profiles list source lines separated by spaces).
    """
    name = "".join(c if not c.isspace() else "_" for c in n.name)
    filename = f"{model}.onnx:{name}({n.domain + '::' if n.domain else ''}{n.op_type})"
    ns: Dict[str, Any] = {}
    exec(compile("\n" * index + "call = lambda f, *args: f(*args)\n", filename, "exec"), ns)  # noqa: S102
    return ns["call"]


class Graph:
    """The prepared graph of a model."""

    def __init__(self, model: Any, custom: Dict[Tuple[str, str], Any]) -> None:
        """Decode ``model`` (a ModelProto), fold what can be folded, and check every node has an op."""
        import onnx
        from onnx import numpy_helper

        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 (inference is a help, not a requirement)
            pass
        g = model.graph
        self.name = g.name or "onnx_model"
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        self.consts: Dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        self.inputs = [_value(v) for v in g.input if v.name not in self.consts]
        self.outputs = [_value(v) for v in g.output]
        self.shapes: Dict[str, Tuple[int, ...]] = {}
        for vi in list(g.value_info) + list(g.input) + list(g.output):
            v = _value(vi)
            if v.shape is not None and all(isinstance(d, int) and d > 0 for d in v.shape):
                self.shapes[v.name] = tuple(int(d) for d in v.shape)  # type: ignore[arg-type]
        self.nodes = [Node(n.name or f"{n.op_type}_{i}", n.op_type, n.domain, list(n.input), list(n.output),
                           {a.name: _attr(a) for a in n.attribute}) for i, n in enumerate(g.node)]
        self.custom = custom
        missing = [n for n in self.nodes if self.op_of(n) is None]
        if missing:
            listed = "; ".join(f"{n.name!r} ({n.domain or 'ai.onnx'}::{n.op_type})" for n in missing)
            raise UnsupportedError(f"{len(missing)} ONNX node(s) have no pyasc operator: {listed}. Map them to "
                                   "operators with custom_ops={(domain, op_type): op}")
        self._fold_batch_norms()
        self._fold_constants()
        self.static = self._static_inputs()
        self._callers = {id(n): _caller(self.name, i, n) for i, n in enumerate(self.nodes)}

    def caller(self, n: Node) -> Any:
        """Return ``n``'s call frame maker.

        ``caller(n)(f, *args)`` is ``f(*args)`` from a frame whose file names the node, so
        errors, kernel source lines and profiles name it.
        """
        return self._callers.get(id(n)) or (lambda f, *args: f(*args))

    def _static_inputs(self) -> List[str]:
        """Return the graph inputs whose values decide a shape slot.

        Directly or through other nodes' values; a Shape or Size node reads only its input's
        static shape, so the walk stops there.
        """
        producer = {o: n for n in self.nodes for o in n.outputs if o}
        todo = [n.inputs[i] for n in self.nodes for i in SHAPE_SLOTS.get(n.op_type, ()) if i < len(n.inputs)]
        seen = set()
        while todo:
            name = todo.pop()
            if not name or name in seen:
                continue
            seen.add(name)
            p = producer.get(name)
            if p is not None and p.op_type not in ("Shape", "Size"):
                todo.extend(p.inputs)
        return [v.name for v in self.inputs if v.name in seen]

    def op_of(self, n: Node) -> Any:
        """Return the user's operator for ``n`` (custom_ops), else the built-in one, else None."""
        user = self.custom.get((n.domain, n.op_type))
        if user is None and n.domain in ("", "ai.onnx"):
            user = self.custom.get(("", n.op_type))
        if user is not None:
            return user
        if n.domain in ("", "ai.onnx"):
            return OPS.get(n.op_type) or HOST_OPS.get(n.op_type)
        return None

    def on_host(self, n: Node) -> bool:
        """Return whether ``n`` runs on arrays between traced stages.

        A built-in node whose result size depends on the data, or a custom one marked with
        :func:`pyasc.onnx.on_arrays` (a function launching kernels, say).
        """
        f = self.op_of(n)
        if getattr(f, "_pyasc_on_arrays", False):
            return True
        return n.domain in ("", "ai.onnx") and f is HOST_OPS.get(n.op_type)

    def _users(self) -> Dict[str, List[Node]]:
        users: Dict[str, List[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                users.setdefault(i, []).append(n)
        return users

    def _fold_batch_norms(self) -> None:
        """Fold ``BatchNormalization(Conv(x, W, b))`` into one convolution when its operands are constants."""
        users = self._users()
        outputs = {v.name for v in self.outputs}
        drop = set()
        for conv in self.nodes:
            if conv.op_type != "Conv" or conv.domain not in ("", "ai.onnx") or self.custom.get(("", "Conv")):
                continue
            y = conv.outputs[0]
            after = users.get(y, [])
            if len(after) != 1 or y in outputs:
                continue
            bn = after[0]
            if bn.op_type != "BatchNormalization" or len(bn.outputs) > 1 and any(bn.outputs[1:]):
                continue
            params = bn.inputs[1:5]
            weights = conv.inputs[1:3]
            if not all(p in self.consts for p in params) or not all(w in self.consts for w in weights if w):
                continue
            scale, bias, mean, var = (self.consts[p].astype(np.float64) for p in params)
            if np.any(var + bn.attrs.get("epsilon", 1e-5) <= 0):
                continue  # left to the node, which computes what ONNX says (NaN)
            w = self.consts[conv.inputs[1]]
            b = self.consts[conv.inputs[2]].astype(np.float64) if len(conv.inputs) > 2 and conv.inputs[2] else 0.0
            k = scale / np.sqrt(var + bn.attrs.get("epsilon", 1e-5))
            wname, bname = f"{conv.name}::folded_w", f"{conv.name}::folded_b"
            self.consts[wname] = (w * k.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
            self.consts[bname] = ((b - mean) * k + bias).astype(w.dtype)
            conv.inputs = [conv.inputs[0], wname, bname]
            conv.outputs = [bn.outputs[0]]
            drop.add(id(bn))
        self.nodes = [n for n in self.nodes if id(n) not in drop]

    def _fold_constants(self) -> None:
        """Compute the nodes whose inputs are all constants (or whose input shapes are static)."""
        kept = []
        for n in self.nodes:
            f = self.op_of(n)
            if n.op_type == "Shape" and n.inputs[0] in self.shapes and f is OPS.get("Shape"):
                shape = np.array(self.shapes[n.inputs[0]], np.int64)
                self.consts[n.outputs[0]] = shape[n.attrs.get("start", 0):n.attrs.get("end")]
                continue
            if n.op_type == "Size" and n.inputs[0] in self.shapes and f is OPS.get("Size"):
                self.consts[n.outputs[0]] = np.array(int(np.prod(self.shapes[n.inputs[0]])), np.int64)
                continue
            ready = all(i == "" or i in self.consts for i in n.inputs)
            if ready and n.op_type not in _UNFOLDABLE and f is OPS.get(n.op_type) and n.domain in ("", "ai.onnx"):
                try:
                    ins = [self.consts[i] if i else None for i in n.inputs]
                    with np.errstate(all="ignore"):
                        outs = f(ins, dict(n.attrs, _outputs=len(n.outputs)), self.opset)
                except Exception:  # noqa: BLE001 (left for the trace, which reports the node)
                    kept.append(n)
                    continue
                for name, o in zip(n.outputs, outs):
                    if name:
                        self.consts[name] = np.asarray(o)
                continue
            kept.append(n)
        self.nodes = kept
