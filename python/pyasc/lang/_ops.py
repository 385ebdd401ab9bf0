"""Data movement and vector instructions of the kernel language.

Ascend C's ``DataCopy``, ``Add``, ``Exp``, ``ReduceSum``, ...: each call is traced into one
statement of the block program.

Counts may be integers or values known at launch; the first ``count`` elements of each local
tensor take part. Scalar operands (``adds``, ``muls``, ``duplicate``) are constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import AlignmentError, DTypeError, InvalidArgumentError
from ._tensors import GlobalTensor, LocalTensor
from ._trace import ALIGN, Sym, expr, fail, int_op, site, state


def _local(t: Any, what: str) -> LocalTensor:
    if not isinstance(t, LocalTensor):
        raise fail(InvalidArgumentError, f"{what} must be a LocalTensor, not {type(t).__name__}")
    return t


def _count(n: Any, *tensors: LocalTensor) -> Any:
    e = expr(n, "a count")
    if isinstance(e, int):
        for t in tensors:
            if not 0 <= e <= t.cap:
                raise fail(InvalidArgumentError, f"count {e} is outside 0..{t.cap}, the capacity of {t!r}")
    return e


def _same(*tensors: LocalTensor) -> str:
    d = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype != d:
            raise fail(DTypeError, f"operands of dtypes {d} and {t.dtype}; use cast() first")
    return d


def _copy(dst: Any, src: Any, count: Any, pad: bool) -> None:
    if isinstance(dst, LocalTensor) and isinstance(src, GlobalTensor):
        local, glob, to_local = dst, src, True
    elif isinstance(dst, GlobalTensor) and isinstance(src, LocalTensor):
        local, glob, to_local = src, dst, False
    else:
        raise fail(InvalidArgumentError, "data_copy moves between a GlobalTensor and a LocalTensor, not "
                                         f"{type(src).__name__} to {type(dst).__name__}")
    if glob.index is None:
        raise fail(InvalidArgumentError, "data_copy of a GlobalTensor without set_global_buffer")
    if glob.dtype != local.dtype:
        raise fail(DTypeError, f"data_copy between {glob.dtype} global memory and a {local.dtype} local tensor")
    n = _count(count, local)
    item = np.dtype(local.dtype).itemsize
    if not pad and isinstance(n, int) and (n * item) % ALIGN:
        raise fail(AlignmentError, f"data_copy of {n} elements ({n * item} bytes) is not a multiple of {ALIGN} bytes "
                                   "(ERROR 100001); use data_copy_pad for a tail")
    end = int_op("add", glob.lo, n)
    if all(isinstance(v, int) for v in (glob.lo, glob.hi, end)) and not (0 <= glob.lo and end <= glob.hi <= glob.size):
        raise fail(InvalidArgumentError, f"data_copy of elements {glob.lo}..{end} of a global view "
                                         f"{glob.lo}..{glob.hi} of {glob.size} elements: out of bounds")
    state().emit(("copy", to_local, glob.index, local.reg, glob.lo, glob.lo, glob.hi, n, pad, site()))


def data_copy(dst: Any, src: Any, count: Any) -> None:
    """Copy ``count`` elements between global memory and a local tensor (``DataCopy``).

    The bytes moved must be a multiple of 32 (:class:`pyasc.AlignmentError`, code 100001).
    """
    _copy(dst, src, count, False)


def data_copy_pad(dst: Any, src: Any, count: Any) -> None:
    """``data_copy`` of any number of elements, for tails (``DataCopyPad``)."""
    _copy(dst, src, count, True)


def _unary(name: str, dst: Any, src: Any, count: Any) -> None:
    d, s = _local(dst, "dst"), _local(src, "src")
    _same(d, s)
    n = _count(count, d, s)
    state().emit(("unary", name, d.reg, s.reg, n, site()))


def _binary(name: str, dst: Any, a: Any, b: Any, count: Any, out_dtype: Any = None) -> None:
    d, x, y = _local(dst, "dst"), _local(a, "src0"), _local(b, "src1")
    _same(x, y)
    if d.dtype != (out_dtype or x.dtype):
        raise fail(DTypeError, f"destination of dtype {d.dtype}, expected {out_dtype or x.dtype}")
    n = _count(count, d, x, y)
    state().emit(("binary", name, d.reg, x.reg, y.reg, n, site()))


def _scalar_op(name: str, dst: Any, src: Any, scalar: Any, count: Any) -> None:
    d, s = _local(dst, "dst"), _local(src, "src")
    _same(d, s)
    if isinstance(scalar, (Sym, bool)) or not isinstance(scalar, (int, float, np.number)):
        raise fail(InvalidArgumentError, f"the scalar operand must be a number constant, not {scalar!r}")
    value = float(scalar) if np.dtype(s.dtype).kind == "f" else int(scalar)
    n = _count(count, d, s)
    state().emit(("binary", name, d.reg, s.reg, state().const(s.dtype, value), n, site()))


def add(dst: Any, src0: Any, src1: Any, count: Any) -> None:
    """``dst = src0 + src1`` over ``count`` elements (``Add``)."""
    _binary("add", dst, src0, src1, count)


def sub(dst: Any, src0: Any, src1: Any, count: Any) -> None:
    """``dst = src0 - src1`` (``Sub``)."""
    _binary("sub", dst, src0, src1, count)


def mul(dst: Any, src0: Any, src1: Any, count: Any) -> None:
    """``dst = src0 * src1`` (``Mul``)."""
    _binary("mul", dst, src0, src1, count)


def div(dst: Any, src0: Any, src1: Any, count: Any) -> None:
    """``dst = src0 / src1`` (``Div``)."""
    _binary("div", dst, src0, src1, count)


def max(dst: Any, src0: Any, src1: Any = None, count: Any = None) -> Any:
    """Elementwise maximum of two tensors into ``dst`` (``Max``).

    With two integer arguments, return the larger (a value known at launch when either is).
    """
    if src1 is None and count is None:
        return int_op("max", dst, src0)
    _binary("maximum", dst, src0, src1, count)
    return None


def min(dst: Any, src0: Any, src1: Any = None, count: Any = None) -> Any:
    """Elementwise minimum of two tensors into ``dst`` (``Min``).

    With two integer arguments, return the smaller (a value known at launch when either is).
    """
    if src1 is None and count is None:
        return int_op("min", dst, src0)
    _binary("minimum", dst, src0, src1, count)
    return None


def adds(dst: Any, src: Any, scalar: Any, count: Any) -> None:
    """``dst = src + scalar`` (``Adds``)."""
    _scalar_op("add", dst, src, scalar, count)


def muls(dst: Any, src: Any, scalar: Any, count: Any) -> None:
    """``dst = src * scalar`` (``Muls``)."""
    _scalar_op("mul", dst, src, scalar, count)


def maxs(dst: Any, src: Any, scalar: Any, count: Any) -> None:
    """``dst = max(src, scalar)`` (``Maxs``)."""
    _scalar_op("maximum", dst, src, scalar, count)


def mins(dst: Any, src: Any, scalar: Any, count: Any) -> None:
    """``dst = min(src, scalar)`` (``Mins``)."""
    _scalar_op("minimum", dst, src, scalar, count)


def exp(dst: Any, src: Any, count: Any) -> None:
    """Exponential of ``src`` into ``dst`` (``Exp``)."""
    _unary("exp", dst, src, count)


def ln(dst: Any, src: Any, count: Any) -> None:
    """``dst = log(src)`` (``Ln``)."""
    _unary("log", dst, src, count)


def sqrt(dst: Any, src: Any, count: Any) -> None:
    """Square root of ``src`` into ``dst`` (``Sqrt``)."""
    _unary("sqrt", dst, src, count)


def rsqrt(dst: Any, src: Any, count: Any) -> None:
    """``dst = 1 / sqrt(src)`` (``Rsqrt``)."""
    _unary("rsqrt", dst, src, count)


def reciprocal(dst: Any, src: Any, count: Any) -> None:
    """``dst = 1 / src`` (``Reciprocal``)."""
    _unary("reciprocal", dst, src, count)


def relu(dst: Any, src: Any, count: Any) -> None:
    """``dst = max(src, 0)`` (``Relu``)."""
    _unary("relu", dst, src, count)


def abs(dst: Any, src: Any, count: Any) -> None:
    """``dst = |src|`` (``Abs``)."""
    _unary("abs", dst, src, count)


def tanh(dst: Any, src: Any, count: Any) -> None:
    """Hyperbolic tangent of ``src`` into ``dst`` (``Tanh``)."""
    _unary("tanh", dst, src, count)


def erf(dst: Any, src: Any, count: Any) -> None:
    """Error function of ``src`` into ``dst`` (``Erf``)."""
    _unary("erf", dst, src, count)


def cast(dst: Any, src: Any, count: Any) -> None:
    """``dst = src`` converted to ``dst``'s dtype (``Cast``; float to int truncates)."""
    d, s = _local(dst, "dst"), _local(src, "src")
    n = _count(count, d, s)
    state().emit(("cast", d.reg, s.reg, n, site()))


_CMP = {"LT": "lt", "LE": "le", "GT": "gt", "GE": "ge", "EQ": "eq", "NE": "ne"}


class CMPMODE:
    """Comparison modes of :func:`compare` (Ascend C's ``CMPMODE``)."""

    LT, LE, GT, GE, EQ, NE = "LT", "LE", "GT", "GE", "EQ", "NE"


def compare(dst: Any, src0: Any, src1: Any, mode: str, count: Any) -> None:
    """``dst = src0 <mode> src1`` into a ``bool`` tensor (``Compare``; ``mode`` a :class:`CMPMODE`)."""
    if mode not in _CMP:
        raise fail(InvalidArgumentError, f"compare mode must be one of {sorted(_CMP)}, not {mode!r}")
    _binary(_CMP[mode], dst, src0, src1, count, out_dtype="bool")


def select(dst: Any, mask: Any, src0: Any, src1: Any, count: Any) -> None:
    """``dst = mask ? src0 : src1`` with a ``bool`` mask tensor (``Select``)."""
    d, m, a, b = _local(dst, "dst"), _local(mask, "mask"), _local(src0, "src0"), _local(src1, "src1")
    _same(d, a, b)
    if m.dtype != "bool":
        raise fail(DTypeError, f"select's mask must be a bool tensor (from compare), not {m.dtype}")
    n = _count(count, d, m, a, b)
    state().emit(("select", d.reg, m.reg, a.reg, b.reg, n, site()))


def duplicate(dst: Any, scalar: Any, count: Any) -> None:
    """``dst[:count] = scalar`` (``Duplicate``)."""
    d = _local(dst, "dst")
    if isinstance(scalar, (Sym, bool)) or not isinstance(scalar, (int, float, np.number)):
        raise fail(InvalidArgumentError, f"duplicate's value must be a number constant, not {scalar!r}")
    value = float(scalar) if np.dtype(d.dtype).kind == "f" else int(scalar)
    n = _count(count, d)
    state().emit(("copy_reg", d.reg, state().const(d.dtype, value), n, site()))


def data_move(dst: Any, src: Any, count: Any) -> None:
    """Copy ``count`` elements between local tensors of one dtype (``DataCopy`` in the UB)."""
    d, s = _local(dst, "dst"), _local(src, "src")
    _same(d, s)
    n = _count(count, d, s)
    state().emit(("copy_reg", d.reg, s.reg, n, site()))


def _rows(name: str, dst: Any, src: Any, rows: Any, cols: Any) -> None:
    d, s = _local(dst, "dst"), _local(src, "src")
    _same(d, s)
    if np.dtype(s.dtype).kind != "f":
        raise fail(DTypeError, f"row reductions take float tensors, not {s.dtype}")
    r, c = expr(rows, "rows"), expr(cols, "cols")
    _count(r, d)
    if isinstance(r, int) and isinstance(c, int):
        _count(r * c, s)
    state().emit(("reduce", name, d.reg, s.reg, r, c, site()))


def reduce_sum(dst: Any, src: Any, rows: Any, cols: Any) -> None:
    """Sum each of ``rows`` rows of ``cols`` elements of ``src`` into ``dst[r]`` (``ReduceSum``).

    Rows are stored one after another; ``rows=1`` reduces ``cols`` elements.
    """
    _rows("sum", dst, src, rows, cols)


def reduce_max(dst: Any, src: Any, rows: Any, cols: Any) -> None:
    """``dst[r] = max(src[r, :cols])`` per row (``ReduceMax``)."""
    _rows("max", dst, src, rows, cols)


def reduce_min(dst: Any, src: Any, rows: Any, cols: Any) -> None:
    """``dst[r] = min(src[r, :cols])`` per row (``ReduceMin``)."""
    _rows("min", dst, src, rows, cols)


def broadcast(dst: Any, src: Any, rows: Any, cols: Any) -> None:
    """``dst[r, c] = src[r]`` for ``rows`` rows of ``cols`` (``Broadcast`` of a per-row value)."""
    d, s = _local(dst, "dst"), _local(src, "src")
    _same(d, s)
    r, c = expr(rows, "rows"), expr(cols, "cols")
    _count(r, s)
    if isinstance(r, int) and isinstance(c, int):
        _count(r * c, d)
    state().emit(("broadcast", d.reg, s.reg, r, c, site()))


def _row_op(name: str, dst: Any, src: Any, row_vals: Any, rows: Any, cols: Any) -> None:
    d, s, v = _local(dst, "dst"), _local(src, "src"), _local(row_vals, "row_vals")
    _same(d, s, v)
    if s.dtype not in ("float32", "float64"):
        raise fail(DTypeError, f"per-row operations take float32 or float64 tensors, not {s.dtype}")
    r, c = expr(rows, "rows"), expr(cols, "cols")
    _count(r, v)
    if isinstance(r, int) and isinstance(c, int):
        _count(r * c, d, s)
    state().emit(("row_op", name, d.reg, s.reg, v.reg, r, c, site()))


def add_rows(dst: Any, src: Any, row_vals: Any, rows: Any, cols: Any) -> None:
    """Add ``row_vals[r]`` to every element of row ``r`` of ``src`` (``rows`` rows of ``cols``).

    The same as :func:`broadcast` followed by :func:`add`, without spreading the values first.
    """
    _row_op("add", dst, src, row_vals, rows, cols)


def sub_rows(dst: Any, src: Any, row_vals: Any, rows: Any, cols: Any) -> None:
    """Subtract ``row_vals[r]`` from every element of row ``r`` (see :func:`add_rows`)."""
    _row_op("sub", dst, src, row_vals, rows, cols)


def mul_rows(dst: Any, src: Any, row_vals: Any, rows: Any, cols: Any) -> None:
    """Multiply every element of row ``r`` by ``row_vals[r]`` (see :func:`add_rows`)."""
    _row_op("mul", dst, src, row_vals, rows, cols)


def div_rows(dst: Any, src: Any, row_vals: Any, rows: Any, cols: Any) -> None:
    """Divide every element of row ``r`` by ``row_vals[r]`` (see :func:`add_rows`)."""
    _row_op("div", dst, src, row_vals, rows, cols)
