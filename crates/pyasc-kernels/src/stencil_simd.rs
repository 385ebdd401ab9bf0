//! Stencil sums on AVX-512 from aligned loads.
//!
//! A stencil's reads of one row sit one cell apart (`u[0, -1]`, `u[0, 0]`, `u[0, 1]`), so at
//! most one of them starts on a vector boundary, and a 64-byte load that does not starts in one
//! cache line and ends in the next. Here each operand is a stream of aligned vectors: the value at a misaligned
//! position is assembled from two neighbouring aligned vectors with one two-source permute
//! (`vpermt2ps`), and each aligned vector is loaded once and carried to the next turn. The
//! output is written aligned after a masked head. The sum is the same chain of additions and
//! subtractions, in the same order, as the portable loop: the result is bit-identical.

use crate::stencil::BinOp;
use std::arch::x86_64::*;

/// Bytes of a vector (and of a cache line).
const VEC: usize = 64;

/// The vector operations of one element type.
pub(crate) trait Lanes: Copy {
    /// The vector.
    type V: Copy;
    /// Elements per vector.
    const N: usize;
    /// An aligned load.
    unsafe fn load(p: *const Self) -> Self::V;
    /// Lanes `from..` of the aligned vector at `p`; lower lanes are zero and not read.
    unsafe fn load_from(p: *const Self, from: usize) -> Self::V;
    /// The first `n` lanes at `p` (any alignment); others zero and not read.
    unsafe fn load_part(p: *const Self, n: usize) -> Self::V;
    /// The permute indices that select lanes `r..r + N` of two vectors.
    unsafe fn index(r: usize) -> __m512i;
    /// Lanes `r..r + N` of `lo` followed by `hi`, for `idx = index(r)`.
    unsafe fn shift(lo: Self::V, idx: __m512i, hi: Self::V) -> Self::V;
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
    unsafe fn load(p: *const f32) -> __m512 {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_load_ps(p) }
    }
    #[inline(always)]
    unsafe fn load_from(p: *const f32, from: usize) -> __m512 {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_maskz_loadu_ps(!((1u32 << from) - 1) as u16, p) }
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f32, n: usize) -> __m512 {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_maskz_loadu_ps(((1u32 << n) - 1) as u16, p) }
    }
    #[inline(always)]
    unsafe fn index(r: usize) -> __m512i {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe {
            _mm512_add_epi32(
                _mm512_set1_epi32(r as i32),
                _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            )
        }
    }
    #[inline(always)]
    unsafe fn shift(lo: __m512, idx: __m512i, hi: __m512) -> __m512 {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_permutex2var_ps(lo, idx, hi) }
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
    unsafe fn load(p: *const f64) -> __m512d {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_load_pd(p) }
    }
    #[inline(always)]
    unsafe fn load_from(p: *const f64, from: usize) -> __m512d {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_maskz_loadu_pd(!((1u32 << from) - 1) as u8, p) }
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f64, n: usize) -> __m512d {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_maskz_loadu_pd(((1u32 << n) - 1) as u8, p) }
    }
    #[inline(always)]
    unsafe fn index(r: usize) -> __m512i {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_add_epi64(_mm512_set1_epi64(r as i64), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7)) }
    }
    #[inline(always)]
    unsafe fn shift(lo: __m512d, idx: __m512i, hi: __m512d) -> __m512d {
        // SAFETY: the caller holds the trait\'s contract (AVX-512F, addresses valid).
        unsafe { _mm512_permutex2var_pd(lo, idx, hi) }
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
    // SAFETY: loads stay inside the operands (see the turns' bound), stores inside `out`;
    // the caller checked for AVX-512F.
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
        if whole >= 2 {
            // Each turn loads the next aligned vector of every stream; the last whole vector is
            // left to the tail so that no load passes an operand's end.
            let turns = whole - 1;
            let mut base = [std::ptr::null::<T>(); K];
            let mut cur: [T::V; K] = std::array::from_fn(|_| T::splat(std::mem::zeroed()));
            let mut idx = [_mm512_setzero_si512(); K];
            let mut aligned = [false; K];
            for j in 0..K {
                let p = src[j].add(at);
                let r = (p as usize % VEC) / elem;
                base[j] = p.sub(r);
                cur[j] = T::load_from(base[j], r);
                idx[j] = T::index(r);
                aligned[j] = r == 0;
            }
            for i in 0..turns {
                let vals: [T::V; K] = std::array::from_fn(|j| {
                    let next = T::load(base[j].add(n * (i + 1)));
                    let v = if aligned[j] { cur[j] } else { T::shift(cur[j], idx[j], next) };
                    cur[j] = next;
                    v
                });
                T::store(o.add(at + n * i), chain(vals));
            }
            at += turns * n;
        }
        while at < len {
            let m = n.min(len - at);
            part(at, m);
            at += m;
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
