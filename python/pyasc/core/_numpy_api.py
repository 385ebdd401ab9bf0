"""NumPy's protocols on traced tensors: ``__array_ufunc__`` and ``__array_function__``.

``np.exp(x)``, ``x + np_scalar``, ``np.where(c, a, b)``, ``np.clip``... inside an operator map
onto the op library. NumPy calls on plain numbers (``np.sqrt(dim)``) never reach here and
stay numbers.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np

from .. import _pyasc, ops
from ..api import selection, sorting
from ..errors import UnsupportedError, at_user_line
from . import _composites, _numpy_more

# NumPy ufunc name -> op name, from the extension's op table.
_UFUNC_UNARY = {uf: name for name, _kind, ufuncs, _api in _pyasc.UNARY_OPS for uf in ufuncs}
_UFUNC_BINARY = {uf: name for name, _class, ufuncs, _comm in _pyasc.BINARY_OPS for uf in ufuncs}

_LOGICAL = {"logical_and": "and", "logical_or": "or", "logical_xor": "xor"}


def _operand(like: Any, x: Any) -> Any:
    """Convert a Python list or tuple of numbers to a constant array, as NumPy converts it."""
    return _pyasc.apply_constant_array(like, np.asarray(x)) if isinstance(x, (list, tuple)) else x


def _as_bool(x: Any) -> Any:
    return ops.cast(x, "bool") if isinstance(x, _pyasc.Tensor) else bool(x)


def _is_complex(x: Any) -> bool:
    """Return True for complex traced values and complex numbers or arrays."""
    return (getattr(x, "_pyasc_complex", False) is True or isinstance(x, complex)
            or (isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind == "c"))


def array_ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: Dict[str, Any]) -> Any:
    """Dispatch a NumPy ufunc call whose operands include a traced tensor."""
    if any(_is_complex(x) for x in inputs):
        from . import _complex

        return _complex.array_ufunc(ufunc, method, inputs, dict(kwargs or {}))
    name = ufunc.__name__
    if method == "accumulate":
        from ..api import scans

        return scans.accumulate(ufunc, *inputs, **(kwargs or {}))
    if method == "at" or (kwargs or {}).get("out") is not None:
        from ..api import updates

        return updates.array_ufunc(ufunc, method, inputs, dict(kwargs or {}))
    if method != "__call__":
        raise at_user_line(UnsupportedError(f"np.{name}.{method} is not supported inside operators yet"))
    kwargs = dict(kwargs or {})
    dtype = kwargs.pop("dtype", None)
    if kwargs:
        raise at_user_line(
            UnsupportedError(f"np.{name}(..., {', '.join(kwargs)}=...) is not supported inside operators"))
    like = next((x for x in inputs if isinstance(x, _pyasc.Tensor)), None)
    if like is not None:
        inputs = tuple(_operand(like, x) for x in inputs)
    if name in _composites.UFUNCS:
        result = _composites.UFUNCS[name](*inputs)
    elif name in _UFUNC_UNARY:
        result = _pyasc.apply_unary(_UFUNC_UNARY[name], inputs[0])
    elif name == "matmul":
        result = _pyasc.apply_matmul(inputs[0], inputs[1])
    elif name in _UFUNC_BINARY:
        result = _pyasc.apply_binary(_UFUNC_BINARY[name], inputs[0], inputs[1])
    elif name in _LOGICAL:
        result = _pyasc.apply_binary(_LOGICAL[name], _as_bool(inputs[0]), _as_bool(inputs[1]))
    elif name == "logical_not":
        result = _pyasc.apply_unary("not", _as_bool(inputs[0]))
    else:
        raise at_user_line(UnsupportedError(f"np.{name} is not supported inside operators yet"))
    if dtype is None and all(x.is_weak for x in inputs if isinstance(x, _pyasc.Tensor)) and not any(
        isinstance(x, np.ndarray) for x in inputs
    ):
        # A ufunc of Python scalars returns NumPy scalars, which are strongly typed.
        result = tuple(_strong(r) for r in result) if isinstance(result, tuple) else _strong(result)
    if dtype is not None:
        result = tuple(ops.cast(r, dtype) for r in result) if isinstance(result, tuple) else ops.cast(result, dtype)
    return result


def _strong(x: Any) -> Any:
    return ops.cast(x, x.dtype) if isinstance(x, _pyasc.Tensor) and x.is_weak else x


def _where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None or y is None:
        raise at_user_line(
            UnsupportedError("np.where with one argument (nonzero indices) is not supported inside operators"))
    return ops.where(condition, x, y)


def _round(a: Any, decimals: int = 0, out: Any = None) -> Any:
    if out is not None:
        raise at_user_line(UnsupportedError("np.round(..., out=) is not supported inside operators"))
    return ops.round(a, decimals)


def _astype(x: Any, dtype: Any, copy: bool = True, **kw: Any) -> Any:
    return ops.cast(x, dtype)


_INITIAL = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}


def _reduce(name: str) -> Callable[..., Any]:
    def impl(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
             initial: Any = None, where: Any = True) -> Any:
        from ..api import reductions

        if out is not None or where is not True:
            raise at_user_line(UnsupportedError(f"np.{name}(..., out=/where=) is not supported inside operators"))
        if initial is not None and name not in _INITIAL:
            raise at_user_line(TypeError(f"np.{name}() got an unexpected keyword argument 'initial'"))
        r = getattr(reductions, name)(a if dtype is None else ops.cast(a, dtype), axis, keepdims)
        if dtype is not None and np.dtype(r.dtype) != np.dtype(dtype):
            r = ops.cast(r, dtype)  # an explicit accumulator dtype is the result's (sums wrap in it)
        if initial is not None:
            # The initial value joins every reduction: NumPy casts it to the result's dtype.
            r = getattr(np, _INITIAL[name])(r, np.asarray(initial, dtype=r.dtype)[()])
        return r

    return impl


#: NumPy's method signatures of the reductions (after ``self``).
_METHOD_PARAMS = {
    **{n: ("axis", "dtype", "out", "keepdims") for n in ("sum", "prod", "mean")},
    **{n: ("axis", "out", "keepdims") for n in ("max", "min", "any", "all", "argmax", "argmin")},
}


def reduce_method(name: str, a: Any, args: tuple, kwargs: Any) -> Any:
    """``a.<name>(*args, **kwargs)`` for a traced tensor, with the NumPy method's signature."""
    params = _METHOD_PARAMS[name]
    if len(args) > len(params) or (name.startswith("arg") and len(args) > 2):
        raise at_user_line(TypeError(f"{name}() takes at most {len(params)} positional arguments"))
    kw = dict(zip(params, args))
    for k, v in (kwargs or {}).items():
        if k in kw:
            raise at_user_line(TypeError(f"{name}() got multiple values for argument '{k}'"))
        kw[k] = v
    return _FUNCTIONS[name](a, **kw)


def _arg(name: str) -> Callable[..., Any]:
    def impl(a: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        from ..api import reductions

        if out is not None:
            raise at_user_line(UnsupportedError(f"np.{name}(..., out=) is not supported inside operators"))
        return getattr(reductions, name)(a, axis, keepdims)

    return impl


def _scan(name: str) -> Callable[..., Any]:
    def impl(*args: Any, **kwargs: Any) -> Any:
        from ..api import scans

        return getattr(scans, f"numpy_{name}")(*args, **kwargs)

    return impl


def _movement(name: str) -> Callable[..., Any]:
    def impl(*args: Any, **kwargs: Any) -> Any:
        from ..api import movement

        return getattr(movement, name)(*args, **kwargs)

    return impl


_FUNCTIONS: Dict[str, Callable[..., Any]] = {
    "reshape": _movement("reshape"),
    "transpose": _movement("transpose"),
    "broadcast_to": _movement("broadcast_to"),
    "expand_dims": _movement("expand_dims"),
    "squeeze": _movement("squeeze"),
    "flip": _movement("flip"),
    "swapaxes": _movement("swapaxes"),
    "moveaxis": _movement("moveaxis"),
    "pad": _movement("pad"),
    "concatenate": _movement("concatenate"),
    "stack": _movement("stack"),
    "take": _movement("take"),
    "matmul": lambda a, b, **kw: _pyasc.apply_matmul(a, b),
    "sum": _reduce("sum"),
    "mean": _reduce("mean"),
    "prod": _reduce("prod"),
    "max": _reduce("max"),
    "amax": _reduce("max"),
    "min": _reduce("min"),
    "amin": _reduce("min"),
    "any": _reduce("any"),
    "all": _reduce("all"),
    "argmax": _arg("argmax"),
    "argmin": _arg("argmin"),
    "cumsum": _scan("cumsum"),
    "cumprod": _scan("cumprod"),
    "cumulative_sum": _scan("cumulative_sum"),
    "cumulative_prod": _scan("cumulative_prod"),
    "nancumsum": _scan("nancumsum"),
    "nancumprod": _scan("nancumprod"),
    "where": _where,
    "round": _round,
    "around": _round,
    "astype": _astype,
    **_composites.FUNCTIONS,
    **sorting.FUNCTIONS,
    **_numpy_more.FUNCTIONS,
    **selection.FUNCTIONS,
}


def array_function(func: Any, types: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """Dispatch a NumPy function call whose arguments include a traced tensor."""
    flat = [a for x in args for a in (x if isinstance(x, (list, tuple)) else (x,))]
    if any(_is_complex(x) for x in flat):
        from . import _complex

        impl = _complex._FUNCTIONS.get(func.__name__)
        if impl is None:
            raise at_user_line(UnsupportedError(f"np.{func.__name__} of complex values is not supported inside "
                                                "operators yet"))
        result = impl(*args, **kwargs)
        # NumPy functions make arrays of Python numbers first: the result is strongly typed.
        weak = func.__name__ in _complex.KEEPS_WEAK or not all(_complex._is_weak(x) for x in flat)
        return result if weak else _complex._strong(result)
    impl = _FUNCTIONS.get(func.__name__)
    if impl is None:
        raise at_user_line(UnsupportedError(f"np.{func.__name__} is not supported inside operators yet"))
    return impl(*args, **kwargs)
