"""Small record types returned by pyasc objects."""

from __future__ import annotations

from typing import NamedTuple


class CacheInfo(NamedTuple):
    """Statistics of an operator's compile cache (``op.cache_info()``)."""

    hits: int
    misses: int
    compiles: int
    currsize: int
