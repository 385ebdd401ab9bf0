//! Stencil sums on AVX-512.
//!
//! A stencil's reads of one row sit one cell apart (`u[0, -1]`, `u[0, 0]`, `u[0, 1]`), so at
//! most one of them starts on a vector boundary. Each operand is read with unaligned loads;
//! the output is written aligned after a masked head. Assembling misaligned values from
//! aligned loads with a two-source permute (`vpermt2ps`, one per misaligned operand) was
//! measured slower on AVX-512 Zen 4: 2.9 ns against 2.1-2.4 ns per vector of a 5-point sum in
//! L1, and 10% more time for 32 wavefront steps of a 2048 x 2048 float32 grid. The sum is the
//! same chain of additions and subtractions, in the same order, as the portable loop: the
//! result is bit-identical.

use crate::stencil::BinOp;
use std::arch::x86_64::*;

/// The vector operations of one element type.
pub(crate) trait Lanes: Copy {
    /// The vector.
    type V: Copy;
    /// Elements per vector.
    const N: usize;
    /// A load at any alignment.
    unsafe fn loadu(p: *const Self) -> Self::V;
    /// The first `n` lanes at `p` (any alignment); others zero and not read.
    unsafe fn load_part(p: *const Self, n: usize) -> Self::V;
    /// `a + b`
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    /// `a - b`
    unsafe fn sub(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b`
    unsafe fn mul(a: Self::V, b: Self::V) -> Self::V;
    /// `a / b`
    unsafe fn div(a: Self::V, b: Self::V) -> Self::V;
    /// Every lane `x`.
    unsafe fn splat(x: Self) -> Self::V;
    /// An aligned store.
    unsafe fn store(p: *mut Self, v: Self::V);
    /// Stores the first `n` lanes at `p` (any alignment).
    unsafe fn store_part(p: *mut Self, v: Self::V, n: usize);
}

impl Lanes for f32 {
    type V = __m512;
    const N: usize = 16;
    #[inline(always)]
    unsafe fn loadu(p: *const f32) -> __m512 {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f32, n: usize) -> __m512 {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_maskz_loadu_ps(((1u32 << n) - 1) as u16, p) }
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn sub(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_sub_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn div(a: __m512, b: __m512) -> __m512 {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_div_ps(a, b) }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m512 {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m512) {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_store_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn store_part(p: *mut f32, v: __m512, n: usize) {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_mask_storeu_ps(p, ((1u32 << n) - 1) as u16, v) }
    }
}

impl Lanes for f64 {
    type V = __m512d;
    const N: usize = 8;
    #[inline(always)]
    unsafe fn loadu(p: *const f64) -> __m512d {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_loadu_pd(p) }
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f64, n: usize) -> __m512d {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_maskz_loadu_pd(((1u32 << n) - 1) as u8, p) }
    }
    #[inline(always)]
    unsafe fn add(a: __m512d, b: __m512d) -> __m512d {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_add_pd(a, b) }
    }
    #[inline(always)]
    unsafe fn sub(a: __m512d, b: __m512d) -> __m512d {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_sub_pd(a, b) }
    }
    #[inline(always)]
    unsafe fn mul(a: __m512d, b: __m512d) -> __m512d {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_mul_pd(a, b) }
    }
    #[inline(always)]
    unsafe fn div(a: __m512d, b: __m512d) -> __m512d {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_div_pd(a, b) }
    }
    #[inline(always)]
    unsafe fn splat(x: f64) -> __m512d {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_set1_pd(x) }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f64, v: __m512d) {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_store_pd(p, v) }
    }
    #[inline(always)]
    unsafe fn store_part(p: *mut f64, v: __m512d, n: usize) {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_mask_storeu_pd(p, ((1u32 << n) - 1) as u8, v) }
    }
}

/// `out = post(((s0 ± s1) ± s2) ± ...)` for `K` operands, each as long as `out`.
///
/// Compiled for AVX-512F itself, so that its closures are too and the intrinsics inline.
#[target_feature(enable = "avx512f")]
unsafe fn sum_k<T: Lanes, const K: usize>(s: &[&[T]], neg: &[bool], fin: impl Fn(T::V) -> T::V, out: &mut [T]) {
    // SAFETY: every load and store covers cells inside `0..len`, which each operand and `out`
    // hold; the caller checked for AVX-512F.
    unsafe {
        let n = T::N;
        let len = out.len();
        let o = out.as_mut_ptr();
        let src: [*const T; K] = std::array::from_fn(|j| s[j][..len].as_ptr());
        let signs: [bool; K] = std::array::from_fn(|j| j > 0 && neg[j - 1]);
        let signed = signs.iter().any(|&b| b);
        let chain = |vals: [T::V; K]| {
            let mut acc = vals[0];
            for j in 1..K {
                acc = if signed && signs[j] { T::sub(acc, vals[j]) } else { T::add(acc, vals[j]) };
            }
            fin(acc)
        };
        // `m` cells at `at` from masked loads and stores: the head and the tail.
        let part = |at: usize, m: usize| {
            let vals: [T::V; K] = std::array::from_fn(|j| T::load_part(src[j].add(at), m));
            T::store_part(o.add(at), chain(vals), m);
        };
        let elem = std::mem::size_of::<T>();
        let head = ((n - (o as usize / elem) % n) % n).min(len);
        if head > 0 {
            part(0, head);
        }
        let mut at = head;
        let whole = (len - at) / n;
        for i in 0..whole {
            let vals: [T::V; K] = std::array::from_fn(|j| T::loadu(src[j].add(at + n * i)));
            T::store(o.add(at + n * i), chain(vals));
        }
        at += whole * n;
        if at < len {
            part(at, len - at);
        }
    }
}

/// [`sum_k`] for the operand count `s.len()` (2 to 8).
///
/// # Safety
/// The CPU must have AVX-512F; every operand holds at least `out.len()` cells.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn sum<T: Lanes>(s: &[&[T]], neg: &[bool], post: Option<(BinOp, T)>, out: &mut [T]) {
    // SAFETY: the caller holds this function's contract.
    unsafe {
        macro_rules! arity {
            ($fin:expr) => {
                match s.len() {
                    2 => sum_k::<T, 2>(s, neg, $fin, out),
                    3 => sum_k::<T, 3>(s, neg, $fin, out),
                    4 => sum_k::<T, 4>(s, neg, $fin, out),
                    5 => sum_k::<T, 5>(s, neg, $fin, out),
                    6 => sum_k::<T, 6>(s, neg, $fin, out),
                    7 => sum_k::<T, 7>(s, neg, $fin, out),
                    8 => sum_k::<T, 8>(s, neg, $fin, out),
                    k => unreachable!("a sum of {k} operands"),
                }
            };
        }
        match post {
            None => arity!(|a: T::V| a),
            Some((BinOp::Div, c)) => {
                let c = T::splat(c);
                arity!(|a: T::V| T::div(a, c))
            }
            Some((_, c)) => {
                let c = T::splat(c);
                arity!(|a: T::V| T::mul(a, c))
            }
        }
    }
}
