"""Recording a stencil body as a sweep-kernel program.

The body runs once with :class:`Node` fields: every read, constant and operation becomes a
node, and the result is turned into the register program of ``pyasc-kernels``'s stencil
sweep. Only what the sweep computes exactly as NumPy does is recorded: ``+ - * /``, unary
``-``/``+``, ``abs``, ``np.sqrt``, ``np.minimum``/``np.maximum``, ``x ** 2``, with every value
in the fields' dtype (float32 or float64) and constants that NumPy's promotion keeps in that
dtype. Anything else raises :class:`Unsupported`, and the caller falls back to the general path.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import PyAscError
from ._probe import Neighborhood, Offsets, offsets_of

_BINARY = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div",
           np.minimum: "min", np.maximum: "max"}
_UNARY = {np.negative: "neg", np.absolute: "abs", np.sqrt: "sqrt", np.positive: "pos", np.square: "square"}
_FOLD = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "min": np.minimum,
         "max": np.maximum, "neg": np.negative, "abs": np.absolute, "sqrt": np.sqrt}


class Unsupported(Exception):
    """The body uses something the sweep kernel does not compute; the general path runs it."""


class Node:
    """A value of the recorded body: a read, a constant, or an operation on nodes."""

    __array_priority__ = 1000

    def __init__(self, op: str, args: Tuple[Any, ...], dtype: np.dtype):
        self.op = op
        self.args = args
        self.dtype = dtype

    # -- constants ----------------------------------------------------------------------------

    def _const(self, v: Any) -> Node:
        if isinstance(v, Node):
            return v
        if isinstance(v, np.ndarray) and v.ndim == 0:
            v = v[()]
        if isinstance(v, (bool, int, float)) and not isinstance(v, np.generic):
            value = self.dtype.type(v)
        elif isinstance(v, (np.floating, np.integer, np.bool_)) and np.result_type(self.dtype, v.dtype) == self.dtype:
            value = self.dtype.type(v)
        else:
            raise Unsupported(f"operand {v!r}")
        return Node("const", (value,), self.dtype)

    def _bin(self, name: str, a: Any, b: Any) -> Node:
        x, y = self._const(a), self._const(b)
        if x.op == "const" and y.op == "const":
            with np.errstate(all="ignore"):
                return Node("const", (self.dtype.type(_FOLD[name](x.args[0], y.args[0])),), self.dtype)
        return Node(name, (x, y), self.dtype)

    def _un(self, name: str) -> Node:
        if name == "pos":
            return self
        if name == "square":
            return self._bin("mul", self, self)
        if self.op == "const":
            with np.errstate(all="ignore"):
                return Node("const", (self.dtype.type(_FOLD[name](self.args[0])),), self.dtype)
        return Node(name, (self,), self.dtype)

    # -- Python operators ---------------------------------------------------------------------

    def __add__(self, o: Any) -> Node:
        return self._bin("add", self, o)

    def __radd__(self, o: Any) -> Node:
        return self._bin("add", o, self)

    def __sub__(self, o: Any) -> Node:
        return self._bin("sub", self, o)

    def __rsub__(self, o: Any) -> Node:
        return self._bin("sub", o, self)

    def __mul__(self, o: Any) -> Node:
        return self._bin("mul", self, o)

    def __rmul__(self, o: Any) -> Node:
        return self._bin("mul", o, self)

    def __truediv__(self, o: Any) -> Node:
        return self._bin("div", self, o)

    def __rtruediv__(self, o: Any) -> Node:
        return self._bin("div", o, self)

    def __neg__(self) -> Node:
        return self._un("neg")

    def __pos__(self) -> Node:
        return self

    def __abs__(self) -> Node:
        return self._un("abs")

    def __pow__(self, p: Any) -> Node:
        if isinstance(p, (int, np.integer)) and not isinstance(p, bool) and p == 2:
            return self._un("square")
        if isinstance(p, (int, np.integer)) and not isinstance(p, bool) and p == 1:
            return self
        raise Unsupported(f"power {p!r}")

    def __bool__(self) -> bool:
        raise Unsupported("truth value")

    def __float__(self) -> float:
        raise Unsupported("conversion to float")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__" or kwargs:
            raise Unsupported(f"{ufunc.__name__}.{method}")
        if ufunc in _BINARY and len(inputs) == 2:
            return self._bin(_BINARY[ufunc], *inputs)
        if ufunc in _UNARY and len(inputs) == 1:
            return self._const(inputs[0])._un(_UNARY[ufunc])
        raise Unsupported(ufunc.__name__)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise Unsupported(getattr(func, "__name__", "function"))

    def _unsupported(self, *args: Any) -> Any:
        raise Unsupported("operator")

    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _unsupported  # type: ignore[assignment]
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __rpow__ = __matmul__ = __rmatmul__ = _unsupported
    __and__ = __or__ = __xor__ = __invert__ = __int__ = __index__ = __len__ = __iter__ = _unsupported
    __getitem__ = _unsupported
    __hash__ = object.__hash__

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise Unsupported(f"attribute {name}")


class ExprField:
    """A field of the recording run: each read is a ``read`` node."""

    def __init__(self, index: int, dtype: np.dtype, ndim: int, seen: List[Offsets],
                 neighborhood: Optional[Neighborhood]):
        self._index = index
        self._seen = seen
        self._neighborhood = neighborhood
        self.ndim = ndim
        self.dtype = dtype

    def __getitem__(self, key: Any) -> Node:
        offs = offsets_of(key, self.ndim, self._neighborhood)
        self._seen.append(offs)
        return Node("read", (self._index, offs), self.dtype)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise Unsupported(f"field attribute {name}")


def record(fn: Callable[..., Any], args: Sequence[Any], kwargs: Dict[str, Any], fields: Sequence[int], ndim: int,
           neighborhood: Optional[Neighborhood]) -> Optional[Tuple[List[Offsets], Node]]:
    """Run the body on :class:`ExprField` fields; None when it needs the general path."""
    dtypes = {args[i].dtype for i in fields}
    if len(dtypes) != 1:
        return None
    dtype = dtypes.pop()
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        return None
    seen: List[Offsets] = []
    order = {f: k for k, f in enumerate(fields)}
    wrapped = [ExprField(order[i], dtype, ndim, seen, neighborhood) if i in order else a for i, a in enumerate(args)]
    try:
        with np.errstate(all="ignore"):
            out = fn(*wrapped, **kwargs)
    except PyAscError:
        raise
    except Exception:  # the general path runs the body again and reports its own errors
        return None
    if not isinstance(out, Node) or not seen:
        return None
    return seen, out


Operand = Tuple[int, int, Tuple[int, int, int], float]
Instr = Tuple[str, List[Operand], int]


_MAX_SUM = 8  # pyasc-kernels' MAX_SUM


def _topological(root: Node) -> List[Node]:
    """List the operation nodes under ``root``, each after its operands (reads and constants left out)."""
    order: List[Node] = []
    seen = set()
    stack: List[Tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in seen or node.op in ("read", "const"):
            continue
        if expanded:
            seen.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend((a, False) for a in node.args if isinstance(a, Node))
    return order


def _fuse_sums(root: Node) -> Node:
    """Rewrite left-to-right chains of ``+``/``-`` (and a constant scale after them) as ``sum`` nodes.

    A chain continues down the left operand while that is an addition or subtraction used once;
    the sum adds its operands in the same order, so every rounding is the one of the chain.
    """
    order = _topological(root)
    uses: Dict[int, int] = {}
    for node in order:
        for a in node.args:
            uses[id(a)] = uses.get(id(a), 0) + 1
    new: Dict[int, Node] = {}

    def mapped(a: Node) -> Node:
        return new.get(id(a), a)

    for node in order:
        if node.op in ("add", "sub"):
            terms: List[Tuple[Node, bool]] = []
            cur = node
            while True:
                terms.append((cur.args[1], cur.op == "sub"))
                left = cur.args[0]
                if left.op in ("add", "sub") and uses.get(id(left)) == 1 and len(terms) < _MAX_SUM - 1:
                    cur = left
                    continue
                terms.append((left, False))
                break
            terms.reverse()
            if len(terms) >= 3 and all(t.op != "const" for t, _ in terms):
                s = Node("sum", tuple(mapped(t) for t, _ in terms), node.dtype)
                s.extra = ([n for _, n in terms[1:]], None)
                new[id(node)] = s
                continue
        if node.op in ("mul", "div"):
            x, c = node.args
            if node.op == "mul" and x.op == "const":
                x, c = c, x
            inner = mapped(x)
            if c.op == "const" and inner.op == "sum" and inner.extra[1] is None and uses.get(id(x)) == 1:
                s = Node("sum", inner.args, node.dtype)
                s.extra = (inner.extra[0], (node.op, float(c.args[0])))
                new[id(node)] = s
                continue
        if any(id(a) in new for a in node.args):
            new[id(node)] = Node(node.op, tuple(mapped(a) for a in node.args), node.dtype)
    return mapped(root)


def compile_program(root: Node) -> Tuple[List[Instr], int]:
    """Lower the recorded result to register instructions (the last writes the output)."""
    root = _fuse_sums(root)
    order = _topological(root)
    if not order:  # the body returns one read or a constant
        order.append(Node("copy", (root,), root.dtype))
    last_use: Dict[int, int] = {}
    for k, node in enumerate(order):
        for a in node.args:
            last_use[id(a)] = k
    reg: Dict[int, int] = {}
    free: List[int] = []
    count = 0
    instrs: List[Instr] = []

    def operand(a: Node) -> Operand:
        if a.op == "read":
            offs = tuple(a.args[1]) + (0,) * (3 - len(a.args[1]))
            return (0, a.args[0], offs, 0.0)  # type: ignore[return-value]
        if a.op == "const":
            return (2, 0, (0, 0, 0), float(a.args[0]))
        return (1, reg[id(a)], (0, 0, 0), 0.0)

    for k, node in enumerate(order):
        ops = [operand(a) for a in node.args]
        name = node.op
        if name == "sum":
            neg, post = node.extra
            ops = ops[:1] + [(kind, i, d, 1.0 if n else 0.0) for (kind, i, d, _), n in zip(ops[1:], neg)]
            if post is not None:
                name = "sum*" if post[0] == "mul" else "sum/"
                ops.append((2, 0, (0, 0, 0), post[1]))
        if k == len(order) - 1:
            dest = -1
        elif free:
            dest = free.pop()
        else:
            dest, count = count, count + 1
        for a in node.args:
            if id(a) in reg and last_use.get(id(a)) == k:
                free.append(reg.pop(id(a)))
        if dest >= 0:
            reg[id(node)] = dest
        instrs.append((name, ops, dest))
    return instrs, count
