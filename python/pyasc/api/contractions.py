"""Contractions: ``einsum dot vdot inner outer tensordot kron``.

Every contraction is a list of labelled operands reduced to one. Repeated labels within an
operand take its diagonal (a strided view), labels no other operand or the output needs are
summed out first, and the operands are then contracted pairwise in a greedy order (the pair
with the smallest result first, the leftmost among equals). A pair
whose float contraction has free axes on either side is one batched GEMM (``matmul``) between
views: the operands transposed to ``batch + free + contracted`` and reshaped to matrices, so
``einsum("bij,bjk->bik")`` is exactly ``a @ b``. Other pairs (integers and bools, contractions
without free axes, products with nothing to contract) are a broadcast multiply fused with a
sum over the contracted axes. Result dtypes are NumPy's (``int32`` operands give ``int32``,
``bool`` gives ``bool``).
"""

from __future__ import annotations

import math
from typing import Any, Dict, Hashable, List, Sequence, Tuple

import numpy as np

from .. import _pyasc
from ..core import _eager
from ..core._axes import err, is_int, norm_axis
from ..errors import InvalidArgumentError, ShapeError, UnsupportedError
from . import movement, reductions
from ._einsum_parse import from_sublists, parse

__all__ = ["einsum", "dot", "vdot", "inner", "outer", "tensordot", "kron"]

Labels = List[Hashable]


def _transpose(x: Any, labels: Labels, order: Labels) -> Any:
    perm = [labels.index(lab) for lab in order]
    return x if perm == list(range(len(perm))) else movement.transpose(x, perm)


def _reshape(x: Any, shape: Sequence[int]) -> Any:
    return x if tuple(x.shape) == tuple(shape) else movement.reshape(x, tuple(shape))


def _sum_out(x: Any, labels: Labels, drop: Labels) -> Tuple[Any, Labels]:
    axes = tuple(i for i, lab in enumerate(labels) if lab in drop)
    if not axes:
        return x, labels
    return reductions.sum(x, axes, False), [lab for lab in labels if lab not in drop]


def _collapse(x: Any, labels: Labels) -> Tuple[Any, Labels]:
    """Take the diagonal over each label repeated within one operand."""
    from .matrices import diagonal

    labels = list(labels)
    while True:
        rep = next((lab for lab in labels if labels.count(lab) > 1), None)
        if rep is None:
            return x, labels
        p = labels.index(rep)
        q = labels.index(rep, p + 1)
        if x.shape[p] != x.shape[q]:
            raise err(ShapeError, f"einsum: the repeated subscript {rep!r} of one operand has extents "
                                  f"{x.shape[p]} and {x.shape[q]}")
        x = diagonal(x, 0, p, q)
        labels = [lab for i, lab in enumerate(labels) if i not in (p, q)] + [rep]


def _pair(a: Any, la: Labels, b: Any, lb: Labels, keep: set, out: Labels) -> Tuple[Any, Labels]:
    """Contract two labelled operands, keeping the labels in ``keep``.

    When ``out`` puts ``b``'s free labels before ``a``'s, the operands are swapped so that a
    GEMM writes the output's order directly (``(A B)^T = B^T A^T``) rather than a transpose.
    """
    fa = [lab for lab in la if lab not in lb]
    fb = [lab for lab in lb if lab not in la]
    if fa and fb and fa[0] in out and fb[0] in out and out.index(fb[0]) < out.index(fa[0]):
        a, la, b, lb = b, lb, a, la
    batch = [lab for lab in la if lab in lb and lab in keep]
    contr = [lab for lab in la if lab in lb and lab not in keep]
    a_free = [lab for lab in la if lab not in lb]
    b_free = [lab for lab in lb if lab not in la]
    size = {**dict(zip(la, a.shape)), **dict(zip(lb, b.shape))}
    bsh = [size[lab] for lab in batch]
    m = math.prod(size[lab] for lab in a_free)
    n = math.prod(size[lab] for lab in b_free)
    k = math.prod(size[lab] for lab in contr)
    rdt = np.result_type(a.dtype, b.dtype)
    if rdt.kind == "f" and contr and (a_free or b_free):
        a2 = _reshape(_transpose(a, la, batch + a_free + contr), bsh + [m, k])
        b2 = _reshape(_transpose(b, lb, batch + contr + b_free), bsh + [k, n])
        r = _pyasc.apply_matmul(a2, b2)
        out = batch + a_free + b_free
        return _reshape(r, [size[lab] for lab in out]), out
    a2 = _transpose(a, la, batch + a_free + contr)
    a2 = _reshape(a2, bsh + [size[lab] for lab in a_free] + [1] * len(b_free) + [size[lab] for lab in contr])
    b2 = _transpose(b, lb, batch + b_free + contr)
    b2 = _reshape(b2, bsh + [1] * len(a_free) + [size[lab] for lab in b_free] + [size[lab] for lab in contr])
    p = a2 * b2
    out = batch + a_free + b_free
    if contr:
        p = reductions.sum(p, tuple(range(len(out), len(out) + len(contr))), False)
    return p, out


def contract(operands: Sequence[Any], ins: Sequence[Labels], out: Labels, dtype: Any = None) -> Any:
    """Contract traced ``operands`` labelled ``ins`` into the labels ``out`` (the einsum engine)."""
    ops = [x if dtype is None else x.astype(dtype) for x in operands]
    rdt = np.result_type(*[x.dtype for x in ops]) if ops else np.dtype(np.float64)
    size: Dict[Hashable, int] = {}
    for x, labels in zip(ops, ins):
        for lab, s in zip(labels, x.shape):
            if s != 1:
                if size.get(lab, 1) not in (1, s):
                    raise err(ShapeError, f"einsum: operands could not be broadcast together: subscript {lab!r} "
                                          f"has extents {size[lab]} and {s}")
                size[lab] = s
            else:
                size.setdefault(lab, 1)
    items: List[Tuple[Any, Labels]] = []
    for x, labels in zip(ops, ins):
        x, labels = _collapse(x, labels)
        # An extent-1 axis whose label has another extent elsewhere is broadcast: the operand does not
        # depend on that label.
        bcast = [i for i, lab in enumerate(labels) if x.shape[i] == 1 and size[lab] != 1]
        if bcast:
            x = _reshape(x, [s for i, s in enumerate(x.shape) if i not in bcast])
            labels = [lab for i, lab in enumerate(labels) if i not in bcast]
        items.append((x, labels))

    def needed(skip: Sequence[int]) -> set:
        return set(out).union(*[set(items[j][1]) for j in range(len(items)) if j not in skip])

    for i, (x, labels) in enumerate(items):
        keep = needed([i])
        items[i] = _sum_out(x, labels, [lab for lab in labels if lab not in keep])
    while len(items) > 1:
        # Greedy order: the pair whose result is smallest, the leftmost among equals.
        best = None
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                keep = needed([i, j])
                labels = set(items[i][1]) | set(items[j][1])
                cost = math.prod(size[lab] for lab in labels if lab in keep)
                if best is None or cost < best[0]:
                    best = (cost, i, j, keep)
        _, i, j, keep = best
        (a, la), (b, lb) = items[i], items[j]
        items[i] = _pair(a, la, b, lb, keep, list(out))
        del items[j]
    x, labels = items[0]
    x, labels = _sum_out(x, labels, [lab for lab in labels if lab not in out])
    missing = [lab for lab in out if lab not in labels]
    if missing:
        # Labels whose every extent is 1 and that were dropped as broadcast.
        x = _reshape(x, list(x.shape) + [1] * len(missing))
        labels = labels + missing
    x = _transpose(x, labels, list(out))
    shape = [size[lab] for lab in out]
    if tuple(x.shape) != tuple(shape):
        x = movement.broadcast_to(x, shape)
    return x.astype(rdt) if np.dtype(x.dtype) != rdt else x


def _einsum(*operands: Any, subscripts: str, dtype: Any) -> Any:
    like = next(x for x in operands if _eager.traced(x))
    ops = [_eager.lift(like, x) for x in operands]
    ins, out = parse(subscripts, [x.ndim for x in ops])
    return contract(ops, ins, out, dtype)


def einsum(*operands: Any, out: Any = None, dtype: Any = None, order: str = "K", casting: str = "safe",
           optimize: Any = False) -> Any:
    """Einstein summation with NumPy's subscripts (``"ij,jk->ik"``, ``"...ii->...i"``, sublists).

    Implicit and explicit outputs, ``...`` broadcasting, repeated subscripts (diagonals, traces)
    and any number of operands; float contractions with free axes run as batched GEMM.
    """
    if out is not None:
        raise err(UnsupportedError, "einsum(..., out=) is not supported inside operators")
    if not operands:
        raise err(InvalidArgumentError, "einsum needs subscripts and at least one operand")
    if isinstance(operands[0], str):
        subscripts, ops = operands[0], list(operands[1:])
    else:
        subscripts, ops = from_sublists(operands)
    if not ops:
        raise err(InvalidArgumentError, "einsum needs at least one operand")
    if any(getattr(x, "_pyasc_complex", False) is True for x in ops):
        raise err(UnsupportedError, "einsum of complex values is not supported inside operators yet")
    return _eager.run("einsum", _einsum, ops, subscripts=subscripts,
                      dtype=None if dtype is None else np.dtype(dtype))


def _ops(name: str, a: Any, b: Any) -> Tuple[Any, Any]:
    if getattr(a, "_pyasc_complex", False) is True or getattr(b, "_pyasc_complex", False) is True:
        raise err(UnsupportedError, f"{name} of complex values is not supported inside operators yet")
    like = a if _eager.traced(a) else b
    return _eager.lift(like, a), _eager.lift(like, b)


def _axes_list(ax: Any, nd: int) -> List[int]:
    items = list(ax) if isinstance(ax, (list, tuple)) else [ax]
    return [norm_axis(a, nd) for a in items]


def _tensordot(a: Any, b: Any, *, axes: Any) -> Any:
    a, b = _ops("tensordot", a, b)
    if is_int(axes):
        n = int(axes)
        if n < 0 or n > a.ndim or n > b.ndim:
            raise err(ShapeError, f"tensordot: cannot contract {n} axes of operands of ranks {a.ndim} and {b.ndim}")
        xa, xb = list(range(a.ndim - n, a.ndim)), list(range(n))
    else:
        try:
            pa, pb = axes
        except (TypeError, ValueError):
            raise err(InvalidArgumentError,
                      f"tensordot: axes must be an int or a pair of axis lists, not {axes!r}") from None
        xa, xb = _axes_list(pa, a.ndim), _axes_list(pb, b.ndim)
        if len(xa) != len(xb):
            raise err(ShapeError, f"tensordot: {len(xa)} axes of a but {len(xb)} axes of b")
    return _contract_axes("tensordot", a, b, xa, xb)


def _contract_axes(name: str, a: Any, b: Any, xa: List[int], xb: List[int]) -> Any:
    if len(set(xa)) != len(xa) or len(set(xb)) != len(xb):
        raise err(ShapeError, f"{name}: repeated axes")
    for i, j in zip(xa, xb):
        if a.shape[i] != b.shape[j]:
            raise err(ShapeError, f"{name}: shapes {tuple(a.shape)} and {tuple(b.shape)} not aligned: "
                                  f"axis {i} of a has {a.shape[i]}, axis {j} of b has {b.shape[j]}")
    la: Labels = [("c", xa.index(i)) if i in xa else ("a", i) for i in range(a.ndim)]
    lb: Labels = [("c", xb.index(j)) if j in xb else ("b", j) for j in range(b.ndim)]
    out = [lab for lab in la if lab[0] == "a"] + [lab for lab in lb if lab[0] == "b"]
    return contract([a, b], [la, lb], out)


def tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """Sum products over ``axes``: the last ``axes`` of ``a`` with the first of ``b``, or two axis lists."""
    if not is_int(axes):
        axes = tuple(tuple(x) if isinstance(x, (list, tuple)) else x for x in axes) \
            if isinstance(axes, (list, tuple)) else axes
    return _eager.run("tensordot", _tensordot, (a, b), axes=axes)


def _dot(a: Any, b: Any) -> Any:
    a, b = _ops("dot", a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return _contract_axes("dot", a, b, [a.ndim - 1], [b.ndim - 1 if b.ndim == 1 else b.ndim - 2])


def dot(a: Any, b: Any, out: Any = None) -> Any:
    """NumPy's ``dot``: products of vectors, matrices, or the last axis of ``a`` with ``b``'s second-to-last."""
    if out is not None:
        raise err(UnsupportedError, "dot(..., out=) is not supported inside operators")
    return _eager.run("dot", _dot, (a, b))


def _inner(a: Any, b: Any) -> Any:
    a, b = _ops("inner", a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return _contract_axes("inner", a, b, [a.ndim - 1], [b.ndim - 1])


def inner(a: Any, b: Any) -> Any:
    """Sum of products over the last axes of ``a`` and ``b``."""
    return _eager.run("inner", _inner, (a, b))


def _vdot(a: Any, b: Any) -> Any:
    a, b = _ops("vdot", a, b)
    if a.size != b.size:
        raise err(ShapeError, f"vdot: operands of {a.size} and {b.size} elements")
    return _contract_axes("vdot", movement.reshape(a, (-1,)), movement.reshape(b, (-1,)), [0], [0])


def vdot(a: Any, b: Any) -> Any:
    """Dot product of the flattened operands (a 0-d result)."""
    return _eager.run("vdot", _vdot, (a, b))


def _outer(a: Any, b: Any) -> Any:
    a, b = _ops("outer", a, b)
    return movement.reshape(a, (-1, 1)) * movement.reshape(b, (1, -1))


def outer(a: Any, b: Any, out: Any = None) -> Any:
    """Outer product of the flattened operands: ``ravel(a)[:, None] * ravel(b)[None, :]``."""
    if out is not None:
        raise err(UnsupportedError, "outer(..., out=) is not supported inside operators")
    return _eager.run("outer", _outer, (a, b))


def _kron(a: Any, b: Any) -> Any:
    a, b = _ops("kron", a, b)
    nd = max(a.ndim, b.ndim)
    sa = [1] * (nd - a.ndim) + list(a.shape)
    sb = [1] * (nd - b.ndim) + list(b.shape)
    a2 = _reshape(a, [d for s in sa for d in (s, 1)])
    b2 = _reshape(b, [d for s in sb for d in (1, s)])
    return _reshape(a2 * b2, [x * y for x, y in zip(sa, sb)])


def kron(a: Any, b: Any) -> Any:
    """Kronecker product: blocks ``a[i, j] * b`` (operands of unequal rank get leading 1s)."""
    return _eager.run("kron", _kron, (a, b))
