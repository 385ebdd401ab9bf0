"""Trace state of the kernel language: symbolic integers, tensors, queues and loops.

A kernel body runs once per signature with :class:`Sym` integers standing for values known
only at launch (the block index, integer arguments, loop variables). Every data movement and
vector instruction it calls appends one statement tuple to the current body (the format of
``pyasc._pyasc.BlockKernelPlan``); a ``range`` loop runs its body once, into a nested body.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Dict, List, Optional, Tuple

from ..device.npu_twin import NPU_910B
from ..errors import InvalidArgumentError, OutOfMemoryError, PyAscError, TraceError, at_user_line

#: Unified Buffer bytes per block (one AI Core's, from the NPU twin's model).
UB_BYTES = NPU_910B.ub_bytes
#: Transfer unit of ``data_copy`` and the alignment of buffers in the Unified Buffer.
ALIGN = 32

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_local = threading.local()


def fail(cls: type, msg: str) -> PyAscError:
    """Return an error of ``cls`` at the user's line (the innermost frame outside pyasc)."""
    return at_user_line(cls(msg))


def site() -> Optional[Tuple[str, int]]:
    """``(file, line)`` of the innermost frame outside pyasc: the kernel line being traced."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_HERE):
        f = f.f_back
    return (f.f_code.co_filename, f.f_lineno) if f is not None else None


def state() -> TraceState:
    """Return the trace in progress on this thread."""
    st = getattr(_local, "state", None)
    if st is None:
        raise fail(TraceError, "pyasc.lang functions are only available inside a @pyasc.kernel function")
    return st


class Sym:
    """An integer known only at launch (block index, integer argument, loop variable).

    Supports ``+ - * // %`` with integers and other symbols; it has no truth value (branches
    on it cannot be traced once), use :func:`pyasc.lang.min` / ``max`` for bounds.
    """

    __slots__ = ("e",)

    def __init__(self, e: Any) -> None:
        self.e = e

    def _bin(self, op: str, other: Any, swap: bool = False) -> Any:
        a, b = (other, self) if swap else (self, other)
        return int_op(op, a, b)

    def __add__(self, o: Any) -> Any:
        return self._bin("add", o)

    def __radd__(self, o: Any) -> Any:
        return self._bin("add", o, True)

    def __sub__(self, o: Any) -> Any:
        return self._bin("sub", o)

    def __rsub__(self, o: Any) -> Any:
        return self._bin("sub", o, True)

    def __mul__(self, o: Any) -> Any:
        return self._bin("mul", o)

    def __rmul__(self, o: Any) -> Any:
        return self._bin("mul", o, True)

    def __floordiv__(self, o: Any) -> Any:
        return self._bin("floordiv", o)

    def __rfloordiv__(self, o: Any) -> Any:
        return self._bin("floordiv", o, True)

    def __mod__(self, o: Any) -> Any:
        return self._bin("mod", o)

    def __rmod__(self, o: Any) -> Any:
        return self._bin("mod", o, True)

    def __neg__(self) -> Any:
        return int_op("sub", 0, self)

    def __bool__(self) -> bool:
        raise fail(TraceError, "a kernel value known only at launch (block index, integer argument, loop "
                               "variable) cannot decide a Python branch; use pyasc.lang.min/max for bounds")

    def __index__(self) -> int:
        raise fail(TraceError, "a kernel value known only at launch cannot be used as a Python integer; "
                               "loop over it with range() inside the kernel")

    __int__ = __index__

    def _compare(self, other: Any) -> bool:
        raise fail(TraceError, "a kernel value known only at launch cannot be compared in Python; use "
                               "pyasc.lang.min/max for bounds, or compare() on tensors")

    __lt__ = __le__ = __gt__ = __ge__ = _compare

    def __repr__(self) -> str:
        return f"Sym({self.e!r})"


_FOLD = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
         "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "min": min, "max": max}


def expr(v: Any, what: str = "an offset or count") -> Any:
    """Return the expression tuple (or int) of an integer or :class:`Sym`."""
    if isinstance(v, Sym):
        return v.e
    if isinstance(v, tuple):
        return v
    if isinstance(v, bool) or not isinstance(v, int):
        try:
            import numpy as np

            if isinstance(v, np.integer):
                return int(v)
        except ImportError:  # pragma: no cover
            pass
        raise fail(TraceError, f"{what} must be an integer or a kernel integer, not {type(v).__name__}")
    return v


def int_op(op: str, a: Any, b: Any) -> Any:
    """Apply ``op`` to integers and symbols, folded when both are known."""
    ea, eb = expr(a), expr(b)
    if isinstance(ea, int) and isinstance(eb, int):
        if op in ("floordiv", "mod") and eb == 0:
            raise fail(InvalidArgumentError, "integer division by zero in a kernel")
        return _FOLD[op](ea, eb)
    return Sym((op, ea, eb))


class TraceState:
    """Everything one trace collects: registers, Unified Buffer use, loop variables, body."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.regs: List[Tuple[str, Any, int, int]] = []
        self._reg_ids: Dict[Tuple[str, Any, int, int], int] = {}
        self.ub_used = 0
        self.vars = 0
        self.bodies: List[List[Any]] = [[]]
        self.queues: List[Any] = []
        self.globals: List[str] = []
        self.nargs = 0
        self.open_loops = 0
        self.double_buffered = False

    def emit(self, stmt: Tuple[Any, ...]) -> None:
        """Append a statement to the innermost body."""
        self.bodies[-1].append(stmt)

    def reg(self, dtype: str, at: int, cap: int) -> int:
        """Return the register of a local tensor of ``cap`` elements at byte ``at``."""
        return self._intern((dtype, None, at, cap))

    def const(self, dtype: str, value: Any) -> int:
        """Return the register of a constant."""
        return self._intern((dtype, value, 0, 0))

    def _intern(self, key: Tuple[str, Any, int, int]) -> int:
        k = key if key[1] is None else (key[0], (type(key[1]).__name__, key[1]), 0, 0)
        r = self._reg_ids.get(k)
        if r is None:
            r = self._reg_ids[k] = len(self.regs)
            self.regs.append(key)
        return r

    def reserve(self, nbytes: int, what: str) -> int:
        """Byte offset of ``nbytes`` new bytes of the Unified Buffer (32-byte aligned)."""
        at = self.ub_used
        size = -(-nbytes // ALIGN) * ALIGN
        if at + size > UB_BYTES:
            raise fail(OutOfMemoryError, f"{what} needs {size} bytes of the Unified Buffer at byte {at}: "
                                         f"{at + size} bytes exceed its {UB_BYTES} bytes per core")
        self.ub_used = at + size
        return at

    def queue_state(self) -> Tuple[Any, ...]:
        """Return a snapshot of every queue (compared around loop bodies)."""
        return tuple(q.snapshot() for q in self.queues)


def begin(name: str) -> TraceState:
    """Start a trace on this thread."""
    if getattr(_local, "state", None) is not None:
        raise fail(TraceError, "a @pyasc.kernel cannot be launched from inside another kernel")
    st = _local.state = TraceState(name)
    return st


def end() -> None:
    """End the trace on this thread."""
    _local.state = None


def kernel_range(*args: Any) -> Any:
    """``range`` inside a kernel: one traced loop whose bounds may be known only at launch.

    The body is traced once; its queue operations must leave every queue as they found it.
    """
    st = state()
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    elif len(args) in (2, 3):
        start, stop, step = args[0], args[1], (args[2] if len(args) == 3 else 1)
    else:
        raise fail(TraceError, f"range expected 1 to 3 arguments, got {len(args)}")
    if isinstance(step, Sym) or not isinstance(step, int) or isinstance(step, bool) or step <= 0:
        raise fail(TraceError, f"a kernel loop's step must be a positive integer constant, not {step!r}")
    lo, hi = expr(start, "a loop bound"), expr(stop, "a loop bound")
    where = site()
    return _loop(st, lo, hi, step, where)


def _loop(st: TraceState, lo: Any, hi: Any, step: int, where: Any) -> Any:
    var = st.vars
    st.vars += 1
    before = st.queue_state()
    body: List[Any] = []
    st.bodies.append(body)
    st.open_loops += 1
    yield Sym(("var", var))
    st.open_loops -= 1
    st.bodies.pop()
    if st.queue_state() != before:
        exc = TraceError("a kernel loop body must leave every queue as it found it (each tensor allocated "
                         "in an iteration enqueued, dequeued and freed in it)")
        if where is not None:
            exc.filename, exc.lineno = where
            exc.args = (f"{exc.args[0]} (at {where[0]}:{where[1]})",)
        raise exc
    st.emit(("loop", var, lo, hi, step, body))
