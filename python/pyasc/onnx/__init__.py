"""ONNX models in pyasc: ``pyasc.onnx.load`` turns a whole network into one pyasc operator.

The graph is prepared once (shape inference, constant folding, batch normalisations folded
into their convolutions; see :mod:`pyasc.onnx._graph`), then traced node by node into one
operator: every node becomes pyasc ops (the table in :mod:`pyasc.onnx._ops`), so the compiler
fuses across nodes (a convolution's bias, ReLU and residual add run in its kernel) and the
operator's cache keeps one plan per input signature. Initializers are captured arrays of the
trace, not copied per call. ``custom_ops`` maps nodes of any domain to user operators.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _pyasc
from ..errors import InvalidArgumentError, PyAscError
from ._graph import Graph, Node, Value
from ._ops import OPS, join

__all__ = ["load", "Model", "Value", "supported_ops", "on_arrays"]


def on_arrays(fn: Any) -> Any:
    """Mark a custom operator's function to run on arrays, between the model's traced stages.

    Use it for functions that launch ``@pyasc.kernel`` kernels or otherwise need the values
    (a kernel launch cannot join a trace): the stage before the node runs, ``fn`` gets its
    inputs as arrays and returns arrays, and the next stage is traced for what it returned.
    """
    def run(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    run._pyasc_on_arrays = True  # type: ignore[attr-defined]
    run.__name__ = getattr(fn, "__name__", "on_arrays")
    run.__doc__ = getattr(fn, "__doc__", None)
    return run


def supported_ops() -> List[str]:
    """Return the ONNX operator types (default domain) pyasc runs, sorted."""
    return sorted(OPS)


def _custom_table(custom_ops: Optional[Dict[Any, Any]]) -> Dict[Tuple[str, str], Any]:
    table: Dict[Tuple[str, str], Any] = {}
    for key, op in (custom_ops or {}).items():
        if isinstance(key, str):
            table[("", key)] = op
        elif isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key):
            table[(key[0] if key[0] != "ai.onnx" else "", key[1])] = op
        else:
            raise InvalidArgumentError(f"custom_ops keys are 'OpType' or ('domain', 'OpType'), not {key!r}")
        if not callable(op):
            raise InvalidArgumentError(f"custom_ops[{key!r}] is not callable")
    return table


def _run_node(graph: Graph, n: Node, ins: List[Any]) -> List[Any]:
    f = graph.op_of(n)
    # Values computed on arrays (constants) follow IEEE rules silently, as in the trace.
    with np.errstate(all="ignore"):
        return graph.caller(n)(_call_node, graph, n, f, ins)


def _call_node(graph: Graph, n: Node, f: Any, ins: List[Any]) -> List[Any]:
    try:
        if f is OPS.get(n.op_type) and n.domain in ("", "ai.onnx"):
            outs = f(ins, dict(n.attrs, _outputs=len(n.outputs)), graph.opset)
        else:
            got = _call_custom(f, [i for i in ins if i is not None], n.attrs)
            outs = list(got) if isinstance(got, (tuple, list)) else [got]
    except PyAscError as e:
        e.add_note(f"in ONNX node {n.name!r} ({n.domain or 'ai.onnx'}::{n.op_type})")
        raise
    return outs


def _call_custom(f: Any, args: List[Any], attrs: Dict[str, Any]) -> Any:
    """Call a user's operator for a node.

    Attributes go as keyword arguments, or for a class operator as attributes of the instance
    (read by its ``compute``).
    """
    from ..core.classes import AscendOperatorBase

    if isinstance(f, AscendOperatorBase):
        for k, v in attrs.items():
            setattr(f, k, v)
        return f(*args)
    return f(*args, **attrs)


class Model:
    """An ONNX model as one pyasc operator, with onnxruntime's calling convention.

    ``model.run(output_names_or_None, {input_name: array})`` returns a list of arrays;
    ``model(*inputs)`` returns one array or a tuple. ``inputs`` and ``outputs`` describe the
    graph's values (symbolic dimensions by name).
    """

    def __init__(self, proto: Any, custom_ops: Optional[Dict[Any, Any]] = None,
                 precision_mode: Optional[str] = None, device_type: str = "cpu") -> None:
        """Prepare ``proto`` (a ``onnx.ModelProto``); its operator is built at the first call."""
        self.graph = Graph(proto, _custom_table(custom_ops))
        self._setup(precision_mode, device_type)

    def _setup(self, precision_mode: Optional[str], device_type: str) -> None:
        self.precision_mode = precision_mode
        self.device_type = device_type
        self.inputs: List[Value] = self.graph.inputs
        self.outputs: List[Value] = self.graph.outputs
        opts: Dict[str, Any] = {"kernel_name": _kernel_name(self.graph.name), "device_type": device_type}
        if precision_mode is not None:
            opts["precision_mode"] = precision_mode
        self._opts = opts
        # One operator per value of the static inputs (shapes, axes, pads fed at run time).
        self._ops: Dict[Any, Any] = {}
        self._dynamic = [v for v in self.inputs if v.name not in self.graph.static]

    def _twin(self, precision_mode: Optional[str], device_type: str) -> Model:
        """Return the same prepared graph under other options (no second load)."""
        twin = Model.__new__(Model)
        twin.graph = self.graph
        twin._setup(precision_mode, device_type)
        return twin

    def _operator(self, static: Dict[str, np.ndarray]) -> Any:
        key = tuple((k, a.dtype.str, a.shape, a.tobytes()) for k, a in sorted(static.items()))
        op = self._ops.get(key)
        if op is not None:
            return op
        graph = self.graph
        consts = dict(graph.consts, **static)
        names = [v.name for v in self._dynamic]
        outputs = [v.name for v in graph.outputs]
        if any(graph.on_host(n) for n in graph.nodes):
            op = _staged(graph, consts, names, outputs, self._opts)
        else:
            op = _stage(graph, graph.nodes, consts, names, outputs, self._opts)
        if len(self._ops) >= 64:
            self._ops.pop(next(iter(self._ops)))
        self._ops[key] = op
        return op

    def __repr__(self) -> str:
        """Name the model and its inputs and outputs."""
        return f"<pyasc.onnx.Model {self.graph.name!r}: {len(self.graph.nodes)} nodes, inputs {self.inputs}>"

    def _arrays(self, args: Sequence[Any]) -> List[Any]:
        if len(args) != len(self.inputs):
            raise InvalidArgumentError(f"the model takes {len(self.inputs)} inputs "
                                       f"({', '.join(v.name for v in self.inputs)}), {len(args)} given")
        out = []
        for v, a in zip(self.inputs, args):
            a = a if isinstance(a, _pyasc.DeviceArray) else np.asarray(a)
            if v.dtype is not None and np.dtype(a.dtype) != v.dtype:
                raise InvalidArgumentError(f"input {v.name!r} has dtype {a.dtype}; the model takes {v.dtype}")
            out.append(a)
        return out

    def _split(self, inputs: Sequence[Any]) -> Tuple[Any, List[Any]]:
        arrays = self._arrays(inputs)
        static = {v.name: np.asarray(a) for v, a in zip(self.inputs, arrays) if v.name in self.graph.static}
        dynamic = [a for v, a in zip(self.inputs, arrays) if v.name not in self.graph.static]
        return self._operator(static), dynamic

    def __call__(self, *inputs: Any) -> Any:
        """Run the model on ``inputs`` in the graph's order; one output alone, else a tuple."""
        op, args = self._split(inputs)
        outs = op(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return outs[0] if len(outs) == 1 else outs

    def run(self, output_names: Optional[Sequence[str]], feeds: Dict[str, Any]) -> List[Any]:
        """Run as ``onnxruntime.InferenceSession.run``: outputs by name (all for ``None``)."""
        missing = [v.name for v in self.inputs if v.name not in feeds]
        if missing:
            raise InvalidArgumentError(f"missing model input(s): {', '.join(missing)}")
        outs = self(*[feeds[v.name] for v in self.inputs])
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        if output_names is None:
            return outs
        names = [v.name for v in self.outputs]
        for n in output_names:
            if n not in names:
                raise InvalidArgumentError(f"the model has no output {n!r}; it has {', '.join(names)}")
        return [outs[names.index(n)] for n in output_names]

    def get_compiled_op(self, *inputs: Any) -> Any:
        """Return the compiled operator for inputs like ``inputs`` (kernels, pass reports)."""
        op, args = self._split(inputs)
        return op.get_compiled_op(*args)

    def check_accuracy(self, *inputs: Any) -> Any:
        """Compare this model's outputs with the same model in float32 (see ``pyasc.onnx._accuracy``)."""
        from ._accuracy import compare

        reference = self._twin(None, self.device_type)
        return compare(self, reference, {v.name: x for v, x in zip(self.inputs, inputs)})

    def estimate(self, *inputs: Any) -> Any:
        """Return the NPU twin's (910B) estimate of the model on inputs like ``inputs``.

        Per kernel (each one a fused group of the model's nodes) its bound, time and bytes, and
        the summary table, as an operator's ``estimate()`` gives; the model is traced for the
        twin device (``device_type="npu"``) for it.
        """
        twin = self if self.device_type == "npu" else self._twin(self.precision_mode, "npu")
        op, args = twin._split(inputs)
        if not hasattr(op, "estimate"):
            raise InvalidArgumentError("a model with data-dependent nodes runs in stages; estimate takes one stage")
        return op.estimate(*args)


def _stage(graph: Graph, nodes: List[Node], consts: Dict[str, Any], inputs: List[str], outputs: List[str],
           opts: Dict[str, Any]) -> Any:
    """Return an operator computing ``outputs`` from ``inputs`` through ``nodes`` (one trace)."""
    from ..core.decorators import operator

    def body(*args: Any) -> Any:
        env: Dict[str, Any] = dict(consts)
        env.update(zip(inputs, args))
        for n in nodes:
            outs = _run_node(graph, n, [env[i] if i else None for i in n.inputs])
            for name, o in zip(n.outputs, outs):
                if name:
                    env[name] = o
        return tuple(_traced_value(env[o], args) for o in outputs)

    body.__name__ = body.__qualname__ = opts["kernel_name"]
    # With no input the stage is constant: computed on arrays, once.
    return operator(body, **opts) if inputs else _constant_outputs(body)


def _staged(graph: Graph, consts: Dict[str, Any], inputs: List[str], outputs: List[str],
            opts: Dict[str, Any]) -> Any:
    """Return a function running the graph as traced stages split at its host nodes.

    A host node's result size depends on the data (NonMaxSuppression, NonZero, ...): the
    stage before it runs, the node runs on its arrays, and the next stage is traced for the
    shapes it produced.
    """
    from ._host import HOST_OPS

    plan: List[Any] = []
    run: List[Node] = []
    for n in graph.nodes:
        if graph.on_host(n):
            if run:
                plan.append(run)
            plan.append(n)
            run = []
        else:
            run.append(n)
    if run:
        plan.append(run)
    # What each traced stage reads from before it and hands on.
    later: List[set] = []
    needed = set(outputs)
    for step in reversed(plan):
        later.append(set(needed))
        nodes = step if isinstance(step, list) else [step]
        for n in nodes:
            needed.update(i for i in n.inputs if i)
    later.reverse()
    stages: List[Any] = []
    for step, after in zip(plan, later):
        if isinstance(step, Node):
            stages.append(step)
            continue
        made = {o for n in step for o in n.outputs if o}
        reads = sorted({i for n in step for i in n.inputs if i and i not in made and i not in consts})
        hands = sorted(made & after)
        stages.append((reads, hands, _stage(graph, step, consts, reads, hands, opts)))

    def staged(*args: Any) -> Any:
        env: Dict[str, Any] = dict(zip(inputs, args))

        def value(name: str) -> Any:
            return env[name] if name in env else consts[name]

        for st in stages:
            if isinstance(st, Node):
                ins = [np.asarray(value(i)) if i else None for i in st.inputs]
                try:
                    user = graph.op_of(st)
                    if getattr(user, "_pyasc_on_arrays", False):
                        got = user(*[i for i in ins if i is not None], **st.attrs)
                        outs = [np.asarray(o) for o in (got if isinstance(got, (tuple, list)) else (got,))]
                    else:
                        outs = HOST_OPS[st.op_type](ins, st.attrs)
                except PyAscError as e:
                    e.add_note(f"in ONNX node {st.name!r} ({st.domain or 'ai.onnx'}::{st.op_type})")
                    raise
                env.update((o, v) for o, v in zip(st.outputs, outs) if o)
            else:
                reads, hands, op = st
                got = op(*[value(r) for r in reads])
                env.update(zip(hands, got if isinstance(got, tuple) else (got,)))
        return tuple(np.asarray(value(o)) for o in outputs)

    return staged


def _constant_outputs(body: Any) -> Any:
    """Return a function returning ``body()``'s outputs, computed on arrays at the first call."""
    done: List[Any] = []

    def run() -> Any:
        if not done:
            done.append(tuple(np.asarray(o) for o in body()))
        return done[0]

    return run


def _kernel_name(name: str) -> str:
    clean = "".join(c if c.isalnum() else "_" for c in name) or "onnx_model"
    return clean if not clean[0].isdigit() else f"m_{clean}"


def _traced_value(x: Any, args: Sequence[Any]) -> Any:
    """Return output ``x`` as a value of the trace (a constant of the graph joins it).

    Without arguments (every input static) the body runs on arrays and ``x`` stays as it is.
    """
    if type(x) is _pyasc.Tensor or not args:
        return x
    return join(x, args[0])


def load(model: Union[str, Any], custom_ops: Optional[Dict[Any, Any]] = None, precision_mode: Optional[str] = None,
         device_type: str = "cpu") -> Model:
    """Load an ONNX model (a path, bytes or a ``onnx.ModelProto``) as a :class:`Model`.

    ``custom_ops`` maps ``"OpType"`` (default domain) or ``("domain", "OpType")`` to a
    ``@pyasc.operator``, class operator, ``@vectorized_operator`` or function of pyasc ops; the
    node's inputs are its positional arguments and its attributes keyword arguments. Every node
    without an operator is listed in one ``UnsupportedError``.
    """
    import onnx

    if isinstance(model, (bytes, bytearray)):
        proto = onnx.load_from_string(bytes(model))
    elif isinstance(model, onnx.ModelProto):
        proto = model
    else:
        proto = onnx.load(str(model))
    return Model(proto, custom_ops, precision_mode, device_type)
