//! The inner step of 2-D max and average pooling: one window column's taps folded into a row
//! of accumulators, `acc[i] = fold(acc[i], first[i * step])`, compiled once per ISA.
//!
//! The maximum lets NaN win (a NaN tap, or a NaN already held, stays); the average's fold is
//! the plain sum (the caller divides). Unit and stride-2 steps have their own loops, which
//! the compiler vectorizes in each ISA's copy (stride 2 by de-interleaving loads); other
//! steps read one tap at a time.

use crate::dispatch::{dispatch, Kernel, Simd};

/// A float type pooling folds.
pub trait PoolFloat: Copy + PartialOrd + std::ops::Add<Output = Self> + Send + Sync {
    /// `x != x`.
    fn nan(self) -> bool;
}

impl PoolFloat for f32 {
    #[inline(always)]
    fn nan(self) -> bool {
        self.is_nan()
    }
}

impl PoolFloat for f64 {
    #[inline(always)]
    fn nan(self) -> bool {
        self.is_nan()
    }
}

/// One window column's taps for a stretch of a row of accumulators: `acc[lo..hi]` folds the
/// taps at `first + (i - lo) * step`.
#[derive(Clone, Copy, Debug)]
pub struct Taps<T> {
    /// First accumulator.
    pub lo: usize,
    /// One past the last accumulator.
    pub hi: usize,
    /// The tap of accumulator `lo`.
    pub first: *const T,
}

struct Fold<'a, T> {
    acc: &'a mut [T],
    taps: &'a [Taps<T>],
    step: isize,
    max: bool,
}

#[inline(always)]
fn fold_loop<T: PoolFloat, const MAX: bool>(acc: &mut [T], first: *const T, step: isize) {
    let fold = |a: T, v: T| {
        if MAX {
            // NaN wins: a tap that is NaN, or an accumulator that already is.
            if v > a || v.nan() {
                v
            } else {
                a
            }
        } else {
            a + v
        }
    };
    match step {
        1 => {
            // SAFETY: `fold_taps`'s contract: taps 0..len at unit step are readable.
            let taps = unsafe { std::slice::from_raw_parts(first, acc.len()) };
            for (a, v) in acc.iter_mut().zip(taps) {
                *a = fold(*a, *v);
            }
        }
        2 => {
            for (i, a) in acc.iter_mut().enumerate() {
                // SAFETY: as above, tap i at 2 * i (a constant step the compiler vectorizes).
                *a = fold(*a, unsafe { *first.add(2 * i) });
            }
        }
        _ => {
            for (i, a) in acc.iter_mut().enumerate() {
                // SAFETY: as above, tap i at i * step.
                *a = fold(*a, unsafe { *first.offset(i as isize * step) });
            }
        }
    }
}

impl<T: PoolFloat> Kernel for Fold<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        for t in self.taps {
            let acc = &mut self.acc[t.lo..t.hi];
            if self.max {
                fold_loop::<T, true>(acc, t.first, self.step)
            } else {
                fold_loop::<T, false>(acc, t.first, self.step)
            }
        }
    }
}

/// For each of `taps` in order, `acc[i] = max(acc[i], tap_i)` (NaN winning) when `max`, else
/// `acc[i] += tap_i`, for `i` in `lo..hi`, with `tap_i` at `first + (i - lo) * step` elements:
/// every window column of one output row in one call.
///
/// # Safety
/// Every tap addressed must be readable.
///
/// # Panics
/// If a stretch `lo..hi` is not inside `acc`.
pub unsafe fn fold_taps<T: PoolFloat>(acc: &mut [T], taps: &[Taps<T>], step: isize, max: bool) {
    dispatch(Fold { acc, taps, step, max })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::each_isa;

    #[test]
    fn folds_match_the_scalar_definition_for_every_step_and_isa() {
        let taps: Vec<f32> =
            (0..300).map(|i| if i % 37 == 5 { f32::NAN } else { ((i * 7919) % 101) as f32 - 50.0 }).collect();
        each_isa(|isa| {
            for step in [1isize, 2, 3] {
                for len in [0usize, 1, 7, 33, 99] {
                    for max in [true, false] {
                        let start: Vec<f32> =
                            (0..len).map(|i| if i == 3 { f32::NAN } else { i as f32 - 10.0 }).collect();
                        let mut acc = start.clone();
                        // The row in two stretches, the second folded twice.
                        let half = len / 2;
                        let parts = [
                            Taps { lo: 0, hi: half, first: taps.as_ptr() },
                            Taps { lo: half, hi: len, first: taps[half * step as usize..].as_ptr() },
                            Taps { lo: half, hi: len, first: taps[half * step as usize..].as_ptr() },
                        ];
                        // SAFETY: taps 0..len at `step` stay inside `taps` (99 * 3 < 300).
                        unsafe { fold_taps(&mut acc, &parts, step, max) };
                        let fold = |a: f32, v: f32| {
                            if max {
                                if v > a || v.is_nan() {
                                    v
                                } else {
                                    a
                                }
                            } else {
                                a + v
                            }
                        };
                        for i in 0..len {
                            let v = taps[i * step as usize];
                            let want = if i < half { fold(start[i], v) } else { fold(fold(start[i], v), v) };
                            let same = want.to_bits() == acc[i].to_bits() || (want.is_nan() && acc[i].is_nan());
                            assert!(same, "{isa:?} step {step} len {len} max {max} at {i}: {} vs {want}", acc[i]);
                        }
                    }
                }
            }
        });
    }
}
