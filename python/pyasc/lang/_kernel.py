"""``@pyasc.kernel``: kernels written per block, launched as ``kernel[block_dim](*args)``.

Each kernel is traced once per signature into a block program (``_pyasc.BlockKernelPlan``).

A signature is the arguments' kinds: each array's dtype and number of elements, each float
argument's value (a constant of the program); integer arguments stay symbolic, so calls that
differ only in them share one trace. Arrays (NumPy arrays and ``pyasc.DeviceArray``) are the
kernel's global memory and are written in place (they must be C-contiguous and, where the
kernel stores into them, writeable).
"""

from __future__ import annotations

import threading
import types
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import _pyasc
from ..device.npu_twin import NPU_910B
from ..errors import InvalidArgumentError, PyAscError, TraceError, UnsupportedError, at_user_line
from . import _trace
from ._tensors import GlobalTensor

_DEVICES = ("cpu", "npu")
_DeviceArray = _pyasc.DeviceArray


class Traced:
    """One signature's trace: the plan, the statements and what the estimate needs."""

    def __init__(self, plan: Any, body: List[Any], regs: List[Any], written: List[int], ub_used: int,
                 double_buffered: bool) -> None:
        self.plan, self.body, self.regs, self.written = plan, body, regs, written
        self.ub_used, self.double_buffered = ub_used, double_buffered


def _written(body: List[Any], out: set) -> set:
    for s in body:
        if s[0] == "copy" and not s[1]:
            out.add(s[2])
        elif s[0] == "loop":
            _written(s[5], out)
    return out


_DTYPE_NAMES: dict = {}


def _dtype_name(d: np.dtype) -> str:
    """Return ``d.name``, remembered per dtype.

    NumPy builds the name anew on every read: a third of a small launch's time.
    """
    name = _DTYPE_NAMES.get(d)
    if name is None:
        name = _DTYPE_NAMES[d] = d.name
    return name


def _user_frame(tb: Any) -> Optional[Tuple[str, int]]:
    """Return ``(file, line)`` of the innermost traceback entry outside pyasc."""
    here = _trace._HERE
    found = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not name.startswith(here) and not name.startswith("<"):
            found = (name, tb.tb_lineno)
        tb = tb.tb_next
    return found


class Kernel:
    """A kernel-language kernel, launched with ``k[block_dim](*args)``.

    Each block runs the function with its own :func:`pyasc.lang.block_idx`. Arguments are
    NumPy arrays and ``pyasc.DeviceArray`` (global memory, read and written in place), integers
    and floats.

    Launches follow the rule operators follow:

    * ``k[block_dim](*args)`` with only NumPy arrays runs now, on the caller's thread, and
      returns when every block is done (errors are raised by the call).
    * ``k[block_dim, stream](*args)``, like CUDA's ``kernel<<<grid, block, 0, stream>>>``, is
      queued on ``stream`` and returns at once: it runs after the work queued on the stream
      before it and before the work queued after it; ``stream.synchronize()``, events and
      ``pyasc.synchronize()`` wait for it. A launch given a DeviceArray without a stream is
      queued the same way on the current stream (``with pyasc.stream(s):``, else the default
      stream), as an operator given a DeviceArray is.

    A queued launch holds its arguments until it has run, so the caller may drop them. It
    reads and writes NumPy arrays in place when it runs (as a CUDA kernel does host-mapped
    memory): synchronize before reading what it writes, and do not change its inputs until
    then. DeviceArray arguments are ordered with the work on any stream that writes or reads
    them (``dev.numpy()`` waits for the kernel). Argument errors are raised by the launch;
    an error while the kernel runs (an access out of bounds, a count beyond a local tensor) is
    raised by the next synchronising call on that stream (or a read of a DeviceArray it
    writes), naming the kernel and the launch line.
    """

    def __init__(self, fn: Callable[..., Any], device_type: str = "cpu") -> None:
        if device_type not in _DEVICES:
            raise at_user_line(InvalidArgumentError(f"device_type must be one of {_DEVICES}, not {device_type!r}"))
        self.fn, self.device_type = fn, device_type
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__doc__ = getattr(fn, "__doc__", None)
        self._cache: Dict[Tuple[Any, ...], Traced] = {}
        self._lock = threading.Lock()
        self.traces = 0

    def __getitem__(self, cfg: Any) -> Launcher:
        block_dim, stream = (cfg if isinstance(cfg, tuple) and len(cfg) == 2 else (cfg, None))
        if isinstance(block_dim, bool) or not isinstance(block_dim, (int, np.integer)) or block_dim < 1:
            raise at_user_line(InvalidArgumentError(f"block_dim must be a positive integer, not {block_dim!r}"))
        block_dim = int(block_dim)
        if self.device_type == "npu" and block_dim > NPU_910B.vector_cores:
            raise at_user_line(InvalidArgumentError(
                f"block_dim {block_dim} exceeds the {NPU_910B.vector_cores} vector cores of {NPU_910B.name}"))
        if stream is not None and not isinstance(stream, _pyasc.Stream):
            raise at_user_line(InvalidArgumentError(f"the launch stream must be a pyasc.Stream, not {stream!r}"))
        return Launcher(self, block_dim, stream)

    def __call__(self, *args: Any) -> None:
        raise at_user_line(InvalidArgumentError(
            f"launch kernel {self.__name__!r} with a block count: {self.__name__}[block_dim](...)"))

    def _signature(self, args: Tuple[Any, ...]) -> Tuple[Any, ...]:
        key: List[Any] = [self.device_type]
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise at_user_line(InvalidArgumentError(
                        f"argument {i} of kernel {self.__name__!r} is not C-contiguous (kernels address arrays "
                        "as flat global memory; pass np.ascontiguousarray(a))"))
                key.append(("array", _dtype_name(a.dtype), a.size))
            elif isinstance(a, (bool, np.bool_)):
                raise at_user_line(InvalidArgumentError(f"argument {i} is a bool; pass an integer"))
            elif isinstance(a, (int, np.integer)):
                key.append(("int",))
            elif isinstance(a, (float, np.floating)):
                key.append(("float", float(a)))
            elif isinstance(a, _DeviceArray):
                if not a.c_contiguous:
                    raise at_user_line(InvalidArgumentError(
                        f"argument {i} of kernel {self.__name__!r} is a DeviceArray that is not C-contiguous "
                        "(kernels address arrays as flat global memory; copy it with pyasc.to_device(a))"))
                key.append(("array", _dtype_name(np.dtype(a.dtype)), a.size))
            elif type(a) is _pyasc.Tensor:
                raise at_user_line(UnsupportedError(
                    f"kernel {self.__name__!r} got a traced value as argument {i}: kernels run on arrays only, so "
                    "a launch cannot join a trace (an operator body or a gradient) and has no gradient rule; "
                    "launch it on arrays, outside the operator, or give the enclosing function a rule with "
                    "pyasc.custom_vjp whose fwd and bwd use pyasc ops"))
            elif hasattr(a, "__dlpack__"):
                raise at_user_line(UnsupportedError(
                    f"argument {i} of kernel {self.__name__!r}: kernels take NumPy arrays and pyasc.DeviceArray "
                    "(pass np.asarray(a) or pyasc.from_dlpack(a))"))
            else:
                raise at_user_line(InvalidArgumentError(
                    f"argument {i} of kernel {self.__name__!r} is a {type(a).__name__}; kernels take NumPy "
                    "arrays, pyasc.DeviceArray, integers and floats"))
        return tuple(key)

    def trace(self, *args: Any) -> Traced:
        """Return the trace for these arguments' signature (traced on first use, then cached)."""
        key = self._signature(args)
        with self._lock:
            t = self._cache.get(key)
            if t is None:
                t = self._cache[key] = self._trace(args, key)
        return t

    def _trace(self, args: Tuple[Any, ...], key: Tuple[Any, ...]) -> Traced:
        st = _trace.begin(self.__name__)
        try:
            call_args: List[Any] = []
            for k in key[1:]:
                if k[0] == "array":
                    call_args.append(GlobalTensor(len(st.globals), k[1], 0, k[2], k[2]))
                    st.globals.append(k[1])
                elif k[0] == "int":
                    call_args.append(_trace.Sym(("arg", st.nargs)))
                    st.nargs += 1
                else:
                    call_args.append(k[1])
            fn = self.fn
            if isinstance(fn, types.FunctionType):
                g = dict(fn.__globals__)
                g["range"] = _trace.kernel_range
                fn = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
            try:
                fn(*call_args)
            except PyAscError:
                raise
            except (TypeError, ValueError) as e:
                exc = TraceError(f"kernel {self.__name__!r} could not be traced: {e}")
                where = _user_frame(e.__traceback__)
                if where is None:
                    raise at_user_line(exc) from e
                exc.filename, exc.lineno = where
                exc.args = (f"{exc.args[0]} (at {where[0]}:{where[1]})",)
                raise exc from e
            if st.open_loops:
                raise at_user_line(TraceError(f"kernel {self.__name__!r} left a loop early (break or return in a "
                                              "kernel loop is not supported)"))
            body = st.bodies[0]
            plan = _pyasc.BlockKernelPlan(self.__name__, st.globals, st.nargs, st.regs, _trace.UB_BYTES, st.vars,
                                          body)
            self.traces += 1
            return Traced(plan, body, list(st.regs), sorted(_written(body, set())), st.ub_used, st.double_buffered)
        finally:
            _trace.end()

    def launch(self, block_dim: int, stream: Any, args: Tuple[Any, ...]) -> None:
        """Run blocks ``0..block_dim`` on ``args``: now, or queued on ``stream`` (see :class:`Kernel`)."""
        t = self.trace(*args)
        arrays = [a for a in args if isinstance(a, (np.ndarray, _DeviceArray))]
        for i in t.written:
            if isinstance(arrays[i], np.ndarray) and not arrays[i].flags.writeable:
                raise at_user_line(InvalidArgumentError(
                    f"kernel {self.__name__!r} stores into array argument {i}, which is read-only"))
        ints = [int(a) for a in args if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))]
        for v in ints:
            if not -(1 << 63) <= v < (1 << 63):
                raise at_user_line(InvalidArgumentError(
                    f"integer argument {v} of kernel {self.__name__!r} does not fit in 64 bits"))
        if stream is None and not any(isinstance(a, _DeviceArray) for a in arrays):
            t.plan.run(arrays, ints, block_dim)
        else:
            t.plan.enqueue(arrays, t.written, ints, block_dim, stream, self.device_type == "npu")

    def estimate(self, *args: Any, block_dim: int, double_buffer: Optional[bool] = None) -> Any:
        """Predict the kernel's duration on the modelled NPU (``device_type="npu"`` kernels).

        ``double_buffer`` defaults to whether the kernel's queues hold two buffers.
        """
        if self.device_type != "npu":
            raise at_user_line(InvalidArgumentError(
                f"estimate models the NPU twin; declare kernel {self.__name__!r} with device_type='npu'"))
        self[block_dim]
        from ._estimate import estimate_kernel

        return estimate_kernel(self, args, block_dim, double_buffer)

    def __repr__(self) -> str:
        return f"<pyasc.kernel {self.__name__} device_type={self.device_type!r}>"


class Launcher:
    """``kernel[block_dim]`` / ``kernel[block_dim, stream]``: call it with the arguments."""

    def __init__(self, kernel: Kernel, block_dim: int, stream: Any) -> None:
        self.kernel, self.block_dim, self.stream = kernel, block_dim, stream

    def __call__(self, *args: Any) -> None:
        self.kernel.launch(self.block_dim, self.stream, args)


def kernel(fn: Optional[Callable[..., Any]] = None, *, device_type: str = "cpu") -> Any:
    """Declare a kernel written per block with :mod:`pyasc.lang`.

    Like Ascend C's ``__global__ __aicore__`` functions. ``device_type="npu"`` bounds
    ``block_dim`` by the NPU twin's cores and enables :meth:`Kernel.estimate`.
    """
    if fn is None:
        return lambda f: Kernel(f, device_type)
    return Kernel(fn, device_type)
