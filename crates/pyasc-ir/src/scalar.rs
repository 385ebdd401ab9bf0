//! Scalar constants: Python numbers and 0-d arrays folded into the graph.

use crate::dtype::DType;
use std::fmt;

/// A constant value, held at full width; its dtype lives in the node's type.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// Any integer, held as i64.
    Int(i64),
    /// Any float, held as f64.
    Float(f64),
}

impl Scalar {
    /// The value converted as NumPy's `astype` would. An integer is read as a signed value;
    /// see [`Scalar::cast_from`] for values of an unsigned 64-bit dtype.
    pub fn cast(self, to: DType) -> Scalar {
        if to == DType::Bool {
            return Scalar::Bool(self.as_bool());
        }
        if to.is_float() {
            let v = self.as_f64();
            return Scalar::Float(match to {
                DType::F32 => v as f32 as f64,
                DType::F16 => half::f16::from_f64(v).to_f64(),
                DType::BF16 => half::bf16::from_f64(v).to_f64(),
                _ => v,
            });
        }
        let v = match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) if to == DType::U64 && f >= 0.0 => f as u64 as i64,
            Scalar::Float(f) => f as i64,
        };
        Scalar::Int(wrap_int(v, to))
    }

    /// The value, held as a value of dtype `from`, converted to `to` (a uint64 value is held
    /// by its bits in [`Scalar::Int`]).
    pub fn cast_from(self, from: DType, to: DType) -> Scalar {
        match self {
            Scalar::Int(i) if from == DType::U64 && i < 0 && to.is_float() => {
                Scalar::Float(if to == DType::F32 { i as u64 as f32 as f64 } else { i as u64 as f64 })
            }
            _ => self.cast(to),
        }
    }

    /// The exact value of an integer held as a value of dtype `from` (uint64 by its bits).
    pub fn int_value(self, from: DType) -> Option<i128> {
        match self {
            Scalar::Bool(b) => Some(b as i128),
            Scalar::Int(i) if from == DType::U64 => Some(i as u64 as i128),
            Scalar::Int(i) => Some(i as i128),
            Scalar::Float(_) => None,
        }
    }

    /// As f64.
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as i64 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
    /// As i64 (floats truncate).
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }
    /// Truthiness as NumPy's bool cast.
    pub fn as_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }
    /// Bitwise equality (NaN equals NaN), for CSE keys.
    pub fn bits(self) -> (u8, u64) {
        match self {
            Scalar::Bool(b) => (0, b as u64),
            Scalar::Int(i) => (1, i as u64),
            Scalar::Float(f) => (2, f.to_bits()),
        }
    }
}

/// `v` wrapped into the integer dtype `to` (two's complement, as NumPy's casts); uint64 is
/// held by its bits.
pub fn wrap_int(v: i64, to: DType) -> i64 {
    match to {
        DType::I8 => v as i8 as i64,
        DType::U8 => v as u8 as i64,
        DType::I16 => v as i16 as i64,
        DType::U16 => v as u16 as i64,
        DType::I32 => v as i32 as i64,
        DType::U32 => v as u32 as i64,
        _ => v,
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x:?}"),
        }
    }
}
