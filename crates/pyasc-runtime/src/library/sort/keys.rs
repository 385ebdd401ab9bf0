//! Order-preserving unsigned keys of every sortable dtype, so that every routine sorts and
//! compares plain unsigned integers.
//!
//! [`Elem::key`] is invertible ([`Elem::from_key`]) and orders floats as NumPy sorts them:
//! `-inf < ... < -0.0 < 0.0 < ... < inf < NaN` (every NaN maps to the largest key). Where
//! equal values must compare equal (indices, insertion points, distinct values),
//! [`Elem::ckey`] also maps `-0.0` onto `0.0`.

/// An unsigned key type radix sorts can take apart byte by byte.
pub trait Key: Copy + Ord + Default + Send + Sync + std::fmt::Debug + 'static {
    /// Bytes in the key.
    const BYTES: usize;
    /// The largest key.
    const MAX: Self;
    /// Byte `i` (0 is the least significant).
    fn byte(self, i: usize) -> usize;
    /// The key widened to 64 bits.
    fn wide(self) -> u64;
    /// A widened key back (truncating).
    fn from_wide(w: u64) -> Self;
}

macro_rules! key {
    ($t:ty) => {
        impl Key for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            const MAX: Self = <$t>::MAX;
            #[inline(always)]
            fn byte(self, i: usize) -> usize {
                ((self >> (8 * i)) & 0xff) as usize
            }
            #[inline(always)]
            fn wide(self) -> u64 {
                self as u64
            }
            #[inline(always)]
            fn from_wide(w: u64) -> Self {
                w as $t
            }
        }
    };
}
key!(u8);
key!(u16);
key!(u32);
key!(u64);

/// An element type of a sortable array.
pub trait Elem: Copy + Send + Sync + PartialEq + 'static {
    /// Its key type.
    type K: Key;
    /// True for float dtypes.
    const FLOAT: bool;
    /// The order-preserving key.
    fn key(self) -> Self::K;
    /// The element of a key made by [`Elem::key`] (every NaN key gives a quiet NaN).
    fn from_key(k: Self::K) -> Self;
    /// The key with `-0.0` mapped onto `0.0`: equal values give equal keys.
    #[inline(always)]
    fn ckey(self) -> Self::K {
        self.key()
    }
    /// The key of IEEE 754's total order (`jax.lax.top_k`'s): `-NaN < -inf`, `-0.0 < 0.0`,
    /// `inf < NaN`.
    #[inline(always)]
    fn tkey(self) -> Self::K {
        self.key()
    }
    /// True for NaN.
    #[inline(always)]
    fn is_nan(self) -> bool {
        false
    }
    /// The value as float64 (as NumPy casts it).
    fn f64(self) -> f64;
    /// `b - a` computed in this dtype (integers wrap, bools are not subtracted), as float64.
    fn diff_f64(b: Self, a: Self) -> f64;
    /// A float64 value cast to this dtype as NumPy's `astype` does for in-range values.
    fn from_f64(v: f64) -> Self;
}

macro_rules! int_elem {
    ($t:ty, $k:ty, $flip:expr) => {
        impl Elem for $t {
            type K = $k;
            const FLOAT: bool = false;
            #[inline(always)]
            fn key(self) -> $k {
                (self as $k) ^ $flip
            }
            #[inline(always)]
            fn from_key(k: $k) -> Self {
                (k ^ $flip) as $t
            }
            #[inline(always)]
            fn f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn diff_f64(b: Self, a: Self) -> f64 {
                b.wrapping_sub(a) as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as i128 as $t
            }
        }
    };
}
int_elem!(i8, u8, 0x80);
int_elem!(u8, u8, 0);
int_elem!(i16, u16, 0x8000);
int_elem!(u16, u16, 0);
int_elem!(i32, u32, 0x8000_0000);
int_elem!(u32, u32, 0);
int_elem!(i64, u64, 1 << 63);
int_elem!(u64, u64, 0);

/// A NumPy bool (one byte, 0 or 1).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
#[repr(transparent)]
pub struct Bool(pub u8);

impl Elem for Bool {
    type K = u8;
    const FLOAT: bool = false;
    #[inline(always)]
    fn key(self) -> u8 {
        (self.0 != 0) as u8
    }
    #[inline(always)]
    fn from_key(k: u8) -> Self {
        Bool(k)
    }
    fn f64(self) -> f64 {
        self.key() as f64
    }
    fn diff_f64(b: Self, a: Self) -> f64 {
        b.f64() - a.f64()
    }
    fn from_f64(v: f64) -> Self {
        Bool((v != 0.0) as u8)
    }
}

macro_rules! float_elem {
    ($t:ty, $k:ty, $sign:expr) => {
        impl Elem for $t {
            type K = $k;
            const FLOAT: bool = true;
            #[inline(always)]
            fn key(self) -> $k {
                let b = self.to_bits();
                if self.is_nan() {
                    <$k>::MAX
                } else if b & $sign != 0 {
                    !b
                } else {
                    b | $sign
                }
            }
            #[inline(always)]
            fn from_key(k: $k) -> Self {
                if k == <$k>::MAX {
                    <$t>::NAN
                } else if k & $sign != 0 {
                    <$t>::from_bits(k ^ $sign)
                } else {
                    <$t>::from_bits(!k)
                }
            }
            #[inline(always)]
            fn ckey(self) -> $k {
                // -0.0 == 0.0: both take the key of 0.0.
                if self == 0.0 {
                    $sign
                } else {
                    self.key()
                }
            }
            #[inline(always)]
            fn tkey(self) -> $k {
                let b = self.to_bits();
                if b & $sign != 0 {
                    !b
                } else {
                    b | $sign
                }
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn diff_f64(b: Self, a: Self) -> f64 {
                (b - a) as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
    };
}
float_elem!(f32, u32, 0x8000_0000);
float_elem!(f64, u64, 1 << 63);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_keys_order_as_numpy_sorts() {
        let v = [f32::NEG_INFINITY, -1.5, -0.0, 0.0, 1e-45, 2.0, f32::INFINITY, f32::NAN];
        for w in v.windows(2) {
            assert!(w[0].key() < w[1].key(), "{w:?}");
        }
        for x in v {
            let back = f32::from_key(x.key());
            assert!(back.to_bits() == x.to_bits() || (x.is_nan() && back.is_nan()));
        }
        assert_eq!((-0.0f32).ckey(), 0.0f32.ckey());
        assert_eq!((-f64::NAN).key(), f64::NAN.key());
    }

    #[test]
    fn int_keys_round_trip_in_order() {
        let v = [i16::MIN, -3, -1, 0, 1, i16::MAX];
        for w in v.windows(2) {
            assert!(w[0].key() < w[1].key());
        }
        for x in v {
            assert_eq!(i16::from_key(x.key()), x);
        }
        assert_eq!(i8::diff_f64(100, -100), -56.0);
    }
}
