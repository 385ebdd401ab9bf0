//! Matrix products of 16-bit float operands with float32 accumulation and a float32 result:
//! `dst(f32) = a(bf16) @ b(bf16)` ([`matmul_bf16`]) and `dst(f32) = a(f16) @ b(f16)`
//! ([`matmul_f16`]).
//!
//! Paths, chosen at run time:
//! - bfloat16 on a CPU with AVX-512 BF16 (and [`crate::isa::active`] at AVX-512): packed panels and
//!   `vdpbf16ps` micro-kernels ([`crate::gemm::bf16_dot`]); up to 4 rows of `a` times a matrix whose
//!   rows are contiguous stream `b` once instead ([`crate::gemm::bf16_thin`]).
//! - Otherwise, and for float16 always: blocks of `a` and `b` are converted to float32
//!   (exactly: every bfloat16 and float16 value is a float32) and multiplied by the float32
//!   GEMM of the `gemm` crate, block after block of depth, summing into `dst`. float16 is not
//!   narrowed to bfloat16 (that would drop 3 bits of each operand).
//!
//! Either way every product of two 16-bit values is exact in float32 and sums are float32.

use crate::gemm::{MatMut, MatRef};
use gemm::Parallelism;
use half::{bf16, f16};
use rayon::prelude::*;

/// Depth of the blocks the float32 path converts at a time.
const KC_F32: usize = 512;

/// `dst = a @ b` with bfloat16 operands, float32 products and sums, a float32 result (`dst`
/// fully overwritten, never read). `threads`: 1 (or 0) runs on this thread only; more splits
/// the work over the rayon pool the call runs in (run it inside the pool you want).
///
/// # Safety
/// Every element addressed by `a`, `b` and `dst` must be valid (readable, and writable for
/// `dst`) for the duration of the call, and `dst` must not overlap `a` or `b` or itself.
///
/// # Panics
/// If the shapes do not match: `a` is m×k, `b` k×n, `dst` m×n.
pub unsafe fn matmul_bf16(dst: MatMut<f32>, a: MatRef<bf16>, b: MatRef<bf16>, threads: usize) {
    // SAFETY: `dst` is writable (this function's contract).
    if let Some(dst) = unsafe { trivial(dst, &a, &b) } {
        // SAFETY: forwarded from this function's contract.
        unsafe {
            if Path::choose() == Path::Bf16Dot {
                dot_bf16(dst, a, b, threads)
            } else {
                via_f32(dst, a, b, threads, bf16_to_f32)
            }
        }
    }
}

/// `dst = a @ b` with float16 operands, float32 products and sums, a float32 result; as
/// [`matmul_bf16`] otherwise.
///
/// # Safety
/// As for [`matmul_bf16`].
///
/// # Panics
/// If the shapes do not match: `a` is m×k, `b` k×n, `dst` m×n.
pub unsafe fn matmul_f16(dst: MatMut<f32>, a: MatRef<f16>, b: MatRef<f16>, threads: usize) {
    // SAFETY: `dst` is writable (this function's contract).
    if let Some(dst) = unsafe { trivial(dst, &a, &b) } {
        // SAFETY: forwarded from this function's contract.
        unsafe { via_f32(dst, a, b, threads, f16_to_f32) }
    }
}

/// The way a bfloat16 product runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // no dot path off x86_64
pub(crate) enum Path {
    /// AVX-512 BF16 dot products over packed panels.
    Bf16Dot,
    /// Conversion to float32 and the float32 GEMM.
    F32,
}

impl Path {
    /// The fastest path this CPU (and `PYASC_ISA`) allows.
    pub(crate) fn choose() -> Path {
        #[cfg(target_arch = "x86_64")]
        if crate::isa::active() == crate::isa::Isa::Avx512 && crate::gemm::bf16_dot::available() {
            return Path::Bf16Dot;
        }
        Path::F32
    }
}

/// Shape checks and the empty cases: `None` when nothing is left to compute (an empty `dst`,
/// or `k = 0`, where `dst` gets zeros).
///
/// # Safety
/// `dst` must be writable.
unsafe fn trivial<T>(dst: MatMut<f32>, a: &MatRef<T>, b: &MatRef<T>) -> Option<MatMut<f32>> {
    crate::gemm::assert_shapes(&dst, a, b);
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m == 0 || n == 0 {
        return None;
    }
    if k == 0 {
        for i in 0..m as isize {
            for j in 0..n as isize {
                // SAFETY: (i, j) is inside dst, which the caller guarantees writable.
                unsafe { dst.ptr.offset(i * dst.rs + j * dst.cs).write(0.0) };
            }
        }
        return None;
    }
    Some(dst)
}

/// The AVX-512 BF16 path (portable builds never choose it).
///
/// # Safety
/// As for [`matmul_bf16`], with non-empty shapes and `k > 0`.
unsafe fn dot_bf16(dst: MatMut<f32>, a: MatRef<bf16>, b: MatRef<bf16>, threads: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: forwarded; `Path::choose` checked the CPU's features.
    unsafe {
        crate::gemm::bf16_dot::matmul(dst, a, b, threads)
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: forwarded.
    unsafe {
        via_f32(dst, a, b, threads, bf16_to_f32)
    }
}

/// bfloat16 to float32: the bits shifted into the high half.
fn bf16_to_f32(src: &[bf16], dst: &mut [f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = f32::from_bits((s.to_bits() as u32) << 16);
    }
}

/// float16 to float32 (`half` uses F16C where the CPU has it).
fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
    use half::slice::HalfFloatSliceExt;
    src.convert_to_f32_slice(dst);
}

/// Raw pointers handed to the conversion workers.
#[derive(Clone, Copy)]
struct Src<T>(MatRef<T>);
// SAFETY: the workers only read the operand, valid for the call per the caller's contract.
unsafe impl<T> Send for Src<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Src<T> {}

/// Writes `x[r0.., c0..c0+cols]` (rows `rows`) as a row-major float32 block into `out`.
///
/// # Safety
/// The block must lie inside `x`.
unsafe fn convert_block<T: Copy + Default>(
    out: &mut [f32],
    x: &MatRef<T>,
    (r0, rows): (usize, usize),
    (c0, cols): (usize, usize),
    conv: fn(&[T], &mut [f32]),
    threads: usize,
) {
    let src = Src(*x);
    let row = |(i, o): (usize, &mut [f32])| {
        let x = &src; // the whole (Sync) wrapper, not its raw-pointer fields
        let start = (r0 + i) as isize * x.0.rs + c0 as isize * x.0.cs;
        if x.0.cs == 1 {
            // SAFETY: `cols` contiguous elements of one row inside the block.
            conv(unsafe { std::slice::from_raw_parts(x.0.ptr.offset(start), cols) }, o);
        } else {
            let mut tmp = vec![T::default(); cols];
            for (j, t) in tmp.iter_mut().enumerate() {
                // SAFETY: element (r0+i, c0+j) of the block.
                *t = unsafe { *x.0.ptr.offset(start + j as isize * x.0.cs) };
            }
            conv(&tmp, o);
        }
    };
    let out = &mut out[..rows * cols];
    if threads > 1 && rows * cols >= 1 << 16 {
        out.par_chunks_mut(cols).enumerate().for_each(row);
    } else {
        out.chunks_mut(cols).enumerate().for_each(row);
    }
}

/// The float32 path: blocks of [`KC_F32`] depth converted to float32, then `dst (+)= ab @ bb`
/// by the `gemm` crate.
///
/// # Safety
/// As for [`matmul_bf16`], with non-empty shapes and `k > 0`.
pub(crate) unsafe fn via_f32<T: Copy + Default>(
    dst: MatMut<f32>,
    a: MatRef<T>,
    b: MatRef<T>,
    threads: usize,
    conv: fn(&[T], &mut [f32]),
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let kc_max = KC_F32.min(k);
    let (mut ab, mut bb) = (vec![0f32; m * kc_max], vec![0f32; kc_max * n]);
    let parallelism = if threads <= 1 { Parallelism::None } else { Parallelism::Rayon(threads) };
    for pc in (0..k).step_by(KC_F32) {
        let kc = KC_F32.min(k - pc);
        // SAFETY: both blocks lie inside the operands.
        unsafe {
            convert_block(&mut ab, &a, (0, m), (pc, kc), conv, threads);
            convert_block(&mut bb, &b, (pc, kc), (0, n), conv, threads);
        }
        // SAFETY: `ab` is m x kc and `bb` kc x n, row-major; `dst` is valid and disjoint from
        // them (the caller's contract); `gemm` takes (column stride, row stride) pairs and
        // reads `dst` only for the blocks after the first.
        unsafe {
            gemm::gemm(
                m,
                n,
                kc,
                dst.ptr,
                dst.cs,
                dst.rs,
                pc > 0,
                ab.as_ptr(),
                1,
                kc as isize,
                bb.as_ptr(),
                1,
                n as isize,
                1.0f32,
                1.0f32,
                false,
                false,
                false,
                parallelism,
            )
        }
    }
}
