"""The Python-bodied methods of the traced tensor, attached to ``pyasc._pyasc.Tensor`` here.

The tensor class is Rust (the graph node, arithmetic, the elementwise and reduction ops of the
op table). Methods whose bodies are Python (movement through ``pyasc.api.movement``, functional
updates through ``pyasc.api.updates``, NumPy's method signatures of reductions, statistics and
sorting, the NumPy protocols) are defined here and attached to the class when the package is
imported: the package wraps the native class, which never imports the package for them.
"""

from __future__ import annotations

import operator as _operator
from typing import Any, Callable, Dict

import numpy as np

from .. import _pyasc
from ..api import contractions, matrices, movement, scans, statistics, updates
from . import _composites, _methods, _numpy_api


def _reduction(name: str, doc: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return _numpy_api.reduce_method(name, self, args, kwargs or None)

    method.__doc__ = doc
    return method


def _module_method(fn: Callable[..., Any], doc: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__doc__ = doc
    return method


def _movement(name: str, doc: str) -> Callable[..., Any]:
    fn = getattr(movement, f"_method_{name}")

    def method(self: Any, *args: Any) -> Any:
        return fn(self, args)

    method.__doc__ = doc
    return method


def _inplace(name: str) -> Callable[[Any, Any], Any]:
    def method(self: Any, other: Any) -> Any:
        updates.inplace(self, name, other)
        return self

    method.__doc__ = f"In-place ``{name}``: a functional update of an array made in the operator."
    return method


def cumsum(self: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """Return running sums along ``axis`` (None: over the flattened tensor), NumPy ``cumsum``."""
    return scans._method_cumsum(self, axis, dtype, out)


def cumprod(self: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
    """Return running products along ``axis`` (None: over the flattened tensor), NumPy ``cumprod``."""
    return scans._method_cumprod(self, axis, dtype, out)


def conj(self: Any) -> Any:
    """Return the complex conjugate: a copy for real dtypes."""
    return _composites.conj(self)


def flatten(self: Any) -> Any:
    """Return the elements as one axis, a copy (later updates of this array do not change it)."""
    return updates.copy(movement._method_ravel(self, ()))


def swapaxes(self: Any, a: Any, b: Any) -> Any:
    """Swap two axes."""
    return movement._method_swapaxes(self, (_operator.index(a), _operator.index(b)))


def __getitem__(self: Any, key: Any) -> Any:
    """Indexing: ints, slices with any step, ``...``, ``None``, integer arrays (take)."""
    return movement.getitem(self, key)


def __setitem__(self: Any, key: Any, value: Any) -> None:
    """``y[key] = value``: a functional update of an array made in the function (arguments are never written)."""
    updates.setitem(self, key, value)


def copy(self: Any) -> Any:
    """Return a copy (a new array that later updates of this one do not change)."""
    return updates.copy(self)


def __array_ufunc__(self: Any, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """NumPy ufuncs on traced tensors record graph ops (see ``pyasc.core._numpy_api``)."""
    return _numpy_api.array_ufunc(ufunc, method, inputs, kwargs or None)


def __array_function__(self: Any, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    """NumPy functions on traced tensors record graph ops (see ``pyasc.core._numpy_api``)."""
    return _numpy_api.array_function(func, types, args, kwargs)


def _real(self: Any) -> Any:
    """Return the real part: the tensor itself for real dtypes."""
    return _composites.real(self)


def _imag(self: Any) -> Any:
    """Return the imaginary part: zeros of the tensor's dtype and shape for real dtypes."""
    return _composites.imag(self)


def _transposed(self: Any) -> Any:
    """Return the transpose (axes reversed)."""
    return movement._method_transpose(self, ())


def _matrix_transposed(self: Any) -> Any:
    """Return the transpose of the last two axes (NumPy's ``ndarray.mT``)."""
    return np.swapaxes(self, -1, -2)


def _at(self: Any) -> Any:
    """Return JAX's functional updates: ``x.at[idx].set(v)``, ``.add(v)``, ``.multiply(v)``, ``.get()``, ...."""
    return updates.At(self)


METHODS: Dict[str, Any] = {
    "sum": _reduction("sum", "Sum over ``axis`` (None: all axes)."),
    "mean": _reduction("mean", "Mean over ``axis`` (None: all axes)."),
    "max": _reduction("max", "Maximum over ``axis`` (None: all axes)."),
    "min": _reduction("min", "Minimum over ``axis`` (None: all axes)."),
    "prod": _reduction("prod", "Product over ``axis`` (None: all axes)."),
    "argmax": _reduction("argmax", "Index of the maximum along ``axis``."),
    "argmin": _reduction("argmin", "Index of the minimum along ``axis``."),
    "any": _reduction("any", "True where any element along ``axis`` is non-zero."),
    "all": _reduction("all", "True where every element along ``axis`` is non-zero."),
    "cumsum": cumsum,
    "cumprod": cumprod,
    "var": _module_method(statistics.var, "Variance over ``axis`` with ``ddof`` (NumPy's ``ndarray.var``)."),
    "std": _module_method(statistics.std, "Standard deviation over ``axis`` with ``ddof`` (NumPy's ``ndarray.std``)."),
    "clip": _module_method(statistics.clip, "Limit the values to ``[min, max]`` (NumPy's ``ndarray.clip``)."),
    "dot": _module_method(contractions.dot, "``np.dot(self, other)``."),
    "trace": _module_method(matrices.trace, "Sum of a diagonal (NumPy's ``ndarray.trace``)."),
    "diagonal": _module_method(matrices.diagonal, "A diagonal as a view (NumPy's ``ndarray.diagonal``)."),
    "argsort": _module_method(_methods.argsort, "Indices that sort along ``axis`` (NumPy's ``ndarray.argsort``)."),
    "argpartition": _module_method(_methods.argpartition,
                                   "Indices that partition around ``kth`` (NumPy's ``ndarray.argpartition``)."),
    "searchsorted": _module_method(_methods.searchsorted,
                                   "Insertion points of ``v`` in this sorted 1-D array (``ndarray.searchsorted``)."),
    "sort": _module_method(_methods.sort, "Sort in place along ``axis`` (a functional update)."),
    "partition": _module_method(_methods.partition, "Partition in place around ``kth`` (a functional update)."),
    "fill": _module_method(_methods.fill, "Set every element to ``value`` in place (a functional update)."),
    "put": _module_method(_methods.put, "Set the elements at flat indices in place (a functional update)."),
    "round": _module_method(_methods.round, "Round to ``decimals`` (NumPy's ``ndarray.round``)."),
    "take": _module_method(_methods.take, "Elements at ``indices`` along ``axis`` (NumPy's ``ndarray.take``)."),
    "compress": _module_method(_methods.compress,
                               "Slices where a static ``condition`` holds (NumPy's ``ndarray.compress``)."),
    "nonzero": _module_method(_methods.nonzero,
                              "Data-dependent: raises with the hint to use ``pyasc.nonzero(..., size=)``."),
    "conj": conj,
    "conjugate": conj,
    "transpose": _movement("transpose", "Permute the axes (``x.transpose(1, 0)`` or ``x.transpose((1, 0))``)."),
    "permute": _movement("permute", "Permute the axes in the order given (``x.permute(2, 0, 1)``)."),
    "reshape": _movement("reshape", "A new shape with the same elements in C order (one extent may be -1)."),
    "ravel": _movement("ravel", "The elements as one axis."),
    "squeeze": _movement("squeeze", "Drop axes of extent 1."),
    "flatten": flatten,
    "swapaxes": swapaxes,
    "copy": copy,
    "__getitem__": __getitem__,
    "__setitem__": __setitem__,
    "__array_ufunc__": __array_ufunc__,
    "__array_function__": __array_function__,
    "real": property(_real),
    "imag": property(_imag),
    "T": property(_transposed),
    "mT": property(_matrix_transposed),
    "at": property(_at),
}
METHODS.update({f"__i{name}__": _inplace(op) for name, op in [
    ("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "truediv"), ("floordiv", "floordiv"),
    ("mod", "mod"), ("pow", "pow"), ("and", "and"), ("or", "or"), ("xor", "xor"), ("lshift", "lshift"),
    ("rshift", "rshift"), ("matmul", "matmul")]})

for _name, _method in METHODS.items():
    setattr(_pyasc.Tensor, _name, _method)
