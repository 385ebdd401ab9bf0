"""``pyasc demo``: the article's GELU and normalize operators on the default device.

Each is checked against NumPy in float64 and reported with its time, speed-up over NumPy and maximum error.
"""

from __future__ import annotations

import math

import numpy as np

import pyasc

from ..tools._timing import best_time, fmt_time


def _erf64(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erf  # type: ignore[import-not-found]

        return erf(x)
    except ImportError:
        return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64)


def numpy_erf(x: np.ndarray) -> np.ndarray:
    """Vectorised erf in NumPy alone (Abramowitz and Stegun 7.1.26, absolute error < 1.5e-7)."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.copysign(1.0 - poly * np.exp(-a * a), x).astype(x.dtype)


def run(n: int = 1 << 22) -> int:
    """Run the demo on ``n`` float32 elements; returns a process exit status (0 when all checks pass)."""

    @pyasc.operator(device_type="auto")
    def custom_gelu(x):
        return x * 0.5 * (1.0 + pyasc.erf(x / 1.41421))

    @pyasc.operator(device_type="auto", compute_type="vector")
    def normalize(x, scale, bias):
        return (x - bias) * scale

    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    x64 = x.astype(np.float64)
    info = pyasc.device_info("auto")
    print(f"pyasc {pyasc.__version__} demo on {info['name']}, {n:,} float32 elements")
    print(f"{'operator':<12} {'pyasc':>10} {'numpy':>10} {'speed-up':>9} {'max abs err':>12} {'check':>6}")
    ok = True

    gelu_ref = x64 * 0.5 * (1.0 + _erf64(x64 / 1.41421))
    t_py = best_time(lambda: custom_gelu(x), repeat=5)
    err = float(np.max(np.abs(custom_gelu(x) - gelu_ref)))
    try:
        from scipy.special import erf as np_erf  # type: ignore[import-not-found]

        np_how = "scipy.special.erf"
    except ImportError:  # what a NumPy user without SciPy writes: a vectorised formula
        np_erf = numpy_erf
        np_how = "a vectorised NumPy erf (Abramowitz-Stegun 7.1.26)"
    t_np = best_time(lambda: x * np.float32(0.5) * (np.float32(1.0) + np_erf(x / np.float32(1.41421))), repeat=5)
    np_label, speed = fmt_time(t_np), f"{t_np / t_py:.1f}x"
    good = err < 1e-6
    ok &= good
    print(f"{'gelu':<12} {fmt_time(t_py):>10} {np_label:>10} {speed:>9} {err:>12.2e} {'ok' if good else 'FAIL':>6}")

    norm_ref = (x64 - 0.25) * 1.5
    t_py = best_time(lambda: normalize(x, 1.5, 0.25), repeat=5)
    t_np = best_time(lambda: (x - np.float32(0.25)) * np.float32(1.5), repeat=5)
    err = float(np.max(np.abs(normalize(x, 1.5, 0.25) - norm_ref)))
    good = err < 1e-5
    ok &= good
    print(f"{'normalize':<12} {fmt_time(t_py):>10} {fmt_time(t_np):>10} {t_np / t_py:>8.1f}x {err:>12.2e} "
          f"{'ok' if good else 'FAIL':>6}")
    print(f"(numpy's gelu uses {np_how})")
    print("all checks passed" if ok else "CHECKS FAILED")
    return 0 if ok else 1
