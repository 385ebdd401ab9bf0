//! Branch-free scalar building blocks of the vectorised math kernels.
//!
//! Every function here is `#[inline(always)]` and free of early exits and libm calls, so that
//! it vectorises once inlined into a kernel loop. Most float32 transcendental functions compute
//! internally in float64 (like glibc's modern `expf`/`logf`/`sinf`): this keeps them within
//! about 0.5 ulp without fiddly float32 error compensation, and float32 subnormal inputs and
//! outputs are ordinary float64 numbers. exp, exp2, sigmoid, silu, erf, erfc and gelu are
//! native float32 (twice the lanes per vector) with exact-product tricks where cancellation or
//! large arguments demand.

pub(crate) mod cbrt;
pub(crate) mod erf;
pub(crate) mod erf_table;
pub(crate) mod exp_avx2;
pub(crate) mod exp_avx512;
pub(crate) mod exp_log;
pub(crate) mod float_bits;
pub(crate) mod gelu_half;
pub(crate) mod hyper;
pub(crate) mod inverse;
pub(crate) mod pairs;
pub(crate) mod real;
pub(crate) mod trig;

use crate::dispatch::Simd;

/// `a * b + c`, fused when the ISA has an FMA instruction.
#[inline(always)]
pub(crate) fn mad<S: Simd>(a: f64, b: f64, c: f64) -> f64 {
    if S::FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// `a * b + c` in float32, fused when the ISA has an FMA instruction.
#[inline(always)]
pub(crate) fn mad32<S: Simd>(a: f32, b: f32, c: f32) -> f32 {
    if S::FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// `a * b + c` in float32 with one rounding on every ISA: without an FMA instruction it goes
/// through float64, where the product of two float32 values is exact.
#[inline(always)]
pub(crate) fn fma32<S: Simd>(a: f32, b: f32, c: f32) -> f32 {
    if S::FMA {
        a.mul_add(b, c)
    } else {
        ((a as f64) * (b as f64) + c as f64) as f32
    }
}

/// Evaluates `c[0] + c[1] x + ... + c[N-1] x^(N-1)` by Horner's rule.
#[inline(always)]
pub(crate) fn horner<S: Simd, const N: usize>(x: f64, c: &[f64; N]) -> f64 {
    let mut acc = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        acc = mad::<S>(acc, x, c[i]);
    }
    acc
}

/// Evaluates `c[0] + c[1] x + ... + c[N-1] x^(N-1)` in float32 by Horner's rule.
#[inline(always)]
pub(crate) fn horner32<S: Simd, const N: usize>(x: f32, c: &[f32; N]) -> f32 {
    let mut acc = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        acc = mad32::<S>(acc, x, c[i]);
    }
    acc
}

/// 1.5 * 2^52: adding it rounds a float64 of magnitude below 2^51 to an integer held in the
/// low mantissa bits.
pub(crate) const ROUND_MAGIC: f64 = 6755399441055744.0;

/// Splits `t = v + ROUND_MAGIC` into the rounded value as float64 and as an integer.
#[inline(always)]
pub(crate) fn magic_split(t: f64) -> (f64, i64) {
    (t - ROUND_MAGIC, (t.to_bits() as i64).wrapping_sub(ROUND_MAGIC.to_bits() as i64))
}

/// Converts a small integer (|k| < 2^51) to float64 without a 64-bit integer conversion
/// instruction (absent before AVX-512DQ).
#[inline(always)]
pub(crate) fn small_i64_to_f64(k: i64) -> f64 {
    f64::from_bits(k.wrapping_add(ROUND_MAGIC.to_bits() as i64) as u64) - ROUND_MAGIC
}

/// `2^k` for `-1022 <= k <= 1023`.
#[inline(always)]
pub(crate) fn pow2i(k: i64) -> f64 {
    f64::from_bits((k.wrapping_add(1023) << 52) as u64)
}

/// Keeps `x` within `[lo, hi]`; NaN passes through unchanged.
#[inline(always)]
pub(crate) fn clamp_nan(x: f64, lo: f64, hi: f64) -> f64 {
    let x = if x < lo { lo } else { x };
    if x > hi {
        hi
    } else {
        x
    }
}
