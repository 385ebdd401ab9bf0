//! SIMD primitives for pyasc's tile VM: elementwise math, arithmetic, comparisons, casts,
//! reductions, scans, fused one-pass kernels, flash-attention blocks, matrix multiplication,
//! stencils, detection and the vectorized operators' mask loops.
//!
//! Every entry point takes whole tiles (slices) and runs a loop compiled once per ISA
//! (AVX-512, AVX2+FMA, SSE2 / NEON baseline), picked at run time from the CPU's features; see
//! [`isa`]. float32 transcendental functions are vectorised implementations within 2 ulp of
//! the correctly rounded result over the whole float32 range; float64 ones use Rust std and
//! `libm`. Semantics follow NumPy.
//!
//! The modules that hold a family of kernels sit in folders; the ones a folder groups are also
//! reachable at the crate's root (`pyasc_kernels::chain`, `pyasc_kernels::nms`,
//! `pyasc_kernels::lane_loop`, `pyasc_kernels::stencil_sweep`).
//!
//! * Run-time dispatch: [`isa`] (detection and `PYASC_ISA`), `dispatch` (one generic kernel
//!   monomorphised per ISA over the `Simd` trait), `vector` (float32 vectors of the AVX2 and
//!   AVX-512 markers, for hand-vectorised kernels written once over both), `element`
//!   ([`Element`]) and `src` ([`Src`]).
//! * Elementwise: `math` (vectorised float32 functions), [`unary`], [`binary`], `cast`
//!   ([`cast`], [`fill`], [`select`]), [`convert16`] (float16/bfloat16 to and from float32) and
//!   [`copy_rows`] (short strided rows gathered into a tile).
//! * [`reduce`]: row reductions, with the AVX-512 float32 max/min and search (`reduce/avx512.rs`).
//! * [`scan`]: segment and column scans, with the in-register prefix sums (`scan/simd.rs`).
//! * [`fused`]: several operations in one pass, each rounded as if alone: [`chain`],
//!   [`scale_shift`], [`select_cmp`], [`reduce_map`], [`scan_map`], [`scaled_extreme`].
//! * [`attention`]: flash-attention blocks, with one float32 micro-kernel compiled for AVX2+FMA
//!   and AVX-512 (`attention/blocked.rs`).
//! * [`gemm`]: float32/float64 over the `gemm` crate; bfloat16/float16 operands with float32
//!   sums (`gemm/lowp.rs`) through packed AVX-512 BF16 kernels (`gemm/bf16_dot.rs`), a streamed
//!   kernel for a few rows (`gemm/bf16_thin.rs`) or float32 conversion.
//! * [`stencil`]: stencil programs over runs of cells, their AVX-512 sums (`stencil/simd.rs`)
//!   and sweeps with temporal blocking ([`stencil_sweep`], `stencil/wave.rs`).
//! * [`detection`]: box IoU and non-maximum suppression ([`nms`], ordered by [`radix`]) and row
//!   filtering ([`filter_rows`]).
//! * [`lane`]: mask loops run strip by strip ([`lane_loop`]) or assembled to AVX-512 machine
//!   code ([`lane_jit`]).

pub mod attention;
pub mod binary;
mod cast;
pub mod convert16;
pub mod copy_rows;
pub mod detection;
mod dispatch;
mod element;
pub mod fused;
pub mod gemm;
pub mod isa;
pub mod lane;
mod math;
pub mod pool_taps;
pub mod radix;
pub mod reduce;
pub mod scan;
mod src;
pub mod stencil;
#[cfg(test)]
mod test_rng;
pub mod unary;
#[cfg(target_arch = "x86_64")]
mod vector;

pub use detection::{filter_rows, nms};
pub use fused::{chain, reduce_map, scale_shift, scaled_extreme, scan_map, select_cmp};
pub use lane::{lane_jit, lane_loop};
pub use stencil::sweep as stencil_sweep;

pub use cast::{cast, fill, select};
pub use element::{Element, UInt8};
pub use src::Src;
