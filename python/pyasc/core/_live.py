"""The operators of the process that are still alive, kept weakly for the debug page.

Operator decorators register what they make here, so that ``pyasc.debug`` can list them
without being imported until someone uses it.
"""

from __future__ import annotations

import weakref
from typing import Any, List

_operators: weakref.WeakSet[Any] = weakref.WeakSet()


def register(op: Any) -> Any:
    """Remember an operator (weakly) so the debug page can list it; returns it."""
    try:
        _operators.add(op)
    except TypeError:  # an object without weak references: not listed
        pass
    return op


def operators() -> List[Any]:
    """Return the operators of the process still alive, in no particular order."""
    return list(_operators)
