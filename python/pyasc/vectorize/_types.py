"""Dtype rules of vectorized operators: NumPy's, with Python numbers weakly typed.

A value's type is a :class:`VType`: a NumPy dtype and whether it is *weak* (a Python
``bool``/``int``/``float`` such as a literal, a ``math`` result or a counter started at ``0``).
Weak values take the dtype of the strong operand they meet, as under NumPy 2 (NEP 50), so a
scalar function gives the dtypes a call on NumPy scalars gives. Operand dtypes of each
instruction come from the ufunc's own loop resolution (``ufunc.resolve_dtypes``).
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

import numpy as np

from .. import _pyasc

#: The dtypes a vectorized operator computes on.
SUPPORTED = tuple(np.dtype(d) for d in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                                         "uint64", "float32", "float64"))

_KIND_ORDER = {"b": 0, "i": 1, "u": 1, "f": 2}
_WEAK_DTYPE = {0: np.dtype(bool), 1: np.dtype(np.int64), 2: np.dtype(np.float64)}
_PY_TYPE = {0: bool, 1: int, 2: float}

#: Graph-op name -> NumPy ufunc, for the dtype rules of each op.
BINARY_UFUNC = {name: getattr(np, ufuncs[0]) for name, _cls, ufuncs, _c in _pyasc.BINARY_OPS if ufuncs}
UNARY_UFUNC = {name: getattr(np, ufuncs[0]) for name, _k, ufuncs, _api in _pyasc.UNARY_OPS if ufuncs}
UNARY_KIND = {name: kind for name, kind, _u, _api in _pyasc.UNARY_OPS}
#: NumPy ufunc name -> op name.
UFUNC_OP = {}
for _name, _cls, _ufuncs, _c in _pyasc.BINARY_OPS:
    for _u in _ufuncs:
        UFUNC_OP.setdefault(_u, ("binary", _name))
for _name, _k, _ufuncs, _api in _pyasc.UNARY_OPS:
    for _u in _ufuncs:
        UFUNC_OP.setdefault(_u, ("unary", _name))


class VType(NamedTuple):
    """A value's dtype and whether it is a weakly typed Python number."""

    dtype: np.dtype
    weak: bool = False

    def rank(self) -> int:
        """0 for bool, 1 for integers, 2 for floats."""
        return _KIND_ORDER[self.dtype.kind]

    def resolve_arg(self) -> object:
        """Return what ``ufunc.resolve_dtypes`` takes for this type (a Python type when weak)."""
        return _PY_TYPE[self.rank()] if self.weak and self.rank() > 0 else self.dtype


def weak(kind: type) -> VType:
    """Return the type of a Python ``bool``, ``int`` or ``float``."""
    r = {bool: 0, int: 1, float: 2}[kind]
    return VType(_WEAK_DTYPE[r], r > 0)


def strong(dtype: object) -> VType:
    """Return the type of a NumPy array or scalar of ``dtype``."""
    return VType(np.dtype(dtype), False)


def join(a: VType, b: VType) -> VType:
    """Return the type that holds values of both ``a`` and ``b`` (a branch merge, a loop's state)."""
    if a == b:
        return a
    if a.weak and b.weak:
        return a if a.rank() >= b.rank() else b
    if a.weak != b.weak:
        s, w = (b, a) if a.weak else (a, b)
        dummy = _PY_TYPE[w.rank()](0)
        return strong(np.result_type(np.empty(0, s.dtype), dummy))
    return strong(np.result_type(a.dtype, b.dtype))


def binary(op: str, a: VType, b: VType) -> Tuple[np.dtype, VType]:
    """Operand dtype and result type of the binary op ``op`` on ``a`` and ``b``."""
    uf = BINARY_UFUNC.get(op)
    if uf is None:
        raise KeyError(op)
    if op in ("and", "or", "xor") and a.dtype.kind == "b" and b.dtype.kind == "b":
        return np.dtype(bool), strong(bool)
    if a.weak and b.weak:  # Python numbers with each other: the default dtypes
        ins = uf.resolve_dtypes((a.dtype, b.dtype, None))
    else:
        ins = uf.resolve_dtypes((a.resolve_arg(), b.resolve_arg(), None))
    operand, out = ins[0], ins[2]
    if ins[0] != ins[1]:
        raise TypeError(f"{op} has no loop for {a.dtype} and {b.dtype}")
    res = VType(out, a.weak and b.weak and out.kind != "b")
    return operand, res


def unary(op: str, a: VType) -> Tuple[np.dtype, VType]:
    """Operand dtype and result type of the unary op ``op`` on ``a``."""
    kind = UNARY_KIND[op]
    uf = UNARY_UFUNC.get(op)
    if uf is not None:
        ins = uf.resolve_dtypes((a.dtype, None))
        operand, out = ins[0], ins[1]
    elif kind == "float" and a.dtype.kind != "f":
        operand = out = np.sqrt.resolve_dtypes((a.dtype, None))[1]
    else:
        operand = out = a.dtype
    if kind == "classify":
        return operand, strong(bool)
    return operand, VType(out, a.weak and out.kind != "b")


def check_supported(t: VType) -> Optional[str]:
    """Why values of type ``t`` cannot be computed on, or None."""
    if t.dtype not in SUPPORTED:
        return f"dtype {t.dtype} is not supported in vectorized operators (use bool, integers, float32 or float64)"
    return None
