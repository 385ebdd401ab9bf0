"""The Python-bodied methods of the native operator class, attached to it here.

``pyasc._pyasc.Operator`` is the Rust core of ``@pyasc.operator``: the signature cache and the
launch path. The methods below are written in Python around it: statistics and clearing that
include the companion operators of ``pyasc._hooks`` (complex numbers, containers), the accuracy
check and the NPU estimate. The package wraps the native class; the native class never imports
the package for them.
"""

from __future__ import annotations

from typing import Any

from .. import _hooks, _pyasc
from ._types import CacheInfo


def cache_info(self: Any) -> CacheInfo:
    """Return hits, misses, compiles and entries, companion operators' plans included."""
    own = self._core_cache_info()
    extra = _hooks.companion_cache_info(self)
    return CacheInfo(*(a + b for a, b in zip(own, extra)))


def cache_clear(self: Any) -> None:
    """Drop every compiled plan, companion operators' included (statistics are kept)."""
    self._core_cache_clear()
    _hooks.companion_cache_clear(self)


def check_accuracy(self: Any, *args: Any) -> Any:
    """Compare a call on ``args`` with the same function in float64 (see ``pyasc.check_accuracy``)."""
    from .accuracy import check_accuracy as check

    return check(self, *args)


def estimate(self: Any, *args: Any, **kwargs: Any) -> Any:
    """Predict a call's duration on the modelled Ascend NPU (see ``pyasc.device.npu_cost.estimate``)."""
    from ..device.npu_cost import estimate as predict

    return predict(self, *args, **kwargs)


for _method in (cache_info, cache_clear, check_accuracy, estimate):
    setattr(_pyasc.Operator, _method.__name__, _method)
