#!/usr/bin/env python3
"""Fits the float32 `erf` coefficients of src/math/erf.rs (ERF_NEAR_N, ERF_FAR_N, ERF_FAR_Q).

erf x = |x| (C0_HI + N(t)) for |x| < SPLIT and 1 + N(t) / Q(t) above (t = x^2), both
evaluated by one blended Horner scheme. Near: N a polynomial (Q = 1) fitted to
erf(x)/x - C0_HI relative to erf(x)/x, N(0) = C0_LO (2/sqrt(pi) = C0_HI + C0_LO). Far: a rational
fitted to -erfc(x) in absolute error (the ulp of erf is 2^-24 there). Near-minimax by a
linearised rational least-squares fit (Loeb) with Lawson reweighting on a Chebyshev grid, with
mpmath targets at 30 digits; coefficients are rounded to float32 one at a time, refitting the
others. Finally simulates the float32 FMA evaluation (numpy) against math.erf on a few million
points and prints the ulp histogram.

Usage: python3 tools/fit_erf_rational.py
"""
import math
import os

import mpmath as mp
import numpy as np

mp.mp.dps = 30
SPLIT, TOP = 1.1, 3.92  # erf rounds to 1 from 3.9192 on

NEAR_DEG, FAR_N_DEG, FAR_Q_DEG = (int(v) for v in os.environ.get("DEGS", "6 6 5").split())
SPLIT = float(os.environ.get("SPLIT", SPLIT))


def f32(v):
    """Round v to the nearest float32, as a Python float."""
    return float(np.float32(v))


def ratfit(g, lo, hi, nn, nq, var, weight, fixed=None, n=2500, iters=60):
    """Fit float32 N (degree nn) and Q (degree nq, Q(0) = 1) in u = var(x) for x on [lo, hi].

    Minimises max |N/Q - g| weight; `fixed` pins coefficients {('n'|'q', k): value}.
    """
    c = (1 - np.cos(np.pi * (np.arange(n) + 0.5) / n)) / 2
    xs = [mp.mpf(lo) + (mp.mpf(hi) - lo) * mp.mpf(float(v)) for v in c]
    ys = np.array([float(g(x)) for x in xs])
    w = np.array([float(weight(x)) for x in xs])
    u = np.array([float(var(x)) for x in xs])
    scale = np.abs(u).max()
    s = u / scale  # fit in u / scale for conditioning
    order = [(kind, k) for k in range(max(nn, nq) + 1) for kind in "nq"
             if (kind == "n" and k <= nn) or (kind == "q" and 1 <= k <= nq)]
    fixed = dict(fixed or {})

    def solve():
        free = [o for o in order if o not in fixed]
        qprev, lw, best = np.ones(n), np.ones(n) / n, None
        for _ in range(iters):
            rhs = ys.copy()
            for (kind, k), v in fixed.items():
                rhs += (-1 if kind == "n" else ys) * v * u**k
            a = np.stack([s**k if kind == "n" else -ys * s**k for kind, k in free], axis=1)
            sc = np.sqrt(lw) * w / qprev
            sol, *_ = np.linalg.lstsq(a * sc[:, None], rhs * sc, rcond=None)
            coef = {o: v / scale**o[1] for o, v in zip(free, sol)}
            coef.update(fixed)
            nv = sum(coef[("n", k)] * u**k for k in range(nn + 1))
            qv = 1 + sum(coef[("q", k)] * u**k for k in range(1, nq + 1))
            e = np.abs((nv / qv - ys) * w)
            if best is None or e.max() < best[1]:
                best = (coef, e.max())
            qprev = qv
            lw = lw * (e + 1e-300)
            lw /= lw.sum()
        return best[0]

    for o in order:
        if o not in fixed:
            fixed[o] = f32(solve()[o])
    num = [fixed[("n", k)] for k in range(nn + 1)]
    den = [1.0] + [fixed[("q", k)] for k in range(1, nq + 1)]
    err = np.abs((np.polyval(num[::-1], u) / np.polyval(den[::-1], u) - ys) * w).max()
    return num, den, -np.log2(err)


def lit(v):
    """Format v as a Rust float32 literal."""
    s = str(np.float32(v))
    return s if ("." in s or "e" in s) else s + ".0"


def simulate(near, far_n, far_q, c0_hi):
    """Max ulp error of the float32 FMA evaluation (as in erf_f32) on a few million points."""
    f = np.float32

    def fma(a, b, c):
        return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(f)

    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(0, 4.2, 3000000), np.exp2(rng.uniform(-40, 2, 500000)),
                        np.linspace(0, 4.2, 1000000)]).astype(f)
    far = x >= f(SPLIT)
    v = np.minimum(x, f(TOP))
    t = v * v
    n = len(near)
    fq = far_q
    acc = np.where(far, f(far_n[n - 1]), f(near[n - 1])).astype(f)
    for i in range(n - 2, -1, -1):
        acc = fma(acc, t, np.where(far, f(far_n[i]), f(near[i])).astype(f))
    q = np.where(far, f(fq[-1]), f(0)).astype(f)
    for i in range(len(fq) - 2, 0, -1):
        q = fma(q, t, np.where(far, f(fq[i]), f(0)).astype(f))
    q = fma(q, t, np.ones_like(t))
    m = np.where(far, f(1), v).astype(f)
    k = np.where(far, f(1), f(c0_hi)).astype(f)
    y = fma(m, k, (m * (acc / q)).astype(f))
    y = np.where(x > f(TOP), f(1), np.minimum(y, f(1)))
    ref = np.array([math.erf(float(z)) for z in x]).astype(f)
    ulp = np.abs(y.view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    return ulp.max(), np.bincount(ulp)


def main():
    """Fit, check and print the erf constants."""
    c0 = 2 / mp.sqrt(mp.pi)
    c0_hi = f32(c0)
    c0_lo = f32(c0 - c0_hi)
    def near_g(x):
        return mp.erf(x) / x - c0_hi if x != 0 else c0 - c0_hi
    def near_w(x):
        return (x / mp.erf(x) if x != 0 else 1 / c0) * 2**24
    near, _, bits_near = ratfit(near_g, 0, SPLIT, NEAR_DEG, 0, lambda x: x * x, near_w, {("n", 0): c0_lo})
    far_n, far_q, bits_far = ratfit(lambda x: -mp.erfc(x), SPLIT, TOP, FAR_N_DEG, FAR_Q_DEG, lambda x: x * x,
                                    lambda x: 1)
    print(f"/// `erf(x)/x - ERF_C0_HI` in x^2 for |x| < {SPLIT} (relative fit error "
          f"2^-{bits_near + 24:.1f}).")
    print(f"const ERF_NEAR_N: [f32; {len(near)}] = [{', '.join(lit(c) for c in near)}];")
    print(f"/// Numerator of `-erfc x` in x^2 on [{SPLIT}, {TOP}] (absolute fit error 2^-{bits_far:.1f}).")
    print(f"const ERF_FAR_N: [f32; {len(far_n)}] = [{', '.join(lit(c) for c in far_n)}];")
    print("/// Denominator (constant term 1) of `ERF_FAR_N`.")
    print(f"const ERF_FAR_Q: [f32; {len(far_q)}] = [{', '.join(lit(c) for c in far_q)}];")
    worst, hist = simulate(near, far_n, far_q, c0_hi)
    print(f"// simulated float32 FMA evaluation: max {worst} ulp, histogram {hist.tolist()}")


if __name__ == "__main__":
    main()
