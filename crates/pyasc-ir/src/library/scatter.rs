//! Functional scatter: `out = base` with `out.flat[idx[k]] = op(out.flat[idx[k]], vals[k])`
//! for every `k` in C order (`op` one of [`ScatterMode`]); int64 flat indices, negative from
//! the end, out of range an error. The updates of `y[idx] = v`, `x.at[idx].add(v)` and
//! `np.add.at` with indices known only at run time.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::shape::Shape;
use crate::tile::BufferDecl;

/// How a scattered value combines with the element it lands on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ScatterMode {
    /// Replace it (the last write to an index wins).
    Set,
    /// Add to it (every write to an index accumulates).
    Add,
    /// Multiply it.
    Mul,
    /// Keep the smaller (NaN wins, as `np.minimum`).
    Min,
    /// Keep the larger (NaN wins, as `np.maximum`).
    Max,
}

impl ScatterMode {
    /// The name used in printed plans and by the bindings.
    pub fn name(self) -> &'static str {
        match self {
            ScatterMode::Set => "set",
            ScatterMode::Add => "add",
            ScatterMode::Mul => "multiply",
            ScatterMode::Min => "min",
            ScatterMode::Max => "max",
        }
    }

    /// The mode named `name`.
    pub fn from_name(name: &str) -> Option<ScatterMode> {
        [ScatterMode::Set, ScatterMode::Add, ScatterMode::Mul, ScatterMode::Min, ScatterMode::Max]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// Scattering values into a copy of a base array.
pub struct Scatter;

impl LibraryOp for Scatter {
    fn id(&self) -> LibId {
        LibId::SCATTER
    }
    fn name(&self) -> &'static str {
        "scatter"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::Scatter(m) => format!("scatter[{}]", m.name()),
            _ => "scatter".to_string(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 3
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        if !matches!(attr, Attr::Scatter(_)) {
            return Err(IrError::internal("scatter needs a mode"));
        }
        let [(base, base_shape), (idx, idx_shape), (_, vals_shape)] = operands else {
            return Err(IrError::internal("scatter takes a base, indices and values"));
        };
        if !idx.dtype.is_int() {
            return Err(IrError::dtype(format!("scatter: indices must be integers, not {}", idx.dtype)));
        }
        if idx_shape != vals_shape {
            return Err(IrError::shape(format!("scatter: {} values for {} indices", vals_shape, idx_shape)));
        }
        Ok((VType::strong(base.dtype), (*base_shape).clone()))
    }
    fn operand_dtype(&self, i: usize, result: DType) -> Option<DType> {
        match i {
            0 | 2 => Some(result),
            _ => Some(DType::I64),
        }
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        match operands {
            [b, i, v]
                if matches!(call.attr, Attr::Scatter(_))
                    && i.dtype == DType::I64
                    && b.dtype == out.dtype
                    && v.dtype == out.dtype =>
            {
                Ok(())
            }
            _ => bad_call(self, "needs a mode, a base, int64 indices and values of the base's dtype"),
        }
    }
}
