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
    /// The value converted as NumPy's `astype` would.
    pub fn cast(self, to: DType) -> Scalar {
        if to == DType::Bool {
            return Scalar::Bool(self.as_bool());
        }
        if to.is_float() {
            let v = self.as_f64();
            return Scalar::Float(match to {
                DType::F32 => v as f32 as f64,
                _ => v,
            });
        }
        let v = match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        };
        Scalar::Int(match to {
            DType::I8 => v as i8 as i64,
            DType::U8 => v as u8 as i64,
            DType::I32 => v as i32 as i64,
            _ => v,
        })
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

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x:?}"),
        }
    }
}
