"""An operator called on traced values runs its body in the caller's trace.

Inside another operator's body, a gradient or any other trace, ``op(t)`` with a traced tensor
``t`` is ``op``'s Python function applied to ``t``: the callee's ops join the caller's graph,
where they fuse with their neighbours and are differentiated with them. The caller's options
(precision, device) govern the combined trace.
"""

from __future__ import annotations

from typing import Any, Tuple

from .. import _hooks, _pyasc
from .pytree import tree_flatten

_Tensor = _pyasc.Tensor


def _traced(args: tuple) -> bool:
    for a in args:
        if type(a) is _Tensor:
            return True
        if isinstance(a, (list, tuple, dict)) and any(type(x) is _Tensor for x in tree_flatten(a)[0]):
            return True
    return False


def _call(op: Any, args: tuple) -> Any:
    return op.__wrapped__(*args)


def _no_plans(op: Any) -> Tuple[int, int, int, int]:
    return (0, 0, 0, 0)


def _nothing_to_clear(op: Any) -> None:
    return None


_hooks.register_companion("inline", order=-1, accepts=_traced, call=_call, cache_info=_no_plans,
                          cache_clear=_nothing_to_clear)
