//! SIMD primitives for pyasc's tile VM: elementwise math, arithmetic, comparisons, casts,
//! flash-attention blocks ([`attention`]), detection (box IoU and non-maximum suppression,
//! [`nms`]) and
//! matrix multiplication ([`gemm`]: float32/float64 over the `gemm` crate, bfloat16/float16
//! operands with float32 sums through packed AVX-512 BF16 kernels or float32 conversion).
//!
//! Every entry point takes whole tiles (slices) and runs a loop compiled once per ISA
//! (AVX-512, AVX2+FMA, SSE2 / NEON baseline), picked at run time from the CPU's features; see
//! [`isa`]. float32 transcendental functions are vectorised implementations within 2 ulp of
//! the correctly rounded result over the whole float32 range; float64 ones use Rust std and
//! `libm`. Semantics follow NumPy.

pub mod attention;
#[cfg(target_arch = "x86_64")]
mod attention_avx2;
#[cfg(target_arch = "x86_64")]
mod attention_avx512;
pub mod binary;
mod cast;
pub mod chain;
pub mod convert16;
pub mod copy_rows;
mod dispatch;
mod element;
pub mod filter_rows;
pub mod gemm;
#[cfg(target_arch = "x86_64")]
mod gemm_bf16;
#[cfg(target_arch = "x86_64")]
mod gemm_bf16_thin;
mod gemm_lowp;
#[cfg(test)]
mod gemm_lowp_tests;
pub mod isa;
#[cfg(all(target_arch = "x86_64", unix))]
pub mod lane_jit;
#[cfg(not(all(target_arch = "x86_64", unix)))]
#[path = "lane_jit_none.rs"]
pub mod lane_jit;
#[cfg(all(target_arch = "x86_64", unix))]
mod lane_jit_exec;
#[cfg(all(target_arch = "x86_64", unix))]
mod lane_jit_plan;
#[cfg(all(test, target_arch = "x86_64", unix))]
mod lane_jit_tests;
pub mod lane_loop;
#[cfg(test)]
mod lane_loop_tests;
mod math;
pub mod nms;
#[cfg(test)]
mod nms_tests;
pub mod radix;
pub mod reduce;
mod reduce_avx512;
pub mod reduce_map;
pub mod scale_shift;
pub mod scaled_extreme;
pub mod scan;
pub mod scan_map;
mod scan_simd;
pub mod select_cmp;
mod src;
pub mod stencil;
#[cfg(target_arch = "x86_64")]
mod stencil_simd;
#[cfg(all(test, target_arch = "x86_64"))]
mod stencil_simd_tests;
pub mod stencil_sweep;
#[cfg(test)]
mod stencil_tests;
mod stencil_wave;
#[cfg(test)]
mod test_rng;
pub mod unary;

pub use cast::{cast, fill, select};
pub use element::{Element, UInt8};
pub use src::Src;
