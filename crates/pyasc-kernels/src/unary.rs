//! Elementwise unary functions on tiles: float math, integer ops, bool not, classification.
//!
//! float32 transcendental functions use the vectorised kernels of [`crate::math`]; float64 ones
//! call Rust std / `libm` per element (correctly rounded or within an ulp or two).

use crate::dispatch::{dispatch, Kernel, Simd};
use crate::math::erf::{erf_f32, erfc_f32, gelu_f32};
use crate::math::exp_log::{exp2_f32, exp_f32, expm1_f32, log1p_f32, log2_f32, log_f32};
use crate::math::hyper::{fast_gelu_f32, sigmoid_f32, silu_f32, softplus_f32, tanh_f32};
use crate::math::real::Real;
use crate::math::trig::{cos_f32, needs_wide, sin_f32, tan_f32};
use crate::src::map1;

mod float64;

/// Elementwise float functions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FloatFn {
    /// `-x`.
    Neg,
    /// `|x|`.
    Abs,
    /// `e^x`.
    Exp,
    /// `2^x`.
    Exp2,
    /// Natural logarithm.
    Log,
    /// Base-2 logarithm.
    Log2,
    /// `log(1 + x)`.
    Log1p,
    /// `e^x - 1`.
    Expm1,
    /// Square root.
    Sqrt,
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// `1 / x`.
    Reciprocal,
    /// Sine.
    Sin,
    /// Cosine.
    Cos,
    /// Tangent.
    Tan,
    /// Hyperbolic tangent.
    Tanh,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// Error function.
    Erf,
    /// Complementary error function.
    Erfc,
    /// `max(x, 0)`, NaN propagating.
    Relu,
    /// `x/2 (1 + erf(x / sqrt 2))`.
    Gelu,
    /// Ascend FastGelu: `x sigmoid(1.702 x)`, computed stably.
    FastGelu,
    /// `x sigmoid(x)`.
    Silu,
    /// `max(x, 0) + log1p(e^-|x|)`.
    Softplus,
    /// -1, 0 or 1 (NaN stays NaN).
    Sign,
    /// Round toward -inf.
    Floor,
    /// Round toward +inf.
    Ceil,
    /// Round half to even.
    Round,
    /// `x * x`.
    Square,
}

/// Applies a float function that needs no transcendental kernel; `false` if `f` is not one.
#[inline(always)]
fn real_fn<T: Real>(f: FloatFn, x: &[T], y: &mut [T]) -> bool {
    let zero = T::from(0.0);
    let one = T::from(1.0);
    match f {
        FloatFn::Neg => map1(x, y, |v| -v),
        FloatFn::Abs => map1(x, y, |v| v.abs_()),
        FloatFn::Sqrt => map1(x, y, |v| v.sqrt_()),
        FloatFn::Reciprocal => map1(x, y, |v| one / v),
        FloatFn::Square => map1(x, y, |v| v * v),
        FloatFn::Floor => map1(x, y, |v| v.floor_()),
        FloatFn::Ceil => map1(x, y, |v| v.ceil_()),
        FloatFn::Round => map1(x, y, |v| v.rint()),
        FloatFn::Relu => map1(x, y, |v| if v > zero || v.nan_() { v } else { zero }),
        FloatFn::Sign => map1(x, y, |v| {
            let s = if v > zero { one } else { v };
            let s = if v < zero { -one } else { s };
            if v == zero {
                zero
            } else {
                s
            }
        }),
        _ => return false,
    }
    true
}

/// Lanes the float32 trig kernels cannot reduce (huge or non-finite) are recomputed in float64.
#[inline(always)]
fn trig(x: &[f32], y: &mut [f32], f: impl Fn(f32) -> f32, wide: fn(f64) -> f64) {
    map1(x, y, f);
    for (xc, yc) in x.chunks(256).zip(y.chunks_mut(256)) {
        let huge = xc.iter().fold(false, |acc, v| acc | needs_wide(*v));
        if huge {
            for (o, &v) in yc.iter_mut().zip(xc) {
                if needs_wide(v) {
                    *o = wide(v as f64) as f32;
                }
            }
        }
    }
}

struct UnaryF32<'a> {
    f: FloatFn,
    x: &'a [f32],
    y: &'a mut [f32],
}

impl Kernel for UnaryF32<'_> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let (x, y) = (self.x, self.y);
        if real_fn(self.f, x, y) {
            return;
        }
        match self.f {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `S::AVX512` is only true in the copy compiled for (and run on) AVX-512.
            FloatFn::Exp if S::AVX512 => unsafe { crate::math::exp_avx512::exp_avx512(x, y) },
            FloatFn::Exp => map1(x, y, exp_f32::<S>),
            FloatFn::Exp2 => map1(x, y, exp2_f32::<S>),
            FloatFn::Log => map1(x, y, log_f32::<S>),
            FloatFn::Log2 => map1(x, y, log2_f32::<S>),
            FloatFn::Log1p => map1(x, y, log1p_f32::<S>),
            FloatFn::Expm1 => map1(x, y, expm1_f32::<S>),
            FloatFn::Rsqrt => map1(x, y, |v| (1.0 / (v as f64).sqrt()) as f32),
            FloatFn::Sin => trig(x, y, sin_f32::<S>, f64::sin),
            FloatFn::Cos => trig(x, y, cos_f32::<S>, f64::cos),
            FloatFn::Tan => trig(x, y, tan_f32::<S>, f64::tan),
            FloatFn::Tanh => map1(x, y, tanh_f32::<S>),
            FloatFn::Sigmoid => map1(x, y, sigmoid_f32::<S>),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `S::AVX512` is only true in the copy compiled for (and run on) AVX-512.
            FloatFn::Erf if S::AVX512 => unsafe { crate::math::erf_table::erf_avx512(x, y) },
            FloatFn::Erf => map1(x, y, erf_f32::<S>),
            FloatFn::Erfc => map1(x, y, erfc_f32::<S>),
            FloatFn::Gelu => map1(x, y, gelu_f32::<S>),
            FloatFn::FastGelu => map1(x, y, fast_gelu_f32::<S>),
            FloatFn::Silu => map1(x, y, silu_f32::<S>),
            FloatFn::Softplus => map1(x, y, softplus_f32::<S>),
            _ => unreachable!("handled by real_fn"),
        }
    }
}

struct UnaryF64<'a> {
    f: FloatFn,
    x: &'a [f64],
    y: &'a mut [f64],
}

impl Kernel for UnaryF64<'_> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        if !real_fn(self.f, self.x, self.y) {
            float64::apply(self.f, self.x, self.y);
        }
    }
}

/// `y = f(x)` on float32 tiles (`x.len() == y.len()`).
pub fn f32(f: FloatFn, x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "input length differs from output length");
    dispatch(UnaryF32 { f, x, y });
}

/// `y = f(x)` on float64 tiles (`x.len() == y.len()`).
pub fn f64(f: FloatFn, x: &[f64], y: &mut [f64]) {
    assert_eq!(x.len(), y.len(), "input length differs from output length");
    dispatch(UnaryF64 { f, x, y });
}

/// Elementwise integer functions (wrapping two's complement arithmetic).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntFn {
    /// `-x`, wrapping.
    Neg,
    /// `|x|`, wrapping (`|MIN| = MIN`).
    Abs,
    /// -1, 0 or 1.
    Sign,
    /// `x * x`, wrapping.
    Square,
    /// Bitwise not.
    Not,
}

macro_rules! int_unary {
    ($name:ident, $kernel:ident, $t:ty, $doc:literal) => {
        struct $kernel<'a> {
            f: IntFn,
            x: &'a [$t],
            y: &'a mut [$t],
        }

        impl Kernel for $kernel<'_> {
            type Out = ();
            #[inline(always)]
            fn run<S: Simd>(self) {
                let (x, y) = (self.x, self.y);
                match self.f {
                    IntFn::Neg => map1(x, y, |v: $t| v.wrapping_neg()),
                    IntFn::Abs => map1(x, y, |v: $t| v.wrapping_abs()),
                    IntFn::Sign => map1(x, y, |v: $t| v.signum()),
                    IntFn::Square => map1(x, y, |v: $t| v.wrapping_mul(v)),
                    IntFn::Not => map1(x, y, |v: $t| !v),
                }
            }
        }

        #[doc = $doc]
        pub fn $name(f: IntFn, x: &[$t], y: &mut [$t]) {
            assert_eq!(x.len(), y.len(), "input length differs from output length");
            dispatch($kernel { f, x, y });
        }
    };
}

int_unary!(i32, UnaryI32, i32, "`y = f(x)` on int32 tiles (`x.len() == y.len()`).");
int_unary!(i64, UnaryI64, i64, "`y = f(x)` on int64 tiles (`x.len() == y.len()`).");

struct BoolNot<'a> {
    x: &'a [u8],
    y: &'a mut [u8],
}

impl Kernel for BoolNot<'_> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        map1(self.x, self.y, |v| (v == 0) as u8);
    }
}

/// Logical not of a bool tile (stored as 0/1 bytes; any nonzero byte counts as true).
pub fn bool_not(x: &[u8], y: &mut [u8]) {
    assert_eq!(x.len(), y.len(), "input length differs from output length");
    dispatch(BoolNot { x, y });
}

/// Float classification predicates.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClassFn {
    /// NaN.
    IsNan,
    /// +inf or -inf.
    IsInf,
    /// Neither NaN nor infinite.
    IsFinite,
}

macro_rules! classify {
    ($name:ident, $kernel:ident, $t:ty, $doc:literal) => {
        struct $kernel<'a> {
            f: ClassFn,
            x: &'a [$t],
            y: &'a mut [u8],
        }

        impl Kernel for $kernel<'_> {
            type Out = ();
            #[inline(always)]
            fn run<S: Simd>(self) {
                let (x, y) = (self.x, self.y);
                match self.f {
                    ClassFn::IsNan => map1(x, y, |v: $t| v.is_nan() as u8),
                    ClassFn::IsInf => map1(x, y, |v: $t| (v.abs() == <$t>::INFINITY) as u8),
                    ClassFn::IsFinite => map1(x, y, |v: $t| (v.abs() < <$t>::INFINITY) as u8),
                }
            }
        }

        #[doc = $doc]
        pub fn $name(f: ClassFn, x: &[$t], y: &mut [u8]) {
            assert_eq!(x.len(), y.len(), "input length differs from output length");
            dispatch($kernel { f, x, y });
        }
    };
}

classify!(classify_f32, ClassifyF32, f32, "`y = f(x)` (0/1) on a float32 tile.");
classify!(classify_f64, ClassifyF64, f64, "`y = f(x)` (0/1) on a float64 tile.");
