"""``pyasc bench`` entries for 16-bit floats and precision policies.

Each compares the same operator on float16 / bfloat16 data against float32 data of the same
element count, measured in the same run; NumPy's own float16 loops are the peer.
"""

from __future__ import annotations

from typing import List, Tuple

import ml_dtypes
import numpy as np

import pyasc

from ..tools._timing import best_time

Row = Tuple[str, str, float]


def bench_half_elementwise(n: int, repeat: int) -> List[Row]:
    """Time ``(x - b) * s`` on ``n`` float16 values, on bfloat16 and float32, and the copy limit."""
    rng = np.random.default_rng(11)
    x32 = rng.standard_normal(n).astype(np.float32)

    @pyasc.operator
    def normalize(x, scale, bias):
        return (x - bias) * scale

    rows: List[Row] = []
    x16 = x32.astype(np.float16)
    rows.append(("pyasc", "float16 (x - b) * s", best_time(lambda: normalize(x16, 1.5, 0.25), repeat)))
    xb = x32.astype(ml_dtypes.bfloat16)
    rows.append(("bfloat16", "pyasc on bfloat16", best_time(lambda: normalize(xb, 1.5, 0.25), repeat)))
    rows.append(("float32", "pyasc on float32", best_time(lambda: normalize(x32, 1.5, 0.25), repeat)))
    rows.append(("numpy", "NumPy float16", best_time(lambda: (x16 - np.float16(0.25)) * np.float16(1.5), repeat)))
    dst = np.empty_like(x16)
    rows.append(("limit", "np.copyto same bytes", best_time(lambda: np.copyto(dst, x16), repeat)))
    return rows


def bench_bert_gelu(shape: Tuple[int, ...], repeat: int) -> List[Row]:
    """Time the article's ``precision="fp16"`` fast_gelu layer on float16 activations and on float32."""
    x32 = np.random.default_rng(12).standard_normal(shape).astype(np.float32)

    @pyasc.operator(precision="fp16")
    def gelu_npu(x):
        return pyasc.fast_gelu(x)

    @pyasc.operator
    def gelu_fp32(x):
        return pyasc.fast_gelu(x)

    x16 = x32.astype(np.float16)
    rows: List[Row] = [("pyasc", "precision='fp16' on float16", best_time(lambda: gelu_npu(x16), repeat))]
    rows.append(("float32", "fp32 layer on float32", best_time(lambda: gelu_fp32(x32), repeat)))
    rows.append(("numpy", "NumPy float32 x*sigmoid(1.702x)",
                 best_time(lambda: x32 / (np.float32(1) + np.exp(np.float32(-1.702) * x32)), repeat)))
    return rows


def bench_matmul_policy(n: int, repeat: int) -> Tuple[List[Row], float]:
    """Time a float32 ``a @ b`` under ``force_bf16`` and ``fp32``; also its relative error.

    Returns the rows and the relative Frobenius error of the ``force_bf16`` product against
    float64 (the rounding of both operands to bfloat16 included).
    """
    rng = np.random.default_rng(13)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    forced = pyasc.operator(precision_mode="force_bf16")(lambda x, y: x @ y)
    mixed = pyasc.operator(precision_mode="mixed_bf16")(lambda x, y: x @ y)
    plain = pyasc.operator(lambda x, y: x @ y)
    rows: List[Row] = [("pyasc", "force_bf16 (conversions included)", best_time(lambda: forced(a, b), repeat))]
    rows.append(("mixed", "mixed_bf16", best_time(lambda: mixed(a, b), repeat)))
    rows.append(("fp32", "precision_mode='fp32'", best_time(lambda: plain(a, b), repeat)))
    rows.append(("numpy", "NumPy float32 (OpenBLAS)", best_time(lambda: a @ b, repeat)))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    err = float(np.linalg.norm(forced(a, b) - exact) / np.linalg.norm(exact))
    return rows, err


def bench_sr_inference(size: int, layers: int, repeat: int) -> Tuple[List[Row], float]:
    """Time the article's super-resolution network in ``mixed_bf16`` and ``fp32``; also the PSNR.

    3x3 convolutions with ReLU (3 -> 64 channels, ``layers`` of 64 -> 64, 64 -> 12) and a 2x
    pixel shuffle on a ``size`` x ``size`` RGB image; the mixed operator keeps the first
    convolution in float32 with ``pyasc.precision_scope("fp32")``. Returns the rows and the
    PSNR (dB) of the mixed output against the fp32 output.
    """
    rng = np.random.default_rng(14)
    shapes = [(64, 3)] + [(64, 64)] * layers + [(12, 64)]
    params = [((rng.standard_normal((o, i, 3, 3)) * np.sqrt(2.0 / (9 * i))).astype(np.float32),
               (rng.standard_normal(o) * 0.01).astype(np.float32)) for o, i in shapes]

    def make(mode: str):
        @pyasc.operator(precision_mode=mode)
        def sr_inference(x):
            with pyasc.precision_scope("fp32"):
                x = np.maximum(pyasc.conv2d(x, params[0][0], params[0][1], padding=1), 0.0)
            for w, b in params[1:-1]:
                x = np.maximum(pyasc.conv2d(x, w, b, padding=1), 0.0)
            return pyasc.pixel_shuffle(pyasc.conv2d(x, params[-1][0], params[-1][1], padding=1), 2)

        return sr_inference

    image = rng.random((1, 3, size, size)).astype(np.float32)
    mixed, fp32 = make("mixed_bf16"), make("fp32")
    rows: List[Row] = [("pyasc", "mixed_bf16, first conv fp32", best_time(lambda: mixed(image), repeat)),
                       ("fp32", "precision_mode='fp32'", best_time(lambda: fp32(image), repeat))]
    ref, got = fp32(image).astype(np.float64), mixed(image).astype(np.float64)
    peak = float(ref.max() - ref.min())
    psnr = 10 * np.log10(peak * peak / float(np.mean((got - ref) ** 2)))
    return rows, float(psnr)
