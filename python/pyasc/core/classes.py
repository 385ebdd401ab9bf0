"""The class form of an operator: ``class MyOp(pyasc.AscendOperatorBase)`` with a ``compute`` method.

State goes in ``__init__`` (operator options through ``super().__init__(...)``, constants as
instance attributes); the graph goes in ``compute(self, inputs)``. An instance is callable like
any ``@pyasc.operator``::

    class ScaleAdd(pyasc.AscendOperatorBase):
        def __init__(self, scale):
            super().__init__(device="NPU")
            self.scale = scale

        def compute(self, inputs):
            x, y = inputs
            return x * self.scale + y

    op = ScaleAdd(2.0)
    z = op(x, y)              # NumPy in, NumPy out
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ..errors import InvalidArgumentError, UnsupportedError
from .decorators import operator, validate_options

__all__ = ["AscendOperatorBase"]

#: Marks "no argument given" for the traced function's first parameter.
_NO_INPUT = object()


class AscendOperatorBase:
    """Base class of class-form operators: options in ``__init__``, the graph in :meth:`compute`.

    ``super().__init__(**options)`` accepts every option of :func:`pyasc.operator`
    (``device_type`` or its alias ``device``, ``kernel_name``, ``op_break_level``,
    ``precision_mode`` or ``precision``, ``compute_type``, ``atomic_flag``, ``dynamic_shape``,
    ``gears``, ``debug``); they are validated at once, and an unknown option or value raises
    :class:`pyasc.InvalidArgumentError`. ``kernel_name`` defaults to the subclass's name.

    Calling the instance, ``op(x, y, ...)``, traces ``compute`` with ``inputs = (x, y, ...)``
    as traced tensors, compiles it once per argument signature (dtypes and shapes) and runs it.
    Number attributes read by ``compute`` are compile-time constants: their values are
    captured when a signature is first traced, and changing them later does not re-trace that
    signature; call :meth:`cache_clear` after changing them to trace again. NumPy array
    attributes are captured arrays, read at every call (changes made in place are seen).
    """

    def __init__(self, **options: Any) -> None:
        """Validate the operator options; the underlying operator is built at first use."""
        self._pyasc_settings: Dict[str, Any] = validate_options(options)
        self._pyasc_op: Optional[Any] = None

    def compute(self, inputs: tuple) -> Any:
        """Build the operator's graph from the tuple of traced inputs; return a tensor or a tuple.

        Subclasses must override this method.
        """
        raise UnsupportedError(f"{type(self).__name__} must override compute(self, inputs)")

    def _operator(self) -> Any:
        """Return the ``pyasc.operator`` that traces :meth:`compute`, building it on first use."""
        op = getattr(self, "_pyasc_op", None)
        if op is not None:
            return op
        if type(self).compute is AscendOperatorBase.compute:
            raise UnsupportedError(
                f"{type(self).__name__} does not override compute(self, inputs): define it to build the graph"
            )
        settings = getattr(self, "_pyasc_settings", None)
        if settings is None:  # a subclass that never called super().__init__(): default options
            settings = validate_options({})
            self._pyasc_settings = settings
        name = settings["kernel_name"] or type(self).__name__
        options = {k: v for k, v in settings.items() if v is not None and k != "kernel_name"}

        def compute_inputs(inputs: Any = _NO_INPUT, *more: Any) -> Any:
            # One named parameter so that the operator keeps its latest plan for
            # ``get_compiled_op()``; the rest of the inputs arrive through ``*more``.
            return self.compute(() if inputs is _NO_INPUT else (inputs, *more))

        compute_inputs.__name__ = compute_inputs.__qualname__ = name
        op = operator(compute_inputs, kernel_name=name, **options)
        self._pyasc_op = op
        return op

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the operator on positional inputs (NumPy arrays, DeviceArrays, scalars)."""
        if kwargs:
            raise InvalidArgumentError(
                f"{type(self).__name__}() takes its inputs positionally (compute receives them as a tuple), "
                f"not as keywords {sorted(kwargs)}"
            )
        return self._operator()(*args)

    def get_compiled_op(self, *args: Any) -> Any:
        """Return the :class:`pyasc.CompiledOp` for these example inputs; with none, the latest plan."""
        return self._operator().get_compiled_op(*args)

    def cache_info(self) -> Any:
        """Compile-cache statistics: ``CacheInfo(hits, misses, compiles, currsize)``."""
        return self._operator().cache_info()

    def cache_clear(self) -> None:
        """Drop every compiled plan, so the next call traces :meth:`compute` again (new constants)."""
        op = getattr(self, "_pyasc_op", None)
        if op is not None:
            op.cache_clear()

    @property
    def options(self) -> Dict[str, Any]:
        """The validated operator options, normalised (``device`` appears as ``device_type``)."""
        settings = getattr(self, "_pyasc_settings", None)
        return dict(settings if settings is not None else validate_options({}))

    @property
    def device(self) -> str:
        """The device the operator runs on: ``"cpu"`` or ``"npu-twin"``."""
        return self._operator().device

    @property
    def kernel_name(self) -> str:
        """The name used for kernels, logs and plans: ``kernel_name=`` or the class name."""
        return self.options["kernel_name"] or type(self).__name__
