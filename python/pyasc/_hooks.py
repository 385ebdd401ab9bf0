"""The one place where the Rust core calls back into the Python package.

The extension never imports a feature module. Where an operator call or a trace needs Python
(arguments it cannot read itself, results it cannot return itself, keyword binding, the NPU
twin's transfer checks, graph mode, debug captures), the binding calls a function of this module
by name, and each feature registers itself here when it is imported:

* **Companions** (``register_companion``): a feature that runs an operator's calls through
  another operator over transformed arguments (complex numbers as pairs of reals, nested
  containers as flat leaves, Dask arrays as per-chunk calls). ``accepts(args)`` says whether it
  takes arguments the core could not read; ``produces(items)`` whether a traced result (the
  returned items) needs it; ``call``, ``compiled``, ``cache_info`` and ``cache_clear`` do the
  work. The core tries companions in registration order.
* **Points** (``register``): one function per named point, listed in ``POINTS`` with the
  default used until a feature registers its own.

The binding calls ``companion_for_arguments``, ``companion_for_result``, ``call_companion``,
``compiled_companion`` and the points; ``cache_info`` and ``cache_clear`` are the operators'
methods of those names (attached in ``pyasc.core._operator_methods``).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence


class Companion(NamedTuple):
    """A feature that runs an operator's calls through companion operators."""

    name: str
    order: int
    result_order: int
    accepts: Optional[Callable[[tuple], bool]]
    produces: Optional[Callable[[Any, Sequence[Any]], bool]]
    call: Callable[[Any, tuple], Any]
    compiled: Optional[Callable[[Any, tuple], Any]]
    cache_info: Callable[[Any], Sequence[int]]
    cache_clear: Callable[[Any], None]


_COMPANIONS: List[Companion] = []


def register_companion(name: str, *, order: int, call: Callable[[Any, tuple], Any],
                       cache_info: Callable[[Any], Sequence[int]], cache_clear: Callable[[Any], None],
                       accepts: Optional[Callable[[tuple], bool]] = None,
                       produces: Optional[Callable[[Any, Sequence[Any]], bool]] = None,
                       result_order: Optional[int] = None,
                       compiled: Optional[Callable[[Any, tuple], Any]] = None) -> None:
    """Register companion ``name`` (see the module docs); registering a name again replaces it.

    Companions are asked about arguments in increasing ``order`` and about results in
    increasing ``result_order`` (``order`` when not given).
    """
    entry = Companion(name, order, order if result_order is None else result_order, accepts, produces, call,
                      compiled, cache_info, cache_clear)
    _COMPANIONS[:] = sorted([c for c in _COMPANIONS if c.name != name] + [entry], key=lambda c: c.order)


def unregister_companion(name: str) -> None:
    """Remove companion ``name`` (nothing happens when it is not registered)."""
    _COMPANIONS[:] = [c for c in _COMPANIONS if c.name != name]


def _companion(name: str) -> Companion:
    for c in _COMPANIONS:
        if c.name == name:
            return c
    raise LookupError(f"no companion {name!r} is registered")


def companion_for_arguments(args: tuple) -> Optional[str]:
    """Return the first companion that takes ``args`` (which the core could not read), or None."""
    for c in _COMPANIONS:
        if c.accepts is not None and c.accepts(args):
            return c.name
    return None


def companion_for_result(result: Any, items: Sequence[Any]) -> Optional[str]:
    """Return the first companion a traced result needs (``items``: its returned values), or None."""
    for c in sorted(_COMPANIONS, key=lambda c: c.result_order):
        if c.produces is not None and c.produces(result, items):
            return c.name
    return None


def call_companion(name: str, op: Any, args: tuple) -> Any:
    """Run a call of ``op`` on ``args`` through companion ``name``."""
    return _companion(name).call(op, args)


def compiled_companion(name: str, op: Any, args: tuple) -> Any:
    """Return the compiled plan of ``op`` for ``args`` from companion ``name``."""
    c = _companion(name)
    if c.compiled is None:
        raise NotImplementedError(f"get_compiled_op is not available for {name} arguments")
    return c.compiled(op, args)


def companion_cache_info(op: Any) -> List[int]:
    """Return hits, misses, compiles and entries summed over every companion of ``op``."""
    totals = [0, 0, 0, 0]
    for c in _COMPANIONS:
        for i, v in enumerate(c.cache_info(op)):
            totals[i] += v
    return totals


def companion_cache_clear(op: Any) -> None:
    """Drop the compiled plans of every companion of ``op``."""
    for c in _COMPANIONS:
        c.cache_clear(op)


def _unset(point: str) -> Callable[..., Any]:
    def fail(*args: Any) -> Any:
        raise RuntimeError(f"pyasc: no feature registered the hook point {point!r}")
    return fail


def _no_op(*args: Any) -> None:
    return None


#: The named points and their defaults until a feature registers its own.
POINTS: Dict[str, Callable[..., Any]] = {
    # bind(func, args, kwargs) -> positional arguments of a call with keywords.
    "bind": _unset("bind"),
    # check_transfers(args): the NPU twin's alignment checks of a call's arguments.
    "check_transfers": _no_op,
    # enter_trace(tensors) / exit_trace(): around tracing an operator's function.
    "enter_trace": _no_op,
    "exit_trace": _no_op,
    # like(prototype, array) -> the array as the argument's framework's array type.
    "like": _unset("like"),
    # record_run(name, inputs, records, error): a debug run's intermediate results.
    "record_run": _no_op,
    # complex_binary(name, a, b) -> a binary op of a traced tensor with a complex operand.
    "complex_binary": _unset("complex_binary"),
    # note_view(base, view, kind, params): a traced view, which follows updates of its base.
    "note_view": _no_op,
    # graph_record(op, args) -> lazy results, or None when the call runs now.
    "graph_record": _no_op,
    # graph_resolve(args) -> the arguments with lazy values computed, or None.
    "graph_resolve": _no_op,
}

globals().update(POINTS)


def register(point: str, fn: Callable[..., Any]) -> None:
    """Make ``fn`` the function of hook point ``point`` (one of ``POINTS``)."""
    if point not in POINTS:
        raise ValueError(f"unknown hook point {point!r}; the points are {sorted(POINTS)}")
    globals()[point] = fn
