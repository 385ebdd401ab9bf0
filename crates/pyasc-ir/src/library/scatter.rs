//! Functional scatter: `out = base` with `out.flat[idx[k]] = op(out.flat[idx[k]], vals[k])`
//! for every `k` in C order (`op` one of [`ScatterMode`]); int64 flat indices, negative from
//! the end, out of range an error. The updates of `y[idx] = v`, `x.at[idx].add(v)` and
//! `np.add.at` with indices known only at run time.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::grad::Builder;
use crate::graph::NodeId;
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
    fn vjp(
        &self,
        attr: &Attr,
        b: &mut Builder<'_>,
        inputs: &[NodeId],
        y: NodeId,
        g: NodeId,
        wanted: &[bool],
    ) -> Result<Vec<Option<NodeId>>> {
        let _ = y;
        let Attr::Scatter(mode) = attr else { return Err(IrError::internal("scatter needs a mode")) };
        let (base, idx, vals) = (inputs[0], inputs[1], inputs[2]);
        let n = b.shape(base).numel();
        let flat_g = b.reshape(g, &Shape(vec![n]))?;
        let picked = |b: &mut Builder<'_>| -> Result<NodeId> {
            let a = b.g.add_attr(Attr::Axis(0));
            let t = b.g.apply(crate::op::Op::Library(LibId::TAKE, a), &[flat_g, idx], b.loc.clone())?;
            b.reshape(t, &b.shape(vals))
        };
        match mode {
            ScatterMode::Add => {
                let to_vals = if wanted[2] { Some(picked(b)?) } else { None };
                Ok(vec![Some(g), None, to_vals])
            }
            ScatterMode::Set => {
                // Overwritten elements of the base get no cotangent; each value gets the
                // cotangent of where it landed (the last write wins: duplicates are not split).
                let to_vals = if wanted[2] { Some(picked(b)?) } else { None };
                let to_base = if wanted[0] {
                    let z = b.zeros(b.dtype(g), b.shape(vals));
                    Some(b.g.library(LibId::SCATTER, Attr::Scatter(ScatterMode::Set), &[g, idx, z], b.loc.clone())?)
                } else {
                    None
                };
                Ok(vec![to_base, None, to_vals])
            }
            _ => Err(crate::grad::no_rule(&format!("scatter[{}]", mode.name()))),
        }
    }
}
