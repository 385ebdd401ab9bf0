"""The elementwise op library: ``pyasc.exp``, ``pyasc.gelu``, ``pyasc.where``, ...

Inside an operator these record nodes on traced tensors. Called on NumPy arrays outside an
operator they run at once, each through a cached one-op operator (like ``jax.numpy``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Optional

from . import _pyasc

#: The unary ops exported as ``pyasc.<name>``, from the extension's op table.
UNARY_API = tuple(name for name, _kind, _ufuncs, api in _pyasc.UNARY_OPS if api)

__all__ = list(UNARY_API) + ["matmul", "round", "minimum", "maximum", "pow", "where", "clip", "cast", "negative", "add",
                    "subtract", "multiply", "divide"]

# Eager one-op operators by key, least recently used first; bounded like each operator's own
# plan cache (PYASC_CACHE_SIZE, default 512), so eager calls with ever new parameters keep
# memory flat.
_eager: OrderedDict[str, Any] = OrderedDict()


def _is_traced(*xs: Any) -> bool:
    return any(isinstance(x, _pyasc.Tensor) for x in xs)


def _eager_op(key: str, fn: Callable[..., Any]) -> Any:
    op = _eager.get(key)
    if op is None:
        from . import _env
        from .core.decorators import operator

        op = operator(fn, kernel_name=key)
        _eager[key] = op
        while len(_eager) > _env.cache_size():
            _eager.popitem(last=False)
    else:
        _eager.move_to_end(key)
    return op


def _unary(name: str) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        if _is_traced(x):
            return _pyasc.apply_unary(name, x)
        if getattr(x, "_pyasc_complex", False) is True:
            from .core._complex import apply_unary

            return apply_unary(name, x)
        return _eager_op(name, f)(x)

    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"Elementwise ``{name}`` (NumPy dtype rules; integers compute in float64)."
    return f


for _name in UNARY_API:
    globals()[_name] = _unary(_name)
negative = _unary("neg")
negative.__name__ = "negative"


def _check_integer_power(a: Any, b: Any) -> None:
    """NumPy refuses integers to negative integer powers (a ValueError); so does eager ``pow``."""
    import numpy as np

    if isinstance(a, _pyasc.DeviceArray) or isinstance(b, _pyasc.DeviceArray):
        return
    try:
        ka, vb = np.asarray(a).dtype.kind, np.asarray(b)
    except Exception:  # noqa: BLE001 - not array-like: the operator call reports it
        return
    if ka in "iu" and vb.dtype.kind in "iu" and vb.size and (vb < 0).any():
        from .errors import InvalidArgumentError, at_user_line

        raise at_user_line(InvalidArgumentError("integers to negative integer powers are not allowed"))


def _binary(name: str, public: str) -> Callable[[Any, Any], Any]:
    def f(a: Any, b: Any) -> Any:
        if _is_traced(a, b):
            return _pyasc.apply_binary(name, a, b)
        if name == "pow":
            _check_integer_power(a, b)
        return _eager_op(name, lambda x, y: _pyasc.apply_binary(name, x, y))(a, b)

    f.__name__ = public
    f.__qualname__ = public
    f.__doc__ = f"Elementwise ``{public}`` with NumPy broadcasting and type promotion."
    return f


minimum = _binary("minimum", "minimum")
maximum = _binary("maximum", "maximum")
pow = _binary("pow", "pow")  # noqa: A001 - the API's name
add = _binary("add", "add")
subtract = _binary("sub", "subtract")
multiply = _binary("mul", "multiply")
divide = _binary("div", "divide")


def matmul(a: Any, b: Any) -> Any:
    """Matrix product with NumPy's ``matmul`` rules (batched, broadcast batch dims, 1-D operands)."""
    if _is_traced(a, b):
        return _pyasc.apply_matmul(a, b)
    return _eager_op("matmul", lambda x, y: _pyasc.apply_matmul(x, y))(a, b)


def where(cond: Any, a: Any, b: Any) -> Any:
    """Elementwise ``a if cond else b``, broadcasting all three (``np.where`` with three arguments)."""
    if _is_traced(cond, a, b):
        return _pyasc.apply_where(cond, a, b)
    return _eager_op("where", lambda c, x, y: _pyasc.apply_where(c, x, y))(cond, a, b)


def clip(x: Any, a_min: Optional[Any] = None, a_max: Optional[Any] = None) -> Any:
    """Limit values to ``[a_min, a_max]`` (either may be None), propagating NaN like ``np.clip``."""
    if a_min is None and a_max is None:
        from .errors import InvalidArgumentError

        raise InvalidArgumentError("clip needs a_min or a_max")
    if a_min is not None:
        x = maximum(x, a_min)
    if a_max is not None:
        x = minimum(x, a_max)
    return x


def round(x: Any, decimals: int = 0) -> Any:  # noqa: A001 - the API's name
    """Round half to even (``np.round``); ``decimals`` scales by a power of ten first, as NumPy does."""
    if decimals == 0:
        if _is_traced(x):
            return _pyasc.apply_unary("round", x)
        return _eager_op("round", lambda t: _pyasc.apply_unary("round", t))(x)
    import numpy as np

    dtype = np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype
    if dtype.kind in "biu":
        # Integers keep their dtype: unchanged for decimals >= 0, else rounded (half to even)
        # to a multiple of 10**-decimals, as NumPy does.
        if decimals >= 0:
            return x
        scale = 10.0 ** -decimals
        return cast(multiply(round(divide(x, scale)), scale), dtype)
    scale = 10.0 ** decimals
    return divide(round(multiply(x, scale)), scale)


def cast(x: Any, dtype: Any) -> Any:
    """Convert to ``dtype`` with NumPy's ``astype`` semantics."""
    if _is_traced(x):
        return _pyasc.apply_cast(x, dtype)
    import numpy as np

    key = f"cast_{np.dtype(dtype).name}"
    return _eager_op(key, lambda t: _pyasc.apply_cast(t, dtype))(x)


# Detection ops (``pyasc.ops.box_iou``, ``nms``, ``batched_nms``, ``nms_mask``, ``filter_rows``), one
# module of their own.
from .nn.detection import batched_nms, box_iou, filter_rows, nms, nms_mask  # noqa: E402,F401
