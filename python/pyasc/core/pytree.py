"""Nested arguments and results (pytrees, as in JAX).

An operator takes and returns nested tuples, lists and dicts, NamedTuples and dataclasses of
arrays and scalars; ``None`` is an empty node. The structure (container types, dict keys,
lengths) is part of the signature: each structure gets a companion operator over the flat
leaves, so a call with a new structure compiles a new plan and a call with a known one hits
its cache. Results come back in the structure the function returned. Plain array arguments
and results never come here: they keep the operator's cached fast path.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import _hooks, _pyasc

__all__ = ["tree_flatten", "tree_unflatten", "tree_leaves", "TreeDef"]

#: A structure: ``None`` for a leaf, else ``(kind, type, keys, children)``.
TreeDef = Optional[Tuple[Any, ...]]

_LEAF: TreeDef = None
_MISSING = object()


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _node(x: Any) -> Optional[Tuple[str, Any, tuple, list]]:
    """Return ``(kind, type, keys, children)`` for a container, None for a leaf."""
    t = type(x)
    if t is tuple:
        return "tuple", tuple, (), list(x)
    if t is list:
        return "list", list, (), list(x)
    if x is None:
        return "none", None, (), []
    if isinstance(x, dict):
        try:
            keys = tuple(sorted(x))
        except TypeError:
            keys = tuple(x)
        return "dict", t, keys, [x[k] for k in keys]
    if _is_namedtuple(x):
        return "namedtuple", t, tuple(t._fields), list(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        names = tuple(f.name for f in dataclasses.fields(x) if f.init)
        return "dataclass", t, names, [getattr(x, n) for n in names]
    if isinstance(x, tuple):  # another tuple subclass
        return "tuple", t, (), list(x)
    if isinstance(x, list):
        return "list", t, (), list(x)
    return None


def tree_flatten(tree: Any) -> Tuple[List[Any], TreeDef]:
    """Return the leaves of ``tree`` (depth first, dict keys sorted) and its structure."""
    leaves: List[Any] = []

    def walk(x: Any) -> TreeDef:
        n = _node(x)
        if n is None:
            leaves.append(x)
            return _LEAF
        kind, t, keys, children = n
        return (kind, t, keys, tuple(walk(c) for c in children))

    return leaves, walk(tree)


def tree_leaves(tree: Any) -> List[Any]:
    """Return the leaves of ``tree``."""
    return tree_flatten(tree)[0]


def tree_unflatten(treedef: TreeDef, leaves: Any) -> Any:
    """Build the structure ``treedef`` with ``leaves`` in order."""
    it = iter(leaves)

    def build(d: TreeDef) -> Any:
        if d is None:
            return next(it)
        kind, t, keys, children = d
        items = [build(c) for c in children]
        if kind == "none":
            return None
        if kind == "tuple":
            return tuple(items) if t is tuple else t(items)
        if kind == "list":
            return items if t is list else t(items)
        if kind == "namedtuple":
            return t(*items)
        if kind == "dataclass":
            return t(**dict(zip(keys, items)))
        if t is dict:
            return dict(zip(keys, items))
        out = t()
        out.update(zip(keys, items))
        return out

    return build(treedef)


def has_structure(args: tuple) -> bool:
    """Return True when an argument is a container (the call then runs here).

    ``None`` is an empty node inside containers; a bare ``None`` argument stays an error.
    """
    return any(a is not None and _node(a) is not None for a in args)


def needs_tree(result: Any) -> bool:
    """Return True when a traced function's result is more than a leaf or a tuple of leaves."""
    if type(result) is tuple:
        return any(_node(r) is not None for r in result)
    return _node(result) is not None


def _leaf_key(x: Any) -> Any:
    if isinstance(x, (np.ndarray, np.generic)):
        return (x.dtype.str, x.shape)
    shape = getattr(x, "shape", None)
    return (type(x), str(getattr(x, "dtype", "")), tuple(shape) if shape is not None else None)


class _Runner:
    """The companion operators of one operator, one per argument structure."""

    def __init__(self, op: Any) -> None:
        self.op = op
        self.ops: Dict[TreeDef, Any] = {}
        # Per argument structure and leaf types: the structure of the results.
        self.out_defs: Dict[tuple, TreeDef] = {}
        # Per argument structure: the latest structure of the results (a plan re-specialised
        # for new extents is not traced again).
        self.latest: Dict[TreeDef, TreeDef] = {}
        self.pending: Any = _MISSING

    def _make(self, flat: Callable[..., Any]) -> Any:
        op = self.op
        if isinstance(op, _pyasc.Operator):
            opts = dict(op.options)
            return _pyasc.Operator(flat, op.__name__, opts["device_type"], opts["op_break_level"], opts)
        return op._with_function(flat)

    def companion(self, in_def: TreeDef) -> Any:
        comp = self.ops.get(in_def)
        if comp is not None:
            return comp
        func = self.op.__wrapped__
        runner = self

        def flat(*leaves: Any) -> Any:
            args = tree_unflatten(in_def, leaves)
            result = func(*args)
            out, out_def = tree_flatten(result)
            runner.pending = out_def
            return tuple(out)

        flat.__name__ = flat.__qualname__ = getattr(self.op, "__name__", "operator")
        comp = self.ops[in_def] = self._make(flat)
        return comp

    def call(self, method: str, args: tuple) -> Any:
        leaves, in_def = tree_flatten(tuple(args))
        comp = self.companion(in_def)
        key = (in_def, tuple(_leaf_key(x) for x in leaves))
        self.pending = _MISSING
        if method != "__call__":
            # A plan compiled here is traced here: keep its result structure for the calls.
            got = getattr(comp, method)(*leaves)
            if self.pending is not _MISSING:
                self.out_defs[key] = self.latest[in_def] = self.pending
            return got
        out = comp(*leaves)
        if self.pending is not _MISSING:
            self.out_defs[key] = self.latest[in_def] = self.pending
        out_def = self.out_defs.get(key, self.latest.get(in_def, _MISSING))
        if out_def is _MISSING:
            # Compiled for these leaves under other Python types (a float vs an int): trace again.
            comp.cache_clear()
            out = comp(*leaves)
            out_def = self.out_defs[key] = self.latest[in_def] = self.pending
        return tree_unflatten(out_def, out)


_RUNNERS: weakref.WeakKeyDictionary[Any, _Runner] = weakref.WeakKeyDictionary()
_PINNED: Dict[int, _Runner] = {}  # functions without weak references


def _runner(op: Any, create: bool = True) -> Optional[_Runner]:
    func = op.__wrapped__
    try:
        runner = _RUNNERS.get(func)
    except TypeError:
        runner = _PINNED.get(id(func))
    if (runner is None or runner.op is not op) and create:
        runner = _Runner(op)
        try:
            _RUNNERS[func] = runner
        except TypeError:
            _PINNED[id(func)] = runner
    return runner if runner is not None and runner.op is op else None


def call(op: Any, args: tuple) -> Any:
    """Run operator ``op`` on ``args`` holding containers (or returning them)."""
    runner = _runner(op)
    assert runner is not None
    return runner.call("__call__", args)


def compiled(op: Any, args: tuple) -> Any:
    """Return the compiled plan of ``op`` for example ``args`` holding containers."""
    runner = _runner(op)
    assert runner is not None
    return runner.call("get_compiled_op", args)


def companion_infos(op: Any) -> List[Any]:
    """Return the ``cache_info()`` of each companion operator of ``op``."""
    runner = _runner(op, create=False)
    return [] if runner is None else [c.cache_info() for c in runner.ops.values()]


def clear(op: Any) -> None:
    """Drop the compiled plans of ``op``'s companion operators."""
    runner = _runner(op, create=False)
    if runner is not None:
        for c in runner.ops.values():
            c.cache_clear()
        runner.out_defs.clear()
        runner.latest.clear()


def _returns_tree(result: Any, items: Any) -> bool:
    return not isinstance(result, _pyasc.Tensor) and needs_tree(result)


def _cache_info(op: Any) -> List[int]:
    infos = companion_infos(op)
    return [sum(i[f] for i in infos) for f in range(4)]


_hooks.register_companion("tree", order=2, result_order=0, accepts=has_structure, produces=_returns_tree, call=call,
                          compiled=compiled, cache_info=_cache_info, cache_clear=clear)
