#!/usr/bin/env python3
"""Fits the float32 polynomial coefficients of the native float32 exp family.

They are in src/math/exp_log.rs (EXP_P, EXP2_P). TANH_T is for a native float32 tanh (small-argument
odd polynomial), not used yet.

Uses the near-minimax float32 fitter of fit_erf.py (Lawson's iteratively reweighted least
squares on a Chebyshev grid, mpmath targets, coefficients rounded to float32 lowest first with
the rest refitted). Each fit minimises the error relative to the final function value.

Usage: python3 tools/fit_exp.py
"""
import mpmath as mp
from fit_erf import fit, show

# Cody-Waite reduction leaves |r| <= ln2/2 = 0.34657..; the rounding of x log2(e) can push it
# a hair beyond, so fit on a slightly wider interval.
R = 0.3467


def main():
    """Fit and print the exp, exp2 and tanh coefficients."""
    # e^r = 1 + r P(r): weight |r| / e^r turns the error of P into the relative error of e^r.
    def p(r):
        return mp.expm1(r) / r if r != 0 else mp.mpf(1)
    show("EXP_P", f"`(e^r - 1) / r` for |r| <= {R}", *fit(p, -R, R, 5, lambda r: r,
                                                           weight=lambda r: abs(r) / mp.exp(r)))

    # 2^f = 1 + f P(f) for |f| <= 1/2.
    def p(f):
        return mp.expm1(f * mp.log(2)) / f if f != 0 else mp.log(2)
    show("EXP2_P", "`(2^f - 1) / f` for |f| <= 1/2", *fit(p, -0.5, 0.5, 5, lambda f: f,
                                                           weight=lambda f: abs(f) / mp.power(2, f)))

    # tanh x = x + x^3 T(x^2) for |x| <= 0.5625 (beyond, 1 - 2 / (e^(2x) + 1) is cancellation-free).
    def t(x):
        return (mp.tanh(x) - x) / x**3 if x != 0 else mp.mpf(-1) / 3
    show("TANH_T", "`(tanh(x) - x) / x^3` in x^2 for |x| <= 0.5625",
         *fit(t, 0, 0.5625, 4, lambda x: x * x, weight=lambda x: x**3 / mp.tanh(x) if x != 0 else 0))


if __name__ == "__main__":
    main()
