"""Tensors and queues of the kernel language, named as in Ascend C.

``GlobalTensor``, ``LocalTensor``, ``TPipe``, ``TQue``, ``TBuf`` and ``QuePosition``.

Queue operations are checked while tracing: a loop body is traced once, so the queues'
state is the same in every iteration (the tracer checks each body leaves them unchanged).
"""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from ..errors import DTypeError, InvalidArgumentError, TraceError
from ._trace import Sym, expr, fail, int_op, state


def dtype_name(dtype: Any) -> str:
    """Return the pyasc name of a NumPy dtype (``"float32"``)."""
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise fail(DTypeError, f"{dtype!r} is not a dtype") from None


class QuePosition:
    """Logical positions of queues and buffers (Ascend C's ``QuePosition`` / ``TPosition``)."""

    VECIN = "VECIN"
    VECOUT = "VECOUT"
    VECCALC = "VECCALC"


class GlobalTensor:
    """A typed view ``[lo, hi)`` of one array argument of the kernel (global memory).

    Kernel arguments arrive as whole views; ``x[a:b]`` narrows a view (``x[a]`` is the view
    from ``a`` to its end, as Ascend C's ``xGm[offset]``), as does :meth:`set_global_buffer`.
    """

    def __init__(self, index: Optional[int] = None, dtype: Optional[str] = None, lo: Any = 0,
                 hi: Any = 0, size: int = 0) -> None:
        self.index, self.dtype, self.lo, self.hi, self.size = index, dtype, lo, hi, size

    @property
    def length(self) -> Any:
        """Elements in the view (an int, or a symbol known at launch)."""
        return int_op("sub", self.hi, self.lo)

    def _view(self, lo: Any, hi: Any) -> GlobalTensor:
        if self.index is None:
            raise fail(TraceError, "a GlobalTensor used before set_global_buffer")
        for v in (lo, hi):
            if isinstance(v, int) and v < 0:
                raise fail(InvalidArgumentError, f"global offset {v} is negative")
        lo_abs, hi_abs = expr(int_op("add", self.lo, lo)), expr(int_op("add", self.lo, hi))
        ints = [isinstance(v, int) for v in (lo_abs, hi_abs, self.hi)]
        if all(ints) and not (self.lo <= lo_abs <= hi_abs <= self.hi):
            raise fail(InvalidArgumentError, f"global slice {lo}:{hi} of a view of {self.hi - self.lo} elements "
                                             f"is out of bounds")
        return GlobalTensor(self.index, self.dtype, lo_abs, hi_abs, self.size)

    def __getitem__(self, key: Any) -> GlobalTensor:
        if isinstance(key, slice):
            if key.step not in (None, 1):
                raise fail(InvalidArgumentError, "a global slice takes no step")
            lo = 0 if key.start is None else key.start
            hi = self.length if key.stop is None else key.stop
            return self._view(expr(lo), expr(hi))
        return self._view(expr(key), self.length)

    def set_global_buffer(self, src: GlobalTensor, offset: Any = None, length: Any = None) -> None:
        """Point this tensor at ``length`` elements of ``src`` from ``offset``.

        Ascend C's ``SetGlobalBuffer(x + offset, length)``; ``set_global_buffer(src, length)``
        starts at 0.
        """
        if not isinstance(src, GlobalTensor) or src.index is None:
            raise fail(InvalidArgumentError, "set_global_buffer takes a kernel array argument or a view of it")
        if length is None:
            offset, length = 0, (src.length if offset is None else offset)
        v = src._view(expr(offset), int_op("add", offset, length))
        self.index, self.dtype, self.lo, self.hi, self.size = v.index, v.dtype, v.lo, v.hi, v.size

    def __repr__(self) -> str:
        return f"GlobalTensor(arg {self.index}, {self.dtype}, [{self.lo!r}, {self.hi!r}))"


class LocalTensor:
    """A tensor of ``cap`` elements at byte ``at`` of the block's Unified Buffer."""

    def __init__(self, dtype: str, at: int, cap: int, owner: Any = None, slot: int = -1) -> None:
        self.dtype, self.at, self.cap, self.owner, self.slot = dtype, at, cap, owner, slot

    @property
    def reg(self) -> int:
        """The tile register of this tensor in the trace."""
        return state().reg(self.dtype, self.at, self.cap)

    @property
    def size(self) -> int:
        """Capacity in elements."""
        return self.cap

    def __getitem__(self, key: Any) -> LocalTensor:
        start = key.start if isinstance(key, slice) else key
        start = 0 if start is None else start
        if not isinstance(start, int) or isinstance(start, (bool, Sym)) or not 0 <= start <= self.cap:
            raise fail(InvalidArgumentError, f"a local tensor offset must be an integer constant in 0..{self.cap}, "
                                             f"not {start!r}")
        item = np.dtype(self.dtype).itemsize
        return LocalTensor(self.dtype, self.at + start * item, self.cap - start, self.owner, self.slot)

    def reinterpret_cast(self, dtype: Any) -> LocalTensor:
        """Return the same bytes viewed as ``dtype`` (Ascend C's ``ReinterpretCast``)."""
        d = dtype_name(dtype)
        nbytes = self.cap * np.dtype(self.dtype).itemsize
        return LocalTensor(d, self.at, nbytes // np.dtype(d).itemsize, self.owner, self.slot)

    def __repr__(self) -> str:
        return f"LocalTensor({self.dtype}, {self.cap} elements at UB byte {self.at})"


class TQue:
    """A queue of ``depth`` buffers between pipeline stages (``TQue<QuePosition::VecIn, 2>``).

    ``depth=2`` is double buffering: two tensors may be allocated at once. On the host the
    stages of one block run in order, so depth changes scheduling on the device, not results.
    """

    def __init__(self, position: str = QuePosition.VECIN, depth: int = 1) -> None:
        if position not in (QuePosition.VECIN, QuePosition.VECOUT, QuePosition.VECCALC):
            raise fail(InvalidArgumentError, f"unknown queue position {position!r}")
        if depth not in (1, 2):
            raise fail(InvalidArgumentError, f"queue depth must be 1 or 2, not {depth!r}")
        self.position, self.depth = position, depth
        self.slots: List[int] = []
        self.nbytes = 0
        self.allocated: List[bool] = []
        self.fifo: List[LocalTensor] = []

    def snapshot(self) -> Any:
        """Return the queue's state (allocated slots and queued slots)."""
        return (tuple(self.allocated), tuple(t.slot for t in self.fifo))

    def alloc_tensor(self, dtype: Any) -> LocalTensor:
        """Take a free buffer of the queue as a tensor of ``dtype`` (``AllocTensor<T>()``)."""
        d = dtype_name(dtype)
        if not self.slots:
            raise fail(TraceError, "alloc_tensor on a queue without buffers (call pipe.init_buffer first)")
        for i, used in enumerate(self.allocated):
            if not used:
                self.allocated[i] = True
                return LocalTensor(d, self.slots[i], self.nbytes // np.dtype(d).itemsize, self, i)
        raise fail(TraceError, f"alloc_tensor beyond the queue's {len(self.slots)} buffer(s): free a tensor first")

    def enque(self, t: LocalTensor) -> None:
        """Hand an allocated tensor to the next stage (``EnQue``)."""
        if not isinstance(t, LocalTensor) or t.owner is not self or not self.allocated[t.slot]:
            raise fail(TraceError, "enque of a tensor not allocated from this queue")
        if any(q.slot == t.slot for q in self.fifo):
            raise fail(TraceError, "enque of a tensor already in the queue")
        self.fifo.append(t)

    def deque(self, dtype: Any = None) -> LocalTensor:
        """Take the oldest queued tensor (``DeQue<T>()``), viewed as ``dtype`` if given."""
        if not self.fifo:
            raise fail(TraceError, "deque from an empty queue (enque a tensor first)")
        t = self.fifo.pop(0)
        return t if dtype is None or dtype_name(dtype) == t.dtype else t.reinterpret_cast(dtype)

    def free_tensor(self, t: LocalTensor) -> None:
        """Give a tensor's buffer back to the queue (``FreeTensor``)."""
        if not isinstance(t, LocalTensor) or t.owner is not self or not self.allocated[t.slot]:
            raise fail(TraceError, "free_tensor of a tensor not allocated from this queue (or freed already)")
        if any(q.slot == t.slot for q in self.fifo):
            raise fail(TraceError, "free_tensor of a tensor still in the queue (deque it first)")
        self.allocated[t.slot] = False


class TBuf:
    """A scratch buffer of the Unified Buffer (``TBuf<TPosition::VECCALC>``), outside queues."""

    def __init__(self, position: str = QuePosition.VECCALC) -> None:
        self.position = position
        self.at: Optional[int] = None
        self.nbytes = 0

    def get(self, dtype: Any, count: Optional[int] = None) -> LocalTensor:
        """Return the buffer as a tensor of ``dtype`` (``Get<T>()``), optionally of ``count`` elements."""
        if self.at is None:
            raise fail(TraceError, "TBuf.get before pipe.init_buffer")
        d = dtype_name(dtype)
        cap = self.nbytes // np.dtype(d).itemsize
        if count is not None:
            if not isinstance(count, int) or not 0 <= count <= cap:
                raise fail(InvalidArgumentError, f"TBuf.get of {count!r} elements of a buffer of {cap}")
            cap = count
        return LocalTensor(d, self.at, cap)


class TPipe:
    """Owner of the block's Unified Buffer: ``init_buffer`` carves buffers for queues."""

    def __init__(self) -> None:
        self._st = state()

    def init_buffer(self, que: Any, num: int, nbytes: Optional[int] = None) -> None:
        """Give ``que`` ``num`` buffers of ``nbytes`` each (``InitBuffer(que, num, len)``).

        For a :class:`TBuf`: ``init_buffer(buf, nbytes)``.
        """
        if isinstance(que, TBuf):
            size = num if nbytes is None else nbytes
            if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
                raise fail(InvalidArgumentError, f"buffer size must be a positive integer constant, not {size!r}")
            que.at, que.nbytes = self._st.reserve(size, "TBuf"), size
            return
        if not isinstance(que, TQue):
            raise fail(InvalidArgumentError, f"init_buffer takes a TQue or TBuf, not {type(que).__name__}")
        if que.slots:
            raise fail(TraceError, "init_buffer called twice for one queue")
        if not isinstance(num, int) or not 1 <= num <= que.depth:
            raise fail(InvalidArgumentError, f"a queue of depth {que.depth} takes 1..{que.depth} buffers, not {num!r}")
        if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes <= 0:
            raise fail(InvalidArgumentError, f"buffer size must be a positive integer constant, not {nbytes!r}")
        que.slots = [self._st.reserve(nbytes, f"queue buffer {i + 1} of {num}") for i in range(num)]
        que.nbytes, que.allocated = nbytes, [False] * num
        self._st.queues.append(que)
        if num == 2:
            self._st.double_buffered = True
