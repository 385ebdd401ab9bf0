//! Matrix multiplication glue over sarah-ek's `gemm` crate: `dst = a @ b` for f32 and f64
//! (and `dst += a @ b`, [`matmul_acc_f32`], [`matmul_acc_f64`]);
//! bfloat16 and float16 operands with a float32 result are [`matmul_bf16`] and [`matmul_f16`].
//!
//! Operands are strided views ([`MatRef`], [`MatMut`]): element `(i, j)` lives at
//! `ptr + i*rs + j*cs` elements, so row-major, column-major (transposed), sliced (every other
//! row) and reversed operands are all read in place, never copied by this module. The `gemm`
//! crate picks its micro-kernel at run time from the CPU's features (AVX-512 through its
//! `x86-v4` feature, which this crate enables; AVX2+FMA; NEON; scalar fallback) and packs
//! operands into cache-sized panels itself. `dst` is written without being read (the crate's
//! `read_dst = false`, `beta = 1`), so it may hold garbage, NaN included. An empty inner
//! dimension (`k = 0`) gives zeros; an empty `dst` is left alone.
//!
//! Limits: `dst` must not overlap `a` or `b`, and must not repeat elements (no zero or
//! aliasing strides in `dst`); `a` and `b` may (broadcast views with stride 0 are fine).

use gemm::Parallelism;

#[cfg(target_arch = "x86_64")]
mod bf16_dot;
#[cfg(target_arch = "x86_64")]
mod bf16_thin;
mod lowp;
#[cfg(test)]
mod lowp_tests;
mod rows_f32;

pub use lowp::{matmul_bf16, matmul_f16};
pub use rows_f32::{matmul_rows_f32, matmul_rows_f32_at, matmul_rows_f32_runs};

/// A strided matrix operand: element (i, j) lives at `ptr + i*rs + j*cs` (in elements).
#[derive(Clone, Copy, Debug)]
pub struct MatRef<T> {
    /// Address of element (0, 0).
    pub ptr: *const T,
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Distance between consecutive rows, in elements.
    pub rs: isize,
    /// Distance between consecutive columns, in elements.
    pub cs: isize,
}

/// A strided, writable matrix: element (i, j) lives at `ptr + i*rs + j*cs` (in elements).
#[derive(Debug)]
pub struct MatMut<T> {
    /// Address of element (0, 0).
    pub ptr: *mut T,
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// Distance between consecutive rows, in elements.
    pub rs: isize,
    /// Distance between consecutive columns, in elements.
    pub cs: isize,
}

/// `dst = a @ b` in f32 (`dst` fully overwritten, never read). `threads` is how many threads
/// `gemm` may use: 1 (or 0) runs on this thread only; more splits the work over rayon's pool.
///
/// # Safety
/// Every element addressed by `a`, `b` and `dst` must be valid (readable, and writable for
/// `dst`) for the duration of the call, and `dst` must not overlap `a` or `b` or itself.
///
/// # Panics
/// If the shapes do not match: `a` is m×k, `b` k×n, `dst` m×n.
pub unsafe fn matmul_f32(dst: MatMut<f32>, a: MatRef<f32>, b: MatRef<f32>, threads: usize) {
    // SAFETY: forwarded from this function's contract.
    unsafe { matmul(dst, a, b, threads, 0.0, 1.0, false) }
}

/// `dst += a @ b` in f32 (`dst` read and written); `threads` as in [`matmul_f32`].
///
/// # Safety
/// As for [`matmul_f32`].
///
/// # Panics
/// If the shapes do not match: `a` is m×k, `b` k×n, `dst` m×n.
pub unsafe fn matmul_acc_f32(dst: MatMut<f32>, a: MatRef<f32>, b: MatRef<f32>, threads: usize) {
    // SAFETY: forwarded from this function's contract.
    unsafe { matmul(dst, a, b, threads, 1.0, 1.0, true) }
}

/// `dst += a @ b` in f64 (`dst` read and written); `threads` as in [`matmul_f32`].
///
/// # Safety
/// As for [`matmul_f32`].
///
/// # Panics
/// If the shapes do not match: `a` is m×k, `b` k×n, `dst` m×n.
pub unsafe fn matmul_acc_f64(dst: MatMut<f64>, a: MatRef<f64>, b: MatRef<f64>, threads: usize) {
    // SAFETY: forwarded from this function's contract.
    unsafe { matmul(dst, a, b, threads, 1.0, 1.0, true) }
}

/// `dst = a @ b` in f64 (`dst` fully overwritten, never read); `threads` as in [`matmul_f32`].
///
/// # Safety
/// As for [`matmul_f32`].
///
/// # Panics
/// If the shapes do not match: `a` is m×k, `b` k×n, `dst` m×n.
pub unsafe fn matmul_f64(dst: MatMut<f64>, a: MatRef<f64>, b: MatRef<f64>, threads: usize) {
    // SAFETY: forwarded from this function's contract.
    unsafe { matmul(dst, a, b, threads, 0.0, 1.0, false) }
}

/// Panics unless `a` is m×k, `b` k×n and `dst` m×n.
pub(crate) fn assert_shapes<A, B, D>(dst: &MatMut<D>, a: &MatRef<A>, b: &MatRef<B>) {
    assert!(
        b.rows == a.cols && dst.rows == a.rows && dst.cols == b.cols,
        "matmul shapes do not match: a {}x{}, b {}x{}, dst {}x{}",
        a.rows,
        a.cols,
        b.rows,
        b.cols,
        dst.rows,
        dst.cols
    );
}

/// `dst = scale * (a @ b)` in f32 (`dst` fully overwritten, never read); `threads` as in
/// [`matmul_f32`].
///
/// # Safety
/// As for [`matmul_f32`].
///
/// # Panics
/// If the shapes do not match: `a` is m×k, `b` k×n, `dst` m×n.
pub unsafe fn matmul_scaled_f32(dst: MatMut<f32>, a: MatRef<f32>, b: MatRef<f32>, scale: f32, threads: usize) {
    // SAFETY: forwarded from this function's contract.
    unsafe { matmul(dst, a, b, threads, 0.0, scale, false) }
}

/// `dst = scale * (a @ b)` in f64; as [`matmul_scaled_f32`].
///
/// # Safety
/// As for [`matmul_f32`].
///
/// # Panics
/// If the shapes do not match: `a` is m×k, `b` k×n, `dst` m×n.
pub unsafe fn matmul_scaled_f64(dst: MatMut<f64>, a: MatRef<f64>, b: MatRef<f64>, scale: f64, threads: usize) {
    // SAFETY: forwarded from this function's contract.
    unsafe { matmul(dst, a, b, threads, 0.0, scale, false) }
}

/// The shared body: shape checks, the empty cases, then one `gemm::gemm` call computing
/// `dst := keep*dst + scale*(a@b)`; with `acc` false `read_dst = false`, so `dst` is never read
/// (`keep` is 0), with `acc` true `dst` is read and kept (`keep` is 1).
unsafe fn matmul<T: Copy + 'static>(
    dst: MatMut<T>,
    a: MatRef<T>,
    b: MatRef<T>,
    threads: usize,
    keep: T,
    scale: T,
    acc: bool,
) {
    assert_shapes(&dst, &a, &b);
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if acc {
            return;
        }
        for i in 0..m as isize {
            for j in 0..n as isize {
                // SAFETY: (i, j) is inside dst, which the caller guarantees writable.
                unsafe { dst.ptr.offset(i * dst.rs + j * dst.cs).write(keep) };
            }
        }
        return;
    }
    let parallelism = if threads <= 1 { Parallelism::None } else { Parallelism::Rayon(threads) };
    // SAFETY: the caller guarantees every addressed element is valid and that dst does not
    // overlap the operands; `gemm` takes (column stride, row stride) pairs.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.ptr,
            dst.cs,
            dst.rs,
            acc,
            a.ptr,
            a.cs,
            a.rs,
            b.ptr,
            b.cs,
            b.rs,
            keep,
            scale,
            false,
            false,
            false,
            parallelism,
        )
    }
}
