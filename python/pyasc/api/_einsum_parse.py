"""Parsing ``einsum`` subscripts into label lists, with NumPy's rules.

Labels are letters; ``...`` stands for the broadcast axes of each operand, given labels of
their own (the ints ``0, 1, ...`` counted from the right). Without ``->`` the output is the
ellipsis axes followed by the labels seen once, in ASCII order.
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple, Union

from ..core._axes import err, is_int
from ..errors import InvalidArgumentError, ShapeError

Label = Union[str, int]


def _term(term: str, nd: int, n_ell: List[int], where: str) -> List[Label]:
    """Labels of one operand's subscripts; ``n_ell`` collects the ellipsis widths."""
    if term.count("...") > 1 or term.replace("...", "").count(".") > 0:
        raise err(InvalidArgumentError, f"einsum: {where} has an invalid ellipsis in {term!r}")
    head, dots, tail = term.partition("...")
    for c in head + tail:
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            raise err(InvalidArgumentError, f"einsum: invalid subscript {c!r} in {term!r} (letters and '...' only)")
    letters = len(head) + len(tail)
    if not dots:
        if letters != nd:
            raise err(ShapeError, f"einsum: {where} has {letters} subscripts in {term!r} but {nd} dimensions")
        return list(head)
    width = nd - letters
    if width < 0:
        raise err(ShapeError, f"einsum: {where} has more subscripts in {term!r} than its {nd} dimensions")
    n_ell.append(width)
    return list(head) + [width - 1 - i for i in range(width)] + list(tail)


def parse(subscripts: str, ndims: Sequence[int]) -> Tuple[List[List[Label]], List[Label]]:
    """Return each operand's labels and the output's labels for ``subscripts``."""
    s = subscripts.replace(" ", "")
    if s.count("->") > 1 or s.count("-") != s.count("->") or s.count(">") != s.count("->"):
        raise err(InvalidArgumentError, f"einsum: invalid output arrow in {subscripts!r}")
    lhs, arrow, rhs = s.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise err(InvalidArgumentError,
                  f"einsum: {len(terms)} operand subscripts in {subscripts!r} for {len(ndims)} operands")
    widths: List[int] = []
    ins = [_term(t, nd, widths, f"operand {i}") for i, (t, nd) in enumerate(zip(terms, ndims))]
    n_ell = max(widths, default=0)
    ell = [n_ell - 1 - i for i in range(n_ell)]
    if not arrow:
        seen = [c for t in ins for c in t if isinstance(c, str)]
        return ins, ell + sorted(c for c in set(seen) if seen.count(c) == 1)
    if rhs.count("...") > 1 or rhs.replace("...", "").count(".") > 0:
        raise err(InvalidArgumentError, f"einsum: the output has an invalid ellipsis in {rhs!r}")
    head, dots, tail = rhs.partition("...")
    out: List[Label] = list(head) + (ell if dots else []) + list(tail)
    letters = [c for c in out if isinstance(c, str)]
    known = {c for t in ins for c in t}
    for c in letters:
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            raise err(InvalidArgumentError, f"einsum: invalid subscript {c!r} in the output {rhs!r}")
        if c not in known:
            raise err(InvalidArgumentError, f"einsum: output subscript {c!r} does not appear in the inputs")
        if letters.count(c) > 1:
            raise err(InvalidArgumentError, f"einsum: output subscript {c!r} appears more than once")
    if not dots and any(w > 0 for w in widths):
        raise err(ShapeError, "einsum: the inputs have '...' dimensions but the output has no '...' to hold them")
    return ins, out


def _letter(i: Any) -> str:
    if not is_int(i) or not 0 <= int(i) < 52:
        raise err(InvalidArgumentError, f"einsum: a sublist subscript must be an int in [0, 52), not {i!r}")
    i = int(i)
    return chr(ord("A") + i) if i < 26 else chr(ord("a") + i - 26)


def _sublist(sub: Any) -> str:
    return "".join("..." if s is Ellipsis else _letter(s) for s in sub)


def from_sublists(args: Sequence[Any]) -> Tuple[str, List[Any]]:
    """Turn ``einsum(op0, sublist0, op1, sublist1, ..., [out])`` into a subscripts string and operands."""
    ops = list(args[0::2])
    subs = list(args[1::2])
    out = None
    if len(args) % 2 == 1:
        out = ops.pop()
        out = _sublist(out)
    s = ",".join(_sublist(x) for x in subs)
    return (s if out is None else f"{s}->{out}"), ops
