"""Complex numbers (``complex64``, ``complex128``) inside operators, as pairs of real values.

An operator called with complex arguments runs a companion operator whose arguments are the
real and imaginary parts (zero-copy strided views of the complex arrays). Inside, each complex
value is a :class:`ComplexTensor` holding two real traced tensors, and its arithmetic is built
from real ops: ``+ - * /`` (Smith's division), ``**``, ``==``/``!=``, ``abs exp log sqrt sin cos
tanh conj real imag angle``, sums, means, products and matmul, with NumPy 2's promotion
(``complex64`` with ``float64`` or ``int32`` gives ``complex128``; Python numbers are weak).
Complex results come back as complex NumPy arrays.
"""

from __future__ import annotations

import weakref
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import _hooks, _pyasc
from ..errors import UnsupportedError

__all__ = ["ComplexTensor"]


def _is_part(x: Any) -> bool:
    return isinstance(x, (_pyasc.Tensor, float, int))


def _complex_dtype(part: Any) -> np.dtype:
    if isinstance(part, _pyasc.Tensor) and part.dtype == np.float32:
        return np.dtype(np.complex64)
    return np.dtype(np.complex128)


def _unify(re: Any, im: Any) -> Tuple[Any, Any]:
    """Give both parts one float dtype (the promotion of both, at least float32)."""
    dts = [x.dtype for x in (re, im) if isinstance(x, (_pyasc.Tensor, np.generic))]
    if not dts:
        return float(re), float(im)
    dt = np.result_type(*dts, np.float32) if all(d.kind in "biu" for d in dts) else np.result_type(*dts)
    if dt.kind != "f":
        dt = np.dtype(np.float64)
    typed = (_pyasc.Tensor, np.generic)
    re = re.astype(dt) if isinstance(re, typed) and re.dtype != dt else re
    im = im.astype(dt) if isinstance(im, typed) and im.dtype != dt else im
    if isinstance(re, _pyasc.Tensor) and isinstance(im, _pyasc.Tensor) and re.shape != im.shape:
        # Both parts have the value's shape (a real (4, 3) plus a complex (3,) has a (3,) imag).
        re, im = re + np.zeros_like(im), im + np.zeros_like(re)
    return re, im


def _zeros(like: Any) -> Any:
    return np.zeros_like(like) if isinstance(like, _pyasc.Tensor) else 0.0


def _u(name: str, x: Any) -> Any:
    """Apply the real function ``name`` to a part.

    Weak (Python-number) parts stay weak, as inside NumPy's own complex loops (``np.exp`` of a
    weak tensor would make it a strong NumPy scalar).
    """
    if isinstance(x, _pyasc.Tensor):
        return _pyasc.apply_unary(name, x)
    return float(getattr(np, name)(x))


def _b(name: str, x: Any, y: Any) -> Any:
    """Apply the real function ``name`` to two parts (see :func:`_u`)."""
    if isinstance(x, _pyasc.Tensor) or isinstance(y, _pyasc.Tensor):
        return _pyasc.apply_binary(name, x, y)
    return float(getattr(np, name)(x, y))


class ComplexTensor:
    """A complex traced value.

    Its real and imaginary parts are real traced tensors (or Python floats for constants).
    """

    _pyasc_complex = True
    __array_priority__ = 1000

    def __init__(self, re: Any, im: Any) -> None:
        self.re, self.im = _unify(re, im)

    # -- what NumPy code reads -----------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        """``complex64`` for float32 parts, ``complex128`` otherwise."""
        part = self.re if isinstance(self.re, _pyasc.Tensor) else self.im
        return _complex_dtype(part)

    @property
    def shape(self) -> tuple:
        """The broadcast shape of the parts."""
        return np.broadcast_shapes(*(p.shape for p in (self.re, self.im) if isinstance(p, _pyasc.Tensor)))

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape))

    @property
    def real(self) -> Any:
        """The real part (a real traced tensor of the value's shape)."""
        return self._map(lambda p: p).re

    @property
    def imag(self) -> Any:
        """The imaginary part (a real traced tensor of the value's shape)."""
        return self._map(lambda p: p).im

    def conj(self) -> ComplexTensor:
        """Return the complex conjugate."""
        return ComplexTensor(self.re, -self.im)

    conjugate = conj

    def astype(self, dtype: Any) -> Any:
        """Convert: to a complex dtype both parts convert, to a real one the real part does."""
        dt = np.dtype(dtype)
        if dt.kind == "c":
            part = np.float32 if dt == np.complex64 else np.float64
            return ComplexTensor(_as(self.re, part), _as(self.im, part))
        return _as(self.re, dt)

    @property
    def T(self) -> ComplexTensor:  # noqa: N802 - NumPy's name
        """The transpose."""
        return self._map(lambda p: p.T)

    def reshape(self, *shape: Any) -> ComplexTensor:
        """Both parts reshaped."""
        return self._map(lambda p: p.reshape(*shape))

    def __getitem__(self, key: Any) -> ComplexTensor:
        return self._map(lambda p: p[key])

    def _map(self, f: Any) -> ComplexTensor:
        re = self.re if isinstance(self.re, _pyasc.Tensor) else self.re + _zeros(self.im)
        im = self.im if isinstance(self.im, _pyasc.Tensor) else self.im + _zeros(self.re)
        return ComplexTensor(f(re), f(im))

    def sum(self, axis: Any = None, keepdims: bool = False) -> ComplexTensor:
        """Sum of the parts."""
        return self._map(lambda p: p.sum(axis=axis, keepdims=keepdims))

    def mean(self, axis: Any = None, keepdims: bool = False) -> ComplexTensor:
        """Mean of the parts."""
        return self._map(lambda p: p.mean(axis=axis, keepdims=keepdims))

    def cumsum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> ComplexTensor:
        """Return the running sums of the parts (NumPy ``cumsum``)."""
        return _scans().numpy_cumsum(self, axis, dtype, out)

    def cumprod(self, axis: Any = None, dtype: Any = None, out: Any = None) -> ComplexTensor:
        """Raise ``UnsupportedError``: running products of complex values are not supported."""
        raise _unsupported("cumprod of complex values")

    def prod(self, axis: Any = None, keepdims: bool = False) -> ComplexTensor:
        """Product: complex multiplications in a balanced tree along each axis."""
        z = self._map(lambda p: p)
        z.re.prod(axis=axis, keepdims=keepdims)  # the axes are checked as for a real product
        axes = range(z.ndim) if axis is None else [axis] if isinstance(axis, int) else list(axis)
        axes = sorted({a % z.ndim for a in axes}, reverse=True) if z.ndim else []
        for a in axes:
            z = _prod_axis(z, a)
        if keepdims:
            for a in sorted(axes):
                z = z._map(lambda p, a=a: np.expand_dims(p, a))
        return z

    # -- arithmetic -----------------------------------------------------------------------
    def __neg__(self) -> ComplexTensor:
        return ComplexTensor(-self.re, -self.im)

    def __pos__(self) -> ComplexTensor:
        return self

    def __abs__(self) -> Any:
        return _b("hypot", self.re, self.im)

    def __add__(self, o: Any) -> Any:
        return binary("add", self, o)

    def __radd__(self, o: Any) -> Any:
        return binary("add", o, self)

    def __sub__(self, o: Any) -> Any:
        return binary("sub", self, o)

    def __rsub__(self, o: Any) -> Any:
        return binary("sub", o, self)

    def __mul__(self, o: Any) -> Any:
        return binary("mul", self, o)

    def __rmul__(self, o: Any) -> Any:
        return binary("mul", o, self)

    def __truediv__(self, o: Any) -> Any:
        return binary("div", self, o)

    def __rtruediv__(self, o: Any) -> Any:
        return binary("div", o, self)

    def __pow__(self, o: Any) -> Any:
        return binary("pow", self, o)

    def __rpow__(self, o: Any) -> Any:
        return binary("pow", o, self)

    def __matmul__(self, o: Any) -> Any:
        return binary("matmul", self, o)

    def __rmatmul__(self, o: Any) -> Any:
        return binary("matmul", o, self)

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        return binary("eq", self, o)

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        return binary("ne", self, o)

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        from ..errors import TraceError

        raise TraceError("the truth value of a traced complex value is unknown while tracing")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
        impl = _FUNCTIONS.get(func.__name__)
        if impl is None:
            raise _unsupported(f"np.{func.__name__} of complex values")
        result = impl(*args, **kwargs)
        flat = [a for x in args for a in (x if isinstance(x, (list, tuple)) else (x,))]
        # NumPy functions make arrays of Python numbers first: the result is strongly typed.
        weak = func.__name__ in KEEPS_WEAK or not all(_is_weak(x) for x in flat)
        return result if weak else _strong(result)

    def __repr__(self) -> str:
        return f"ComplexTensor({self.dtype}, shape={self.shape})"


def _as(p: Any, dtype: Any) -> Any:
    return p.astype(dtype) if isinstance(p, _pyasc.Tensor) else p


def _unsupported(what: str) -> Exception:
    from ._numpy_api import at_user_line

    return at_user_line(UnsupportedError(f"{what} is not supported inside operators yet"))


def _parts(x: Any) -> Tuple[Any, Any, bool]:
    """``(re, im, is_complex)`` of an operand."""
    if isinstance(x, ComplexTensor):
        return x.re, x.im, True
    if isinstance(x, complex):
        return x.real, x.imag, True
    if isinstance(x, (np.ndarray, np.generic)) and np.asarray(x).dtype.kind == "c":
        part = np.float32 if np.asarray(x).dtype == np.complex64 else np.float64
        if isinstance(x, np.generic):
            return part(x.real), part(x.imag), True
        return x.real, x.imag, True  # views: captured arrays, read at every call
    return x, None, False


def _mul(a: Any, b: Any, c: Any, d: Any) -> Tuple[Any, Any]:
    """Multiply ``(a + bi)(c + di)``; ``None`` parts are zero."""
    if b is None and d is None:
        return a * c, None
    if d is None:
        return a * c, b * c
    if b is None:
        return a * c, a * d
    return a * c - b * d, a * d + b * c


def _div(a: Any, b: Any, c: Any, d: Any) -> Tuple[Any, Any]:
    """Divide ``(a + bi) / (c + di)`` by Smith's method (no overflow of ``c² + d²``)."""
    if d is None:
        return a / c, (None if b is None else b / c)
    b = 0.0 if b is None else b
    if isinstance(c, (int, float)) and isinstance(d, (int, float)):
        # A Python complex divisor: its ratios stay Python floats, weak as NumPy's (NEP 50),
        # so complex64 / (1.5-0.5j) stays complex64.
        if abs(c) >= abs(d):
            r = d / c if c else 0.0
            den = c + d * r
            return (a + b * r) / den, (b - a * r) / den
        r = c / d
        den = c * r + d
        return (a * r + b) / den, (b * r - a) / den
    big = _u("abs", c) >= _u("abs", d)
    # Both branches are computed; each is finite where it is chosen.
    r1 = np.where(big, d / np.where(c == 0, 1.0, c), 0.0)
    den1 = c + d * r1
    r2 = np.where(big, 0.0, c / np.where(d == 0, 1.0, d))
    den2 = c * r2 + d
    re = np.where(big, (a + b * r1) / den1, (a * r2 + b) / den2)
    im = np.where(big, (b - a * r1) / den1, (b * r2 - a) / den2)
    return re, im


def _promoted(*parts: Any) -> List[Any]:
    """Convert the parts to the float dtype of the result.

    That is NumPy's promotion of their real dtypes; Python numbers are weak.
    """
    typed = [p for p in parts if isinstance(p, (_pyasc.Tensor, np.generic, np.ndarray))]
    strong = [p for p in typed if not getattr(p, "is_weak", False)]  # weak values follow (NEP 50)
    dts = [p.dtype for p in (strong or typed)]
    if not dts:
        return list(parts)
    dt = np.result_type(*dts)
    if dt.kind != "f":
        dt = np.dtype(np.float64)
    out = []
    for p in parts:
        if isinstance(p, (_pyasc.Tensor, np.ndarray)) and p.dtype != dt:
            p = p.astype(dt)
        elif isinstance(p, np.generic) and p.dtype != dt:
            p = dt.type(p)
        out.append(p)
    return out


def binary(name: str, x: Any, y: Any) -> Any:
    """Apply a binary operator of which one operand is complex."""
    a, b, xc = _parts(x)
    c, d, yc = _parts(y)
    if not (xc or yc):
        return _pyasc.apply_binary(name, x, y)
    if name != "pow":
        a, b, c, d = (None if v is None else v for v in _promoted_opt(a, b, c, d))
    if name == "add":
        return ComplexTensor(a + c, _add_opt(b, d))
    if name == "sub":
        return ComplexTensor(a - c, _add_opt(b, None if d is None else -d))
    if name == "mul":
        re, im = _mul(a, b, c, d)
        return ComplexTensor(re, im if im is not None else _zeros(re))
    if name == "div":
        re, im = _div(a, b, c, d)
        return ComplexTensor(re, im if im is not None else _zeros(re))
    if name in ("eq", "ne"):
        same = (a == c) & ((0.0 if b is None else b) == (0.0 if d is None else d))
        return same if name == "eq" else ~same
    if name == "matmul":
        a, b = _matmul_parts(a, b)
        c, d = _matmul_parts(c, d)
        re = a @ c if b is None or d is None else a @ c - b @ d
        parts = [p for p in ((b @ c) if b is not None else None, (a @ d) if d is not None else None) if p is not None]
        im = _zeros(re) if not parts else parts[0] if len(parts) == 1 else parts[0] + parts[1]
        return ComplexTensor(re, im)
    if name == "pow":
        return _pow(x, y)
    raise _unsupported(f"{name} of complex values")


def _matmul_parts(re: Any, im: Any) -> Tuple[Any, Any]:
    """Parts of a matmul operand as tensors of its shape; a zero constant part is ``None``.

    A real tensor lifted by ``+ 0j`` has the Python float 0.0 as its imaginary part.
    """
    if im is not None and not isinstance(im, _pyasc.Tensor):
        im = None if im == 0 else im + np.zeros_like(re)
    if not isinstance(re, _pyasc.Tensor) and isinstance(im, _pyasc.Tensor):
        re = re + np.zeros_like(im)
    return re, im


def _promoted_opt(*parts: Any) -> List[Any]:
    present = [p for p in parts if p is not None]
    conv = iter(_promoted(*present))
    return [None if p is None else next(conv) for p in parts]


def _add_opt(b: Any, d: Any) -> Any:
    if b is None:
        return 0.0 if d is None else d
    return b if d is None else b + d


def _lift(x: Any) -> ComplexTensor:
    a, b, _ = _parts(x)
    return x if isinstance(x, ComplexTensor) else ComplexTensor(a, 0.0 if b is None else b)


def _pow(x: Any, y: Any) -> Any:
    """Compute ``x ** y``.

    A small integer exponent known when traced multiplies repeatedly; others use ``exp(y log x)``.
    """
    if isinstance(y, (int, np.integer)) and not isinstance(y, bool) and abs(int(y)) <= 64:
        n = int(y)
        z, acc = _lift(x), None
        for _ in range(abs(n)):
            acc = z if acc is None else acc * z
        if acc is None:
            return ComplexTensor(_zeros(z.re) + 1.0, _zeros(z.im))
        return (1.0 / acc) if n < 0 else acc
    return exp(_lift(y) * log(_lift(x)))


# -- functions ----------------------------------------------------------------------------


def exp(z: ComplexTensor) -> ComplexTensor:
    """``e^a (cos b + i sin b)``."""
    m = _u("exp", z.re)
    # A zero imaginary part stays exactly zero (exp(inf + 0j) is inf + 0j), as in NumPy.
    return ComplexTensor(m * _u("cos", z.im), np.where(z.im == 0, z.im, m * _u("sin", z.im)))


def log(z: ComplexTensor) -> ComplexTensor:
    """``log|z| + i arg z``."""
    return ComplexTensor(_u("log", _b("hypot", z.re, z.im)), _b("arctan2", z.im, z.re))


def sqrt(z: ComplexTensor) -> ComplexTensor:
    """Return the principal square root (branch cut along the negative real axis, as NumPy's)."""
    a, b = z.re, z.im
    t = _u("sqrt", (_u("abs", a) + _b("hypot", a, b)) * 0.5)
    safe = np.where(t == 0, 1.0, t)
    re = np.where(a >= 0, t, _u("abs", b) / (2 * safe))
    im = np.where(a >= 0, b / (2 * safe), _b("copysign", t, b))
    return ComplexTensor(np.where(t == 0, 0.0, re), np.where(t == 0, b, im))


def sin(z: ComplexTensor) -> ComplexTensor:
    """``sin a cosh b + i cos a sinh b``."""
    return ComplexTensor(_u("sin", z.re) * _u("cosh", z.im), _u("cos", z.re) * _u("sinh", z.im))


def cos(z: ComplexTensor) -> ComplexTensor:
    """``cos a cosh b - i sin a sinh b``."""
    return ComplexTensor(_u("cos", z.re) * _u("cosh", z.im), -(_u("sin", z.re) * _u("sinh", z.im)))


def tanh(z: ComplexTensor) -> ComplexTensor:
    """Kahan's formula; for ``|a| > 22`` the limit ``±1 + 4i sin b cos b e^(-2|a|)``."""
    a, b = z.re, z.im
    t = _u("tan", b)
    beta = 1.0 + t * t
    s = _u("sinh", a)
    rho = _u("sqrt", 1.0 + s * s)
    den = 1.0 + beta * s * s
    big = _u("abs", a) > 22.0
    re = np.where(big, _b("copysign", 1.0, a), beta * rho * s / den)
    im = np.where(big, 4.0 * _u("sin", b) * _u("cos", b) * _u("exp", -2.0 * _u("abs", a)), t / den)
    return ComplexTensor(re, im)


_PYASC_NAMES = {"abs": "absolute", "neg": "negative"}


def apply_unary(name: str, z: Any) -> Any:
    """``pyasc.<name>`` of a complex traced value."""
    fn = _UNARY.get(_PYASC_NAMES.get(name, name))
    if fn is None:
        raise _unsupported(f"pyasc.{name} of complex values")
    return fn(_lift(z))


def _prod_axis(z: ComplexTensor, axis: int) -> ComplexTensor:
    n = z.shape[axis]
    if n == 0:
        zero = z.re.sum(axis=axis)  # traced zeros of the reduced shape and the parts' dtype
        return ComplexTensor(zero + 1.0, zero)
    z = z._map(lambda p: np.moveaxis(p, axis, -1))
    while n > 1:
        h = n // 2
        left, right = z[..., :h], z[..., h:2 * h]
        p = left * right
        if n % 2:
            last = z[..., 2 * h:]
            p = ComplexTensor(np.concatenate([p.re, last.re], axis=-1), np.concatenate([p.im, last.im], axis=-1))
        z, n = p, h + n % 2
    return z[..., 0]


_UNARY = {
    "exp": exp, "log": log, "sqrt": sqrt, "sin": sin, "cos": cos, "tanh": tanh,
    "negative": lambda z: -z, "positive": lambda z: z, "conjugate": lambda z: z.conj(),
    "absolute": abs, "square": lambda z: z * z, "reciprocal": lambda z: 1.0 / z,
    "isfinite": lambda z: np.isfinite(z.re) & np.isfinite(z.im),
    "isnan": lambda z: np.isnan(z.re) | np.isnan(z.im),
    "isinf": lambda z: np.isinf(z.re) | np.isinf(z.im),
}
_BINARY = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div",
           "power": "pow", "equal": "eq", "not_equal": "ne", "matmul": "matmul"}


def array_ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: Dict[str, Any]) -> Any:
    """Apply a NumPy ufunc of which an operand is complex."""
    name = ufunc.__name__
    if method != "__call__" or kwargs:
        raise _unsupported(f"np.{name}.{method} with options on complex values")
    if name in _UNARY and len(inputs) == 1:
        result = _UNARY[name](_lift(inputs[0]))
    elif name in _BINARY and len(inputs) == 2:
        result = binary(_BINARY[name], *inputs)
    else:
        raise _unsupported(f"np.{name} of complex values")
    # A ufunc of Python numbers alone gives a NumPy scalar: strongly typed, as for reals.
    return _strong(result) if all(_is_weak(x) for x in inputs) else result


def _is_weak(x: Any) -> bool:
    if isinstance(x, ComplexTensor):
        return all(not isinstance(p, _pyasc.Tensor) or p.is_weak for p in (x.re, x.im))
    if isinstance(x, _pyasc.Tensor):
        return x.is_weak
    return isinstance(x, (int, float, complex)) and not isinstance(x, np.generic)


def _strong(r: Any) -> Any:
    def part(p: Any) -> Any:
        if isinstance(p, _pyasc.Tensor):
            return p.astype(p.dtype) if p.is_weak else p
        return p

    if isinstance(r, ComplexTensor):
        return ComplexTensor(part(r.re), part(r.im))
    return part(r)


#: NumPy functions that read a Python number's attribute (``c.real``) and so keep it weak.
KEEPS_WEAK = {"real", "imag"}


def _angle(z: Any, deg: bool = False) -> Any:
    z = _lift(z)
    a = _b("arctan2", z.im, z.re)
    return a * (180.0 / np.pi) if deg else a


def _strong_dtype(v: Any) -> Any:
    """Return the dtype ``v`` takes part in promotion with (``None`` for a weak Python number)."""
    if isinstance(v, ComplexTensor):
        return None if _is_weak(v) else v.dtype
    if isinstance(v, _pyasc.Tensor):
        return None if getattr(v, "is_weak", False) else v.dtype
    if isinstance(v, (np.ndarray, np.generic)):
        return v.dtype
    return None


def _where(c: Any, x: Any, y: Any) -> ComplexTensor:
    """``np.where`` of complex values, with NumPy's result dtype (Python numbers are weak)."""
    # The operands' own parts: lifting a bool or small integer to complex would round it
    # through float32 first.
    xr, xi, _ = _parts(x)
    yr, yi, _ = _parts(y)
    re = np.where(c, xr, yr)
    im = np.where(c, 0.0 if xi is None else xi, 0.0 if yi is None else yi)
    strong = [d for d in map(_strong_dtype, (x, y)) if d is not None]
    if strong:
        # With a weak Python complex: float32 gives complex64, bools and integers complex128.
        rt = np.result_type(*strong)
        part = np.float32 if rt in (np.float32, np.complex64) else np.float64
        re, im = _as(re, part), _as(im, part)
    return ComplexTensor(re, im)


_FUNCTIONS = {
    "real": lambda z: _lift(z).real,
    "imag": lambda z: _lift(z).imag,
    "conj": lambda z: _lift(z).conj(),
    "conjugate": lambda z: _lift(z).conj(),
    "angle": _angle,
    "sum": lambda z, axis=None, keepdims=False: _lift(z).sum(axis, keepdims),
    "mean": lambda z, axis=None, keepdims=False: _lift(z).mean(axis, keepdims),
    "prod": lambda z, axis=None, keepdims=False: _lift(z).prod(axis, keepdims),
    "cumsum": lambda z, axis=None, dtype=None, out=None: _scans().numpy_cumsum(_lift(z), axis, dtype, out),
    "matmul": lambda a, b: binary("matmul", a, b),
    "dot": lambda a, b: binary("matmul", a, b),
    "transpose": lambda z, axes=None: _lift(z)._map(lambda p: np.transpose(p, axes)),
    "reshape": lambda z, shape: _lift(z)._map(lambda p: np.reshape(p, shape)),
    "where": lambda c, x, y: _where(c, x, y),
    "abs": abs,
    "iscomplexobj": lambda z: True,
}


# -- running an operator on complex arguments ---------------------------------------------


def _scans() -> Any:
    from ..api import scans

    return scans


def has_complex(args: tuple) -> bool:
    """Return True when an argument is complex (array, NumPy scalar or Python number)."""
    for a in args:
        if isinstance(a, complex):
            return True
        if isinstance(a, (np.ndarray, np.generic)) and a.dtype.kind == "c":
            return True
    return False


class _Runner:
    """The companion operators of one operator (one per pattern of complex arguments)."""

    def __init__(self, op: Any) -> None:
        self.op = op
        self.ops: Dict[tuple, Any] = {}
        # Per companion and argument signature: which results are complex, and tuple or not.
        self.layouts: Dict[tuple, Tuple[List[bool], bool]] = {}
        self.pending: Optional[Tuple[List[bool], bool]] = None

    def companion(self, pattern: tuple) -> Any:
        op = self.ops.get(pattern)
        if op is not None:
            return op
        func = self.op.__wrapped__
        runner = self

        def split(first: Any = None, *rest: Any) -> Any:
            flat = iter((first, *rest))
            args = [ComplexTensor(next(flat), next(flat)) if c else next(flat) for c in pattern]
            result = func(*args)
            tuple_out = isinstance(result, (tuple, list))
            items = list(result) if tuple_out else [result]
            kinds = [isinstance(r, ComplexTensor) for r in items]
            runner.pending = (kinds, tuple_out)
            out: List[Any] = []
            for r, c in zip(items, kinds):
                out.extend((r.re, r.im) if c else (r,))
            return tuple(out)

        split.__name__ = split.__qualname__ = self.op.__name__
        opts = dict(self.op.options)
        op = _pyasc.Operator(split, self.op.__name__, opts["device_type"], opts["op_break_level"], opts)
        self.ops[pattern] = op
        return op

    def __call__(self, args: tuple) -> Any:
        flat: List[Any] = []
        pattern: List[bool] = []
        for a in args:
            re, im, c = _parts(a)
            pattern.append(c)
            flat.extend((re, im) if c else (a,))
        op = self.companion(tuple(pattern))
        key = (tuple(pattern),) + tuple(
            (np.asarray(x).dtype.str, np.shape(x)) if isinstance(x, (np.ndarray, np.generic)) else type(x)
            for x in flat)
        self.pending = None
        out = op(*flat)
        if self.pending is not None:
            self.layouts[key] = self.pending
        kinds, tuple_out = self.layouts[key]
        results, it = [], iter(out)
        for c in kinds:
            if c:
                re, im = next(it), next(it)
                z = np.empty(np.shape(re), dtype=np.complex64 if re.dtype == np.float32 else np.complex128)
                z.real, z.imag = re, im
                results.append(z)
            else:
                results.append(next(it))
        return tuple(results) if tuple_out else results[0]


_RUNNERS: weakref.WeakKeyDictionary[Any, _Runner] = weakref.WeakKeyDictionary()
_PINNED: Dict[int, _Runner] = {}  # functions without weak references (NumPy ufuncs)


def _runner_of(op: Any) -> Optional[_Runner]:
    func = op.__wrapped__
    try:
        runner = _RUNNERS.get(func)
    except TypeError:
        runner = _PINNED.get(id(func))
    return runner if runner is not None and runner.op is op else None


def companion_cache_info(op: Any) -> Tuple[int, int, int, int]:
    """Return the summed cache statistics (hits, misses, compiles, entries) of ``op``'s companions."""
    runner = _runner_of(op)
    infos = [c.cache_info() for c in runner.ops.values()] if runner is not None else []
    return tuple(sum(i[f] for i in infos) for f in range(4))  # type: ignore[return-value]


def companion_cache_clear(op: Any) -> None:
    """Drop the compiled plans of ``op``'s companion operators."""
    runner = _runner_of(op)
    if runner is not None:
        for c in runner.ops.values():
            c.cache_clear()


def call(op: Any, args: tuple) -> Any:
    """Run operator ``op`` on ``args``, some of them complex."""
    func = op.__wrapped__
    try:
        runner = _RUNNERS.get(func)
    except TypeError:
        runner = _PINNED.get(id(func))
    if runner is None or runner.op is not op:
        runner = _Runner(op)
        try:
            _RUNNERS[func] = runner
        except TypeError:
            _PINNED[id(func)] = runner
    return runner(args)


def _returns_complex(result: Any, items: Any) -> bool:
    return any(hasattr(i, "_pyasc_complex") for i in items)


_hooks.register_companion("complex", order=1, accepts=has_complex, produces=_returns_complex, call=call,
                          cache_info=companion_cache_info, cache_clear=companion_cache_clear)
_hooks.register("complex_binary", binary)
