//! Precision policies (`precision_mode`) and precision scopes (`pyasc.precision_scope`).
//!
//! A [`PrecisionMode`] is an operator's policy: `fp32` keeps the traced dtypes, `force_*`
//! stores every float32 value of the program in a 16-bit type, `mixed_*` only the operands of
//! the cube ops (matrix products and convolutions), which accumulate in float32. A
//! [`ScopeSpan`] marks the nodes traced inside `with pyasc.precision_scope(p):`; the innermost
//! scope of a node overrides the policy for it. The `precision` pass of the compiler turns
//! both into explicit dtypes and casts before promotion.

use crate::dtype::DType;
use std::fmt;

/// The type a scope computes in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// float32: the dtypes as traced.
    Fp32,
    /// IEEE float16 storage, float32 lanes.
    Fp16,
    /// bfloat16 storage, float32 lanes.
    Bf16,
}

impl Precision {
    /// `"fp32"`, `"fp16"` or `"bf16"` (also `float32`, `float16`, `bfloat16`), any case.
    pub fn parse(s: &str) -> Option<Precision> {
        match s.to_ascii_lowercase().as_str() {
            "fp32" | "float32" => Some(Precision::Fp32),
            "fp16" | "float16" => Some(Precision::Fp16),
            "bf16" | "bfloat16" => Some(Precision::Bf16),
            _ => None,
        }
    }

    /// The 16-bit dtype values are stored in, `None` for `fp32`.
    pub fn low_dtype(self) -> Option<DType> {
        match self {
            Precision::Fp32 => None,
            Precision::Fp16 => Some(DType::F16),
            Precision::Bf16 => Some(DType::BF16),
        }
    }

    /// The short name.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
        }
    }
}

/// An operator's precision policy.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum PrecisionMode {
    /// Every dtype as traced.
    #[default]
    Fp32,
    /// Every float32 op in the 16-bit type (reductions, matmul and convolution accumulate in
    /// float32); results in the dtypes the fp32 program returns.
    Force(Precision),
    /// Only the cube ops (see [`crate::library::LibraryOp::is_cube`]) read 16-bit operands, with
    /// float32 accumulation; everything else stays float32.
    Mixed(Precision),
}

impl PrecisionMode {
    /// `"fp32"`, `"force_fp16"`, `"force_bf16"`, `"mixed_fp16"` or `"mixed_bf16"`.
    pub fn parse(s: &str) -> Option<PrecisionMode> {
        let s = s.to_ascii_lowercase();
        if s == "fp32" {
            return Some(PrecisionMode::Fp32);
        }
        let (kind, p) = s.split_once('_')?;
        let p = Precision::parse(p).filter(|p| *p != Precision::Fp32)?;
        match kind {
            "force" => Some(PrecisionMode::Force(p)),
            "mixed" => Some(PrecisionMode::Mixed(p)),
            _ => None,
        }
    }
}

impl fmt::Display for PrecisionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrecisionMode::Fp32 => f.write_str("fp32"),
            PrecisionMode::Force(p) => write!(f, "force_{}", p.name()),
            PrecisionMode::Mixed(p) => write!(f, "mixed_{}", p.name()),
        }
    }
}

/// Nodes `start..end` of a traced graph were traced inside a scope of `precision` (the
/// innermost one open when they were created).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ScopeSpan {
    /// First node id.
    pub start: u32,
    /// One past the last node id.
    pub end: u32,
    /// The scope's type.
    pub precision: Precision,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print_round_trip() {
        for s in ["fp32", "force_fp16", "force_bf16", "mixed_fp16", "mixed_bf16"] {
            assert_eq!(PrecisionMode::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(PrecisionMode::parse("MIXED_BF16"), Some(PrecisionMode::Mixed(Precision::Bf16)));
        for bad in ["", "fp16", "force_fp32", "mixed", "forced_fp16", "mixed_int8"] {
            assert_eq!(PrecisionMode::parse(bad), None, "{bad}");
        }
        assert_eq!(Precision::parse("bfloat16").and_then(Precision::low_dtype), Some(DType::BF16));
        assert_eq!(Precision::parse("fp32").and_then(Precision::low_dtype), None);
    }
}
