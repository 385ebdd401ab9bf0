//! Element types and NumPy 2's type promotion, including NEP 50 "weak" Python scalars.

use std::fmt;

/// An element type of a tensor. The order of variants is not meaningful.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// Booleans, stored as one byte holding 0 or 1.
    Bool,
    /// Signed 8-bit integers.
    I8,
    /// Unsigned 8-bit integers.
    U8,
    /// Signed 16-bit integers.
    I16,
    /// Unsigned 16-bit integers.
    U16,
    /// Signed 32-bit integers.
    I32,
    /// Unsigned 32-bit integers.
    U32,
    /// Signed 64-bit integers.
    I64,
    /// Unsigned 64-bit integers.
    U64,
    /// IEEE half precision.
    F16,
    /// Brain floating point.
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
}

/// The kind of a Python scalar constant, which promotes "weakly" (NEP 50).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum WeakKind {
    /// A Python `bool`.
    Bool,
    /// A Python `int`.
    Int,
    /// A Python `float`.
    Float,
}

/// The type of a value in the graph: a concrete dtype, possibly weak.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct VType {
    /// The concrete dtype the value is stored in.
    pub dtype: DType,
    /// Set when the value is a Python scalar whose type yields to array types.
    pub weak: Option<WeakKind>,
}

impl VType {
    /// A strong (array) type.
    pub fn strong(dtype: DType) -> Self {
        VType { dtype, weak: None }
    }
    /// The type of a Python scalar of the given kind.
    pub fn weak(kind: WeakKind) -> Self {
        let dtype = match kind {
            WeakKind::Bool => DType::Bool,
            WeakKind::Int => DType::I64,
            WeakKind::Float => DType::F64,
        };
        VType { dtype, weak: Some(kind) }
    }
}

impl DType {
    /// Every dtype, for tables and tests.
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::I8,
        DType::U8,
        DType::I16,
        DType::U16,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// NumPy's name for the dtype.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::I16 => "int16",
            DType::U16 => "uint16",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::I64 => "int64",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// Parse NumPy's name (also accepts `float`, `int`, `bool_`).
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "bool" | "bool_" => DType::Bool,
            "int8" => DType::I8,
            "uint8" => DType::U8,
            "int16" => DType::I16,
            "uint16" => DType::U16,
            "int32" => DType::I32,
            "uint32" => DType::U32,
            "int64" | "int" => DType::I64,
            "uint64" | "uint" => DType::U64,
            "float16" | "half" => DType::F16,
            "bfloat16" => DType::BF16,
            "float32" | "single" => DType::F32,
            "float64" | "float" | "double" => DType::F64,
            _ => return None,
        })
    }

    /// True for the floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// True for the integer types (not bool), signed or unsigned.
    pub fn is_int(self) -> bool {
        self.is_signed() || self.is_unsigned()
    }

    /// True for the signed integer types.
    pub fn is_signed(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// True for the unsigned integer types.
    pub fn is_unsigned(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    /// The smallest and largest value of an integer type (bool: 0 and 1), `None` for floats.
    pub fn int_range(self) -> Option<(i128, i128)> {
        if self == DType::Bool {
            return Some((0, 1));
        }
        let bits = 8 * self.size() as u32;
        if self.is_signed() {
            Some((-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1))
        } else if self.is_unsigned() {
            Some((0, (1i128 << bits) - 1))
        } else {
            None
        }
    }

    /// The dtype arithmetic on this dtype is computed in: 8- and 16-bit integers in int32 and
    /// uint32 in int64 (the result is wrapped back after each op), 16-bit floats in float32
    /// (rounded back once, where the value is stored), every other dtype in itself.
    pub fn compute(self) -> DType {
        match self {
            DType::I8 | DType::U8 | DType::I16 | DType::U16 => DType::I32,
            DType::U32 => DType::I64,
            DType::F16 | DType::BF16 => DType::F32,
            d => d,
        }
    }

    /// True when every value of this dtype converts to `wider` and back unchanged, so a cast
    /// to `wider` followed by a cast back cancels (float16 -> float32, int8 -> int32, ...).
    pub fn fits_exactly_in(self, wider: DType) -> bool {
        use DType::*;
        let mantissa = |d: DType| match d {
            F16 => 11,
            BF16 => 8,
            F32 => 24,
            F64 => 53,
            _ => 0,
        };
        match (self, wider) {
            _ if self == wider => true,
            (Bool, _) => true,
            (F16 | BF16 | F32, F32 | F64) => mantissa(self) <= mantissa(wider) && (self != F16 || wider != BF16),
            (a, b) if a.is_int() && b.is_int() => {
                let ((lo, hi), (wlo, whi)) = (a.int_range().unwrap_or_default(), b.int_range().unwrap_or_default());
                wlo <= lo && hi <= whi
            }
            (a, b) if a.is_int() && b.is_float() => {
                let (lo, hi) = a.int_range().unwrap_or_default();
                let limit = 1i128 << mantissa(b);
                -limit <= lo && hi <= limit && (b != F16 || hi <= 65504)
            }
            _ => false,
        }
    }

    /// True for the 16-bit floats (float16, bfloat16).
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// True when this dtype is computed in a wider one (see [`DType::compute`]).
    pub fn is_narrow(self) -> bool {
        self.compute() != self
    }

    /// The float type NumPy computes a float-only function of this type in
    /// (`np.exp(int32) -> float64`, `np.exp(int16) -> float32`, `np.exp(float32) -> float32`).
    pub fn float_result(self) -> DType {
        match self {
            DType::Bool | DType::I8 | DType::U8 => DType::F16,
            DType::I16 | DType::U16 => DType::F32,
            DType::I32 | DType::U32 | DType::I64 | DType::U64 => DType::F64,
            f => f,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Promote two strong dtypes as `np.result_type` does.
pub fn promote(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a, b) {
        (Bool, x) | (x, Bool) => x,
        (F16, BF16) | (BF16, F16) => F32,
        _ if a.is_float() && b.is_float() => {
            if a.size() >= b.size() {
                a
            } else {
                b
            }
        }
        _ if a.is_int() && b.is_int() => promote_ints(a, b),
        _ => {
            // int with float: NumPy picks a float wide enough for every value of the int.
            let (int, float) = if a.is_int() { (a, b) } else { (b, a) };
            match int.size() {
                1 => float,
                2 if float.size() > 2 => float,
                2 => F32,
                _ => F64,
            }
        }
    }
}

/// Two distinct integer dtypes: the smallest integer holding both ranges (a signed and an
/// unsigned 64-bit integer meet in float64, as in NumPy).
fn promote_ints(a: DType, b: DType) -> DType {
    let (lo_a, hi_a) = a.int_range().expect("integer");
    let (lo_b, hi_b) = b.int_range().expect("integer");
    let (lo, hi) = (lo_a.min(lo_b), hi_a.max(hi_b));
    let candidates = if lo < 0 {
        [DType::I8, DType::I16, DType::I32, DType::I64]
    } else {
        [DType::U8, DType::U16, DType::U32, DType::U64]
    };
    candidates
        .into_iter()
        .find(|d| {
            let (l, h) = d.int_range().expect("integer");
            l <= lo && hi <= h
        })
        .unwrap_or(DType::F64)
}

/// Promote two value types with NEP 50's rules for weak Python scalars.
pub fn promote_v(a: VType, b: VType) -> VType {
    match (a.weak, b.weak) {
        (None, None) => VType::strong(promote(a.dtype, b.dtype)),
        (Some(_), None) => VType::strong(weak_with(a.weak.unwrap(), b.dtype)),
        (None, Some(_)) => VType::strong(weak_with(b.weak.unwrap(), a.dtype)),
        (Some(x), Some(y)) => {
            let kind = match (x, y) {
                (WeakKind::Float, _) | (_, WeakKind::Float) => WeakKind::Float,
                (WeakKind::Int, _) | (_, WeakKind::Int) => WeakKind::Int,
                _ => WeakKind::Bool,
            };
            VType::weak(kind)
        }
    }
}

/// The dtype a weak scalar of `kind` combined with a strong `dtype` yields.
fn weak_with(kind: WeakKind, dtype: DType) -> DType {
    match kind {
        WeakKind::Bool => dtype,
        WeakKind::Int => {
            if dtype == DType::Bool {
                DType::I64
            } else {
                dtype
            }
        }
        WeakKind::Float => {
            if dtype.is_float() {
                dtype
            } else {
                DType::F64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strong_promotion_matches_numpy() {
        use DType::*;
        let cases = [
            (Bool, I32, I32),
            (I32, I64, I64),
            (I32, F32, F64),
            (I64, F32, F64),
            (I8, U8, I16),
            (U8, I16, I16),
            (U16, I8, I32),
            (U32, I32, I64),
            (U64, I64, F64),
            (U64, I8, F64),
            (U64, U8, U64),
            (I16, F32, F32),
            (U16, F16, F32),
            (U32, F32, F64),
            (I8, F16, F16),
            (F32, F64, F64),
            (Bool, F32, F32),
            (F32, F32, F32),
            (I8, F32, F32),
        ];
        for (a, b, want) in cases {
            assert_eq!(promote(a, b), want, "{a} with {b}");
            assert_eq!(promote(b, a), want, "{b} with {a}");
        }
    }

    #[test]
    fn weak_scalars_yield_to_arrays() {
        let f32a = VType::strong(DType::F32);
        let i32a = VType::strong(DType::I32);
        let boola = VType::strong(DType::Bool);
        let pf = VType::weak(WeakKind::Float);
        let pi = VType::weak(WeakKind::Int);
        assert_eq!(promote_v(f32a, pf).dtype, DType::F32);
        assert_eq!(promote_v(i32a, pi).dtype, DType::I32);
        assert_eq!(promote_v(i32a, pf).dtype, DType::F64);
        assert_eq!(promote_v(boola, pi).dtype, DType::I64);
        assert_eq!(promote_v(pi, pf), VType::weak(WeakKind::Float));
        assert!(promote_v(pi, pf).weak.is_some());
    }

    #[test]
    fn exact_widenings() {
        use DType::*;
        for (a, b) in
            [(F16, F32), (BF16, F32), (F16, F64), (F32, F64), (I8, I32), (U8, I16), (U16, F32), (I32, F64), (Bool, U8)]
        {
            assert!(a.fits_exactly_in(b), "{a} in {b}");
        }
        for (a, b) in [(F32, F16), (F16, BF16), (BF16, F16), (I32, F32), (I64, F64), (U8, I8), (I8, U64), (F32, I64)] {
            assert!(!a.fits_exactly_in(b), "{a} not in {b}");
        }
    }

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
    }
}
