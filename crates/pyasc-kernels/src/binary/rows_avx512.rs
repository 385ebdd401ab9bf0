//! AVX-512 float rows with one operand broadcast per row (`x[:, 5:] * x[:, 4:5]`).
//!
//! LLVM's own vectorisation of a row of 80 float32 values runs 64 of them in 512-bit vectors
//! and the last 16 in two 256-bit halves. The row reduction that reads the row next loads it
//! in 512-bit vectors, and a load spanning two narrower stores cannot be forwarded from them:
//! it waits until both have reached the cache, once per row. Here each row is written in whole
//! 512-bit vectors, its tail with one masked store. `a + b`, `a - b` and `a * b` keep the
//! operand order and round as the scalar loop does.

use super::RowSrc;
use pyasc_ir::op::BinaryOp;
use std::arch::x86_64::*;

/// The operation, as a const parameter so that each row loop is straight-line.
const ADD: u8 = 0;
const SUB: u8 = 1;
const MUL: u8 = 2;

macro_rules! rows_of {
    ($name:ident, $walk:ident, $t:ty, $v:ty, $lanes:expr, $mask:ty, $load:ident, $store:ident, $set1:ident,
     $add:ident, $sub:ident, $mul:ident) => {
        /// `y = f(a, b)` over rows of `c` elements when one operand holds rows and the other
        /// one value per row or one value for all, and `f` is `+`, `-` or `*`; returns false
        /// (writing nothing) otherwise.
        ///
        /// # Safety
        /// The CPU must support AVX-512F; row operands hold as many elements as `y`, per-row
        /// operands one per row of `y` (as [`super::arith_rows`] checks).
        #[target_feature(enable = "avx512f")]
        pub(crate) unsafe fn $name(f: BinaryOp, a: RowSrc<'_, $t>, b: RowSrc<'_, $t>, y: &mut [$t], c: usize) -> bool {
            let (x, s, rows_first) = match (a, b) {
                (RowSrc::Rows(x), s @ (RowSrc::PerRow(_) | RowSrc::Scalar(_))) => (x, s, true),
                (s @ (RowSrc::PerRow(_) | RowSrc::Scalar(_)), RowSrc::Rows(x)) => (x, s, false),
                _ => return false,
            };
            // SAFETY: per this function's contract.
            unsafe {
                match (f, rows_first) {
                    (BinaryOp::Add, true) => $walk::<ADD, true>(x, s, y, c),
                    (BinaryOp::Add, false) => $walk::<ADD, false>(x, s, y, c),
                    (BinaryOp::Sub, true) => $walk::<SUB, true>(x, s, y, c),
                    (BinaryOp::Sub, false) => $walk::<SUB, false>(x, s, y, c),
                    (BinaryOp::Mul, true) => $walk::<MUL, true>(x, s, y, c),
                    (BinaryOp::Mul, false) => $walk::<MUL, false>(x, s, y, c),
                    _ => return false,
                }
            }
            true
        }

        /// The rows of [`$name`]: `OP` on (row, value) when `ROWS_FIRST`, else (value, row).
        ///
        /// # Safety
        /// As for [`$name`].
        #[target_feature(enable = "avx512f")]
        unsafe fn $walk<const OP: u8, const ROWS_FIRST: bool>(x: &[$t], s: RowSrc<'_, $t>, y: &mut [$t], c: usize) {
            let n = $lanes;
            for (r, (xr, yr)) in x.chunks_exact(c).zip(y.chunks_exact_mut(c)).enumerate() {
                let v = $set1(match s {
                    RowSrc::PerRow(v) => v[r],
                    RowSrc::Scalar(v) => v,
                    RowSrc::Rows(_) => unreachable!("one operand holds rows"),
                });
                let mut j = 0;
                while j < c {
                    let m: $mask = if c - j >= n { !0 } else { ((1u32 << (c - j)) - 1) as $mask };
                    // SAFETY: the masked lanes lie inside the row (`j + popcount(m) <= c`).
                    unsafe {
                        let e = $load(m, xr.as_ptr().add(j));
                        let (p, q) = if ROWS_FIRST { (e, v) } else { (v, e) };
                        let out = match OP {
                            ADD => $add(p, q),
                            SUB => $sub(p, q),
                            _ => $mul(p, q),
                        };
                        $store(yr.as_mut_ptr().add(j), m, out);
                    }
                    j += n;
                }
            }
        }
    };
}

rows_of!(
    rows_f32,
    walk_f32,
    f32,
    __m512,
    16,
    __mmask16,
    _mm512_maskz_loadu_ps,
    _mm512_mask_storeu_ps,
    _mm512_set1_ps,
    _mm512_add_ps,
    _mm512_sub_ps,
    _mm512_mul_ps
);
rows_of!(
    rows_f64,
    walk_f64,
    f64,
    __m512d,
    8,
    __mmask8,
    _mm512_maskz_loadu_pd,
    _mm512_mask_storeu_pd,
    _mm512_set1_pd,
    _mm512_add_pd,
    _mm512_sub_pd,
    _mm512_mul_pd
);
