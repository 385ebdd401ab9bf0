//! Tile element types and their conversions.
//!
//! [`Element`] is sealed: it is implemented for `u8` (bool, stored 0/1), `i32`, `i64`, `f32`
//! and `f64`. The sealed supertrait carries the per-type conversions `cast` needs, each written
//! with NumPy `astype` semantics and inlined into the vectorised loops.

pub(crate) mod sealed {
    /// Conversions from every element type into `Self` (NumPy `astype` semantics).
    pub trait Sealed: Copy + PartialOrd {
        /// From a bool (0/1) byte.
        fn from_bool(v: u8) -> Self;
        /// From an `i32`.
        fn from_i32(v: i32) -> Self;
        /// From an `i64`.
        fn from_i64(v: i64) -> Self;
        /// From an `f32`.
        fn from_f32(v: f32) -> Self;
        /// From an `f64`.
        fn from_f64(v: f64) -> Self;
        /// Converts `self` into `D` by calling the matching `D::from_*`.
        fn cast_into<D: Sealed>(self) -> D;
    }
}

/// Element types of tiles. bool is stored as u8 (0 or 1).
pub trait Element: Copy + Send + Sync + 'static + sealed::Sealed {}

impl Element for u8 {}
impl Element for i32 {}
impl Element for i64 {}
impl Element for f32 {}
impl Element for f64 {}

/// Implements the numeric conversions with `as` (round to nearest for int->float, truncate
/// with saturation for float->int) for a numeric type.
macro_rules! numeric_element {
    ($t:ty, $me:ident) => {
        impl sealed::Sealed for $t {
            #[inline(always)]
            fn from_bool(v: u8) -> Self {
                (v != 0) as u8 as $t
            }
            #[inline(always)]
            fn from_i32(v: i32) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn cast_into<D: sealed::Sealed>(self) -> D {
                D::$me(self)
            }
        }
    };
}

numeric_element!(i32, from_i32);
numeric_element!(i64, from_i64);
numeric_element!(f32, from_f32);
numeric_element!(f64, from_f64);

impl sealed::Sealed for u8 {
    #[inline(always)]
    fn from_bool(v: u8) -> Self {
        (v != 0) as u8
    }
    #[inline(always)]
    fn from_i32(v: i32) -> Self {
        (v != 0) as u8
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        (v != 0) as u8
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        // NaN != 0 is true, as in NumPy.
        (v != 0.0) as u8
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        (v != 0.0) as u8
    }
    #[inline(always)]
    fn cast_into<D: sealed::Sealed>(self) -> D {
        D::from_bool(self)
    }
}
