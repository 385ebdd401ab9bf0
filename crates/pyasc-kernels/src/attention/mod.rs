//! Flash-attention blocks (FlashAttention-2's loop order): one block of [`BLOCK_Q`] query rows
//! of one head against the keys and values of that head, [`BLOCK_K`] keys at a time, with an
//! online softmax (running row maximum and sum), the output accumulated in the compute type.
//! Only one block of scores exists at a time, never the `Lq x Lk` matrix.
//!
//! Layout: the scores of a block are held transposed, `S^T` (keys x queries), and the output
//! too, `O^T` (value channels x queries), so the query index runs along SIMD lanes everywhere:
//! both products broadcast one element of a key or value row against a row of `Q^T` or `P^T`,
//! the row maxima and sums are lane-wise maxima and sums, and keys and values are read in place
//! through their strides (no packing). The caller packs `Q^T`, already multiplied by the scale,
//! zero beyond the block's valid rows.
//!
//! float32 runs on register-blocked micro-kernels and the vectorised `exp` of this crate,
//! written once (`blocked`) and compiled for AVX-512 (8 keys or channels x 48 queries, 24
//! accumulators) when the CPU has it ([`crate::isa::active`]) or AVX2+FMA (2 keys or channels x
//! 48 queries, 12 accumulators) when that is the best it has; otherwise, and for float64,
//! portable loops that the compiler vectorises (compiled for AVX2+FMA as well when the CPU has it), with this crate's
//! branch-free `exp` (float64: relative error about 1e-14, weights below 2^-1022 flush to 0).
//!
//! A query whose every key is masked (`-inf` scores) ends with a zero sum and a zero output:
//! its result is `0 / 0`, NaN, as `softmax` over a row of `-inf` gives.

use crate::dispatch::{Base, Simd};
use crate::isa::{active, Isa};
use crate::math::exp_log::{exp64, exp_f32};

pub mod backward;
#[cfg(target_arch = "x86_64")]
mod blocked;

/// Query rows per block (three 16-lane float32 vectors).
pub const BLOCK_Q: usize = 48;
/// Keys per block.
pub const BLOCK_K: usize = 64;

/// A strided matrix: element `(r, c)` at `ptr + r*rs + c*cs` (in elements).
#[derive(Clone, Copy, Debug)]
pub struct Strided<T> {
    /// Address of element (0, 0).
    pub ptr: *const T,
    /// Distance between rows.
    pub rs: isize,
    /// Distance between columns.
    pub cs: isize,
}

impl<T: Copy> Strided<T> {
    /// Element `(r, c)`.
    ///
    /// # Safety
    /// The element must be readable.
    #[inline(always)]
    unsafe fn at(&self, r: usize, c: usize) -> T {
        // SAFETY: per the contract.
        unsafe { *self.ptr.offset(r as isize * self.rs + c as isize * self.cs) }
    }
}

/// One block of queries of one head.
#[derive(Clone, Copy, Debug)]
pub struct QueryBlock<'a, T> {
    /// `Q^T * scale`: `d` rows of [`BLOCK_Q`] (zeros past `rows`).
    pub qt: &'a [T],
    /// Index of the block's first query.
    pub q0: usize,
    /// Valid queries in the block (at most [`BLOCK_Q`]).
    pub rows: usize,
    /// Keys, `lk x d`.
    pub k: Strided<T>,
    /// Values, `lk x dv`.
    pub v: Strided<T>,
    /// Number of keys.
    pub lk: usize,
    /// Query and key width.
    pub d: usize,
    /// Value width.
    pub dv: usize,
    /// Keep only keys `j <= i` for query `i`.
    pub causal: bool,
    /// Also write each query's log-sum-exp of its scores, `max + ln(sum)`, after its `dv`
    /// outputs (column `dv` of its output row; the caller's rows are `dv + 1` wide).
    pub lse: bool,
}

/// Writes the mask's addends for a block of transposed scores: called with a buffer of `bc`
/// rows of [`BLOCK_Q`], the first key `j0` and `bc`, it stores at `j * BLOCK_Q + i` what query
/// `i` of the block adds to its score of key `j0 + j` (`0` or `-inf` for a boolean mask, the
/// value of an additive one), for every key of the block and each of its valid queries (the
/// buffer keeps the previous block's values; the entries of padding queries stay zero). It
/// runs before the block's scores are computed, so its narrow stores have drained by the time
/// the scores are read as vectors.
pub type MaskFn<'m, T> = &'m (dyn Fn(&mut [T], usize, usize) + Sync);

/// An element type with a portable attention path.
pub trait AttnFloat: Copy + PartialOrd + Send + Sync + 'static {
    /// 0.
    const ZERO: Self;
    /// -inf.
    const NEG_INF: Self;
    /// `a + b`.
    fn add(self, b: Self) -> Self;
    /// `a * b`.
    fn mul(self, b: Self) -> Self;
    /// `a - b`.
    fn sub(self, b: Self) -> Self;
    /// `a / b`.
    fn div(self, b: Self) -> Self;
    /// `ln a`.
    fn ln(self) -> Self;
}

macro_rules! attn_float {
    ($t:ty) => {
        impl AttnFloat for $t {
            const ZERO: Self = 0.0;
            const NEG_INF: Self = <$t>::NEG_INFINITY;
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                self + b
            }
            #[inline(always)]
            fn mul(self, b: Self) -> Self {
                self * b
            }
            #[inline(always)]
            fn sub(self, b: Self) -> Self {
                self - b
            }
            #[inline(always)]
            fn div(self, b: Self) -> Self {
                self / b
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
        }
    };
}
attn_float!(f32);
attn_float!(f64);

/// The portable path's per-ISA arithmetic: the crate's branch-free `exp` (vectorised by the
/// compiler once inlined), `a * b + c` fused where the ISA has FMA, and a maximum that keeps NaN.
pub(crate) trait Lanes: AttnFloat {
    fn exp_s<S: Simd>(self) -> Self;
    fn mad<S: Simd>(self, b: Self, c: Self) -> Self;
    fn max_nan(self, b: Self) -> Self;
}

macro_rules! lanes {
    ($t:ty, $exp:path) => {
        impl Lanes for $t {
            #[inline(always)]
            fn exp_s<S: Simd>(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn mad<S: Simd>(self, b: Self, c: Self) -> Self {
                if S::FMA {
                    self.mul_add(b, c)
                } else {
                    self * b + c
                }
            }
            #[inline(always)]
            fn max_nan(self, b: Self) -> Self {
                if self > b || self.is_nan() {
                    self
                } else {
                    b
                }
            }
        }
    };
}
lanes!(f32, exp_f32::<S>);
lanes!(f64, exp64::<S>);

/// Scratch sizes of a block: `S^T`, the mask's addends, then `O^T`, in elements.
pub fn scratch_len(dv: usize) -> usize {
    2 * BLOCK_K * BLOCK_Q + dv * BLOCK_Q
}

/// The keys a block of queries sees: all of them, or up to its last query when causal.
pub(crate) fn key_limit<T>(b: &QueryBlock<'_, T>) -> usize {
    if b.causal {
        b.lk.min(b.q0 + b.rows)
    } else {
        b.lk
    }
}

/// `-inf` where key `j0 + j` lies after query `q0 + i` (only blocks crossing the diagonal).
pub(crate) fn causal_mask<T: AttnFloat>(st: &mut [T], q0: usize, j0: usize, bc: usize) {
    if j0 + bc <= q0 + 1 {
        return;
    }
    for j in 0..bc {
        let key = j0 + j;
        if key > q0 {
            let n = (key - q0).min(BLOCK_Q);
            st[j * BLOCK_Q..j * BLOCK_Q + n].fill(T::NEG_INF);
        }
    }
}

/// `st += mask`, element by element over `st`'s length.
#[inline(always)]
pub(crate) fn add_mask<T: AttnFloat>(st: &mut [T], mask: &[T]) {
    for (x, a) in st.iter_mut().zip(mask.iter()) {
        *x = x.add(*a);
    }
}

/// The online-softmax step of one block of `bc` keys (`st` holds `bc` rows of [`BLOCK_Q`]
/// transposed scores): updates the running maxima `m` and sums `l`, turns the scores into
/// `exp(s - max)` in place and returns each query's factor `exp(old max - new max)` for the
/// output so far. A NaN score becomes the maximum, so it reaches the whole row; a query with
/// only `-inf` scores so far subtracts 0 instead, so its weights are `exp(-inf) = 0`.
#[inline(always)]
pub(crate) fn online_softmax<T: Lanes, S: Simd>(
    st: &mut [T],
    bc: usize,
    m: &mut [T; BLOCK_Q],
    l: &mut [T; BLOCK_Q],
) -> [T; BLOCK_Q] {
    let mut alpha = [T::ZERO; BLOCK_Q];
    let mut mx = *m;
    for j in 0..bc {
        for i in 0..BLOCK_Q {
            mx[i] = st[j * BLOCK_Q + i].max_nan(mx[i]);
        }
    }
    let mut safe = [T::ZERO; BLOCK_Q];
    for i in 0..BLOCK_Q {
        safe[i] = if mx[i] == T::NEG_INF { T::ZERO } else { mx[i] };
        alpha[i] = m[i].sub(safe[i]).exp_s::<S>();
    }
    let mut sum = [T::ZERO; BLOCK_Q];
    for j in 0..bc {
        for i in 0..BLOCK_Q {
            let p = st[j * BLOCK_Q + i].sub(safe[i]).exp_s::<S>();
            st[j * BLOCK_Q + i] = p;
            sum[i] = sum[i].add(p);
        }
    }
    for i in 0..BLOCK_Q {
        l[i] = l[i].mul(alpha[i]).add(sum[i]);
        m[i] = mx[i];
    }
    alpha
}

/// Writes `out[i, c] = O^T[c, i] / l[i]` for the block's valid rows (`out` row stride `out_rs`):
/// a row of `O^T` divided as whole vectors (inlined into the ISA's code), then written down
/// the output's column; with [`QueryBlock::lse`], `m[i] + ln(l[i])` goes to column `dv`.
///
/// # Safety
/// `out` must address `rows x dv` (or `dv + 1` with `lse`) writable elements with that row
/// stride.
#[inline(always)]
pub(crate) unsafe fn store<T: AttnFloat>(
    ot: &[T],
    (m, l): (&[T; BLOCK_Q], &[T; BLOCK_Q]),
    b: &QueryBlock<'_, T>,
    out: *mut T,
    out_rs: isize,
) {
    let mut row = [T::ZERO; BLOCK_Q];
    for c in 0..b.dv {
        let o: &[T; BLOCK_Q] = ot[c * BLOCK_Q..(c + 1) * BLOCK_Q].try_into().expect("one row");
        for i in 0..BLOCK_Q {
            row[i] = o[i].div(l[i]);
        }
        for (i, x) in row.iter().enumerate().take(b.rows) {
            // SAFETY: inside the caller's output block.
            unsafe { *out.offset(i as isize * out_rs + c as isize) = *x };
        }
    }
    if b.lse {
        for i in 0..b.rows {
            // SAFETY: column dv of the caller's rows, which are dv + 1 wide.
            unsafe { *out.offset(i as isize * out_rs + b.dv as isize) = m[i].add(l[i].ln()) };
        }
    }
}

/// The portable body, generic over the element type.
///
/// # Safety
/// As for [`attend_f32`].
#[inline(always)]
unsafe fn attend_portable<T: Lanes, S: Simd>(
    b: &QueryBlock<'_, T>,
    mask: Option<MaskFn<'_, T>>,
    scratch: &mut [T],
    out: *mut T,
    out_rs: isize,
) {
    let (st, rest) = scratch.split_at_mut(BLOCK_K * BLOCK_Q);
    let (mb, ot) = rest.split_at_mut(BLOCK_K * BLOCK_Q);
    let ot = &mut ot[..b.dv * BLOCK_Q];
    ot.fill(T::ZERO);
    if mask.is_some() {
        mb.fill(T::ZERO);
    }
    let mut m = [T::NEG_INF; BLOCK_Q];
    let mut l = [T::ZERO; BLOCK_Q];
    let lim = key_limit(b);
    for j0 in (0..lim).step_by(BLOCK_K) {
        let bc = BLOCK_K.min(lim - j0);
        let st = &mut st[..bc * BLOCK_Q];
        if let Some(f) = mask {
            f(&mut mb[..bc * BLOCK_Q], j0, bc);
        }
        for j in 0..bc {
            // A row of scores in registers, written once.
            let mut acc = [T::ZERO; BLOCK_Q];
            for t in 0..b.d {
                // SAFETY: key j0 + j < lk and t < d lie inside the key matrix.
                let kv = unsafe { b.k.at(j0 + j, t) };
                let q: &[T; BLOCK_Q] = b.qt[t * BLOCK_Q..(t + 1) * BLOCK_Q].try_into().expect("one row");
                for i in 0..BLOCK_Q {
                    acc[i] = kv.mad::<S>(q[i], acc[i]);
                }
            }
            st[j * BLOCK_Q..(j + 1) * BLOCK_Q].copy_from_slice(&acc);
        }
        if mask.is_some() {
            add_mask(st, mb);
        }
        if b.causal {
            causal_mask(st, b.q0, j0, bc);
        }
        let alpha = online_softmax::<T, S>(st, bc, &mut m, &mut l);
        for c in 0..b.dv {
            // A row of the output in registers, rescaled, then the block's weighted values.
            let row = &mut ot[c * BLOCK_Q..(c + 1) * BLOCK_Q];
            let mut acc = [T::ZERO; BLOCK_Q];
            for i in 0..BLOCK_Q {
                acc[i] = row[i].mul(alpha[i]);
            }
            for j in 0..bc {
                // SAFETY: value j0 + j < lk and c < dv lie inside the value matrix.
                let vv = unsafe { b.v.at(j0 + j, c) };
                let p: &[T; BLOCK_Q] = st[j * BLOCK_Q..(j + 1) * BLOCK_Q].try_into().expect("one row");
                for i in 0..BLOCK_Q {
                    acc[i] = vv.mad::<S>(p[i], acc[i]);
                }
            }
            row.copy_from_slice(&acc);
        }
    }
    // SAFETY: per the contract.
    unsafe { store(ot, (&m, &l), b, out, out_rs) };
}

/// The portable body compiled for AVX2 and FMA.
///
/// # Safety
/// As for [`attend_f32`], and the CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn attend_avx2<T: Lanes>(
    b: &QueryBlock<'_, T>,
    mask: Option<MaskFn<'_, T>>,
    scratch: &mut [T],
    out: *mut T,
    out_rs: isize,
) {
    // SAFETY: forwarded.
    unsafe { attend_portable::<T, crate::dispatch::Avx2>(b, mask, scratch, out, out_rs) }
}

/// The portable body for the active ISA (AVX2-compiled when the CPU has it).
///
/// # Safety
/// As for [`attend_f32`].
unsafe fn attend_generic<T: Lanes>(
    b: &QueryBlock<'_, T>,
    mask: Option<MaskFn<'_, T>>,
    scratch: &mut [T],
    out: *mut T,
    out_rs: isize,
) {
    #[cfg(target_arch = "x86_64")]
    if active() >= Isa::Avx2Fma {
        // SAFETY: the ISA check above; the rest forwarded.
        return unsafe { attend_avx2(b, mask, scratch, out, out_rs) };
    }
    // SAFETY: forwarded.
    unsafe { attend_portable::<T, Base>(b, mask, scratch, out, out_rs) }
}

fn check<T>(b: &QueryBlock<'_, T>, scratch: &[T]) {
    assert!(b.rows <= BLOCK_Q && b.qt.len() >= b.d * BLOCK_Q, "bad query block");
    assert!(scratch.len() >= scratch_len(b.dv), "attention scratch too small");
}

/// Attention of one float32 query block: `out[i, :] = softmax(S[i, :]) @ V` for its valid
/// rows, `S = Q K^T * scale` (+ mask) as packed in `b.qt`. `mask` writes the mask's addends
/// of each block of keys (see [`MaskFn`]); causal masking is `b.causal`.
///
/// # Safety
/// `b.k` and `b.v` must address `lk x d` and `lk x dv` readable elements; `out` must address
/// `rows x dv` writable elements, row stride `out_rs`, overlapping nothing else.
///
/// # Panics
/// If the block or the scratch (see [`scratch_len`]) is too small.
pub unsafe fn attend_f32(
    b: &QueryBlock<'_, f32>,
    mask: Option<MaskFn<'_, f32>>,
    scratch: &mut [f32],
    out: *mut f32,
    out_rs: isize,
) {
    check(b, scratch);
    #[cfg(target_arch = "x86_64")]
    if active() == Isa::Avx512 {
        // SAFETY: the ISA check above; the rest forwarded.
        return unsafe { blocked::attend_avx512(b, mask, scratch, out, out_rs) };
    }
    #[cfg(target_arch = "x86_64")]
    if active() == Isa::Avx2Fma {
        // SAFETY: the ISA check above; the rest forwarded.
        return unsafe { blocked::attend_avx2(b, mask, scratch, out, out_rs) };
    }
    // SAFETY: forwarded.
    unsafe { attend_generic(b, mask, scratch, out, out_rs) }
}

/// Attention of one float64 query block (the portable path); as [`attend_f32`].
///
/// # Safety
/// As for [`attend_f32`].
///
/// # Panics
/// As for [`attend_f32`].
pub unsafe fn attend_f64(
    b: &QueryBlock<'_, f64>,
    mask: Option<MaskFn<'_, f64>>,
    scratch: &mut [f64],
    out: *mut f64,
    out_rs: isize,
) {
    check(b, scratch);
    // SAFETY: forwarded.
    unsafe { attend_generic(b, mask, scratch, out, out_rs) }
}

#[cfg(test)]
mod tests;
