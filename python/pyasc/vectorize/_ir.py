"""The masked SSA that vectorized operators compile to: registers, values and a builder.

Statements are tuples in the form the Rust binding reads (``("binary", "add", dst, a, b)``,
``("while", cond, [carried], [body])``, ...); registers are ``(dtype name, constant or
None)``. :class:`Value` is what the compiler passes around: a register or a not yet
materialised constant, with its :class:`~pyasc.vectorize._types.VType`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ._types import VType


class Value:
    """A compiled expression: register ``reg`` (None for a constant not yet placed) of type ``t``."""

    __slots__ = ("reg", "t", "const")

    def __init__(self, reg: Optional[int], t: VType, const: Any = None) -> None:
        self.reg = reg
        self.t = t
        self.const = const

    def __repr__(self) -> str:
        return f"Value(r{self.reg}, {self.t.dtype}{' weak' if self.t.weak else ''}, {self.const!r})"


class Builder:
    """Registers and nested statement lists of one compiled function."""

    def __init__(self) -> None:
        self.regs: List[Tuple[str, Any]] = []
        self.stack: List[List[tuple]] = [[]]
        self._consts: Dict[Tuple[str, str, Any], int] = {}

    @property
    def body(self) -> List[tuple]:
        """The top-level statements."""
        return self.stack[0]

    def new(self, dtype: np.dtype) -> int:
        """Add a fresh tile register of ``dtype``."""
        self.regs.append((np.dtype(dtype).name, None))
        return len(self.regs) - 1

    def const(self, dtype: np.dtype, value: Any) -> int:
        """Add (or reuse) a scalar register holding ``value`` converted to ``dtype`` (NumPy's errors)."""
        dt = np.dtype(dtype)
        v = dt.type(value).item()
        if dt.kind == "f":
            v = float(v)
        key = (dt.name, type(v).__name__, repr(v))
        reg = self._consts.get(key)
        if reg is None:
            self.regs.append((dt.name, v))
            reg = self._consts[key] = len(self.regs) - 1
        return reg

    def emit(self, stmt: tuple) -> None:
        """Append a statement to the innermost open body."""
        self.stack[-1].append(stmt)

    def op(self, kind: str, name: Optional[str], dtype: np.dtype, *srcs: int) -> int:
        """Emit ``dst = kind name(srcs)`` into a new register of ``dtype``; returns it."""
        dst = self.new(dtype)
        if name is None:
            self.emit((kind, dst, *srcs))
        else:
            self.emit((kind, name, dst, *srcs))
        return dst

    def uses_loops(self) -> bool:
        """Tell whether a ``while`` statement was emitted."""
        def walk(stmts: List[tuple]) -> bool:
            return any(s[0] == "while" for s in stmts)
        return walk(self.body)


def _reads(s: tuple) -> List[int]:
    k = s[0]
    if k == "load":
        return []
    if k == "store":
        return [s[1]]
    if k in ("unary", "binary"):
        return list(s[3:])
    if k == "chain":
        return list(s[5:])
    if k == "while":
        return [s[1], *s[2]]
    return list(s[2:])  # select, cast, copy


def _writes(s: tuple) -> Optional[int]:
    if s[0] in ("unary", "binary"):
        return s[2]
    if s[0] == "chain":
        return s[4]
    if s[0] in ("store", "while"):
        return None
    return s[1]


def _collect_reads(stmts: List[tuple], read: set) -> None:
    for s in stmts:
        read.update(_reads(s))
        if s[0] == "while":
            _collect_reads(s[3], read)


def _prune(stmts: List[tuple], read: set) -> Tuple[List[tuple], bool]:
    out, changed = [], False
    for s in stmts:
        if s[0] == "while":
            inner, ch = _prune(s[3], read)
            changed |= ch
            out.append((s[0], s[1], s[2], inner))
            continue
        w = _writes(s)
        if w is not None and w not in read:
            changed = True
            continue
        out.append(s)
    return out, changed


def eliminate_dead(body: List[tuple]) -> List[tuple]:
    """Drop statements whose result is never read (loads of unused arguments too)."""
    while True:
        read: set = set()
        _collect_reads(body, read)
        body, changed = _prune(body, read)
        if not changed:
            return body


def _all_writes(stmts: List[tuple]) -> set:
    out = set()
    for s in stmts:
        if s[0] == "while":
            out |= _all_writes(s[3])
        elif _writes(s) is not None:
            out.add(_writes(s))
    return out


def _with_dst(s: tuple, dst: int) -> tuple:
    if s[0] in ("unary", "binary"):
        return (s[0], s[1], dst, *s[3:])
    return (s[0], dst, *s[2:])


def _read_counts(body: List[tuple]) -> Dict[int, int]:
    """How many statements read each register, loop bodies included."""
    read: Dict[int, int] = {}

    def count(stmts: List[tuple]) -> None:
        for s in stmts:
            for r in _reads(s):
                read[r] = read.get(r, 0) + 1
            if s[0] == "while":
                count(s[3])

    count(body)
    return read


def coalesce_copies(body: List[tuple]) -> List[tuple]:
    """Write loop-carried registers directly instead of through a temporary and a copy.

    ``t = f(...); ...; c = copy(t)`` becomes ``...; c = f(...)`` when ``t`` is read by the copy
    only, ``f`` does not read ``c`` and nothing in between writes ``f``'s operands.
    """
    read = _read_counts(body)

    def walk(stmts: List[tuple]) -> List[tuple]:
        stmts = [(s[0], s[1], s[2], walk(s[3])) if s[0] == "while" else s for s in stmts]
        j = 0
        while j < len(stmts):
            s = stmts[j]
            if s[0] == "copy" and read.get(s[2], 0) == 1:
                c, t = s[1], s[2]
                i = next((k for k in range(j) if stmts[k][0] != "while" and _writes(stmts[k]) == t), None)
                if i is not None and c not in _reads(stmts[i]):
                    between = stmts[i + 1:j]
                    if not (set(_reads(stmts[i])) | {c}) & _all_writes(between):
                        moved = _with_dst(stmts[i], c)
                        stmts = stmts[:i] + between + [moved] + stmts[j + 1:]
                        j -= 1
                        continue
            j += 1
        return stmts

    return walk(body)


def _defs(stmts: List[tuple], out: Dict[int, Any]) -> None:
    for s in stmts:
        if s[0] == "while":
            _defs(s[3], out)
        w = _writes(s)
        if w is not None:
            out[w] = s if w not in out else None  # None: written more than once


def narrow_floats(body: List[tuple], regs: List[Tuple[str, Any]]) -> List[tuple]:
    """Compute float32 ``+ - * /`` and ``sqrt`` done in float64 and rounded back in float32.

    ``float32(op(float64(a), float64(b)))`` equals ``op(a, b)`` in float32 for these correctly
    rounded operations (float64 has more than twice float32's precision plus two bits), as in
    ``math.sqrt(v)`` on a float32 ``v`` whose result is stored as float32.
    """
    defs: Dict[int, Any] = {}
    _defs(body, defs)

    def narrow(r: int) -> Optional[int]:
        """Find a float32 register holding the float64 value of ``r`` exactly (constants: -1 - reg)."""
        d, const = regs[r]
        if const is not None and d == "float64" and float(np.float32(const)) == const:
            return -1 - r  # a constant: -1 - its register
        s = defs.get(r)
        if s is not None and s[0] == "cast" and regs[s[2]][0] == "float32" and d == "float64":
            return s[2]
        return None

    def rewrite(stmts: List[tuple]) -> List[tuple]:
        out = []
        for s in stmts:
            if s[0] == "while":
                out.append((s[0], s[1], s[2], rewrite(s[3])))
                continue
            if s[0] == "cast" and regs[s[1]][0] == "float32" and regs[s[2]][0] == "float64":
                inner = defs.get(s[2])
                if inner is not None and inner[0] == "unary" and inner[1] == "sqrt":
                    a = narrow(inner[3])
                    if a is not None and a >= 0:
                        out.append(("unary", "sqrt", s[1], a))
                        continue
                if inner is not None and inner[0] == "binary" and inner[1] in ("add", "sub", "mul", "div"):
                    a, b = narrow(inner[3]), narrow(inner[4])
                    if a is not None and b is not None and (a >= 0 or b >= 0):
                        ra = a if a >= 0 else _const32(regs, -1 - a)
                        rb = b if b >= 0 else _const32(regs, -1 - b)
                        out.append(("binary", inner[1], s[1], ra, rb))
                        continue
            out.append(s)
        return out

    return rewrite(body)


def _const32(regs: List[Tuple[str, Any]], r: int) -> int:
    regs.append(("float32", float(regs[r][1])))
    return len(regs) - 1


_ARITH = ("add", "sub", "mul")


def form_chains(body: List[tuple], regs: List[Tuple[str, Any]]) -> List[tuple]:
    """Fuse float ``t = a op1 b; d = t op2 c`` (``t`` read once) into one two-op chain statement.

    Each operation is still rounded on its own, so results are unchanged; a loop body runs one
    pass over its tile instead of two.
    """
    read = _read_counts(body)

    def walk(stmts: List[tuple]) -> List[tuple]:
        out: List[tuple] = []
        for s in stmts:
            if s[0] == "while":
                out.append((s[0], s[1], s[2], walk(s[3])))
                continue
            fused = None
            if s[0] == "binary" and s[1] in _ARITH and regs[s[2]][0] in ("float32", "float64"):
                for slot in (3, 4):
                    t = s[slot]
                    other = s[7 - slot]
                    if read.get(t, 0) != 1 or t == other:
                        continue
                    i = next((k for k in range(len(out) - 1, -1, -1) if _writes(out[k]) == t), None)
                    if i is None or out[i][0] != "binary" or out[i][1] not in _ARITH:
                        continue
                    d1 = out[i]
                    a, b = d1[3], d1[4]
                    dt = regs[s[2]][0]
                    if any(regs[r][0] != dt for r in (a, b, other, t)) or s[2] in (a, b, other):
                        continue
                    if {a, b, other} & _all_writes(out[i + 1:]):
                        continue
                    fused = (i, ("chain", d1[1], s[1], slot == 4, s[2], a, b, other))
                    break
            if fused is None:
                out.append(s)
            else:
                i, chain = fused
                del out[i]
                out.append(chain)
        return out

    return walk(body)


def count_ops(stmts: List[tuple]) -> int:
    """Statements in ``stmts``, loop bodies included."""
    return sum(1 + (count_ops(s[3]) if s[0] == "while" else 0) for s in stmts)
