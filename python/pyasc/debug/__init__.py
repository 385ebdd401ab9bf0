"""The operator debugger: every op's intermediate result of ``debug=True`` operators, on a local page.

An operator made with ``@pyasc.operator(debug=True)`` runs one op per kernel and checks each
kernel's output for NaN and infinity. While a debug server or a :func:`capture` block is
active it also keeps each op's result, with its shape, dtype, min/max/mean/std, NaN and Inf
counts, a histogram, a heatmap (2-D results) and the user's source line::

    import numpy as np, pyasc

    @pyasc.operator(debug=True)
    def normalize(x, scale, bias):
        return (x - bias) * scale

    server = pyasc.debug.serve(port=9090)    # http://127.0.0.1:9090/?token=...
    print(server.url)
    normalize(np.random.rand(256, 256).astype(np.float32), 2.0, 0.5)
    ...                                       # open the URL; server.stop() when done

    with pyasc.debug.capture() as cap:        # the same results without a server
        normalize(x, 2.0, 0.5)
    first = cap.runs[0].intermediates[0]      # .array, .shape, .dtype, .source, .stats

From a shell, ``pyasc debug serve --port 9090 -- python script.py`` runs the script in the
server's process and keeps serving its results until Ctrl-C; with no script it serves a demo.
The server listens on 127.0.0.1 only and answers 403 to requests without its token.
When neither a server nor a capture block is active nothing is copied or kept. Operators
launched with DeviceArray arguments (queued on a stream) are not captured.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from .. import _hooks
from ._server import DebugServer
from ._store import Capture, Intermediate, Run, active, register

__all__ = ["Capture", "DebugServer", "Intermediate", "Run", "active", "capture", "runs", "serve"]


def serve(port: int = 9090, token: Optional[str] = None) -> DebugServer:
    """Start the debug server on ``127.0.0.1:port`` in a background thread and return it.

    ``port=0`` picks a free port. ``token`` defaults to a random one; open ``server.url``
    (which carries it). Stop with ``server.stop()`` or use the server as a context manager.
    A port in use raises :class:`pyasc.InvalidArgumentError`.
    """
    return DebugServer(port=port, token=token)


def capture() -> Capture:
    """Return a context manager that records every run of ``debug=True`` operators inside it.

    ``with pyasc.debug.capture() as cap:`` then ``cap.runs`` lists :class:`Run` objects, each
    with ``intermediates`` (one :class:`Intermediate` per op: ``.array``, ``.shape``,
    ``.dtype``, ``.kernel``, ``.source``, ``.locations``, ``.stats``). Results are copied only
    while a block (or a server) is active; after the block the runs stay in ``cap.runs``.
    """
    return Capture()


def runs() -> List[Run]:
    """Return the runs the active debug servers hold (the last 200, at most 1 GiB of results), oldest first."""
    from ._store import runs as _runs

    return _runs()


def _record_run(name: str, inputs: List[Tuple[str, List[int]]], records: List[Tuple[Any, ...]],
                error: Optional[str]) -> None:
    """Receive a captured run from the core (see ``_store.record_run``)."""
    from ._store import record_run

    record_run(name, inputs, records, error)


_ = register  # re-exported for the decorators


_hooks.register("record_run", _record_run)
