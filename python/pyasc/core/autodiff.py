"""Reverse-mode differentiation with JAX's names: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``.

The function is traced as an operator body; the gradient rules of its ops (the op table's
gradient column, the rules of views, reductions and library kernels in ``pyasc_ir::grad``)
append the backward nodes to the same trace, so the compiler fuses forward and backward into
one plan and caches it by signature like any operator. Called on traced tensors (inside an
operator, or inside another transformation) the transformations trace inline, which is how
``grad(grad(f))`` and ``jvp`` (the transpose of a vector-Jacobian product) work.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _pyasc
from ..errors import DTypeError, InvalidArgumentError, ShapeError, at_user_line
from .pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "stop_gradient", "check_grads", "custom_vjp"]

_Tensor = _pyasc.Tensor

# Operator options a transformation keeps from the operator it differentiates.
_KEPT_OPTIONS = ("device_type", "compute_type", "precision_mode", "op_break_level", "atomic_flag", "debug")


def _traceable(fun: Callable[..., Any]) -> Tuple[Callable[..., Any], Dict[str, Any], str]:
    """Return the Python function a transformation traces, the options to keep and a name."""
    from .classes import AscendOperatorBase

    if isinstance(fun, _pyasc.Operator):
        opts = {k: v for k, v in fun.options.items() if k in _KEPT_OPTIONS and v is not None}
        return fun.__wrapped__, opts, fun.__name__
    if isinstance(fun, AscendOperatorBase):
        settings = getattr(fun, "_pyasc_settings", None) or {}
        opts = {k: v for k, v in settings.items() if k in _KEPT_OPTIONS and v is not None}
        return (lambda *args: fun.compute(args)), opts, type(fun).__name__
    if not callable(fun):
        raise at_user_line(InvalidArgumentError(f"differentiation takes a function, not {type(fun).__name__}"))
    return fun, {}, getattr(fun, "__name__", "function")


def _shape(x: Any) -> Tuple[int, ...]:
    return tuple(x.shape) if hasattr(x, "shape") else tuple(np.shape(x))


def _is_traced(leaves: Sequence[Any]) -> bool:
    return any(isinstance(x, _pyasc.Tensor) for x in leaves)


def _argnums(argnums: Union[int, Sequence[int]], nargs: int) -> Tuple[Tuple[int, ...], bool]:
    single = isinstance(argnums, (int, np.integer))
    nums = (int(argnums),) if single else tuple(int(a) for a in argnums)
    for a in nums:
        if not -nargs <= a < nargs:
            raise at_user_line(InvalidArgumentError(
                f"argnums {a} is out of range for a call with {nargs} positional argument(s)"))
    return tuple(a % nargs for a in nums), single


def _float_leaves(tree: Any, what: str) -> Tuple[List[Any], Any]:
    leaves, treedef = tree_flatten(tree)
    for x in leaves:
        dt = np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype
        if not (np.issubdtype(dt, np.floating) or dt.name == "bfloat16"):
            raise at_user_line(DTypeError(
                f"differentiation needs float {what}; got dtype {dt.name} (cast to float32 or float64, or leave "
                "it out of argnums)"))
    return leaves, treedef


def _scalar_out(out: Any) -> Any:
    if not isinstance(out, _pyasc.Tensor):
        raise at_user_line(InvalidArgumentError(
            f"grad needs the function to return a traced float scalar, not {type(out).__name__}"))
    if tuple(out.shape) != ():
        raise at_user_line(ShapeError(
            f"grad is defined for functions with a scalar output; the output has shape {tuple(out.shape)} "
            "(sum it, or use pyasc.vjp)"))
    _float_leaves([out], "outputs")
    return out


def _value_and_grad_traced(f: Callable[..., Any], args: Tuple[Any, ...], argnums: Tuple[int, ...], single: bool,
                           has_aux: bool) -> Tuple[Any, Any, Any]:
    out = f(*args)
    aux = None
    if has_aux:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise at_user_line(InvalidArgumentError("has_aux=True needs the function to return a pair (out, aux)"))
        out, aux = out
    out = _scalar_out(out)
    parts = [_float_leaves(args[a], "arguments") for a in argnums]
    flat = [x for leaves, _ in parts for x in leaves]
    grads = list(_backprop([out], [None], flat)) if flat else []
    trees, k = [], 0
    for leaves, treedef in parts:
        trees.append(tree_unflatten(treedef, grads[k:k + len(leaves)]))
        k += len(leaves)
    return out, (trees[0] if single else tuple(trees)), aux


class _CustomCall:
    """One call of a ``custom_vjp`` function inside a trace: its marked outputs and its rule."""

    def __init__(self, marked: List[Any], out_def: Any, inputs: List[Any], in_def: Any, bwd: Callable[..., Any],
                 residuals: Any) -> None:
        self.marked, self.out_def, self.inputs, self.in_def = marked, out_def, inputs, in_def
        self.bwd, self.residuals = bwd, residuals
        self.top = max(m._node for m in marked)


# Custom calls per trace (keyed by the trace), the most recent traces only.
_CUSTOM: Dict[int, List[_CustomCall]] = {}
_CUSTOM_TRACES = 64


def _backprop(outs: Sequence[Any], cts: Sequence[Any], wrt: Sequence[Any]) -> List[Any]:
    """Cotangents of ``wrt``: the graph's rules, and the user's rule at each ``custom_vjp`` call.

    The outputs of a custom call are stop-gradient copies, so the graph's rules stop there;
    their cotangents are asked for with ``wrt``, handed to the call's ``bwd`` (latest call
    first) and carried on from the call's inputs, by linearity.
    """
    key = next((t._trace_key for t in list(outs) + list(wrt) if isinstance(t, _pyasc.Tensor)), None)
    calls = sorted(_CUSTOM.get(key, []), key=lambda c: -c.top)
    if not calls:
        return list(_pyasc.apply_vjp(list(outs), list(cts), list(wrt)))
    marks = [m for c in calls for m in c.marked]
    got = _pyasc.apply_vjp(list(outs), list(cts), list(wrt) + marks)
    total, pending = list(got[:len(wrt)]), dict(zip((m._node for m in marks), got[len(wrt):]))
    for i, call in enumerate(calls):
        ct_out = tree_unflatten(call.out_def, [pending[m._node] for m in call.marked])
        ct_in = call.bwd(call.residuals, ct_out)
        if not isinstance(ct_in, tuple):
            raise at_user_line(InvalidArgumentError(
                f"a custom_vjp bwd must return a tuple with one cotangent per argument, not {type(ct_in).__name__}"))
        leaves = tree_flatten(ct_in)[0]
        if len(leaves) != len(call.inputs):
            raise at_user_line(InvalidArgumentError(
                f"a custom_vjp bwd returned {len(leaves)} cotangent leaves for {len(call.inputs)} argument leaves"))
        pairs = [(x, c) for x, c in zip(call.inputs, leaves) if isinstance(x, _pyasc.Tensor) and c is not None]
        if not pairs:
            continue
        lower = [m for c in calls[i + 1:] for m in c.marked]
        more = _pyasc.apply_vjp([x for x, _ in pairs], [c for _, c in pairs], list(wrt) + lower)
        total = [a + b for a, b in zip(total, more[:len(wrt)])]
        for m, c in zip(lower, more[len(wrt):]):
            pending[m._node] = pending[m._node] + c
    return total


class custom_vjp:  # noqa: N801 (JAX's name)
    """A function with a differentiation rule of its own (``jax.custom_vjp``).

    ``f = custom_vjp(fun)``, then ``f.defvjp(fwd, bwd)``: ``fwd(*args)`` returns ``(out,
    residuals)``, ``bwd(residuals, cotangent)`` a tuple with one cotangent per argument
    (``None`` for none). Called outside differentiation, ``f`` is ``fun``. Use it for a cheaper
    or more stable rule than the one the graph would give, or for a function whose ops have no
    rule (``fwd`` and ``bwd`` are traced like ``fun``, so they use pyasc ops).
    """

    def __init__(self, fun: Callable[..., Any]) -> None:
        """Wrap ``fun``; its rule comes with :meth:`defvjp`."""
        self.fun = fun
        self.fwd: Optional[Callable[..., Any]] = None
        self.bwd: Optional[Callable[..., Any]] = None
        self._in_fwd = threading.local()
        self.__name__ = getattr(fun, "__name__", "custom_vjp")
        self.__doc__ = getattr(fun, "__doc__", None)

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """Set the forward (value and residuals) and backward (cotangents) functions."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any) -> Any:
        """Compute ``fun(*args)``; inside a trace, through ``fwd`` with the rule recorded."""
        leaves, in_def = tree_flatten(args)
        if not _is_traced(leaves) or getattr(self._in_fwd, "on", False):
            # Outside a trace, or fwd calling the function itself (as JAX allows): the primal.
            return self.fun(*args)
        if self.fwd is None or self.bwd is None:
            raise at_user_line(InvalidArgumentError(
                f"custom_vjp function {self.__name__} has no rule: call .defvjp(fwd, bwd) first"))
        self._in_fwd.on = True
        try:
            result = self.fwd(*args)
        finally:
            self._in_fwd.on = False
        if not (isinstance(result, tuple) and len(result) == 2):
            raise at_user_line(InvalidArgumentError("a custom_vjp fwd must return a pair (out, residuals)"))
        out, residuals = result
        outs, out_def = tree_flatten(out)
        marked = [_pyasc.apply_stop_gradient(o) if isinstance(o, _pyasc.Tensor) else o for o in outs]
        tensors = [m for m in marked if isinstance(m, _pyasc.Tensor)]
        if tensors:
            call = _CustomCall(tensors, out_def, leaves, in_def, self.bwd, residuals)
            key = tensors[0]._trace_key
            _CUSTOM.setdefault(key, []).append(call)
            while len(_CUSTOM) > _CUSTOM_TRACES:
                del _CUSTOM[next(iter(_CUSTOM))]
        return tree_unflatten(out_def, marked)


def _transformed(body: Callable[..., Any], name: str, options: Dict[str, Any]) -> Any:
    """Return ``body`` (a function of traced tensors) as an operator named ``name``.

    Called on NumPy arrays (or DeviceArrays) the operator runs compiled, traced once per
    signature with forward and backward fused into one plan; called on traced tensors (inside
    an operator or another transformation) it traces its body in place, as every operator
    does. It is the operator itself, not a wrapper, so a cached call costs what an operator
    call costs.
    """
    from .decorators import operator

    body.__name__ = body.__qualname__ = name
    return operator(body, kernel_name=name, **options)


def value_and_grad(fun: Callable[..., Any], argnums: Union[int, Sequence[int]] = 0,
                   has_aux: bool = False) -> Any:
    """Return a function computing ``fun``'s value and its gradient with respect to ``argnums``.

    As ``jax.value_and_grad``: ``fun`` returns a float scalar (with ``has_aux``, a pair
    ``(scalar, aux)``); the gradient has the structure of the selected arguments (pytrees
    allowed). The result is ``(value, grad)`` or ``((value, aux), grad)``.
    """
    f, options, name = _traceable(fun)

    def body(*args: Any) -> Any:
        nums, single = _argnums(argnums, len(args))
        out, g, aux = _value_and_grad_traced(f, args, nums, single, has_aux)
        return ((out, aux), g) if has_aux else (out, g)

    return _transformed(body, f"value_and_grad_{name}", options)


def grad(fun: Callable[..., Any], argnums: Union[int, Sequence[int]] = 0, has_aux: bool = False) -> Any:
    """Return a function computing the gradient of the scalar function ``fun`` (``jax.grad``).

    ``argnums`` selects the arguments (an int gives that argument's gradient, a tuple a tuple
    of them); with ``has_aux`` the function returns ``(scalar, aux)`` and the result is
    ``(grad, aux)``. ``fun`` may be a ``@pyasc.operator``, a class operator or a plain function
    of pyasc ops and NumPy calls; its operator options (precision mode, device) are kept.
    """
    f, options, name = _traceable(fun)

    def body(*args: Any) -> Any:
        nums, single = _argnums(argnums, len(args))
        _, g, aux = _value_and_grad_traced(f, args, nums, single, has_aux)
        return (g, aux) if has_aux else g

    return _transformed(body, f"grad_{name}", options)


def _vjp_traced(f: Callable[..., Any], primals: Tuple[Any, ...], cotangent: Any, has_aux: bool) -> Tuple[Any, Any, Any]:
    out = f(*primals)
    aux = None
    if has_aux:
        out, aux = out
    outs, out_def = tree_flatten(out)
    cts, ct_def = tree_flatten(cotangent)
    if len(cts) != len(outs):
        raise at_user_line(InvalidArgumentError(
            f"the cotangent has {len(cts)} leaves; the function's output has {len(outs)}"))
    for o, c in zip(outs, cts):
        if _shape(c) != tuple(o.shape):
            raise at_user_line(ShapeError(
                f"a cotangent of shape {_shape(c)} was given for an output of shape {tuple(o.shape)}"))
    leaves, treedef = _float_leaves(primals, "arguments")
    grads = _backprop(outs, cts, leaves) if leaves else []
    return out, tree_unflatten(treedef, list(grads)), aux


_VJP_OPERATORS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """Return ``(fun(*primals), vjp_fn)`` where ``vjp_fn(cotangent)`` gives one cotangent per primal.

    As ``jax.vjp``: ``vjp_fn`` takes a cotangent shaped like the output (a pytree for pytree
    outputs) and returns a tuple with one entry per primal. With ``has_aux`` the function
    returns ``(out, aux)`` and the result is ``(out, vjp_fn, aux)``.
    """
    f, options, name = _traceable(fun)
    if _is_traced(tree_flatten(primals)[0]):
        out = f(*primals)
        aux = None
        if has_aux:
            out, aux = out

        def vjp_traced(ct: Any) -> Tuple[Any, ...]:
            return _vjp_traced(lambda *p: (out, aux) if has_aux else out, primals, ct, has_aux)[1]

        return (out, vjp_traced, aux) if has_aux else (out, vjp_traced)

    forward = _forward_operator(f, name, options)
    result = forward(*primals)
    out, aux = result if has_aux else (result, None)
    key = fun if _weakrefable(fun) else None
    back = _VJP_OPERATORS.get(key) if key is not None else None
    if back is None:
        def body(*args: Any) -> Any:
            *ps, ct = args
            return _vjp_traced(f, tuple(ps), ct, has_aux)[1]

        back = _transformed(body, f"vjp_{name}", options)
        if key is not None:
            _VJP_OPERATORS[key] = back

    def vjp_fn(ct: Any) -> Tuple[Any, ...]:
        return tuple(back(*primals, ct))

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


_FORWARD_OPERATORS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _forward_operator(f: Callable[..., Any], name: str, options: Dict[str, Any]) -> Any:
    from .decorators import operator

    op = _FORWARD_OPERATORS.get(f) if _weakrefable(f) else None
    if op is None:
        op = operator(f, kernel_name=name, **options)
        if _weakrefable(f):
            _FORWARD_OPERATORS[f] = op
    return op


def _weakrefable(x: Any) -> bool:
    try:
        weakref.ref(x)
    except TypeError:
        return False
    return True


def _jvp_traced(f: Callable[..., Any], primals: Tuple[Any, ...], tangents: Tuple[Any, ...]) -> Tuple[Any, Any]:
    from ..api.creation import zeros
    from ..api.reductions import sum as tsum

    out = f(*primals)
    outs, out_def = tree_flatten(out)
    leaves, _ = _float_leaves(primals, "arguments")
    tleaves, _ = tree_flatten(tangents)
    if len(tleaves) != len(leaves):
        raise at_user_line(InvalidArgumentError(
            f"jvp got {len(tleaves)} tangent leaves for {len(leaves)} primal leaves"))
    for p, t in zip(leaves, tleaves):
        if _shape(t) != _shape(p):
            raise at_user_line(ShapeError(
                f"a tangent of shape {_shape(t)} was given for a primal of shape {_shape(p)}"))
    # J t as the transpose of the linear map u -> J^T u: differentiate <J^T u, t> by u.
    us = [zeros(tuple(o.shape), o.dtype) for o in outs]
    cts = _backprop(outs, us, leaves)
    total = None
    for c, t in zip(cts, tleaves):
        term = tsum(c * t)
        total = term if total is None else total + term
    if total is None:
        raise at_user_line(InvalidArgumentError("jvp needs at least one float primal"))
    tangents_out = _backprop([total], [None], us)
    return out, tree_unflatten(out_def, list(tangents_out))


def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> Tuple[Any, Any]:
    """Return ``(fun(*primals), J @ tangents)``, the Jacobian-vector product (``jax.jvp``).

    Computed as the transpose of the vector-Jacobian product, so every op with a gradient
    rule has a forward derivative too; the result runs as one fused operator.
    """
    f, options, name = _traceable(fun)
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise at_user_line(InvalidArgumentError(
            f"jvp takes one tangent per primal; got {len(primals)} primals and {len(tangents)} tangents"))
    if _is_traced(tree_flatten((primals, tangents))[0]):
        return _jvp_traced(f, primals, tangents)
    n = len(primals)

    def body(*args: Any) -> Any:
        return _jvp_traced(f, tuple(args[:n]), tuple(args[n:]))

    op = _transformed(body, f"jvp_{name}", options)
    out, tangent_out = op(*primals, *tangents)
    return out, tangent_out


def stop_gradient(x: Any) -> Any:
    """Return ``x``, treated as a constant by differentiation (``jax.lax.stop_gradient``)."""
    leaves, treedef = tree_flatten(x)
    if not _is_traced(leaves):
        return x
    return tree_unflatten(treedef, [_pyasc.apply_stop_gradient(v) if isinstance(v, _pyasc.Tensor) else v
                                    for v in leaves])


def _as_f64(x: Any) -> Any:
    a = np.asarray(x)
    return a.astype(np.float64) if np.issubdtype(a.dtype, np.floating) else a


def _vdot(a: Any, b: Any) -> float:
    la, lb = tree_flatten(a)[0], tree_flatten(b)[0]
    return float(sum(np.vdot(np.asarray(x, np.float64), np.asarray(y, np.float64)) for x, y in zip(la, lb)))


def _scaled(tree: Any, t: Any, eps: float) -> Any:
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [x + eps * d for x, d in zip(leaves, tree_flatten(t)[0])])


def _random_like(tree: Any, rng: np.random.Generator) -> Any:
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [rng.standard_normal(np.shape(x)) for x in leaves])


def _close(what: str, got: Any, want: Any, atol: float, rtol: float) -> None:
    for g, w in zip(tree_flatten(got)[0], tree_flatten(want)[0]):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if not np.allclose(g, w, atol=atol, rtol=rtol):
            err = float(np.max(np.abs(g - w)))
            raise AssertionError(f"check_grads: {what} differs from finite differences by up to {err:.3g} "
                                 f"(atol={atol}, rtol={rtol})\ncomputed: {g}\nnumerical: {w}")


def check_grads(fun: Callable[..., Any], args: Sequence[Any], order: int = 1,
                modes: Sequence[str] = ("fwd", "rev"), atol: Optional[float] = None, rtol: Optional[float] = None,
                eps: Optional[float] = None, seed: int = 0) -> None:
    """Check ``fun``'s derivatives up to ``order`` against central finite differences in float64.

    As ``jax.test_util.check_grads``: ``"fwd"`` compares ``jvp`` in a random direction with
    ``(f(x + eps t) - f(x - eps t)) / 2 eps``; ``"rev"`` checks ``<vjp(ct), t>`` against
    ``<ct, J t>`` from the same differences. Float arguments are converted to float64 first.
    Raises ``AssertionError`` naming the mode and the largest difference.
    """
    if order < 1:
        raise at_user_line(InvalidArgumentError(f"check_grads order must be at least 1, not {order}"))
    bad = [m for m in modes if m not in ("fwd", "rev")]
    if bad:
        raise at_user_line(InvalidArgumentError(f"check_grads modes are 'fwd' and 'rev', not {bad}"))
    eps = 1e-4 if eps is None else eps
    atol = 1e-5 if atol is None else atol
    rtol = 1e-5 if rtol is None else rtol
    rng = np.random.default_rng(seed)
    args = tuple(tree_unflatten(tree_flatten(a)[1], [_as_f64(x) for x in tree_flatten(a)[0]]) for a in args)
    f, _, _ = _traceable(fun)
    t = _random_like(args, rng)
    plus = fun(*_scaled(args, t, eps))
    minus = fun(*_scaled(args, t, -eps))
    numeric = tree_unflatten(tree_flatten(plus)[1], [(np.asarray(p, np.float64) - np.asarray(m, np.float64)) / (2 * eps)
                                                     for p, m in zip(tree_flatten(plus)[0], tree_flatten(minus)[0])])
    if "fwd" in modes:
        _, tangent_out = jvp(fun, args, t)
        _close("jvp", tangent_out, numeric, atol, rtol)
    if "rev" in modes:
        out, vjp_fn = vjp(fun, *args)
        ct = _random_like(out, rng)
        got = _vdot(vjp_fn(ct), t)
        want = _vdot(ct, numeric)
        if not np.isclose(got, want, atol=atol * max(1.0, abs(want)), rtol=rtol):
            raise AssertionError(f"check_grads: <vjp(ct), t> = {got!r} but <ct, J t> = {want!r} by finite differences")
    if order > 1:
        if "rev" in modes:
            ct2 = _random_like(fun(*args), np.random.default_rng(seed + 1))
            check_grads(lambda *x: vjp(f, *x)[1](ct2), args, order - 1, ("rev",), atol, rtol, eps, seed + 2)
        if "fwd" in modes:
            check_grads(lambda *x: jvp(f, x, t)[1], args, order - 1, ("fwd",), atol, rtol, eps, seed + 3)
