"""The demo of ``pyasc debug serve`` without a script: a few ``debug=True`` operators, run once.

It shows a normalisation (the article's ``normalize``), a row softmax followed by a matrix
product, and a log of a shifted input whose NaN the debug check stops at its source line.
The demo's code runs under the file name ``<pyasc debug demo>`` (its lines registered with
``linecache``) so that the page shows its source lines like a user script's.
"""

from __future__ import annotations

import linecache
from typing import Any, Dict

#: The demo, as a user would write it.
DEMO_SOURCE = '''\
import numpy as np
import pyasc


@pyasc.operator(device_type="NPU", debug=True)
def normalize(x, scale, bias):
    return (x - bias) * scale


@pyasc.operator(debug=True)
def softmax_project(x, w):
    shifted = x - x.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    p = e / e.sum(axis=1, keepdims=True)
    return p @ w


@pyasc.operator(debug=True)
def log_shifted(x):
    y = x - 0.5
    return np.log(y)     # NaN wherever x < 0.5: the debug check stops here


rng = np.random.default_rng(0)
x = rng.standard_normal((96, 128)).astype(np.float32)
normalize(x, 2.0, 0.5)
softmax_project(x, rng.standard_normal((128, 64)).astype(np.float32))
try:
    log_shifted(rng.random((64, 64)).astype(np.float32))
except pyasc.NumericalError as e:
    print(f"pyasc debugger demo: log_shifted stopped as expected: {e}")
'''

#: The file name the demo's code runs under.
DEMO_FILE = "<pyasc debug demo>"


def run_demo() -> Dict[str, Any]:
    """Run the demo; returns its namespace (the operators stay alive for the page)."""
    lines = DEMO_SOURCE.splitlines(keepends=True)
    linecache.cache[DEMO_FILE] = (len(DEMO_SOURCE), None, lines, DEMO_FILE)
    namespace: Dict[str, Any] = {"__name__": "__pyasc_debug_demo__"}
    exec(compile(DEMO_SOURCE, DEMO_FILE, "exec"), namespace)  # noqa: S102 - the fixed demo text above
    return namespace
