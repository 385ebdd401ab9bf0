"""Graph mode: operator calls recorded, stitched into one graph and compiled across calls.

Inside ``with pyasc.graph_mode():`` calling an operator does not run it: the call is recorded
and returns :class:`LazyArray` results that know their shape and dtype. When the block ends, or
as soon as a lazy value is read on the host (``np.asarray``, ``.numpy()``, ``float()``, ``print``,
passing it to a function outside pyasc), the calls recorded so far become one traced function:
each operator's Python function is traced in turn on the previous calls' traced results, so the
compiler fuses across the operator boundaries exactly as if the calls had been written in one
operator. Only results that something still refers to are computed and stored; a value that only
fed later calls stays in registers. The stitched operator is cached by the sequence of operators
and how their arguments connect, and its plans by the argument signatures, so a loop that records
the same calls compiles once.

Semantics worth knowing:

- Arrays passed in are read when the graph runs (at the block's end or the first read), as with
  asynchronous launches on a stream: do not modify them inside the block.
- Results you keep a name for (``x = op1(a)``) are alive when the block ends, so they are
  computed and stored; write ``op3(op2(op1(a)))``, or ``del x``, to let them stay in registers.
- Errors in an operator's function are raised by the call that records it, with the line in the
  operator, as in eager mode (each call is traced for its result types when recorded).
- Calls whose options differ (precision mode, fusion level, device) cannot share one graph: a call
  with other options runs the calls recorded before it first.
- Nested blocks join the outermost one; each thread records its own graph; a lazy value may be
  read from any thread.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import _hooks, _pyasc

__all__ = ["graph_mode", "GraphMode", "LazyArray"]

_local = threading.local()
_active_lock = threading.Lock()
_active_threads = 0
_DeviceArray = _pyasc.DeviceArray
_SCALARS = (bool, int, float)
_PKG = __file__.rsplit("/", 2)[0] + "/"  # the pyasc package
_new = object.__new__


def _line_at(code: Any, lasti: int) -> int:
    """Return the source line of the instruction at byte offset ``lasti`` of ``code``."""
    for start, end, line in code.co_lines():
        if start <= lasti < end and line is not None:
            return line
    return code.co_firstlineno


class _Node:
    """One recorded call: the operator, where its arguments come from, its call site."""

    __slots__ = ("op", "func", "spec", "tuple_out", "code", "lasti", "avals")

    def __init__(self, op: Any, func: Any, spec: tuple, tuple_out: bool, code: Any, lasti: int,
                 avals: Optional[list]) -> None:
        self.op = op
        self.func = func
        self.spec = spec  # per argument: (0, leaf index) or (1, node index, output index)
        self.tuple_out = tuple_out
        self.code = code  # the calling frame's code and instruction: the line, when asked for
        self.lasti = lasti
        self.avals = avals  # per result: (shape, dtype), traced when first asked for

    @property
    def site(self) -> Tuple[str, int]:
        """File and line of the recording call."""
        return self.code.co_filename, _line_at(self.code, self.lasti)


class LazyArray:
    """A graph-mode result: shape and dtype now, the values when the graph runs.

    Supports what :class:`pyasc.DeviceArray` supports: ``shape``, ``dtype``, ``ndim``, ``size``,
    ``itemsize``, ``nbytes`` without running anything; ``numpy()``, ``np.asarray``, ``len``,
    indexing, ``copy_to``, DLPack, ``float()``/``int()`` and printing compute the graph first.
    Passed to another operator inside the block it stays lazy.
    """

    __slots__ = ("_rec", "_ref", "_value", "_aval", "__weakref__")

    def __init__(self, rec: _Recording, ref: Tuple[int, int, int]) -> None:
        self._rec: Optional[_Recording] = rec
        self._ref = ref  # (1, call index, result index): how later calls refer to it
        self._value: Any = None
        self._aval: Optional[Tuple[Tuple[int, ...], np.dtype]] = None

    def _meta(self) -> Tuple[Tuple[int, ...], np.dtype]:
        aval = self._aval
        if aval is None:
            rec = self._rec
            if rec is not None:
                aval = rec.aval(self._ref[1], self._ref[2])
            else:
                v = self.value()
                aval = (tuple(v.shape), np.dtype(v.dtype))
            self._aval = aval
        return aval

    # Metadata: never runs the graph (the result types are traced, not computed).
    @property
    def shape(self) -> Tuple[int, ...]:
        """The result's shape."""
        return self._meta()[0]

    @property
    def dtype(self) -> np.dtype:
        """The result's NumPy dtype."""
        return self._meta()[1]

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._meta()[0])

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self._meta()[0], dtype=np.int64))

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self._meta()[1].itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the whole result."""
        return self.size * self._meta()[1].itemsize

    @property
    def is_computed(self) -> bool:
        """True once the graph that makes this value has run."""
        return self._rec is None

    # Reads: run the graph first.
    def value(self) -> Any:
        """Return the computed array (a NumPy array, or a DeviceArray when the inputs were on device)."""
        rec = self._rec
        if rec is not None:
            rec.flush()
        if isinstance(self._value, BaseException):
            raise self._value
        return self._value

    def numpy(self) -> np.ndarray:
        """Return the values as a NumPy array."""
        v = self.value()
        return v.numpy() if isinstance(v, _DeviceArray) else np.asarray(v)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __len__(self) -> int:
        shape = self._meta()[0]
        if not shape:
            raise TypeError("len() of a 0-d lazy array")
        return shape[0]

    def __getitem__(self, key: Any) -> Any:
        return self.value()[key]

    def __float__(self) -> float:
        return float(self.numpy())

    def __int__(self) -> int:
        return int(self.numpy())

    def __bool__(self) -> bool:
        return bool(self.numpy())

    def __index__(self) -> int:
        return self.numpy().__index__()

    def __repr__(self) -> str:
        return f"LazyArray({self.numpy()!r})"

    def __str__(self) -> str:
        return str(self.numpy())

    @property
    def strides(self) -> Tuple[int, ...]:
        """Byte strides of the computed array (computes it)."""
        return tuple(self.value().strides)

    @property
    def c_contiguous(self) -> bool:
        """Whether the computed array is C-contiguous (computes it)."""
        v = self.value()
        return bool(v.c_contiguous if isinstance(v, _DeviceArray) else v.flags.c_contiguous)

    @property
    def device(self) -> str:
        """Where the computed array lives: ``"cpu"`` for NumPy results, else the DeviceArray's device."""
        v = self.value()
        return v.device if isinstance(v, _DeviceArray) else "cpu"

    def copy_from(self, src: Any) -> None:
        """Overwrite the computed values with ``src`` (same shape; computes the graph first)."""
        v = self.value()
        if isinstance(v, _DeviceArray):
            v.copy_from(src)
        else:
            from ..errors import ShapeError

            src = np.asarray(src)
            if src.shape != v.shape:
                raise ShapeError(f"copy_from: source shape {src.shape} does not match {v.shape}")
            np.copyto(v, src, casting="same_kind")

    def copy_to(self, dst: Any) -> None:
        """Copy the values into ``dst`` (a NumPy array or DeviceArray of the same shape)."""
        v = self.value()
        if isinstance(v, _DeviceArray):
            v.copy_to(dst)
        else:
            np.copyto(dst, v)

    # Arithmetic: pyasc's elementwise ops, so inside a block it is recorded (and fused) too.
    def __add__(self, other: Any) -> Any:
        return _arith("add", self, other)

    def __radd__(self, other: Any) -> Any:
        return _arith("add", other, self)

    def __sub__(self, other: Any) -> Any:
        return _arith("subtract", self, other)

    def __rsub__(self, other: Any) -> Any:
        return _arith("subtract", other, self)

    def __mul__(self, other: Any) -> Any:
        return _arith("multiply", self, other)

    def __rmul__(self, other: Any) -> Any:
        return _arith("multiply", other, self)

    def __truediv__(self, other: Any) -> Any:
        return _arith("divide", self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _arith("divide", other, self)

    def __pow__(self, other: Any) -> Any:
        return _arith("pow", self, other)

    def __rpow__(self, other: Any) -> Any:
        return _arith("pow", other, self)

    def __matmul__(self, other: Any) -> Any:
        return _arith("matmul", self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return _arith("matmul", other, self)

    def __neg__(self) -> Any:
        from .. import ops

        return ops.negative(self)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # NumPy arrays on the left of an operator come here: arithmetic stays lazy; every other
        # ufunc (np.exp(x), reductions, out=) computes the lazy inputs and runs NumPy's own.
        name = _UFUNC_OPS.get(ufunc.__name__)
        if name is not None and method == "__call__" and not kwargs and len(inputs) == 2:
            return _arith(name, *inputs)
        inputs = tuple(x.numpy() if type(x) is LazyArray else x for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(x.numpy() if type(x) is LazyArray else x for x in out)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.numpy().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self.numpy().__dlpack_device__()


_pyasc._register_lazy_type(LazyArray)

_UFUNC_OPS = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
              "true_divide": "divide", "power": "pow", "matmul": "matmul"}
_OPERANDS = (np.ndarray, np.generic, bool, int, float)


def _arith(name: str, a: Any, b: Any) -> Any:
    """``pyasc.<name>(a, b)``: recorded inside a graph-mode block, run (on computed values) outside."""
    for x in (a, b):
        if not (type(x) is LazyArray or isinstance(x, _OPERANDS) or isinstance(x, _DeviceArray)):
            return NotImplemented
    from .. import ops

    return getattr(ops, name)(a, b)


def _options_key(op: Any) -> tuple:
    opts = op.options
    return tuple(sorted((k, repr(v)) for k, v in opts.items() if k != "kernel_name"))


class _Recording:
    """The calls recorded since the last run of one thread's graph."""

    __slots__ = ("mode", "opts", "first_op", "calls", "_nodes", "leaves", "leaf_ids", "outs", "lock", "done")

    def __init__(self, mode: GraphMode, opts: tuple, first: Any) -> None:
        self.mode = mode
        self.opts = opts
        self.first_op = first
        self.calls: List[tuple] = []  # per call: the arguments of its _Node, made when first asked for
        self._nodes: List[_Node] = []
        self.leaves: List[Any] = []
        self.leaf_ids: Dict[int, Tuple[int, int]] = {}  # id of a leaf -> its (0, index) reference
        self.outs: List[Any] = []  # per node: a weak reference to its LazyArray, or a tuple of them
        self.lock = threading.Lock()
        self.done = False

    @property
    def nodes(self) -> List[_Node]:
        """The recorded calls as nodes (recording stores plain tuples: a node costs more to make)."""
        made = self._nodes
        if len(made) < len(self.calls):
            made.extend(_Node(*c) for c in self.calls[len(made):])
        return made

    def aval(self, n: int, k: int) -> Tuple[Tuple[int, ...], np.dtype]:
        """Shape and dtype of result ``k`` of call ``n`` (traced, not run)."""
        self.compute_avals(n + 1)
        return self.nodes[n].avals[k]

    def compute_avals(self, upto: Optional[int] = None) -> None:
        """Trace the result types of the first ``upto`` calls (all by default) where not known."""
        nodes = self.nodes
        for i in range(len(nodes) if upto is None else upto):
            node = nodes[i]
            if node.avals is not None:
                continue
            fake = [_fake(self.leaves[r[1]]) if r[0] == 0 else np.empty(*nodes[r[1]].avals[r[2]]) for r in node.spec]
            node.avals = _avals(node, fake)

    def flush(self) -> None:
        """Run the recorded calls, storing every result something still refers to."""
        with self.lock:
            if self.done:
                return
            self.done = True
            self.mode.recorded += len(self.calls)
            state = _state()
            if state.rec is self:
                state.rec = None
            wanted: List[Tuple[int, int, LazyArray]] = []
            for n, refs in enumerate(self.outs):
                for k, ref in enumerate(refs if type(refs) is tuple else (refs,)):
                    lazy = ref()
                    if lazy is not None:
                        wanted.append((n, k, lazy))
            try:
                if wanted:
                    values = self.mode._run(self, [(n, k) for n, k, _ in wanted])
                    for (_, _, lazy), v in zip(wanted, values):
                        lazy._value = v
            except BaseException as e:  # every waiting value re-raises the failure
                for _, _, lazy in wanted:
                    lazy._value = e
                raise
            finally:
                for _, _, lazy in wanted:
                    lazy._rec = None
                self.calls, self._nodes, self.leaves, self.outs, self.leaf_ids = [], [], [], [], {}


def _state() -> threading.local:
    s = _local
    if not hasattr(s, "depth"):
        s.depth = 0
        s.rec = None
        s.mode = None
    return s


def _companion_name(nodes: List[_Node]) -> str:
    names = [getattr(n.op, "__name__", "op") for n in nodes]
    return "graph(" + "+".join(names[:6]) + ("+..." if len(names) > 6 else "") + ")"


_companions: Dict[tuple, Tuple[tuple, Any]] = {}
_companions_lock = threading.Lock()


def stitch(nodes: List[_Node], which: Any, inputs: List[tuple], outputs: List[Tuple[int, int]], first_op: Any,
           opts: tuple) -> Tuple[Any, bool]:
    """Return ``(operator, compiled_now)``: one operator running ``nodes[i] for i in which``.

    Its parameters are ``inputs`` (``(0, leaf)`` or ``(1, node, result)`` references), its
    results the ``outputs`` ``(node, result)``; the operator is cached by this structure.
    """
    which = list(which)
    key = (opts, tuple((id(nodes[i].op), nodes[i].spec) for i in which), tuple(inputs), tuple(outputs))
    with _companions_lock:
        hit = _companions.get(key)
    if hit is not None and all(a is nodes[i].op for a, i in zip(hit[0], which)):
        return hit[1], False
    slot = {ref: p for p, ref in enumerate(inputs)}
    steps = []
    for i in which:
        n = nodes[i]
        # Per argument: ("p", parameter) or ("v", node, result) computed in this operator.
        src = [("p", slot[ref]) if ref in slot else ("v", ref[1], ref[2]) for ref in n.spec]
        steps.append((i, n.func, src, n.tuple_out, n.site))

    def stitched(*params: Any) -> Any:
        vals: Dict[int, tuple] = {}
        for i, func, src, tuple_out, site in steps:
            args = [params[s[1]] if s[0] == "p" else vals[s[1]][s[2]] for s in src]
            try:
                r = func(*args)
            except Exception as e:
                e.add_note(f"in the call recorded at {site[0]}:{site[1]} (graph mode)")
                raise
            if tuple_out != isinstance(r, (tuple, list)):
                from ..errors import TraceError

                raise TraceError(f"the call recorded at {site[0]}:{site[1]} returns a different number of results "
                                 "for these argument shapes than when first recorded")
            vals[i] = tuple(r) if tuple_out else (r,)
        return tuple(vals[n][k] for n, k in outputs)

    name = _companion_name([nodes[i] for i in which])
    stitched.__name__ = stitched.__qualname__ = name
    o = dict(first_op.options)
    o["kernel_name"] = name
    comp = _pyasc.Operator(stitched, name, o["device_type"], o["op_break_level"], o)
    with _companions_lock:
        if len(_companions) >= 512:
            _companions.pop(next(iter(_companions)))
        _companions[key] = (tuple(nodes[i].op for i in which), comp)
    return comp, True


def run_now(comp: Any, args: tuple) -> Any:
    """Call ``comp(*args)`` now, even inside a recording block (a stitched operator's own call)."""
    s = _state()
    saved, s.mode = s.mode, None
    try:
        return comp(*args)
    finally:
        s.mode = saved


class GraphMode:
    """The context manager returned by :func:`graph_mode` (reusable; one per block is typical).

    Attributes after use: ``recorded`` (calls recorded), ``runs`` (graphs run), ``compiles``
    (stitched graphs compiled); :meth:`get_compiled_op` gives the plan of the latest graph.
    """

    def __init__(self) -> None:
        self.recorded = 0
        self.runs = 0
        self.compiles = 0
        self._last: Optional[Tuple[Any, tuple]] = None

    def __enter__(self) -> GraphMode:
        global _active_threads
        s = _state()
        if s.depth == 0:
            s.mode = self
            with _active_lock:
                _active_threads += 1
                _pyasc._set_graph_recording(True)
        s.depth += 1
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> bool:
        global _active_threads
        s = _state()
        s.depth -= 1
        if s.depth > 0:
            return False
        rec, s.rec, s.mode = s.rec, None, None
        with _active_lock:
            _active_threads -= 1
            if _active_threads == 0:
                _pyasc._set_graph_recording(False)
        if rec is not None:
            try:
                rec.flush()
            except Exception as e:
                if ev is None:
                    raise
                ev.add_note(f"running the calls recorded before it also failed: {type(e).__name__}: {e}")
        return False

    def get_compiled_op(self) -> Any:
        """Return the compiled plan of the latest graph this block ran (kernels, graph IR, buffers)."""
        if self._last is None:
            from ..errors import InvalidArgumentError

            raise InvalidArgumentError("no graph has run in this graph_mode block yet")
        comp, leaves = self._last
        return comp.get_compiled_op(*leaves)

    def _companion(self, rec: _Recording, wanted: List[Tuple[int, int]]) -> Any:
        comp, fresh = stitch(rec.nodes, range(len(rec.nodes)), [(0, i) for i in range(len(rec.leaves))],
                             wanted, rec.first_op, rec.opts)
        self.compiles += fresh
        return comp

    def _run(self, rec: _Recording, wanted: List[Tuple[int, int]]) -> List[Any]:
        comp = self._companion(rec, wanted)
        leaves = tuple(rec.leaves)
        self.runs += 1
        self._last = (comp, leaves)
        return list(run_now(comp, leaves))


def graph_mode() -> GraphMode:
    """Record operator calls and run them as one fused graph (see :mod:`pyasc.graph.record`).

    Example::

        with pyasc.graph_mode():
            z = op3(op2(op1(a)))   # one kernel when the ops are fusable
        print(z)
    """
    return GraphMode()


# Per operator and argument signature: whether it returns a tuple, and its results' avals.
_META: Dict[tuple, Tuple[Any, bool, List[Tuple[Tuple[int, ...], np.dtype]]]] = {}
# Per operator: (operator, returns a tuple, result count, options key, function); the result
# count of a function does not depend on its argument shapes (checked when the graph runs).
_ARITY: Dict[int, Tuple[Any, bool, int, tuple, Any]] = {}


def _fake(x: Any) -> Any:
    """Return a stand-in with ``x``'s shape and dtype (scalars stay themselves)."""
    if isinstance(x, (np.ndarray, _DeviceArray)):
        return np.empty(x.shape, x.dtype)
    if type(x) is LazyArray:
        return np.empty(*x._meta())
    return x


def _probe(op: Any, args: Any) -> Tuple[bool, List[Tuple[Tuple[int, ...], np.dtype]]]:
    """Trace ``op`` for ``args`` (stand-ins) and return (returns a tuple, result avals)."""
    key = (id(op),) + tuple((a.dtype, a.shape) if isinstance(a, np.ndarray) else type(a) for a in args)
    meta = _META.get(key)
    if meta is None or meta[0] is not op:
        c = op.get_compiled_op(*args)
        meta = _META[key] = (op, c.returns_tuple, [(tuple(s), d) for s, d in c.outputs])
        if len(_META) > 4096:
            _META.pop(next(iter(_META)))
    return meta[1], meta[2]


def _avals(node: _Node, fake: list) -> List[Tuple[Tuple[int, ...], np.dtype]]:
    tuple_out, avals = _probe(node.op, fake)
    if tuple_out != node.tuple_out or (not tuple_out and len(avals) != 1):
        from ..errors import TraceError

        raise TraceError(f"{getattr(node.op, '__name__', 'op')} returns a different number of results for these "
                         f"argument shapes than when first recorded (at {node.site[0]}:{node.site[1]})")
    return avals


def record(op: Any, args: tuple) -> Any:
    """Record ``op(*args)`` in this thread's graph; None when the call must run now."""
    mode = getattr(_local, "mode", None)
    if mode is None:
        return None
    for a in args:
        t = type(a)
        if not (t is np.ndarray or t is LazyArray or t is _DeviceArray or t in _SCALARS):
            return None  # containers, complex values, other types: run now
    meta = _ARITY.get(id(op))
    avals = None
    if meta is None or meta[0] is not op:
        try:
            tuple_out, avals = _probe(op, [_fake(a) for a in args])
        except Exception as e:
            if isinstance(e, _pyasc.CompanionNeeded):
                return None
            raise
        meta = _ARITY[id(op)] = (op, tuple_out, len(avals), _options_key(op), op.__wrapped__)
    _, tuple_out, n_out, opts, func = meta
    s = _local
    rec = s.rec
    if rec is None or rec.done or (rec.opts is not opts and rec.opts != opts):
        if rec is not None:
            rec.flush()  # a no-op when another thread's read has run it already
        rec = s.rec = _Recording(mode, opts, op)
    spec = []
    leaf_ids = rec.leaf_ids
    for a in args:
        if type(a) is LazyArray:
            if a._rec is rec:
                spec.append(a._ref)
                continue
            a = a.value()
        ref = leaf_ids.get(id(a))  # the (0, leaf index) reference, made once per leaf
        if ref is None:
            ref = leaf_ids[id(a)] = (0, len(rec.leaves))
            rec.leaves.append(a)
        spec.append(ref)
    f = sys._getframe(1)
    code = f.f_code
    while code.co_filename.startswith(_PKG) and f.f_back is not None:
        f = f.f_back
        code = f.f_code
    calls = rec.calls
    n = len(calls)
    calls.append((op, func, tuple(spec), tuple_out, code, f.f_lasti, avals))
    if n_out == 1 and not tuple_out:
        out = _new(LazyArray)  # LazyArray(rec, (1, n, 0)) without the call of __init__
        out._rec = rec
        out._ref = (1, n, 0)
        out._value = None
        out._aval = None
        rec.outs.append(weakref.ref(out))
        return out
    outs = [LazyArray(rec, (1, n, i)) for i in range(n_out)]
    rec.outs.append(tuple(weakref.ref(o) for o in outs))
    return tuple(outs)


def resolve(args: tuple) -> Optional[tuple]:
    """``args`` with lazy values replaced by their arrays, or None when there is none."""
    if not any(type(a) is LazyArray for a in args):
        return None
    return tuple(a.value() if type(a) is LazyArray else a for a in args)


_hooks.register("graph_record", record)
_hooks.register("graph_resolve", resolve)
