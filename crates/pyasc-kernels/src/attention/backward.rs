//! The elementwise steps of attention's backward pass over one block of scores (rows are
//! queries, columns a block of keys, row-major with row stride `ld`): the rows' log-sum-exp
//! folded in block by block ([`lse_update`]), the probabilities recomputed from it
//! ([`probs`]), and the scores' cotangents `P * (dP - D) * scale` ([`dscores`]). Keys a row
//! does not see (causal attention) are the columns from `valid[r]` on: they count as `-inf`
//! scores, so their probabilities are 0.
//!
//! float32 runs on the vectorised `exp` of this crate (AVX-512 or AVX2+FMA, whichever the
//! CPU's best is, [`crate::isa::active`]); float64 and CPUs without AVX2 run portable loops.

use super::AttnFloat;

/// An element type of the backward pass: the forward's arithmetic ([`AttnFloat`]) and a few
/// more functions.
pub trait BackwardFloat: AttnFloat {
    /// `e^x`.
    fn exp(self) -> Self;
    /// The element from an `f64`.
    fn of(x: f64) -> Self;
    /// The element as an `f64`.
    fn to_f64(self) -> f64;
}

macro_rules! backward_float {
    ($t:ty) => {
        impl BackwardFloat for $t {
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn of(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
        }
    };
}
backward_float!(f32);
backward_float!(f64);

/// Fold a block into the rows' running maximum `m` and sum `sum` of `e^(s - m)`: row `r` reads
/// its first `valid[r]` columns.
pub fn lse_update<T: BackwardFloat>(s: &[T], ld: usize, m: &mut [T], sum: &mut [T], valid: &[usize]) {
    for (r, &n) in valid.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let row = &s[r * ld..r * ld + n];
        let mx = row.iter().fold(m[r], |a, &x| if x > a { x } else { a });
        if mx == T::NEG_INF {
            continue;
        }
        let add = exp_sum(row, mx);
        sum[r] = sum[r].mul(m[r].sub(mx).exp()).add(add);
        m[r] = mx;
    }
}

/// The rows' log-sum-exp from [`lse_update`]'s maximum and sum (`-inf` for a row that saw no key).
pub fn lse_finish<T: BackwardFloat>(m: &[T], sum: &[T], out: &mut [T]) {
    for ((o, &mx), &s) in out.iter_mut().zip(m).zip(sum) {
        *o = if mx == T::NEG_INF { T::NEG_INF } else { mx.add(s.ln()) };
    }
}

/// `sum(e^(x - c))` over `row`.
fn exp_sum<T: BackwardFloat>(row: &[T], c: T) -> T {
    #[cfg(target_arch = "x86_64")]
    if let Some(row) = as_f32(row) {
        let c = c.to_f64() as f32;
        // SAFETY: the slice is readable; the dispatch checks the CPU's ISA.
        if let Some(v) = unsafe { simd::exp_sum(row, c) } {
            return T::of(f64::from(v));
        }
    }
    row.iter().fold(T::ZERO, |a, &x| a.add(x.sub(c).exp()))
}

/// `s[r, c] = e^(s[r, c] - l[r])` for the first `valid[r]` columns of each row, 0 after them
/// up to `cols`.
pub fn probs<T: BackwardFloat>(s: &mut [T], ld: usize, cols: usize, l: &[T], valid: &[usize]) {
    for (r, &n) in valid.iter().enumerate() {
        let row = &mut s[r * ld..r * ld + cols];
        let (seen, masked) = row.split_at_mut(n.min(cols));
        exp_shift(seen, l[r]);
        masked.fill(T::ZERO);
    }
}

/// `x = e^(x - c)` over `row`.
fn exp_shift<T: BackwardFloat>(row: &mut [T], c: T) {
    #[cfg(target_arch = "x86_64")]
    if let Some(row) = as_f32_mut(row) {
        let c = c.to_f64() as f32;
        // SAFETY: the slice is writable; the dispatch checks the CPU's ISA.
        if unsafe { simd::exp_shift(row, c) } {
            return;
        }
    }
    for x in row.iter_mut() {
        *x = x.sub(c).exp();
    }
}

/// `dp[r, c] = p[r, c] * (dp[r, c] - d[r]) * scale` over `rows x cols`.
pub fn dscores<T: BackwardFloat>(p: &[T], dp: &mut [T], ld: usize, cols: usize, d: &[T], scale: T) {
    #[cfg(target_arch = "x86_64")]
    if let (Some(p), Some(dp), Some(d)) = (as_f32(p), as_f32_mut(dp), as_f32(d)) {
        let scale = scale.to_f64() as f32;
        // SAFETY: the slices are valid; the dispatch checks the CPU's ISA.
        if unsafe { simd::dscores(p, dp, ld, cols, d, scale) } {
            return;
        }
    }
    for (r, &dr) in d.iter().enumerate() {
        let (pr, gr) = (&p[r * ld..r * ld + cols], &mut dp[r * ld..r * ld + cols]);
        for (g, &pv) in gr.iter_mut().zip(pr) {
            *g = pv.mul(g.sub(dr)).mul(scale);
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn as_f32<T: BackwardFloat>(s: &[T]) -> Option<&[f32]> {
    // SAFETY: T is f32 exactly when its TypeId is f32's; the slice is reinterpreted as itself.
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>())
        .then(|| unsafe { std::slice::from_raw_parts(s.as_ptr() as *const f32, s.len()) })
}

#[cfg(target_arch = "x86_64")]
fn as_f32_mut<T: BackwardFloat>(s: &mut [T]) -> Option<&mut [f32]> {
    // SAFETY: T is f32 exactly when its TypeId is f32's; the slice is reinterpreted as itself.
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>())
        .then(|| unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut f32, s.len()) })
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use crate::dispatch::{Avx2, Avx512};
    use crate::isa::{active, Isa};
    use crate::vector::SimdF32;

    /// `sum(e^(x - c))`, or `None` when the CPU has neither AVX-512 nor AVX2+FMA.
    ///
    /// # Safety
    /// None beyond the slice's validity; the ISA is checked here.
    pub(super) unsafe fn exp_sum(row: &[f32], c: f32) -> Option<f32> {
        match active() {
            // SAFETY: the CPU has the ISA.
            Isa::Avx512 => Some(unsafe { exp_sum_avx512(row, c) }),
            // SAFETY: as above.
            Isa::Avx2Fma => Some(unsafe { exp_sum_avx2(row, c) }),
            _ => None,
        }
    }

    /// `x = e^(x - c)`; false (nothing done) when the CPU has neither AVX-512 nor AVX2+FMA.
    ///
    /// # Safety
    /// As for [`exp_sum`].
    pub(super) unsafe fn exp_shift(row: &mut [f32], c: f32) -> bool {
        match active() {
            // SAFETY: the CPU has the ISA.
            Isa::Avx512 => unsafe { exp_shift_avx512(row, c) },
            // SAFETY: as above.
            Isa::Avx2Fma => unsafe { exp_shift_avx2(row, c) },
            _ => return false,
        }
        true
    }

    /// [`super::dscores`] in float32; false (nothing done) when the CPU has neither AVX-512
    /// nor AVX2+FMA.
    ///
    /// # Safety
    /// As for [`exp_sum`].
    pub(super) unsafe fn dscores(p: &[f32], dp: &mut [f32], ld: usize, cols: usize, d: &[f32], scale: f32) -> bool {
        match active() {
            // SAFETY: the CPU has the ISA.
            Isa::Avx512 => unsafe { dscores_avx512(p, dp, ld, cols, d, scale) },
            // SAFETY: as above.
            Isa::Avx2Fma => unsafe { dscores_avx2(p, dp, ld, cols, d, scale) },
            _ => return false,
        }
        true
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn dscores_avx512(p: &[f32], dp: &mut [f32], ld: usize, cols: usize, d: &[f32], scale: f32) {
        // SAFETY: compiled for AVX-512F, which the caller checked.
        unsafe { dscores_with::<Avx512>(p, dp, ld, cols, d, scale) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn dscores_avx2(p: &[f32], dp: &mut [f32], ld: usize, cols: usize, d: &[f32], scale: f32) {
        // SAFETY: compiled for AVX2 and FMA, which the caller checked.
        unsafe { dscores_with::<Avx2>(p, dp, ld, cols, d, scale) }
    }

    /// The rows in vectors, rounding each step as the portable loop does.
    #[inline(always)]
    unsafe fn dscores_with<S: SimdF32>(p: &[f32], dp: &mut [f32], ld: usize, cols: usize, d: &[f32], scale: f32) {
        let n = cols / S::LANES * S::LANES;
        for (r, &dr) in d.iter().enumerate() {
            let (pr, gr) = (&p[r * ld..r * ld + cols], &mut dp[r * ld..r * ld + cols]);
            // SAFETY: every load and store touches LANES elements inside the rows.
            unsafe {
                let (dv, sv) = (S::splat(dr), S::splat(scale));
                for i in (0..n).step_by(S::LANES) {
                    let g = gr.as_mut_ptr().add(i);
                    S::storeu(g, S::mul(S::mul(S::loadu(pr.as_ptr().add(i)), S::sub(S::loadu(g), dv)), sv));
                }
            }
            for (g, &pv) in gr[n..].iter_mut().zip(&pr[n..]) {
                *g = pv * (*g - dr) * scale;
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn exp_sum_avx512(row: &[f32], c: f32) -> f32 {
        // SAFETY: compiled for AVX-512F, which the caller checked.
        unsafe { exp_sum_with::<Avx512>(row, c) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn exp_sum_avx2(row: &[f32], c: f32) -> f32 {
        // SAFETY: compiled for AVX2 and FMA, which the caller checked.
        unsafe { exp_sum_with::<Avx2>(row, c) }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn exp_shift_avx512(row: &mut [f32], c: f32) {
        // SAFETY: compiled for AVX-512F, which the caller checked.
        unsafe { exp_shift_with::<Avx512>(row, c) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn exp_shift_avx2(row: &mut [f32], c: f32) {
        // SAFETY: compiled for AVX2 and FMA, which the caller checked.
        unsafe { exp_shift_with::<Avx2>(row, c) }
    }

    #[inline(always)]
    unsafe fn exp_sum_with<S: SimdF32>(row: &[f32], c: f32) -> f32 {
        let n = row.len() / S::LANES * S::LANES;
        // SAFETY: every load reads LANES elements inside the row; the ISA is the caller's.
        unsafe {
            let cv = S::splat(c);
            let mut acc = S::zero();
            for i in (0..n).step_by(S::LANES) {
                acc = S::add(acc, S::exp(S::sub(S::loadu(row.as_ptr().add(i)), cv)));
            }
            let mut lanes = [0f32; 16];
            S::storeu(lanes.as_mut_ptr(), acc);
            let tail: f32 = row[n..].iter().map(|&x| (x - c).exp()).sum();
            lanes[..S::LANES].iter().sum::<f32>() + tail
        }
    }

    #[inline(always)]
    unsafe fn exp_shift_with<S: SimdF32>(row: &mut [f32], c: f32) {
        let n = row.len() / S::LANES * S::LANES;
        // SAFETY: every load and store touches LANES elements inside the row.
        unsafe {
            let cv = S::splat(c);
            for i in (0..n).step_by(S::LANES) {
                let p = row.as_mut_ptr().add(i);
                S::storeu(p, S::exp(S::sub(S::loadu(p), cv)));
            }
        }
        for x in &mut row[n..] {
            *x = (*x - c).exp();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_steps_match_direct_formulas_on_every_isa() {
        crate::isa::each_isa(|isa| {
            let (rows, cols, ld) = (3, 37, 40);
            let s: Vec<f32> = (0..rows * ld).map(|i| ((i * 7919) % 97) as f32 / 20.0 - 2.0).collect();
            let valid = [37, 5, 0];
            let (mut m, mut sum) = (vec![f32::NEG_INFINITY; rows], vec![0.0f32; rows]);
            lse_update(&s, ld, &mut m, &mut sum, &valid);
            let mut l = vec![0.0f32; rows];
            lse_finish(&m, &sum, &mut l);
            for r in 0..2 {
                let want = s[r * ld..r * ld + valid[r]].iter().map(|&x| f64::from(x).exp()).sum::<f64>().ln();
                assert!((f64::from(l[r]) - want).abs() < 1e-5, "{}: row {r}: {} vs {want}", isa.name(), l[r]);
            }
            assert_eq!(l[2], f32::NEG_INFINITY);
            let mut p = s.clone();
            probs(&mut p, ld, cols, &l, &valid);
            for r in 0..2 {
                let total: f32 = p[r * ld..r * ld + cols].iter().sum();
                assert!((total - 1.0).abs() < 1e-5, "row {r} sums to {total}");
                assert!(p[r * ld + valid[r]..r * ld + cols].iter().all(|&x| x == 0.0));
            }
            let mut dp: Vec<f32> = (0..rows * ld).map(|i| (i % 5) as f32).collect();
            let want: Vec<f32> = (0..cols).map(|c| p[c] * (dp[c] - 0.5) * 0.25).collect();
            dscores(&p, &mut dp, ld, cols, &[0.5, 0.0, 0.0], 0.25);
            assert_eq!(&dp[..cols], &want[..]);
        });
    }
}
