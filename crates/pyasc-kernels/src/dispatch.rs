//! Run-time dispatch onto per-ISA monomorphised copies of one generic kernel.
//!
//! A kernel is a value implementing [`Kernel`]; its `run::<S>()` body is written once, generic
//! over an ISA marker `S: Simd`, with every helper it calls marked `#[inline(always)]`.
//! [`dispatch`] reads [`crate::isa::active`] and calls `run` through a wrapper compiled under the
//! matching `#[target_feature]`, so LLVM inlines the body there and auto-vectorises its loops
//! for that ISA. `S::FMA` tells the body whether fused multiply-add is a single instruction.

use crate::isa::{self, Isa};

/// Compile-time description of the ISA a kernel copy is compiled for.
pub trait Simd: Copy {
    /// Fused multiply-add is a hardware instruction (use `mul_add`).
    const FMA: bool;
    /// Dividing float32 by a scalar is faster as a float64 multiply by its reciprocal (twice
    /// the conversions, but no division unit).
    const DIV_BY_MUL: bool = false;
    /// AVX-512F is available: kernels with hand-written AVX-512 paths may take them.
    const AVX512: bool = false;
}

/// Baseline target (x86_64 SSE2, or any other architecture).
#[derive(Copy, Clone)]
pub(crate) struct Base;
impl Simd for Base {
    const FMA: bool = cfg!(target_arch = "aarch64");
}

/// x86_64 AVX2 + FMA.
#[cfg(target_arch = "x86_64")]
#[derive(Copy, Clone)]
pub(crate) struct Avx2;
#[cfg(target_arch = "x86_64")]
impl Simd for Avx2 {
    const FMA: bool = true;
}

/// x86_64 AVX-512 F/BW/DQ/VL.
#[cfg(target_arch = "x86_64")]
#[derive(Copy, Clone)]
pub(crate) struct Avx512;
#[cfg(target_arch = "x86_64")]
impl Simd for Avx512 {
    const FMA: bool = true;
    const DIV_BY_MUL: bool = true;
    const AVX512: bool = true;
}

/// A kernel body written once, generic over the ISA marker.
pub(crate) trait Kernel {
    /// Result of the kernel.
    type Out;
    /// Runs the body; implementations are `#[inline(always)]`.
    fn run<S: Simd>(self) -> Self::Out;
}

/// Runs `k` with the copy compiled for the active ISA.
#[inline]
pub(crate) fn dispatch<K: Kernel>(k: K) -> K::Out {
    match isa::active() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `active()` only reports ISAs that `detected()` found on this CPU.
        Isa::Avx512 => unsafe { run_avx512(k) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2Fma => unsafe { run_avx2(k) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: NEON is part of the aarch64 baseline.
        Isa::Neon => unsafe { run_neon(k) },
        _ => k.run::<Base>(),
    }
}

/// Runs `k` compiled for AVX-512.
///
/// # Safety
/// The CPU must support AVX-512 F/BW/DQ/VL, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
unsafe fn run_avx512<K: Kernel>(k: K) -> K::Out {
    k.run::<Avx512>()
}

/// Runs `k` compiled for AVX2 with FMA.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2<K: Kernel>(k: K) -> K::Out {
    k.run::<Avx2>()
}

/// Runs `k` compiled for NEON.
///
/// # Safety
/// The CPU must support NEON.
#[cfg(target_arch = "aarch64")]
#[target_feature(enable = "neon")]
unsafe fn run_neon<K: Kernel>(k: K) -> K::Out {
    k.run::<Base>()
}
