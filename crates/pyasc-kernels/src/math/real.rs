//! Real-number helpers shared by float32 and float64 kernels, among them rounding to integers (rint, floor, ceil) without libm calls.
//!
//! Adding and subtracting 2^(mantissa bits) rounds to nearest-even in the default rounding
//! mode; values that large are already integers (and NaN/inf pass through). The SSE2 baseline
//! has no rounding instruction, so `f32::floor` there would be a libm call per element.

/// Elementwise helpers for one float type, all branch-free.
pub(crate) trait Real:
    Copy
    + PartialOrd
    + From<f32>
    + std::ops::Neg<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    /// Absolute value.
    fn abs_(self) -> Self;
    /// Square root (correctly rounded).
    fn sqrt_(self) -> Self;
    /// Whether `self` is NaN.
    fn nan_(self) -> bool;
    /// `|self|` with the sign of `sign`.
    fn copysign_(self, sign: Self) -> Self;
    /// Round half to even (`np.rint`, `np.round`).
    fn rint(self) -> Self;
    /// Largest integer not above `self`.
    fn floor_(self) -> Self;
    /// Smallest integer not below `self`.
    fn ceil_(self) -> Self;
}

macro_rules! impl_round {
    ($t:ty, $big:expr) => {
        impl Real for $t {
            #[inline(always)]
            fn abs_(self) -> Self {
                self.abs()
            }
            #[inline(always)]
            fn sqrt_(self) -> Self {
                self.sqrt()
            }
            #[inline(always)]
            fn nan_(self) -> bool {
                self.is_nan()
            }
            #[inline(always)]
            fn copysign_(self, sign: Self) -> Self {
                self.copysign(sign)
            }
            #[inline(always)]
            fn rint(self) -> Self {
                let a = self.abs();
                let r = (a + $big) - $big;
                if a < $big {
                    r.copysign(self)
                } else {
                    self
                }
            }
            #[inline(always)]
            fn floor_(self) -> Self {
                let r = self.rint();
                let f = if r > self { r - 1.0 } else { r };
                f.copysign(self)
            }
            #[inline(always)]
            fn ceil_(self) -> Self {
                let r = self.rint();
                let c = if r < self { r + 1.0 } else { r };
                c.copysign(self)
            }
        }
    };
}

impl_round!(f32, 8388608.0f32);
impl_round!(f64, 4503599627370496.0f64);
