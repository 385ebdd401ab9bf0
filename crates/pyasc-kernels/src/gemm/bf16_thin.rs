//! `dst(f32) = a(bf16) @ b(bf16)` for a few rows of `a` (a vector or a short batch of rows
//! times a matrix) when the rows of `b` are contiguous: `b` is streamed once, row by row, each
//! row converted to float32 (a 16-bit shift) and added, times `a[i, k]`, into float32 sums of
//! a block of columns (fused multiply-adds, one rounding per step). Packing `b` for the
//! `vdpbf16ps` kernels would cost more than the product itself here.

use crate::gemm::bf16_dot::Shared;
use crate::gemm::{MatMut, MatRef};
use half::bf16;
use rayon::prelude::*;

/// Most rows of `a` this path takes.
pub(crate) const THIN_ROWS: usize = 4;
/// Columns per block of sums (with `THIN_ROWS` rows, 32 KiB of float32 sums).
const BLOCK: usize = 2048;

/// Whether this path suits the product.
pub(crate) fn suits(a: &MatRef<bf16>, b: &MatRef<bf16>) -> bool {
    a.rows <= THIN_ROWS && b.cs == 1
}

/// Columns `j0..j0+cols` of `dst`.
///
/// # Safety
/// As for [`matmul`]; the block lies inside `dst`.
#[target_feature(enable = "avx2,fma,avx512f,avx512bw,avx512vl")]
unsafe fn block(sh: &Shared, j0: usize, cols: usize) {
    let (m, k) = (sh.a.rows, sh.a.cols);
    let mut sums = vec![0f32; m * cols];
    for p in 0..k {
        // SAFETY: row p of `b` from column j0 holds `cols` contiguous elements (`b.cs == 1`).
        let row = unsafe {
            std::slice::from_raw_parts(sh.b.ptr.offset(p as isize * sh.b.rs + j0 as isize).cast::<u16>(), cols)
        };
        for (i, s) in sums.chunks_mut(cols).enumerate() {
            // SAFETY: (i, p) is an element of `a`.
            let x = unsafe { *sh.a.ptr.offset(i as isize * sh.a.rs + p as isize * sh.a.cs) }.to_f32();
            for (s, &w) in s.iter_mut().zip(row) {
                *s = x.mul_add(f32::from_bits((w as u32) << 16), *s);
            }
        }
    }
    for (i, s) in sums.chunks(cols).enumerate() {
        for (j, &v) in s.iter().enumerate() {
            // SAFETY: (i, j0 + j) lies inside `dst`.
            unsafe { *sh.dst.offset(i as isize * sh.drs + (j0 + j) as isize * sh.dcs) = v };
        }
    }
}

/// `dst = a @ b` on this path: `a` has at most [`THIN_ROWS`] rows, `b.cs == 1`, `k > 0`.
///
/// # Safety
/// As for [`crate::gemm::matmul_bf16`]; the CPU must have AVX-512 F/BW/VL and FMA.
pub(crate) unsafe fn matmul(dst: MatMut<f32>, a: MatRef<bf16>, b: MatRef<bf16>, threads: usize) {
    let n = b.cols;
    let sh = Shared { a, b, dst: dst.ptr, drs: dst.rs, dcs: dst.cs };
    // At least two blocks per thread when the columns allow, each a multiple of 16 columns.
    let parts = n.div_ceil(BLOCK).max(2 * threads.max(1)).min(n.div_ceil(16));
    let width = n.div_ceil(parts).div_ceil(16) * 16;
    let starts: Vec<usize> = (0..n).step_by(width).collect();
    let run = |&j0: &usize| {
        let sh = &sh;
        // SAFETY: columns j0..j0+width clipped to `n` lie inside `dst` and belong to this block
        // alone; the caller checked the CPU.
        unsafe { block(sh, j0, width.min(n - j0)) }
    };
    if threads > 1 && n * a.cols * a.rows >= 1 << 16 {
        starts.par_iter().for_each(run);
    } else {
        starts.iter().for_each(run);
    }
}
