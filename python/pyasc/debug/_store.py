"""Where the intermediate results of ``debug=True`` operators are kept, and for how long.

The Rust core copies a debug operator's kernel outputs only while capture is switched on
(``_pyasc._set_debug_capture``). It is on while at least one debug server runs or one
``pyasc.debug.capture()`` block is open; when the last of them ends it goes off and the
process-wide store is emptied, so nothing is kept and nothing is copied.
"""

from __future__ import annotations

import itertools
import linecache
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import _pyasc
from ..core._live import operators, register  # noqa: F401 (the debug page's operator list)
from ..errors import PyAscWarning
from ._stats import summarize

#: Runs the process-wide store keeps while a debug server is active (oldest dropped first).
MAX_RUNS = 200
#: Bytes of intermediate results the process-wide store keeps (oldest runs dropped first; the
#: newest run is kept whatever its size).
MAX_BYTES = 1 << 30

_lock = threading.RLock()
_servers = 0
_captures: List[Capture] = []
_runs: List[Run] = []
_next_id = itertools.count(1)


@dataclass
class Intermediate:
    """One op's result in a debug run: kernel and function names, the array, the user's line, a summary."""

    index: int
    kernel: str
    op: str
    array: np.ndarray
    locations: List[Tuple[str, int]]
    source: str
    stats: Dict[str, Any] = field(repr=False)

    @property
    def shape(self) -> Tuple[int, ...]:
        """Shape of the result."""
        return tuple(self.array.shape)

    @property
    def dtype(self) -> str:
        """Dtype name of the result (as pyasc computed it)."""
        return str(self.stats["dtype"])


@dataclass
class Run:
    """One call of a ``debug=True`` operator while capture was on."""

    id: int
    operator: str
    time: float
    inputs: List[Tuple[str, Tuple[int, ...]]]
    intermediates: List[Intermediate]
    error: Optional[str]

    @property
    def nbytes(self) -> int:
        """Bytes of the kept results."""
        return sum(it.array.nbytes for it in self.intermediates)

    def summary(self) -> Dict[str, Any]:
        """Return the run without its arrays (what the server lists)."""
        return {"id": self.id, "operator": self.operator, "time": self.time, "error": self.error,
                "inputs": [{"dtype": d, "shape": list(s)} for d, s in self.inputs],
                "intermediates": len(self.intermediates), "nbytes": self.nbytes}


class Capture:
    """The runs recorded during one ``pyasc.debug.capture()`` block (see there)."""

    def __init__(self) -> None:
        self.runs: List[Run] = []
        self._open = False

    def __enter__(self) -> Capture:
        with _lock:
            _captures.append(self)
            self._open = True
            _update()
        return self

    def __exit__(self, *exc: Any) -> None:
        with _lock:
            if self._open:
                _captures.remove(self)
                self._open = False
                _update()

    def __repr__(self) -> str:
        return f"<pyasc.debug.Capture runs={len(self.runs)} open={self._open}>"


def _update() -> None:
    """Switch the core's capture to match the open blocks and servers; empty the store when off."""
    on = _servers > 0 or bool(_captures)
    _pyasc._set_debug_capture(on)
    if _servers == 0:
        _runs.clear()


def server_started() -> None:
    """Count a debug server that started (capture stays on while any runs)."""
    global _servers
    with _lock:
        _servers += 1
        _update()


def server_stopped() -> None:
    """Count a debug server that stopped."""
    global _servers
    with _lock:
        _servers = max(0, _servers - 1)
        _update()


def active() -> bool:
    """Whether debug operators keep their intermediate results now."""
    return bool(_pyasc._debug_capture_active())


def runs() -> List[Run]:
    """Return the runs the process-wide store holds (while a server is active), oldest first."""
    with _lock:
        return list(_runs)


def run_by_id(run_id: int) -> Optional[Run]:
    """Return the stored run with this id, if any."""
    with _lock:
        for r in _runs:
            if r.id == run_id:
                return r
    return None


def _to_array(dtype: str, shape: Tuple[int, ...], data: bytes) -> np.ndarray:
    """Return an owned NumPy array of a kernel output's bytes (bfloat16 widened to float32)."""
    if dtype == "bfloat16":
        bits = np.frombuffer(data, dtype=np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape).copy()


def _source_text(locs: List[Tuple[str, int]]) -> str:
    """Return the text of the first source line (stripped), or an empty string."""
    for file, line in locs:
        text = linecache.getline(file, line).strip()
        if text:
            return text
    return ""


def record_run(name: str, inputs: List[Tuple[str, List[int]]], records: List[Tuple[Any, ...]],
               error: Optional[str]) -> None:
    """Keep a debug run's kernel outputs (called by the core after each captured launch).

    A failure here never fails the user's operator call: it becomes a :class:`PyAscWarning`.
    """
    try:
        _record(name, inputs, records, error)
    except Exception as e:  # noqa: BLE001 - the debugger must not break the computation it watches
        warnings.warn(f"pyasc.debug could not keep a run of {name}: {type(e).__name__}: {e}", PyAscWarning,
                      stacklevel=2)


def _record(name: str, inputs: List[Tuple[str, List[int]]], records: List[Tuple[Any, ...]],
            error: Optional[str]) -> None:
    with _lock:
        if not _captures and _servers == 0:
            return
        items = []
        for i, (kernel, op, locs, dtype, shape, data) in enumerate(records):
            arr = _to_array(dtype, tuple(shape), data)
            locs = [(str(f), int(n)) for f, n in locs]
            items.append(Intermediate(i, kernel, op, arr, locs, _source_text(locs), summarize(arr, dtype)))
        run = Run(next(_next_id), name, time.time(), [(d, tuple(s)) for d, s in inputs], items, error)
        for c in _captures:
            c.runs.append(run)
        if _servers > 0:
            _runs.append(run)
            del _runs[:-MAX_RUNS]
            total = sum(r.nbytes for r in _runs)
            while len(_runs) > 1 and total > MAX_BYTES:
                total -= _runs.pop(0).nbytes
