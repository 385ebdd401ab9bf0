"""Updates inside operators, as functional updates of the graph.

``y[idx] = v``, ``y += v``, ``np.add.at``, ufuncs with ``out=`` and JAX's ``x.at[idx].set(v)``.
An update of an array made in the function makes the Python tracer object refer to the
updated value (NumPy's semantics: ``z = y; y[0] = 1`` changes ``z`` too), while values
computed from ``y`` before the update keep the old value. Views taken of ``y`` (slices,
transposes, reshapes NumPy would not copy) follow it as in NumPy: writing through a view
writes ``y``, and a view read after a write to ``y`` sees the write. Indices: ints, slices
with steps, negative indices, ``...``, ``None``, integer arrays (NumPy's rule for repeated
indices: the last write wins, ``y[idx] += v`` adds once per distinct index) and boolean
masks (``y[mask] = v`` is ``where(mask, v, y)``, and ``y[mask] += v`` is
``where(mask, y + v, y)``: the read that starts an augmented assignment is recognised from the
caller's bytecode; any other read of ``y[mask]`` raises). Values broadcast and are cast as
NumPy's setitem casts them (unsafely); augmented assignment enforces NumPy's ``same_kind`` rule.
Writes run the ``scatter`` library kernel (a whole-array write is just the new value); element
positions are computed when tracing from views of a virtual array, never from an ``arange``.

Arguments are never modified: writing into an argument or a view of one raises
:class:`pyasc.TraceError` naming the line. ``x.at[idx].set(v)`` (and ``.add .multiply .min
.max .get``) returns a new array and works on arguments too; ``.add`` and ``np.add.at``
accumulate every repeated index.
"""

from __future__ import annotations

import builtins
import dis
import operator as _op
import sys
import threading
import weakref
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import _hooks, _pyasc
from ..errors import DTypeError, ShapeError, TraceError, UnsupportedError, at_user_line

__all__ = ["At", "setitem", "inplace", "copy"]

_local = threading.local()


class _View:
    """A view of a root array: the view ops that made it, applied to the root."""

    __slots__ = ("ref", "root", "chain")

    def __init__(self, ref: Any, root: Any, chain: List[Tuple[str, Any]]) -> None:
        self.ref, self.root, self.chain = ref, root, chain


class _State:
    """What one trace knows about its arrays: which are arguments, which are views."""

    def __init__(self, args: tuple) -> None:
        self.args: Dict[int, Any] = {id(t): t for t in args if isinstance(t, _pyasc.Tensor)}
        self.views: Dict[int, _View] = {}
        self.by_root: Dict[int, set] = {}
        self.quiet = 0


def _stack() -> List[_State]:
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def begin(args: tuple) -> None:
    """Start tracking the arrays of a trace whose arguments are ``args``."""
    _stack().append(_State(args))


def end() -> None:
    """Stop tracking the innermost trace."""
    s = _stack()
    if s:
        s.pop()


def _state() -> _State:
    s = _stack()
    if not s:
        s.append(_State(()))
    return s[-1]


def note_view(x: Any, v: Any, kind: str, params: Any) -> None:
    """Record that tracer ``v`` is the view ``kind(params)`` of tracer ``x``."""
    st = _state()
    if st.quiet or v is x or not isinstance(x, _pyasc.Tensor):
        return
    parent = st.views.get(id(x))
    if parent is not None and parent.ref() is x:
        root, chain = parent.root, parent.chain + [(kind, params)]
    else:
        root, chain = x, [(kind, params)]
    key = id(v)

    def gone(_: Any, key: int = key, rkey: int = id(root)) -> None:
        st.views.pop(key, None)
        st.by_root.get(rkey, set()).discard(key)

    st.views[key] = _View(weakref.ref(v, gone), root, chain)
    st.by_root.setdefault(id(root), set()).add(key)


# -- positions: which element of the root each element of a view is --------------------


_ANCHOR = np.zeros(1, dtype=np.int8)
_ANCHOR_ADDR = _ANCHOR.__array_interface__["data"][0]


def _virtual(shape: tuple) -> np.ndarray:
    """Return an int8 array of ``shape`` whose byte offsets are its C-order flat positions.

    Its memory is never read: only views are taken of it (basic indexing, transposes, reshapes
    NumPy does without copying, broadcasts) and their offsets and strides are read back by
    :func:`_materialize`, so positions cost the size of a selection, not of the array.
    """
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(int(d), 1)
    return np.lib.stride_tricks.as_strided(_ANCHOR, shape=tuple(shape), strides=tuple(reversed(strides)))


def _materialize(v: np.ndarray) -> np.ndarray:
    """Return the flat positions (int64) a view of a :func:`_virtual` array stands for."""
    pos = np.full(v.shape, v.__array_interface__["data"][0] - _ANCHOR_ADDR, dtype=np.int64)
    for d, (n, step) in enumerate(zip(v.shape, v.strides)):
        if n > 1 and step:
            pos += (np.arange(n, dtype=np.int64) * step).reshape([1] * d + [n] + [1] * (v.ndim - d - 1))
    return pos


def _is_basic(key: Any) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, slice)
               or (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))) for k in items)


def _select(v: np.ndarray, key: Any) -> np.ndarray:
    """Return the flat positions ``key`` selects in the virtual view ``v``."""
    try:
        if _is_basic(key):
            items = key if isinstance(key, tuple) else (key,)
            # With `...` basic indexing always gives a view, never a scalar read from memory.
            return _materialize(v[items if Ellipsis in items else items + (Ellipsis,)])
        return np.asarray(_materialize(v)[key])
    except IndexError as e:
        raise _err(ShapeError, str(e)) from None


def _reshape_view(v: np.ndarray, shape: Any) -> Optional[np.ndarray]:
    """Return ``v`` reshaped as a view, or None where NumPy would copy."""
    try:
        return np.reshape(v, shape, copy=False)
    except TypeError:  # NumPy 2.0: no copy= keyword
        w = v.view()
        try:
            w.shape = shape
        except AttributeError:
            return None
        return w
    except ValueError:
        return None


def _apply(v: np.ndarray, kind: str, params: Any) -> Optional[np.ndarray]:
    if kind == "transpose":
        return np.transpose(v, params)
    if kind == "reshape":
        return _reshape_view(v, params)
    if kind == "broadcast_to":
        return np.broadcast_to(v, params)
    sl = []
    for start, step, length in params:
        stop = start + step * length
        sl.append(slice(start, stop if stop >= 0 else None, step))
    return v[tuple(sl)]


def _resolve(st: _State, t: Any) -> Tuple[Any, Optional[np.ndarray]]:
    """Return the root array of ``t`` and ``t`` as a virtual view of it (None: ``t`` is a root)."""
    v = st.views.get(id(t))
    if v is None or v.ref() is not t:
        return t, None
    pos: Optional[np.ndarray] = _virtual(tuple(v.root.shape))
    for kind, params in v.chain:
        pos = _apply(pos, kind, params)
        if pos is None:
            # NumPy would have copied here (a reshape of a non-contiguous view): t is its own array.
            st.views.pop(id(t), None)
            return t, None
    return v.root, pos


def _is_argument(st: _State, t: Any) -> bool:
    return st.args.get(id(t)) is t


# -- building blocks --------------------------------------------------------------------


def _quiet_view(x: Any, kind: str, params: Any) -> Any:
    st = _state()
    st.quiet += 1
    try:
        return _pyasc.apply_view(x, kind, params)
    finally:
        st.quiet -= 1


def _const(like: Any, a: Any) -> Any:
    a = np.asarray(a)
    t = _pyasc.apply_constant_array(like, np.ascontiguousarray(a))
    return _quiet_view(t, "reshape", []) if a.ndim == 0 else t


def _flat(x: Any) -> Any:
    return x if x.ndim == 1 else _quiet_view(x, "reshape", [x.size])


def _err(cls: type, message: str) -> Exception:
    return at_user_line(cls(message))


def _arg_error(what: str) -> Exception:
    return _err(TraceError, f"{what} writes into an operator argument (or a view of one); arguments are never "
                            "modified: write into a copy (y = x.copy(); y[i] = v) or use x.at[i].set(v), which "
                            "returns a new array")


def _value(like: Any, value: Any, dtype: np.dtype) -> Any:
    """``value`` as a tracer of ``dtype`` (NumPy's unsafe setitem cast)."""
    if getattr(value, "_pyasc_complex", False) or isinstance(value, complex) or (
            isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind == "c"):
        raise _err(UnsupportedError, "writing complex values into a real array is not supported inside operators")
    if isinstance(value, _pyasc.Tensor):
        return value if value.dtype == dtype and not value.is_weak else _pyasc.apply_cast(value, dtype)
    if isinstance(value, (bool, int, float, np.generic)):
        try:
            arr = np.array(value, dtype=dtype)
        except OverflowError as e:
            from ..errors import IntegerOverflowError

            raise _err(IntegerOverflowError, str(e)) from None
        return _const(like, arr)
    arr = np.asarray(value)
    if arr.dtype == object:
        raise _err(DTypeError, f"cannot write a {type(value).__name__} into an array")
    with np.errstate(all="ignore"):
        return _const(like, arr.astype(dtype))


def _broadcast(like: Any, v: Any, shape: tuple) -> Any:
    """``v`` broadcast to ``shape`` as setitem broadcasts (extra leading 1s are dropped)."""
    vs = tuple(v.shape)
    while len(vs) > len(shape) and vs[0] == 1:
        vs = vs[1:]
    try:
        np.broadcast_shapes(vs, shape)
        if np.broadcast_shapes(vs, shape) != tuple(shape):
            raise ValueError
    except ValueError:
        raise _err(ShapeError, f"could not broadcast input array from shape {tuple(v.shape)} into shape "
                               f"{tuple(shape)}") from None
    if vs != tuple(v.shape):
        v = _quiet_view(v, "reshape", list(vs))
    if vs == tuple(shape):
        return v
    return _quiet_view(v, "broadcast_to", list(shape))


# -- indices ------------------------------------------------------------------------------


def _has_traced(key: Any) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, _pyasc.Tensor) for k in items)


def _traced_mask(t: Any, key: Any) -> Optional[Any]:
    """Return the traced boolean mask ``key`` broadcast to ``t``'s shape (None for other keys)."""
    k = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    if not (isinstance(k, _pyasc.Tensor) and k.dtype == np.bool_):
        return None
    if tuple(k.shape) != tuple(t.shape[:k.ndim]):
        raise _err(ShapeError, f"boolean index of shape {tuple(k.shape)} does not match the array's shape "
                               f"{tuple(t.shape)}")
    if k.ndim < t.ndim:
        k = _quiet_view(k, "reshape", list(k.shape) + [1] * (t.ndim - k.ndim))
    return _quiet_view(k, "broadcast_to", list(t.shape)) if tuple(k.shape) != tuple(t.shape) else k


def static_positions(shape: tuple, key: Any) -> np.ndarray:
    """Return the flat positions (C order) of the elements ``key`` selects in ``shape``."""
    return _select(_virtual(shape), key)


def traced_positions(like: Any, shape: tuple, key: Any) -> Any:
    """Return the flat positions that ``key`` with traced integer arrays selects in ``shape``.

    The positions are a traced int64 array in C order; NumPy's advanced indexing rules.
    """
    items = list(key) if isinstance(key, tuple) else [key]
    expanded: List[Any] = []
    for k in items:
        if isinstance(k, _pyasc.Tensor):
            if k.dtype == np.bool_:
                raise _err(TraceError, "a boolean mask mixed with other indices gives a data-dependent shape and "
                                       "cannot be traced; use where()")
            if k.dtype.kind not in "iu":
                raise _err(ShapeError, "arrays used as indices must be of integer (or boolean) type")
            expanded.append(k)
        elif isinstance(k, (list, np.ndarray)):
            a = np.asarray(k)
            if a.dtype == np.bool_:
                expanded.extend(np.nonzero(a))
            elif a.dtype.kind in "iu" or a.size == 0:
                expanded.append(a.astype(np.int64))
            else:
                raise _err(ShapeError, "arrays used as indices must be of integer (or boolean) type")
        else:
            expanded.append(k)
    if builtins.sum(1 for k in expanded if k is Ellipsis) > 1:
        raise _err(ShapeError, "an index can only have a single ellipsis ('...')")
    n_real = builtins.sum(1 for k in expanded if k is not None and k is not Ellipsis)
    if n_real > len(shape):
        raise _err(ShapeError, f"too many indices for an array of rank {len(shape)}")
    full: List[Any] = []
    for k in expanded:
        if k is Ellipsis:
            full.extend([slice(None)] * (len(shape) - n_real))
        else:
            full.append(k)
    full.extend([slice(None)] * (len(shape) - builtins.sum(1 for k in full if k is not None)))
    is_adv = [k is not None and not isinstance(k, slice) for k in full]
    adv_shapes = [tuple(np.shape(k)) if not isinstance(k, _pyasc.Tensor) else tuple(k.shape)
                  for k, a in zip(full, is_adv) if a]
    try:
        bshape = np.broadcast_shapes(*adv_shapes)
    except ValueError:
        raise _err(ShapeError, f"shape mismatch: indexing arrays could not be broadcast together with shapes "
                               f"{adv_shapes}") from None
    adv_at = [i for i, a in enumerate(is_adv) if a]
    adjacent = adv_at == list(range(adv_at[0], adv_at[-1] + 1))
    # The output dims: one per slice or None, and the broadcast advanced dims as a block.
    slots: List[Any] = []
    for i in range(len(full)):
        if not is_adv[i]:
            slots.append(i)
        elif "adv" not in slots:
            # Adjacent advanced indices keep their place; separated ones go first (NumPy).
            slots.insert(len(slots) if adjacent else 0, "adv")
    out_shape: List[int] = []
    starts: Dict[Any, int] = {}
    for s in slots:
        starts[s] = len(out_shape)
        if s == "adv":
            out_shape.extend(bshape)
        else:
            k = full[s]
            out_shape.append(1 if k is None else len(range(*k.indices(shape[_axis_of(full, s)]))))
    rank = len(out_shape)
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    static = np.zeros([1] * rank, dtype=np.int64)
    lin: Any = None
    for i, k in enumerate(full):
        if k is None:
            continue
        ax = _axis_of(full, i)
        d = shape[ax]
        if isinstance(k, slice):
            r = np.arange(*k.indices(d), dtype=np.int64)
            at = starts[i]
            static = static + (r * strides[ax]).reshape([1] * at + [len(r)] + [1] * (rank - at - 1))
            continue
        at = starts["adv"]
        if isinstance(k, _pyasc.Tensor):
            # A gather from 0..d-1 wraps negative indices and rejects out-of-range ones at run time.
            comp = _pyasc.apply_take(_const(like, np.arange(d, dtype=np.int64) * strides[ax]), k, 0)
            kshape = (1,) * (len(bshape) - k.ndim) + tuple(k.shape)
            comp = _quiet_view(comp, "reshape", [1] * at + list(kshape) + [1] * (rank - at - len(bshape)))
            lin = comp if lin is None else lin + comp
        else:
            a = np.asarray(k, dtype=np.int64)
            if a.size and (a.min() < -d or a.max() >= d):
                bad = a[(a < -d) | (a >= d)].flat[0]
                raise _err(ShapeError, f"index {bad} is out of bounds for axis {ax} with size {d}")
            a = np.where(a < 0, a + d, a) * strides[ax]
            a = a.reshape((1,) * (len(bshape) - a.ndim) + a.shape)
            static = static + a.reshape([1] * at + list(a.shape) + [1] * (rank - at - len(bshape)))
    out = lin + _const(like, static) if lin is not None else _const(like, static)
    if tuple(out.shape) != tuple(out_shape):
        out = _quiet_view(out, "broadcast_to", out_shape)
    return out


def _axis_of(full: List[Any], i: int) -> int:
    return builtins.sum(1 for k in full[:i] if k is not None)


def positions(t: Any, key: Any) -> Any:
    """Flat positions in ``t`` that ``key`` selects: a NumPy array, or a tracer for traced keys."""
    if _has_traced(key):
        return traced_positions(t, tuple(t.shape), key)
    return static_positions(tuple(t.shape), key)


def gather(t: Any, key: Any) -> Any:
    """``t[key]`` for advanced keys the view path does not take: a gather of flat positions."""
    sel = positions(t, key)
    if isinstance(sel, np.ndarray):
        if sel.size == 0:
            return _pyasc.apply_take(_flat(t), _const(t, np.zeros(sel.shape, np.int64)), 0) if t.size else \
                _pyasc.apply_fill(t, 0, t.dtype, list(sel.shape))
        sel = _const(t, sel)
    return _pyasc.apply_take(_flat(t), sel, 0)


# -- writes ---------------------------------------------------------------------------------


def _scatter(base: Any, sel: Any, vals: Any, mode: str) -> Any:
    """Return ``base`` with ``vals`` (the shape of ``sel``) combined at flat positions ``sel``."""
    if isinstance(sel, np.ndarray):
        if sel.size == 0:
            return base
        if mode == "set" and sel.size == base.size and np.array_equal(sel.ravel(), np.arange(base.size)):
            # Every element, in order: the values are the new array.
            return vals if vals.ndim == base.ndim and tuple(vals.shape) == tuple(base.shape) else \
                _pyasc.apply_view(_flat(_copy_of(vals)), "reshape", list(base.shape))
        sel = _const(base, sel)
    return _pyasc.apply_scatter(base, sel, vals, mode)


def _copy_of(v: Any) -> Any:
    return _pyasc.apply_unary("positive", v) if v.dtype != np.bool_ else v | False


def _commit(st: _State, root: Any, new: Any, written: Optional[np.ndarray]) -> None:
    """Make ``root`` hold ``new`` and refresh the views of it that may see the write."""
    if new is not root:
        if not isinstance(new, _pyasc.Tensor) or tuple(new.shape) != tuple(root.shape):
            new = _pyasc.apply_view(_flat(new), "reshape", list(root.shape))
        if new.dtype != root.dtype or new.is_weak:
            new = _pyasc.apply_cast(new, root.dtype)
        _pyasc.rebind(root, new)
    hit: Optional[np.ndarray] = None
    for key in list(st.by_root.get(id(root), ())):
        v = st.views.get(key)
        view = v.ref() if v is not None else None
        if view is None:
            continue
        _, vpos = _resolve(st, view)
        if vpos is None:
            continue
        pos = _materialize(vpos).ravel()
        if written is not None:
            if hit is None:
                hit = np.zeros(root.size, dtype=bool)
                hit[written.ravel()] = True
            if not hit[pos].any():
                continue
        fresh = _pyasc.apply_take(_flat(root), _const(root, pos), 0)
        _pyasc.rebind(view, _quiet_view(fresh, "reshape", list(view.shape)) if view.ndim != 1 else fresh)


def _write(t: Any, key: Any, value: Any, mode: str = "set", what: str = "y[...] = v") -> None:
    """Write ``value`` into ``t[key]`` (``mode``: set or a combining scatter)."""
    st = _state()
    root, pos = _resolve(st, t)
    if _is_argument(st, root):
        raise _arg_error(what)
    if pos is not None and not pos.flags.writeable:
        raise _err(TraceError, f"{what}: the destination is a broadcast view, which NumPy makes read-only")
    mask = _traced_mask(t, key)
    vt = pos
    if mask is not None:
        vals = _pyasc.apply_where(mask, _broadcast(t, _value(t, value, t.dtype), tuple(t.shape)), t)
        if vt is None:
            # A root written everywhere: the values are the new array.
            _commit(st, root, vals, None)
            return
        sel: Any = _materialize(vt)
    elif vt is None and _is_full(key, t.ndim) and mode == "set":
        _commit(st, root, _broadcast(t, _value(t, value, t.dtype), tuple(t.shape)), None)
        return
    elif not _has_traced(key):
        sel = _select(vt if vt is not None else _virtual(tuple(t.shape)), key)
        vals = _broadcast(t, _value(t, value, t.dtype), tuple(sel.shape))
    else:
        sel_t = traced_positions(t, tuple(t.shape), key)
        vals = _broadcast(t, _value(t, value, t.dtype), tuple(sel_t.shape))
        sel = sel_t if vt is None else _pyasc.apply_take(_const(t, _materialize(vt).ravel()), sel_t, 0)
    new = _scatter(root, sel, vals, mode)
    _commit(st, root, new, sel if isinstance(sel, np.ndarray) else None)


def _is_full(key: Any, ndim: int) -> bool:
    """Return True for keys that select every element in order (``...``, ``()``, ``:``s)."""
    items = key if isinstance(key, tuple) else (key,)
    if builtins.sum(1 for k in items if k is Ellipsis) > 1:
        return False
    full = [k for k in items if k is not Ellipsis]
    return len(full) <= ndim and all(isinstance(k, slice) and k == slice(None) for k in full)


def setitem(t: Any, key: Any, value: Any) -> None:
    """``t[key] = value`` on a tracer (see the module's notes)."""
    if isinstance(value, MaskedRead):
        if value.value is None:
            raise value._error()
        value = value.value
    _write(t, key, value, "set", "`x[...] = v`")


# -- y[mask] op= v -------------------------------------------------------------------------------

_AUGMENTED: Dict[Any, frozenset] = {}


def _augmented_offsets(code: Any) -> frozenset:
    """Return the offsets of the subscript reads that start ``y[k] op= v`` in ``code``."""
    got = _AUGMENTED.get(code)
    if got is None:
        ins = list(dis.get_instructions(code))
        found = set()
        for i, x in enumerate(ins):
            if x.opname not in ("BINARY_SUBSCR", "BINARY_OP") or (x.opname == "BINARY_OP" and "[" not in x.argrepr):
                continue
            # 3.11 and later: COPY 2, COPY 2, subscript; earlier: DUP_TOP_TWO, subscript.
            if i >= 2 and ins[i - 1].opname == "COPY" and ins[i - 2].opname == "COPY" and ins[i - 1].arg == 2 \
                    and ins[i - 2].arg == 2:
                found.add(x.offset)
            elif i >= 1 and ins[i - 1].opname == "DUP_TOP_TWO":
                found.add(x.offset)
        got = _AUGMENTED[code] = frozenset(found)
    return got


def in_augmented_subscript() -> bool:
    """Return True when the user's line is evaluating ``y[k]`` as the start of ``y[k] op= v``."""
    import os

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # the pyasc package
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(here):
        frame = frame.f_back
    return frame is not None and frame.f_lasti in _augmented_offsets(frame.f_code)


class MaskedRead:
    """``y[mask]`` for a traced mask inside ``y[mask] op= v``: the only use such a read has.

    The in-place operator computes ``where(mask, y op v, y)`` (NumPy's answer whenever ``v``
    is a scalar) and the assignment back writes it; any other use raises the usual TraceError.
    """

    __slots__ = ("base", "mask", "value")

    def __init__(self, base: Any, mask: Any, value: Any = None) -> None:
        self.base, self.mask, self.value = base, mask, value

    def _error(self) -> Exception:
        return _err(TraceError, "boolean-mask indexing gives a data-dependent shape and cannot be traced; use "
                                "where() (y[mask] = v and y[mask] += v work)")

    def _inplace(self, name: str, other: Any) -> MaskedRead:
        if self.value is not None:
            raise self._error()
        result = _INPLACE[name](self.base, other)
        _check_out(result, self.base, name)
        return MaskedRead(self.base, self.mask, result)

    def __getattr__(self, name: str) -> Any:
        raise self._error()


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift"):
    setattr(MaskedRead, f"__i{_name}__", lambda self, other, _n=_name: self._inplace(_n, other))


_INPLACE = {
    "add": _op.add, "sub": _op.sub, "mul": _op.mul, "truediv": _op.truediv, "floordiv": _op.floordiv,
    "mod": _op.mod, "pow": _op.pow, "and": _op.and_, "or": _op.or_, "xor": _op.xor, "lshift": _op.lshift,
    "rshift": _op.rshift, "matmul": _op.matmul,
}
_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
           "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>", "matmul": "@"}


def _check_out(result: Any, t: Any, name: str) -> None:
    """NumPy's rules for writing a ufunc's result into ``t`` (same_kind casting, shape)."""
    if getattr(result, "_pyasc_complex", False):
        raise _err(DTypeError, f"Cannot cast ufunc '{name}' output from complex to dtype('{t.dtype}') with "
                               "casting rule 'same_kind'")
    rdt = result.dtype if isinstance(result, _pyasc.Tensor) else np.asarray(result).dtype
    if not np.can_cast(rdt, t.dtype, "same_kind"):
        raise _err(DTypeError, f"Cannot cast ufunc '{name}' output from dtype('{rdt}') to dtype('{t.dtype}') "
                               "with casting rule 'same_kind'")
    shape = tuple(np.shape(result)) if not isinstance(result, _pyasc.Tensor) else tuple(result.shape)
    try:
        ok = np.broadcast_shapes(shape, tuple(t.shape)) == tuple(t.shape)
    except ValueError:
        ok = False
    if not ok:
        raise _err(ShapeError, f"non-broadcastable output operand with shape {tuple(t.shape)} doesn't match the "
                               f"broadcast shape {shape}")


def inplace(t: Any, name: str, other: Any) -> None:
    """``t op= other``: NumPy's in-place operator on a tracer (see the module's notes)."""
    st = _state()
    root, _ = _resolve(st, t)
    result = _INPLACE[name](t, other)
    if _is_argument(st, root):
        if root is t and (t.is_weak or t.ndim == 0):
            # Python and NumPy scalars are immutable: `a += 1` makes a new value.
            if not isinstance(result, _pyasc.Tensor) or result.dtype != t.dtype or tuple(result.shape) != ():
                raise _err(TraceError, f"`a {_SYMBOL[name]}= b` on the scalar argument would change its dtype "
                                       f"or shape; write `a = a {_SYMBOL[name]} b`")
            _pyasc.rebind(t, result)
            return
        raise _arg_error(f"`x {_SYMBOL[name]}= ...`")
    _check_out(result, t, name)
    _write(t, Ellipsis, result, "set", f"`y {_SYMBOL[name]}= ...`")


def copy(t: Any) -> Any:
    """``t.copy()``: a new array holding ``t``'s current values."""
    return _copy_of(t)


# -- ufunc.at and out= ---------------------------------------------------------------------

_AT_MODES = {"add": "add", "multiply": "multiply", "minimum": "min", "maximum": "max", "fmin": "min",
             "fmax": "max"}


def array_ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: Dict[str, Any]) -> Any:
    """``np.<ufunc>.at(y, idx, v)`` and ``np.<ufunc>(..., out=y)`` with tracers."""
    from ..core import _numpy_api

    name = ufunc.__name__
    if method == "at":
        if len(inputs) != 3 or kwargs:
            raise _err(UnsupportedError, f"np.{name}.at takes (a, indices, b) inside operators")
        a, idx, b = inputs
        if not isinstance(a, _pyasc.Tensor):
            raise _err(UnsupportedError, f"np.{name}.at inside operators updates traced arrays only")
        if name == "subtract":
            b, name = -b if isinstance(b, _pyasc.Tensor) else np.negative(b), "add"
        mode = _AT_MODES.get(name)
        if mode is None:
            raise _err(UnsupportedError, f"np.{name}.at is not supported inside operators; use add, subtract, "
                                         "multiply, minimum or maximum")
        _write(a, idx, b, mode, f"np.{ufunc.__name__}.at(y, ...)")
        return None
    kwargs = dict(kwargs)
    out = kwargs.pop("out")
    outs = out if isinstance(out, tuple) else (out,)
    if not all(isinstance(o, _pyasc.Tensor) or o is None for o in outs):
        raise _err(UnsupportedError, f"np.{name}(..., out=) inside operators takes traced arrays only")
    result = _numpy_api.array_ufunc(ufunc, method, inputs, kwargs)
    results = result if isinstance(result, tuple) else (result,)
    st = _state()
    for o, r in zip(outs, results):
        if o is None:
            continue
        root, _ = _resolve(st, o)
        if _is_argument(st, root):
            raise _arg_error(f"np.{name}(..., out=x)")
        _check_out(r, o, name)
        _write(o, Ellipsis, r, "set", f"np.{name}(..., out=y)")
    got = tuple(o if o is not None else r for o, r in zip(outs, results))
    return got if isinstance(result, tuple) else got[0]


# -- JAX's x.at[idx] ---------------------------------------------------------------------------


class At:
    """``x.at``: JAX's functional updates, ``x.at[idx].set(v)`` and friends (new arrays)."""

    __slots__ = ("_x",)

    def __init__(self, x: Any) -> None:
        self._x = x

    def __getitem__(self, idx: Any) -> AtIndex:
        return AtIndex(self._x, idx)


class AtIndex:
    """``x.at[idx]``: call ``set add multiply min max get`` for a new array."""

    __slots__ = ("_x", "_idx")

    def __init__(self, x: Any, idx: Any) -> None:
        self._x, self._idx = x, idx

    def _update(self, v: Any, mode: str) -> Any:
        x = self._x
        mask = _traced_mask(x, self._idx)
        if mask is not None:
            val = _broadcast(x, _value(x, v, x.dtype), tuple(x.shape))
            new = {"set": lambda: val, "add": lambda: x + val, "multiply": lambda: x * val,
                   "min": lambda: np.minimum(x, val), "max": lambda: np.maximum(x, val)}[mode]()
            new = new if new.dtype == x.dtype else _pyasc.apply_cast(new, x.dtype)
            return _pyasc.apply_where(mask, new, x)
        sel = positions(x, self._idx)
        vals = _broadcast(x, _value(x, v, x.dtype), tuple(sel.shape))
        new = _scatter(x, sel, vals, mode)
        return _copy_of(x) if new is x else new

    def set(self, v: Any) -> Any:
        """Return ``x`` with ``x[idx] = v``."""
        return self._update(v, "set")

    def add(self, v: Any) -> Any:
        """Return ``x`` with ``v`` added at ``idx`` (repeated indices accumulate)."""
        return self._update(v, "add")

    def multiply(self, v: Any) -> Any:
        """Return ``x`` with ``x[idx]`` multiplied by ``v`` (repeated indices accumulate)."""
        return self._update(v, "multiply")

    mul = multiply

    def min(self, v: Any) -> Any:
        """Return ``x`` with ``x[idx] = minimum(x[idx], v)``."""
        return self._update(v, "min")

    def max(self, v: Any) -> Any:
        """Return ``x`` with ``x[idx] = maximum(x[idx], v)``."""
        return self._update(v, "max")

    def get(self) -> Any:
        """Return ``x[idx]``."""
        return self._x[self._idx]


_hooks.register("note_view", note_view)
