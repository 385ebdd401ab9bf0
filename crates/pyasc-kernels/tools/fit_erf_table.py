#!/usr/bin/env python3
"""Fits the table-driven float32 `erf` of src/math/erf_table.rs (the AVX-512 kernel).

|x| in [0, 4) is cut into 16 pieces of width 1/4. Piece 0 is `a (C0_HI + P(a^2))` with
P(0) = C0_LO (2/sqrt(pi) = C0_HI + C0_LO) and P of degree 3 in a^2, fitted relative to erf;
pieces 1..15 are degree-5 polynomials in `a - centre`, fitted relative to erf. Fits are
near-minimax (Lawson reweighting of least squares on a Chebyshev grid, mpmath targets at
30 digits); coefficients are rounded to float32 one at a time, lowest first, refitting the
others. Finally simulates the float32 FMA evaluation against mpmath on a dense sample and
prints the worst ulp error, then the Rust tables.

Usage: python3 tools/fit_erf_table.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 30
PIECES, WIDTH, DEG, DEG0 = 16, 0.25, 5, 3
C0 = 2 / mp.sqrt(mp.pi)
C0_HI = float(np.float32(float(C0)))
C0_LO = float(np.float32(float(C0 - C0_HI)))


def f32(v):
    """Round v to the nearest float32, as a Python float."""
    return float(np.float32(v))


def lawson(vand, ys, w, iters=40):
    """Weighted near-minimax solution of vand @ c ~ ys."""
    lw = np.ones(len(ys)) / len(ys)
    best = None
    for _ in range(iters):
        s = np.sqrt(lw) * w
        c = np.linalg.lstsq(vand * s[:, None], ys * s, rcond=None)[0]
        e = np.abs((vand @ c - ys) * w)
        if best is None or e.max() < best[1]:
            best = (c, e.max())
        lw = lw * e
        lw /= lw.sum()
    return best[0]


def fit_rounded(vand, ys, w, fixed_first=()):
    """Float32 coefficients, rounded one at a time from the lowest, refitting the rest."""
    fixed = list(fixed_first)
    for k in range(len(fixed), vand.shape[1]):
        rest = ys - (vand[:, :k] @ np.array(fixed) if k else 0)
        c = lawson(vand[:, k:], rest, w)
        fixed.append(f32(c[0]))
    return fixed


def grid(lo, hi, n=1500):
    """Return n Chebyshev points on [lo, hi] as mpmath numbers."""
    t = np.cos(np.pi * (np.arange(n) + 0.5) / n)
    return [mp.mpf(lo) + (mp.mpf(hi) - lo) * (mp.mpf(float(v)) + 1) / 2 for v in t]


def piece0():
    """Fit the first piece, around 0, as erf(a) = a (C0 + t Q(t))."""
    xs = grid(1e-6, WIDTH)
    # erf(a) = a C0_HI + a (C0_LO + t Q(t)): fit t Q(t) to erf(a)/a - C0_HI - C0_LO, relative
    # to erf(a)/a.
    ys = np.array([float(mp.erf(x) / x - C0_HI - C0_LO) for x in xs])
    w = np.array([float(x / mp.erf(x)) for x in xs])
    t = np.array([float(x * x) for x in xs])
    vand = np.vander(t, DEG0 + 1, increasing=True)[:, 1:]
    return [0.0, [C0_LO] + fit_rounded(vand, ys, w) + [0.0] * (DEG - DEG0)]


def piece(i):
    """Fit piece i (i >= 1) of the table around its float32 centre."""
    lo, hi = i * WIDTH, (i + 1) * WIDTH
    centre = f32((lo + hi) / 2)
    xs = grid(lo, hi)
    ys = np.array([float(mp.erf(x)) for x in xs])
    u = np.array([float(x - centre) for x in xs])
    vand = np.vander(u, DEG + 1, increasing=True)
    return [centre, fit_rounded(vand, ys, 1 / ys)]


def simulate(tables, n=3_000_000):
    """Worst ulp error of the float32 evaluation (FMA steps rounded once) on random inputs."""
    rng = np.random.default_rng(7)
    a = np.concatenate([rng.uniform(0, 4.2, n), 10 ** rng.uniform(-38, 0, n // 4)]).astype(np.float32)
    a = np.unique(a)
    cen = np.array([t[0] for t in tables], np.float32)
    co = np.array([t[1] for t in tables], np.float32)
    ac = np.minimum(a, np.float32(3.99))
    idx = (ac * np.float32(4)).astype(np.int32)
    first = ac < WIDTH
    u = (ac - cen[idx]).astype(np.float32)
    u = np.where(first, (u * u).astype(np.float32), u)

    def fma(x, y, z):
        return (x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)).astype(np.float32)

    p = co[idx, DEG]
    for j in range(DEG - 1, -1, -1):
        p = fma(p, u, co[idx, j])
    ap = (a * p).astype(np.float32)
    r = np.where(first, fma(a, np.full_like(a, C0_HI), ap), p)
    ref = np.array([float(mp.erf(mp.mpf(float(v)))) for v in a[:: max(1, len(a) // 400_000)]])
    sub = r[:: max(1, len(a) // 400_000)].astype(np.float64)
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    err = np.abs(sub - ref) / ulp
    return err.max(), a[:: max(1, len(a) // 400_000)][err.argmax()]


def main():
    """Fit every piece, check the table and print it."""
    tables = [piece0()] + [piece(i) for i in range(1, PIECES)]
    worst, at = simulate(tables)
    print(f"// simulated worst error {worst:.3f} ulp (at {at:e})")
    print(f"const CENTRE: [f32; {PIECES}] = [{', '.join(str(np.float32(t[0])) for t in tables)}];")
    print("#[rustfmt::skip]")
    print(f"const COEF: [[f32; {PIECES}]; {DEG + 1}] = [")
    for j in range(DEG + 1):
        print("    [" + ", ".join(str(np.float32(t[1][j])) for t in tables) + "],")
    print("];")


if __name__ == "__main__":
    main()
