"""Pickling pyasc operators, so that Dask (or multiprocessing) can ship them to worker processes.

An operator pickles as the recipe that made it, never as compiled code: by its qualified
name when its module attribute is the operator itself, otherwise as the function's source
text, the globals and closure values the body names, and the decorator's options. Unpickling
rebuilds the operator once per process (a table keyed by the recipe), so all the chunks a
worker runs share one kernel cache and each signature compiles once.
"""

from __future__ import annotations

import ast
import copyreg
import importlib
import inspect
import textwrap
import threading
import types
from typing import Any, Callable, Dict, List, Tuple

from ..errors import InvalidArgumentError

__all__ = ["register", "ensure_registered", "rebuilt_operators"]

_LOCK = threading.Lock()
_REBUILT: Dict[Any, Any] = {}
_REGISTERED = False


def rebuilt_operators() -> List[Any]:
    """Return the operators this process has rebuilt from pickles (one per recipe)."""
    with _LOCK:
        return list(_REBUILT.values())


def _by_name(func_module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(func_module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _named(op: Any, func: Callable[..., Any]) -> Any:
    """Return ``(module, qualname)`` when importing that name gives back ``op`` itself, else None."""
    module, qualname = getattr(func, "__module__", None), getattr(func, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        return None
    try:
        return (module, qualname) if _by_name(module, qualname) is op else None
    except Exception:
        return None


def _names(code: types.CodeType) -> set:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def _source(func: Callable[..., Any]) -> Tuple[str, str, int, str]:
    """Return the function's own definition (decorators removed), its file, first line and name."""
    try:
        text = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(text)
    except (OSError, TypeError, SyntaxError) as e:
        raise InvalidArgumentError(f"{getattr(func, '__name__', func)!r} cannot be pickled: its source is not "
                                   f"available ({e}); define it in a module") from None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not defs or defs[0].name != func.__name__:
        raise InvalidArgumentError(f"{func.__name__!r} cannot be pickled from source (a lambda or a generated "
                                   "function); define it with def in a module")
    node = defs[0]
    start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    lines = text.splitlines()[start - 1:]
    body = "\n".join(lines[node.lineno - start:])
    return body, func.__code__.co_filename, func.__code__.co_firstlineno + (node.lineno - start), func.__name__


def _function_recipe(func: Callable[..., Any]) -> Tuple[Any, ...]:
    body, filename, line, name = _source(func)
    wanted = _names(func.__code__)
    env: Dict[str, Any] = {}
    modules: Dict[str, str] = {}
    for n in sorted(wanted):
        if n in func.__globals__:
            v = func.__globals__[n]
            if isinstance(v, types.ModuleType):
                modules[n] = v.__name__
            else:
                env[n] = v
    for n, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        v = cell.cell_contents
        if isinstance(v, types.ModuleType):
            modules[n] = v.__name__
        else:
            env[n] = v
    return body, filename, line, name, modules, env


def _compile_function(body: str, filename: str, line: int, name: str, modules: Dict[str, str],
                      env: Dict[str, Any]) -> Callable[..., Any]:
    tree = ast.parse(body)
    ast.increment_lineno(tree, line - 1)
    ns: Dict[str, Any] = {"__name__": "pyasc_rebuilt", "__builtins__": __builtins__}
    ns.update({k: importlib.import_module(m) for k, m in modules.items()})
    ns.update(env)
    exec(compile(tree, filename, "exec"), ns)  # noqa: S102 - the user's own function, shipped as source
    return ns[name]


def _decorate(kind: str, func: Callable[..., Any], options: Dict[str, Any]) -> Any:
    from ..core.decorators import operator
    from ..stencil import stencil_operator
    from ..vectorize import vectorized_operator

    return {"operator": operator, "stencil": stencil_operator, "vectorized": vectorized_operator}[kind](
        func, **options)


def _rebuild(kind: str, recipe: Tuple[Any, ...], options: Dict[str, Any]) -> Any:
    """Rebuild an operator from its recipe, once per process."""
    key = (kind, recipe[:4], tuple(sorted(recipe[4].items())), repr(sorted(options.items())))
    with _LOCK:
        op = _REBUILT.get(key)
        if op is None:
            op = _decorate(kind, _compile_function(*recipe), options)
            _REBUILT[key] = op
        return op


def _kind_options(op: Any) -> Tuple[str, Callable[..., Any], Dict[str, Any]]:
    from ..core.dynamic import GearedOperator
    from ..stencil import StencilOperator
    from ..vectorize import _IGNORED, VectorizedOperator

    if isinstance(op, StencilOperator):
        opts = dict(op._settings, boundary=op.boundary, cval=op.cval, neighborhood=op.neighborhood,
                    standard_indexing=op.standard_indexing, iterations=op.iterations)
        return "stencil", op.__wrapped__, opts
    if isinstance(op, GearedOperator):
        return "operator", op.__wrapped__, dict(op.options)
    if isinstance(op, VectorizedOperator):
        return "vectorized", op.fn, {k: v for k, v in op.settings.items() if k not in _IGNORED}
    return "operator", op.__wrapped__, dict(op.options)


def reduce_operator(op: Any) -> Tuple[Any, ...]:
    """``__reduce__`` of every pyasc operator kind: by name where possible, else by recipe."""
    kind, func, options = _kind_options(op)
    named = _named(op, func)
    if named is not None:
        return _by_name, named
    return _rebuild, (kind, _function_recipe(func), options)


def register() -> None:
    """Register the reducer for pyasc's operator classes with :mod:`copyreg` (pickle and cloudpickle use it)."""
    global _REGISTERED
    if _REGISTERED:
        return
    from .. import _pyasc
    from ..core.dynamic import GearedOperator
    from ..stencil import StencilOperator
    from ..vectorize import VectorizedOperator

    for cls in (_pyasc.Operator, GearedOperator, StencilOperator, VectorizedOperator):
        copyreg.pickle(cls, reduce_operator)
    _REGISTERED = True


def ensure_registered() -> None:
    """Register the reducers if :func:`register` has not run yet."""
    if not _REGISTERED:
        register()
