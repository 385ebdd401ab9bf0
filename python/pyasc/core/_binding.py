"""Binding keyword arguments of an operator call to the function's parameters."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .. import _hooks
from ..errors import InvalidArgumentError


def bind(func: Callable[..., Any], args: tuple, kwargs: dict) -> tuple:
    """Return the positional arguments equivalent to ``func(*args, **kwargs)``, defaults applied."""
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except TypeError as e:
        raise InvalidArgumentError(f"{getattr(func, '__name__', 'operator')}(): {e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise InvalidArgumentError("operators take positional or named parameters, not **kwargs")
    return tuple(bound.args)


_hooks.register("bind", bind)
