#!/usr/bin/env python3
"""Fits the float32 polynomial coefficients of src/math/erf.rs.

Near-minimax fits by Lawson's iteratively reweighted least squares on a Chebyshev grid, with
targets from mpmath at 30 digits. Coefficients are rounded to float32 one at a time, lowest
first, refitting the remaining ones after each rounding so the rounding errors are absorbed.
Prints Rust constants and the weighted max error (in bits) of each float32 fit.

Usage: python3 tools/fit_erf.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 30
SQRT2 = mp.sqrt(2)


def f32(v):
    """Round v to the nearest float32, as a Python float."""
    return float(np.float32(v))


def fit(f, lo, hi, deg, var, rel=True, n=1200, iters=60, weight=None):
    """Fit f on [lo, hi] near-minimax with float32 coefficients (power basis in var(x)).

    The error minimised is relative to f (or absolute, or times weight(x)).
    """
    t = np.cos(np.pi * (np.arange(n) + 0.5) / n)
    xs = [mp.mpf(lo) + (mp.mpf(hi) - lo) * (mp.mpf(float(v)) + 1) / 2 for v in t]
    ys = np.array([float(f(x)) for x in xs])
    w = 1 / np.abs(ys) if rel else np.ones(n)
    if weight is not None:
        w = np.array([float(weight(x)) for x in xs])
    v = np.array([float(var(x)) for x in xs])
    vand = np.vander(v, deg + 1, increasing=True)
    fixed = []
    for k in range(deg + 1):
        rest = ys - vand[:, :k] @ np.array(fixed) if k else ys.copy()
        a = vand[:, k:]
        lw = np.ones(n) / n
        best = None
        for _ in range(iters):
            s = np.sqrt(lw) * w
            c, *_ = np.linalg.lstsq(a * s[:, None], rest * s, rcond=None)
            e = np.abs((a @ c - rest) * w)
            if best is None or e.max() < best[1]:
                best = (c, e.max())
            lw = lw * (e + 1e-300)
            lw /= lw.sum()
        fixed.append(f32(best[0][0]))
    c = np.array(fixed)
    err = np.abs((vand @ c - ys) * w).max()
    return fixed, -np.log2(err)


def centre(f, lo, hi):
    """Find a float32 point near the middle of [lo, hi] whose f is within 2^-34 of a float32.

    The rounding of the constant coefficient then costs (almost) nothing.
    """
    mid = np.float32((lo + hi) / 2)
    best = None
    for i in range(-4000, 4000):
        c = float(np.float32(mid) + np.float32(i) * np.float32(2.0**-20) * np.float32(hi - lo))
        c = f32(c)
        v = f(mp.mpf(c))
        e = float(abs(v - f32(v)) / v)
        if best is None or e < best[1]:
            best = (c, e)
    return best[0]


def lit(v):
    """Shortest float32 literal."""
    s = str(np.float32(v))
    return s if ("." in s or "e" in s) else s + ".0"


def show(name, doc, coefs, bits):
    """Print coefs as a Rust float32 array constant with its doc comment."""
    print(f"/// {doc} (fit error 2^-{bits:.1f}).")
    print(f"const {name}: [f32; {len(coefs)}] = [")
    for c in coefs:
        print(f"    {lit(c)},")
    print("];\n")


def main():
    """Fit and print every erf/erfc/gelu constant."""
    b_z = 1.75  # piece boundary in z = |x| for erf/erfc; b_z sqrt 2 in a = |x| for gelu
    z_lo, z_hi = 0.47, 10.1
    def g(z):
        return mp.erfc(z) * mp.exp(z * z)
    def h(a):
        return mp.erfc(a / SQRT2) * mp.exp(a * a / 2) / 2
    deg = 9

    # e^r = 1 + r + r^2 Q(r) on |r| <= ln2/2 (+ slack for the low part of the argument).
    def q(r):
        return (mp.expm1(r) - r) / r**2 if r != 0 else mp.mpf(0.5)
    show("EXP_Q", "`(e^r - 1 - r) / r^2` for |r| <= 0.35", *fit(q, -0.35, 0.35, 4, lambda r: r,
                                                                 weight=lambda r: r * r / mp.exp(r)))

    # erf x = x (C0_HI + (C0_LO + x^2 P(x^2))) for |x| <= z_lo.
    c0 = 2 / mp.sqrt(mp.pi)
    c0_hi = f32(c0)
    print("/// 2/sqrt(pi) = ERF_C0_HI + ERF_C0_LO.\nconst ERF_C0_HI: f32 = std::f32::consts::FRAC_2_SQRT_PI;")
    print(f"/// Low part of 2/sqrt(pi).\nconst ERF_C0_LO: f32 = {lit(c0 - c0_hi)};\n")
    def p(x):
        return (mp.erf(x) / x - c0) / x**2 if x != 0 else -c0 / 3
    show("ERF_SMALL", "`(erf(x) / x - 2/sqrt(pi)) / x^2` in x^2 for |x| <= 0.75",
         *fit(p, 0, 0.75, 5, lambda x: x * x, weight=lambda x: x * x))

    # gelu x = x (1/2 + x S(x^2)) for |x| <= z_lo sqrt 2.
    def s(x):
        return mp.erf(x / SQRT2) / (2 * x) if x != 0 else 1 / mp.sqrt(2 * mp.pi)
    show("GELU_SMALL", f"`erf(x/sqrt2) / 2x` in x^2 for |x| <= {z_lo} sqrt 2",
         *fit(s, 0, z_lo * SQRT2, 4, lambda x: x * x, rel=False))

    for name, fn, scale, what in [("G", g, 1, "erfc(z) e^(z^2)"), ("H", h, SQRT2, "erfc(a/sqrt2) e^(a^2/2) / 2")]:
        lo, mid, hi = z_lo * scale, b_z * scale, z_hi * scale
        zc = centre(fn, lo, mid)
        def far(t, fn=fn):
            return fn(1 / t) / t  # v f(v) as a function of t = 1/v
        tc = centre(far, 1 / hi, 1 / mid)
        print(f"/// Centre of the first piece of `{name}_NEAR`.\nconst {name}_ZC: f32 = {lit(zc)};")
        print(f"/// Centre (in 1/v) of `{name}_FAR`.\nconst {name}_TC: f32 = {lit(tc)};\n")
        show(f"{name}_NEAR", f"`{what}` on [{float(lo):.4}, {float(mid):.4}] in v - {name}_ZC",
             *fit(fn, lo, mid, deg, lambda v, zc=zc: v - zc))
        show(f"{name}_FAR", f"v times `{what}` on [{float(mid):.4}, {float(hi):.4}] in 1/v - {name}_TC",
             *fit(lambda v, fn=fn: v * fn(v), mid, hi, deg, lambda v, tc=tc: 1 / v - tc))


if __name__ == "__main__":
    main()
