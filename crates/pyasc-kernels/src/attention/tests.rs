//! Tests of the attention blocks against a float64 definition on every path this CPU has:
//! ragged query and key blocks, causal and masked blocks, fully masked queries, NaN keys.

use super::*;
use crate::isa::each_isa;

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

struct Case {
    lq: usize,
    lk: usize,
    d: usize,
    dv: usize,
    causal: bool,
    /// Masked out (query, key) pairs: `key % 3 == query % 3` when set.
    masked: bool,
    /// Rows also carry their log-sum-exp (one more column).
    stats: bool,
}

impl Case {
    /// Output columns per query.
    fn width(&self) -> usize {
        self.dv + usize::from(self.stats)
    }
}

/// Naive float64 reference: softmax over the kept keys of each query, NaN for none kept; with
/// `stats`, each row then carries `ln(sum(exp(score)))` (`-inf` for none kept).
fn reference(c: &Case, q: &[f64], k: &[f64], v: &[f64], scale: f64) -> Vec<f64> {
    let w = c.width();
    let mut out = vec![0.0; c.lq * w];
    for i in 0..c.lq {
        let keep = |j: usize| !((c.causal && j > i) || (c.masked && j % 3 == i % 3));
        let s: Vec<f64> = (0..c.lk)
            .map(|j| {
                if keep(j) {
                    (0..c.d).map(|t| q[i * c.d + t] * k[j * c.d + t]).sum::<f64>() * scale
                } else {
                    f64::NEG_INFINITY
                }
            })
            .collect();
        let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
        let sum: f64 = e.iter().sum();
        for col in 0..c.dv {
            out[i * w + col] = (0..c.lk).map(|j| e[j] * v[j * c.dv + col]).sum::<f64>() / sum;
        }
        if c.stats {
            out[i * w + c.dv] = if mx == f64::NEG_INFINITY { mx } else { mx + sum.ln() };
        }
    }
    out
}

/// A block routine.
type Attend<T> = unsafe fn(&QueryBlock<'_, T>, Option<MaskFn<'_, T>>, &mut [T], *mut T, isize);

/// Runs every query block of a case through `attend` in the element type `T`.
fn run<T: AttnFloat>(
    c: &Case,
    q: &[f64],
    k: &[f64],
    v: &[f64],
    scale: f64,
    conv: impl Fn(f64) -> T,
    attend: Attend<T>,
) -> Vec<T> {
    let (kt, vt): (Vec<T>, Vec<T>) = (k.iter().map(|x| conv(*x)).collect(), v.iter().map(|x| conv(*x)).collect());
    let mut out = vec![T::ZERO; c.lq * c.width()];
    let mut scratch = vec![T::ZERO; scratch_len(c.dv)];
    for q0 in (0..c.lq).step_by(BLOCK_Q) {
        let rows = BLOCK_Q.min(c.lq - q0);
        let mut qt = vec![T::ZERO; c.d * BLOCK_Q];
        for i in 0..rows {
            for t in 0..c.d {
                qt[t * BLOCK_Q + i] = conv(q[(q0 + i) * c.d + t] * scale);
            }
        }
        let b = QueryBlock {
            qt: &qt,
            q0,
            rows,
            k: Strided { ptr: kt.as_ptr(), rs: c.d as isize, cs: 1 },
            // The values read column-major to cover strided views.
            v: Strided { ptr: vt.as_ptr(), rs: c.dv as isize, cs: 1 },
            lk: c.lk,
            d: c.d,
            dv: c.dv,
            causal: c.causal,
            lse: c.stats,
        };
        let mask = |st: &mut [T], j0: usize, bc: usize| {
            for i in 0..rows {
                for j in 0..bc {
                    st[j * BLOCK_Q + i] = if (j0 + j) % 3 == (q0 + i) % 3 { T::NEG_INF } else { T::ZERO };
                }
            }
        };
        let m: Option<MaskFn<'_, T>> = if c.masked { Some(&mask) } else { None };
        // SAFETY: the block addresses the vectors above; the output rows are q0..q0+rows.
        unsafe { attend(&b, m, &mut scratch, out.as_mut_ptr().add(q0 * c.width()), c.width() as isize) };
    }
    out
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for (lq, lk, d, dv) in [(1, 1, 4, 3), (47, 65, 64, 64), (100, 130, 16, 24), (49, 7, 9, 17), (130, 200, 64, 8)] {
        for (causal, masked) in [(false, false), (true, false), (false, true), (true, true)] {
            for stats in [false, true] {
                v.push(Case { lq, lk, d, dv, causal, masked, stats });
            }
        }
    }
    v
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= tol
}

#[test]
fn float32_blocks_match_a_float64_reference_on_every_isa() {
    each_isa(|isa| {
        for (n, c) in cases().iter().enumerate() {
            let (q, k, v) =
                (values(c.lq * c.d, n as u64), values(c.lk * c.d, 100 + n as u64), values(c.lk * c.dv, 200 + n as u64));
            let scale = 1.0 / (c.d as f64).sqrt();
            let want = reference(c, &q, &k, &v, scale);
            let got = run(c, &q, &k, &v, scale, |x| x as f32, attend_f32);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(close(*g as f64, *w, 2e-5), "{}: case {n} elem {i}: {g} vs {w}", isa.name());
            }
        }
    });
}

#[test]
fn float64_blocks_match_a_float64_reference() {
    for (n, c) in cases().iter().enumerate() {
        let (q, k, v) =
            (values(c.lq * c.d, n as u64), values(c.lk * c.d, 7 + n as u64), values(c.lk * c.dv, 9 + n as u64));
        let want = reference(c, &q, &k, &v, 0.3);
        let got = run(c, &q, &k, &v, 0.3, |x| x, attend_f64);
        for (g, w) in got.iter().zip(&want) {
            assert!(close(*g, *w, 1e-12), "case {n}: {g} vs {w}");
        }
    }
}

#[test]
fn a_fully_masked_query_is_nan_and_its_neighbours_are_not() {
    // With lk = 1 and the key masked for queries i % 3 == 0, those rows keep no key.
    let c = Case { lq: 6, lk: 1, d: 4, dv: 2, causal: false, masked: true, stats: false };
    each_isa(|isa| {
        let got = run(&c, &values(24, 1), &values(4, 2), &values(2, 3), 0.5, |x| x as f32, attend_f32);
        for i in 0..6 {
            assert_eq!(got[i * 2].is_nan(), i % 3 == 0, "{} row {i}: {:?}", isa.name(), &got[i * 2..i * 2 + 2]);
        }
    });
}

#[test]
fn a_nan_key_makes_every_row_nan() {
    let c = Case { lq: 3, lk: 70, d: 2, dv: 2, causal: false, masked: false, stats: false };
    let mut k = values(140, 5);
    k[2 * 65] = f64::NAN;
    each_isa(|isa| {
        let got = run(&c, &values(6, 4), &k, &values(140, 6), 1.0, |x| x as f32, attend_f32);
        assert!(got.iter().all(|x| x.is_nan()), "{}: {got:?}", isa.name());
    });
}
