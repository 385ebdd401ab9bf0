"""Property: random operators never write their inputs, whether NumPy arrays (views included:
the whole underlying buffer is compared byte for byte) or DeviceArrays."""

from __future__ import annotations

import warnings

import fuzz_programs
import numpy as np
import pyasc


def _buffer(a):
    """The bytes of the whole memory an array views (its base's), or of a scalar."""
    if not isinstance(a, np.ndarray):
        return repr(a)
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    return np.array(base, copy=True).tobytes()


def _inputs(p):
    env = {"rng": np.random.default_rng(0), "np": np}
    for name, src in p.inputs:
        env[name] = eval(src, env)  # noqa: S307 - the generator's own source
    return [env[n] for n, _ in p.inputs], eval(f"lambda {', '.join(n for n, _ in p.inputs)}: {p.body}", {"np": np})


def test_random_operators_leave_numpy_inputs_and_their_buffers_untouched():
    gen = fuzz_programs.Generator(7)
    checked = 0
    for _ in range(400):
        args, fn = _inputs(gen.program())
        before = [_buffer(a) for a in args]
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                pyasc.operator(fn)(*args)
        except (pyasc.PyAscError, ValueError, TypeError):
            pass  # a program NumPy rejects too (the fuzzer checks outcomes; this test checks inputs)
        assert [_buffer(a) for a in args] == before
        checked += 1
    assert checked == 400


def test_random_operators_leave_device_array_inputs_untouched():
    gen = fuzz_programs.Generator(8, complex_share=0.0)  # DeviceArrays hold real dtypes only
    ran = 0
    for _ in range(200):
        args, fn = _inputs(gen.program())
        dev = [pyasc.to_device(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in args]
        before = [d.numpy().tobytes() if isinstance(d, pyasc.DeviceArray) else d for d in dev]
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                out = pyasc.operator(fn)(*dev)
                for o in out if isinstance(out, tuple) else (out,):
                    if isinstance(o, pyasc.DeviceArray):
                        o.numpy()  # waits for the queued work, raising its error
            ran += 1
        except (pyasc.PyAscError, ValueError, TypeError):
            pass  # a program NumPy rejects too (the fuzzer checks outcomes; this test checks inputs)
        pyasc.synchronize()
        after = [d.numpy().tobytes() if isinstance(d, pyasc.DeviceArray) else d for d in dev]
        assert after == before
    assert ran > 150, ran
