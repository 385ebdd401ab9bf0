"""Streams, events and device arrays: asynchronous, stream-ordered work on device memory.

``pyasc.DeviceArray`` arguments make an operator call asynchronous: it is queued on the
current stream and returns DeviceArrays at once; ``.numpy()``, ``copy_to`` and the other
host accesses wait for the work that writes the array and raise its error, if any.
"""

from __future__ import annotations

from .. import _pyasc

DeviceArray = _pyasc.DeviceArray
Stream = _pyasc.Stream
Event = _pyasc.Event
current_stream = _pyasc.current_stream
synchronize = _pyasc.synchronize
to_device = _pyasc.to_device
empty = _pyasc.empty
from_dlpack = _pyasc.from_dlpack

__all__ = ["DeviceArray", "Stream", "Event", "stream", "current_stream", "synchronize", "to_device", "empty",
           "from_dlpack"]


def stream(s: Stream) -> Stream:
    """Use ``s`` as the current stream of this thread inside ``with pyasc.stream(s):``."""
    if not isinstance(s, Stream):
        from ..errors import InvalidArgumentError

        raise InvalidArgumentError(f"pyasc.stream() takes a pyasc.Stream, not {type(s).__name__}")
    return s
