"""The article's BERT GELU layer: ``@pyasc.operator(precision="fp16")`` around ``pyasc.fast_gelu``.

A BERT feed-forward block applies GELU to activations of shape (batch, sequence, 3072). The
float32 layer reads and writes float32; the ``precision="fp16"`` layer runs on the float16
activations a half-precision model carries, computing in float32 lanes and storing float16.
The script times both on the same data and checks the fp16 layer against a float64 reference.

    python examples/bert_gelu.py [--batch 8] [--seq 128] [--hidden 3072] [--repeat 20]
"""

from __future__ import annotations

import argparse

import numpy as np
import pyasc
from pyasc.tools._timing import best_time, fmt_time


@pyasc.operator(precision="fp16")
def gelu_npu(x):
    """Apply the article's layer: the NPU's sigmoid approximation of GELU, stored in float16."""
    return pyasc.fast_gelu(x)


@pyasc.operator
def gelu_fp32(x):
    """Apply the same layer in float32."""
    return pyasc.fast_gelu(x)


def reference(x: np.ndarray) -> np.ndarray:
    """``x * sigmoid(1.702 x)`` in float64."""
    x = x.astype(np.float64)
    return x / (1.0 + np.exp(-1.702 * x))


def main(argv=None) -> dict:
    """Time both layers, print the speed-up and the float16 layer's error; return the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--hidden", type=int, default=3072)
    p.add_argument("--repeat", type=int, default=20)
    a = p.parse_args(argv)
    x32 = np.random.default_rng(0).standard_normal((a.batch, a.seq, a.hidden)).astype(np.float32)
    x16 = x32.astype(np.float16)
    y16 = gelu_npu(x16)
    err = float(np.max(np.abs(y16.astype(np.float64) - reference(x16))))
    t16 = best_time(lambda: gelu_npu(x16), a.repeat)
    t32 = best_time(lambda: gelu_fp32(x32), a.repeat)
    print(f"fast_gelu on {x32.shape}: fp32 layer {fmt_time(t32)}, precision='fp16' layer {fmt_time(t16)} "
          f"({t32 / t16:.2f}x faster); max abs error of the fp16 layer {err:.2e} (float16 storage)")
    return {"t32": t32, "t16": t16, "speedup": t32 / t16, "max_abs_err": err, "dtype": str(y16.dtype)}


if __name__ == "__main__":
    main()
