//! Elementwise unary functions on tiles: float math, integer ops, bool not, classification.
//!
//! float32 transcendental functions use the vectorised kernels of [`crate::math`]; float64 ones
//! call Rust std / `libm` per element (correctly rounded or within an ulp or two).

use crate::dispatch::{dispatch, Kernel, Simd};
use crate::math::cbrt::cbrt_f32;
use crate::math::erf::{erf_f32, erfc_f32, gelu_f32};
use crate::math::exp_log::{exp2_f32, exp_f32, expm1_f32, log10_f32, log1p_f32, log2_f32, log_f32};
use crate::math::float_bits::spacing_f32;
use crate::math::hyper::{cosh_f32, fast_gelu_f32, sigmoid_f32, silu_f32, sinh_f32, softplus_f32, tanh_f32};
use crate::math::inverse::{acos_f32, acosh_f32, asin_f32, asinh_f32, atan_f32, atanh_f32};
use crate::math::real::Real;
use crate::math::trig::{cos_f32, needs_wide, sin_f32, tan_f32};
use crate::src::map1;
use pyasc_ir::op::{UnaryKind, UnaryOp};

mod float64;

/// True when `op` has float kernels ([`f32`], [`f64`]): every op whose result is a float
/// of the operand's dtype.
pub fn has_float_kernel(op: UnaryOp) -> bool {
    !matches!(op.kind(), UnaryKind::Classify | UnaryKind::Bitwise)
}

/// Applies a float function that needs no transcendental kernel; `false` if `f` is not one.
#[inline(always)]
fn real_fn<T: Real>(f: UnaryOp, x: &[T], y: &mut [T]) -> bool {
    let zero = T::from(0.0);
    let one = T::from(1.0);
    match f {
        UnaryOp::Neg => map1(x, y, |v| -v),
        UnaryOp::Abs => map1(x, y, |v| v.abs_()),
        UnaryOp::Sqrt => map1(x, y, |v| v.sqrt_()),
        UnaryOp::Reciprocal => map1(x, y, |v| one / v),
        UnaryOp::Square => map1(x, y, |v| v * v),
        UnaryOp::Floor => map1(x, y, |v| v.floor_()),
        UnaryOp::Ceil => map1(x, y, |v| v.ceil_()),
        UnaryOp::Round | UnaryOp::Rint => map1(x, y, |v| v.rint()),
        UnaryOp::Relu => map1(x, y, |v| if v > zero || v.nan_() { v } else { zero }),
        UnaryOp::Sign => map1(x, y, |v| {
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
    f: UnaryOp,
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
            UnaryOp::Exp if S::AVX512 => unsafe { crate::math::exp_avx512::exp_avx512(x, y) },
            UnaryOp::Exp => map1(x, y, exp_f32::<S>),
            UnaryOp::Exp2 => map1(x, y, exp2_f32::<S>),
            UnaryOp::Log => map1(x, y, log_f32::<S>),
            UnaryOp::Log2 => map1(x, y, log2_f32::<S>),
            UnaryOp::Log1p => map1(x, y, log1p_f32::<S>),
            UnaryOp::Expm1 => map1(x, y, expm1_f32::<S>),
            UnaryOp::Rsqrt => map1(x, y, |v| (1.0 / (v as f64).sqrt()) as f32),
            UnaryOp::Sin => trig(x, y, sin_f32::<S>, f64::sin),
            UnaryOp::Cos => trig(x, y, cos_f32::<S>, f64::cos),
            UnaryOp::Tan => trig(x, y, tan_f32::<S>, f64::tan),
            UnaryOp::Tanh => map1(x, y, tanh_f32::<S>),
            UnaryOp::Sigmoid => map1(x, y, sigmoid_f32::<S>),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `S::AVX512` is only true in the copy compiled for (and run on) AVX-512.
            UnaryOp::Erf if S::AVX512 => unsafe { crate::math::erf_table::erf_avx512(x, y) },
            UnaryOp::Erf => map1(x, y, erf_f32::<S>),
            UnaryOp::Erfc => map1(x, y, erfc_f32::<S>),
            UnaryOp::Gelu => map1(x, y, gelu_f32::<S>),
            UnaryOp::FastGelu => map1(x, y, fast_gelu_f32::<S>),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `S::AVX512` is only true in the copy compiled for (and run on) AVX-512.
            UnaryOp::FastGeluHalf if S::AVX512 => unsafe { crate::math::gelu_half::fast_gelu_half_avx512(x, y) },
            UnaryOp::FastGeluHalf => map1(x, y, fast_gelu_f32::<S>),
            UnaryOp::Silu => map1(x, y, silu_f32::<S>),
            UnaryOp::Softplus => map1(x, y, softplus_f32::<S>),
            UnaryOp::Log10 => map1(x, y, log10_f32::<S>),
            UnaryOp::Cbrt => map1(x, y, cbrt_f32),
            UnaryOp::Spacing => map1(x, y, spacing_f32),
            UnaryOp::Arcsin => map1(x, y, asin_f32::<S>),
            UnaryOp::Arccos => map1(x, y, acos_f32::<S>),
            UnaryOp::Arctan => map1(x, y, atan_f32::<S>),
            UnaryOp::Sinh => map1(x, y, sinh_f32::<S>),
            UnaryOp::Cosh => map1(x, y, cosh_f32::<S>),
            UnaryOp::Arcsinh => map1(x, y, asinh_f32::<S>),
            UnaryOp::Arccosh => map1(x, y, acosh_f32::<S>),
            UnaryOp::Arctanh => map1(x, y, atanh_f32::<S>),
            // Ops without a vectorised float32 body compute in float64 and round once.
            op => float64::via_f64(op, x, y),
        }
    }
}

struct UnaryF64<'a> {
    f: UnaryOp,
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

/// `y = f(x)` on float32 tiles (`x.len() == y.len()`; `f` has a float kernel, see
/// [`has_float_kernel`]).
pub fn f32(f: UnaryOp, x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "input length differs from output length");
    assert!(has_float_kernel(f), "{} has no float kernel", f.name());
    dispatch(UnaryF32 { f, x, y });
}

/// `y = f(x)` on float64 tiles (`x.len() == y.len()`; `f` has a float kernel, see
/// [`has_float_kernel`]).
pub fn f64(f: UnaryOp, x: &[f64], y: &mut [f64]) {
    assert_eq!(x.len(), y.len(), "input length differs from output length");
    assert!(has_float_kernel(f), "{} has no float kernel", f.name());
    dispatch(UnaryF64 { f, x, y });
}

macro_rules! int_unary {
    ($name:ident, $kernel:ident, $t:ty, $doc:literal) => {
        struct $kernel<'a> {
            f: UnaryOp,
            x: &'a [$t],
            y: &'a mut [$t],
        }

        impl Kernel for $kernel<'_> {
            type Out = ();
            #[inline(always)]
            fn run<S: Simd>(self) {
                let (x, y) = (self.x, self.y);
                match self.f {
                    UnaryOp::Neg => map1(x, y, |v: $t| v.wrapping_neg()),
                    UnaryOp::Abs => map1(x, y, |v: $t| v.wrapping_abs()),
                    UnaryOp::Sign => map1(x, y, |v: $t| v.signum()),
                    UnaryOp::Square => map1(x, y, |v: $t| v.wrapping_mul(v)),
                    UnaryOp::Not => map1(x, y, |v: $t| !v),
                    UnaryOp::Relu => map1(x, y, |v: $t| if v > 0 { v } else { 0 }),
                    // NumPy's truncated `1 / v`: 1, -1 or 0, and for `1 / 0` the value x86
                    // NumPy gives (the integer "indefinite" MIN; narrower dtypes wrap it to 0).
                    UnaryOp::Reciprocal => map1(x, y, |v: $t| if v == 0 { <$t>::MIN } else { 1 / v }),
                    UnaryOp::Positive | UnaryOp::Conjugate => y.copy_from_slice(x),
                    op => unreachable!("{} has no integer kernel", op.name()),
                }
            }
        }

        #[doc = $doc]
        pub fn $name(f: UnaryOp, x: &[$t], y: &mut [$t]) {
            assert_eq!(x.len(), y.len(), "input length differs from output length");
            assert!(has_int_kernel(f), "{} has no integer kernel", f.name());
            dispatch($kernel { f, x, y });
        }
    };
}

/// True when `op` has integer kernels ([`i32`], [`i64`], [`u64`]).
pub fn has_int_kernel(op: UnaryOp) -> bool {
    matches!(
        op,
        UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sign
            | UnaryOp::Square
            | UnaryOp::Not
            | UnaryOp::Relu
            | UnaryOp::Reciprocal
            | UnaryOp::Positive
            | UnaryOp::Conjugate
    )
}

int_unary!(i32, UnaryI32, i32, "`y = f(x)` on int32 tiles (`x.len() == y.len()`).");
int_unary!(i64, UnaryI64, i64, "`y = f(x)` on int64 tiles (`x.len() == y.len()`).");

struct UnaryU64<'a> {
    f: UnaryOp,
    x: &'a [u64],
    y: &'a mut [u64],
}

impl Kernel for UnaryU64<'_> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let (x, y) = (self.x, self.y);
        match self.f {
            UnaryOp::Neg => map1(x, y, |v: u64| v.wrapping_neg()),
            UnaryOp::Sign => map1(x, y, |v: u64| (v != 0) as u64),
            UnaryOp::Square => map1(x, y, |v: u64| v.wrapping_mul(v)),
            UnaryOp::Not => map1(x, y, |v: u64| !v),
            UnaryOp::Reciprocal => map1(x, y, |v: u64| (v == 1) as u64),
            // Unsigned values are their own absolute value and never negative.
            UnaryOp::Abs | UnaryOp::Relu | UnaryOp::Positive | UnaryOp::Conjugate => y.copy_from_slice(x),
            op => unreachable!("{} has no integer kernel", op.name()),
        }
    }
}

/// `y = f(x)` on uint64 tiles (`x.len() == y.len()`): `abs` and `relu` are the identity,
/// `sign` is 0 or 1, negation wraps.
pub fn u64(f: UnaryOp, x: &[u64], y: &mut [u64]) {
    assert_eq!(x.len(), y.len(), "input length differs from output length");
    assert!(has_int_kernel(f), "{} has no integer kernel", f.name());
    dispatch(UnaryU64 { f, x, y });
}

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

macro_rules! classify {
    ($name:ident, $kernel:ident, $t:ty, $doc:literal) => {
        struct $kernel<'a> {
            f: UnaryOp,
            x: &'a [$t],
            y: &'a mut [u8],
        }

        impl Kernel for $kernel<'_> {
            type Out = ();
            #[inline(always)]
            fn run<S: Simd>(self) {
                let (x, y) = (self.x, self.y);
                match self.f {
                    UnaryOp::IsNan => map1(x, y, |v: $t| v.is_nan() as u8),
                    UnaryOp::IsInf => map1(x, y, |v: $t| (v.abs() == <$t>::INFINITY) as u8),
                    UnaryOp::IsFinite => map1(x, y, |v: $t| (v.abs() < <$t>::INFINITY) as u8),
                    UnaryOp::SignBit => map1(x, y, |v: $t| v.is_sign_negative() as u8),
                    // Classifications without a loop of their own use the table's meaning.
                    op => map1(x, y, |v: $t| (op.eval_f64(v as f64) != 0.0) as u8),
                }
            }
        }

        #[doc = $doc]
        pub fn $name(f: UnaryOp, x: &[$t], y: &mut [u8]) {
            assert_eq!(x.len(), y.len(), "input length differs from output length");
            assert_eq!(f.kind(), UnaryKind::Classify, "{} is not a classification", f.name());
            dispatch($kernel { f, x, y });
        }
    };
}

classify!(classify_f32, ClassifyF32, f32, "`y = f(x)` (0/1) on a float32 tile.");
classify!(classify_f64, ClassifyF64, f64, "`y = f(x)` (0/1) on a float64 tile.");
