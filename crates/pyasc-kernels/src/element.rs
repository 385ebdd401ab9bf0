//! Tile element types and their conversions.
//!
//! [`Element`] is sealed: it is implemented for `u8` (bool, stored 0/1), [`UInt8`] (uint8
//! values, a distinct type so casts do not treat them as truth values), `i8`, `i16`, `u16`,
//! `i32`, `u32`, `i64`, `u64`, `f32` and `f64`. The sealed supertrait carries the per-type
//! conversions `cast` needs, each written with NumPy `astype` semantics and inlined into the
//! vectorised loops.

/// A uint8 value (bool tiles use plain `u8` bytes holding 0 or 1).
#[repr(transparent)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UInt8(pub u8);

/// Generates the conversion methods of the sealed trait, one per source type.
macro_rules! sealed_trait {
    ($($from:ident: $t:ty),*) => {
        pub(crate) mod sealed {
            use super::UInt8;
            /// Conversions from every element type into `Self` (NumPy `astype` semantics).
            pub trait Sealed: Copy + PartialOrd {
                /// From a bool (0/1) byte.
                fn from_bool(v: u8) -> Self;
                $(
                    #[doc = concat!("From a `", stringify!($t), "`.")]
                    fn $from(v: $t) -> Self;
                )*
                /// Converts `self` into `D` by calling the matching `D::from_*`.
                fn cast_into<D: Sealed>(self) -> D;
            }
        }
    };
}

sealed_trait!(from_u8: UInt8, from_i8: i8, from_i16: i16, from_u16: u16, from_i32: i32, from_u32: u32,
    from_i64: i64, from_u64: u64, from_f32: f32, from_f64: f64);

/// Element types of tiles. bool is stored as u8 (0 or 1).
pub trait Element: Copy + Send + Sync + 'static + sealed::Sealed {}

impl Element for u8 {}
impl Element for UInt8 {}
impl Element for i8 {}
impl Element for i16 {}
impl Element for u16 {}
impl Element for i32 {}
impl Element for u32 {}
impl Element for i64 {}
impl Element for u64 {}
impl Element for f32 {}
impl Element for f64 {}

/// Implements the numeric conversions with `as` (wrapping between integers, round to nearest
/// for int->float, truncate with saturation for float->int) for a numeric type; `$me` is the
/// conversion other types use to receive a `$t`.
macro_rules! numeric_element {
    ($t:ty, $me:ident) => {
        impl sealed::Sealed for $t {
            #[inline(always)]
            fn from_bool(v: u8) -> Self {
                (v != 0) as u8 as $t
            }
            #[inline(always)]
            fn from_u8(v: UInt8) -> Self {
                v.0 as $t
            }
            #[inline(always)]
            fn from_i8(v: i8) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_i16(v: i16) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_u16(v: u16) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_i32(v: i32) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_u32(v: u32) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_u64(v: u64) -> Self {
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

numeric_element!(i8, from_i8);
numeric_element!(i16, from_i16);
numeric_element!(u16, from_u16);
numeric_element!(i32, from_i32);
numeric_element!(u32, from_u32);
numeric_element!(i64, from_i64);
numeric_element!(u64, from_u64);
numeric_element!(f32, from_f32);
numeric_element!(f64, from_f64);

impl sealed::Sealed for UInt8 {
    #[inline(always)]
    fn from_bool(v: u8) -> Self {
        UInt8((v != 0) as u8)
    }
    #[inline(always)]
    fn from_u8(v: UInt8) -> Self {
        v
    }
    #[inline(always)]
    fn from_i8(v: i8) -> Self {
        UInt8(v as u8)
    }
    #[inline(always)]
    fn from_i16(v: i16) -> Self {
        UInt8(v as u8)
    }
    #[inline(always)]
    fn from_u16(v: u16) -> Self {
        UInt8(v as u8)
    }
    #[inline(always)]
    fn from_i32(v: i32) -> Self {
        UInt8(v as u8)
    }
    #[inline(always)]
    fn from_u32(v: u32) -> Self {
        UInt8(v as u8)
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        UInt8(v as u8)
    }
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        UInt8(v as u8)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        UInt8(v as u8)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        UInt8(v as u8)
    }
    #[inline(always)]
    fn cast_into<D: sealed::Sealed>(self) -> D {
        D::from_u8(self)
    }
}

/// Truth values: anything nonzero (NaN included, as in NumPy) is true.
macro_rules! to_bool {
    ($($f:ident: $t:ty => |$v:ident| $e:expr),*) => {
        impl sealed::Sealed for u8 {
            #[inline(always)]
            fn from_bool(v: u8) -> Self {
                (v != 0) as u8
            }
            $(
                #[inline(always)]
                fn $f($v: $t) -> Self {
                    ($e) as u8
                }
            )*
            #[inline(always)]
            fn cast_into<D: sealed::Sealed>(self) -> D {
                D::from_bool(self)
            }
        }
    };
}

to_bool!(from_u8: UInt8 => |v| v.0 != 0, from_i8: i8 => |v| v != 0, from_i16: i16 => |v| v != 0,
    from_u16: u16 => |v| v != 0, from_i32: i32 => |v| v != 0, from_u32: u32 => |v| v != 0,
    from_i64: i64 => |v| v != 0, from_u64: u64 => |v| v != 0, from_f32: f32 => |v| v != 0.0,
    from_f64: f64 => |v| v != 0.0);

#[cfg(test)]
mod tests {
    use super::sealed::Sealed;
    use super::UInt8;

    #[test]
    fn integer_casts_wrap_and_bools_are_truth_values() {
        assert_eq!(<i8 as Sealed>::from_i32(300), 44);
        assert_eq!(<UInt8 as Sealed>::from_i64(-1), UInt8(255));
        assert_eq!(<i64 as Sealed>::from_u8(UInt8(200)), 200);
        assert_eq!(<u8 as Sealed>::from_u8(UInt8(200)), 1);
        assert_eq!(<u8 as Sealed>::from_i16(-256), 1);
        assert_eq!(<f64 as Sealed>::from_u64(u64::MAX), 18446744073709551615.0);
        assert_eq!(<i64 as Sealed>::from_u64(u64::MAX), -1);
        assert_eq!(<u32 as Sealed>::from_i16(-1), u32::MAX);
        assert_eq!(<UInt8 as Sealed>::from_bool(1), UInt8(1));
    }
}
