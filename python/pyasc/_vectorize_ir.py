"""The masked SSA that vectorized operators compile to: registers, values and a builder.

Statements are tuples in the form the Rust binding reads (``("binary", "add", dst, a, b)``,
``("while", cond, [carried], [body])``, ...); registers are ``(dtype name, constant or
None)``. :class:`Value` is what the compiler passes around: a register or a not yet
materialised constant, with its :class:`~pyasc._vectorize_types.VType`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ._vectorize_types import VType


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
    if k == "while":
        return [s[1], *s[2]]
    return list(s[2:])  # select, cast, copy


def _writes(s: tuple) -> Optional[int]:
    if s[0] in ("unary", "binary"):
        return s[2]
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


def coalesce_copies(body: List[tuple]) -> List[tuple]:
    """Write loop-carried registers directly instead of through a temporary and a copy.

    ``t = f(...); ...; c = copy(t)`` becomes ``...; c = f(...)`` when ``t`` is read by the copy
    only, ``f`` does not read ``c`` and nothing in between writes ``f``'s operands.
    """
    read: Dict[int, int] = {}

    def count(stmts: List[tuple]) -> None:
        for s in stmts:
            for r in _reads(s):
                read[r] = read.get(r, 0) + 1
            if s[0] == "while":
                count(s[3])

    count(body)

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


def count_ops(stmts: List[tuple]) -> int:
    """Statements in ``stmts``, loop bodies included."""
    return sum(1 + (count_ops(s[3]) if s[0] == "while" else 0) for s in stmts)
