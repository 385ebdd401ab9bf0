"""The workload behind the profiler screenshot in the README: three operators, one on a stream.

Run it under the profiler with ``pyasc prof --html -o prof_out -- python docs/profile_example.py``.
"""

import numpy as np
import pyasc


@pyasc.operator
def gelu(x):
    """GELU with the exact erf."""
    return x * 0.5 * (1.0 + pyasc.erf(x / 1.41421))


@pyasc.operator
def softmax(x):
    """Softmax over rows."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pyasc.operator
def project(a, b):
    """Multiply two matrices."""
    return a @ b


x = np.random.default_rng(0).standard_normal(1 << 21).astype(np.float32)
m = np.random.default_rng(1).standard_normal((1024, 1024)).astype(np.float32)
w = np.random.default_rng(2).standard_normal((512, 512)).astype(np.float32)
for _ in range(3):
    gelu(x)
    softmax(m)
    project(w, w)
s = pyasc.Stream()
with pyasc.stream(s):
    y = gelu(pyasc.to_device(x))
pyasc.synchronize()
print("gelu on a stream:", float(y.numpy()[:4].sum()))
