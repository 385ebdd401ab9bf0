"""The article's super-resolution network in fp32 and in mixed precision.

A small ESPCN-style network upscales a 256x256 RGB image 2x: a 3x3 convolution from 3 to 64
channels, ``--layers`` 3x3 convolutions of 64 channels, each followed by ReLU, a 3x3
convolution to 3*2*2 channels and a pixel shuffle. The mixed-precision operator is the
article's: ``precision_mode="mixed_bf16"`` (or ``mixed_fp16``) runs the convolutions on 16-bit
operands with float32 accumulation, and ``pyasc.precision_scope("fp32")`` keeps the first
convolution, which sees the raw image, in float32. The script times both and reports the
PSNR of the mixed output against the fp32 output.

    python examples/sr_inference.py [--size 256] [--layers 4] [--mode mixed_bf16] [--repeat 5]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pyasc
from pyasc.tools._timing import best_time, fmt_time


def make_weights(layers: int, channels: int = 64, seed: int = 0) -> list:
    """He-initialised conv weights and small biases: [(w, b), ...] for every layer."""
    rng = np.random.default_rng(seed)
    shapes = [(channels, 3)] + [(channels, channels)] * layers + [(3 * 4, channels)]
    out = []
    for o, i in shapes:
        w = (rng.standard_normal((o, i, 3, 3)) * math.sqrt(2.0 / (9 * i))).astype(np.float32)
        out.append((w, (rng.standard_normal(o) * 0.01).astype(np.float32)))
    return out


def network(params: list, mode: str):
    """Build the network as an operator under ``mode``; the weights are captured arrays."""

    @pyasc.operator(precision_mode=mode)
    def sr_inference(x):
        (w0, b0), body, (wl, bl) = params[0], params[1:-1], params[-1]
        # The first layer sees the raw image: kept in float32 whatever the policy.
        with pyasc.precision_scope("fp32"):
            x = np.maximum(pyasc.conv2d(x, w0, b0, padding=1), 0.0)
        for w, b in body:
            x = np.maximum(pyasc.conv2d(x, w, b, padding=1), 0.0)
        x = pyasc.conv2d(x, wl, bl, padding=1)
        return pyasc.pixel_shuffle(x, 2)

    return sr_inference


def psnr(a: np.ndarray, ref: np.ndarray) -> float:
    """Peak signal-to-noise ratio of ``a`` against ``ref`` (peak: ``ref``'s range), in dB."""
    mse = float(np.mean((a.astype(np.float64) - ref.astype(np.float64)) ** 2))
    peak = float(ref.max() - ref.min())
    return math.inf if mse == 0 else 10 * math.log10(peak * peak / mse)


def main(argv=None) -> dict:
    """Run both networks on a random image; print times, speed-up and PSNR; return them."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--mode", default="mixed_bf16", choices=["mixed_bf16", "mixed_fp16"])
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args(argv)
    params = make_weights(a.layers)
    image = np.random.default_rng(1).random((1, 3, a.size, a.size)).astype(np.float32)
    fp32, mixed = network(params, "fp32"), network(params, a.mode)
    ref, got = fp32(image), mixed(image)
    quality = psnr(got, ref)
    t32 = best_time(lambda: fp32(image), a.repeat)
    tm = best_time(lambda: mixed(image), a.repeat)
    print(f"super-resolution {a.size}x{a.size} -> {ref.shape[-2]}x{ref.shape[-1]}, {a.layers} 64-channel layers: "
          f"fp32 {fmt_time(t32)}, {a.mode} {fmt_time(tm)} ({t32 / tm:.2f}x faster), "
          f"PSNR of {a.mode} against fp32 {quality:.1f} dB")
    return {"t32": t32, "t_mixed": tm, "speedup": t32 / tm, "psnr": quality, "shape": ref.shape,
            "dtype": str(got.dtype)}


if __name__ == "__main__":
    main()
