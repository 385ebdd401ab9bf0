//! Scans along one axis (`np.cumsum`, `np.cumprod`, `np.maximum.accumulate`,
//! `np.minimum.accumulate`, `np.logaddexp.accumulate`): the result has the operand's shape
//! and dtype (the front end casts to NumPy's result dtype first). Along the last axis of short
//! enough rows a scan is a row instruction of a fused kernel (`Instr::Scan`, chosen by the
//! compiler's fusion pass); otherwise it is this routine, with elementwise epilogues
//! (`np.cumsum(x, 0) / n`) run in its kernel.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::grad::Builder;
use crate::graph::NodeId;
use crate::shape::Shape;
use crate::tile::BufferDecl;

/// The combining operation of a scan.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ScanKind {
    /// Running sums (`cumsum`; logical or for bool).
    Sum,
    /// Running products (`cumprod`; logical and for bool).
    Prod,
    /// Running maxima (`maximum.accumulate`; NaN propagates).
    Max,
    /// Running minima (`minimum.accumulate`; NaN propagates).
    Min,
    /// Running `log(sum(exp))` (`logaddexp.accumulate`), floats only.
    LogSumExp,
}

impl ScanKind {
    /// The name used in printed graphs and by the front end.
    pub fn name(self) -> &'static str {
        match self {
            ScanKind::Sum => "cumsum",
            ScanKind::Prod => "cumprod",
            ScanKind::Max => "cummax",
            ScanKind::Min => "cummin",
            ScanKind::LogSumExp => "logcumsumexp",
        }
    }

    /// The kind named `name` (one of [`ScanKind::name`]'s).
    pub fn from_name(name: &str) -> Option<ScanKind> {
        [ScanKind::Sum, ScanKind::Prod, ScanKind::Max, ScanKind::Min, ScanKind::LogSumExp]
            .into_iter()
            .find(|k| k.name() == name)
    }
}

/// A scan along one axis.
pub struct Scan;

fn parts(attr: &Attr) -> Result<(ScanKind, usize)> {
    match attr {
        Attr::Scan(kind, axis) => Ok((*kind, *axis)),
        _ => Err(IrError::internal("a scan needs a scan attribute")),
    }
}

impl LibraryOp for Scan {
    fn id(&self) -> LibId {
        LibId::SCAN
    }
    fn name(&self) -> &'static str {
        "scan"
    }
    fn describe(&self, attr: &Attr) -> String {
        match parts(attr) {
            Ok((kind, axis)) => format!("{}[{axis}]", kind.name()),
            Err(_) => "scan".into(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 1
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let (kind, axis) = parts(attr)?;
        let (t, shape) = operands[0];
        if axis >= shape.rank() {
            return Err(IrError::shape(format!(
                "{}: axis {axis} is out of bounds for a tensor of rank {}",
                kind.name(),
                shape.rank()
            )));
        }
        if (!t.dtype.is_float() && kind == ScanKind::LogSumExp) || matches!(t.dtype, DType::F16 | DType::BF16) {
            return Err(IrError::dtype(format!("{} of {} is not supported", kind.name(), t.dtype)));
        }
        Ok((VType::strong(t.dtype), shape.clone()))
    }
    fn operand_dtype(&self, _i: usize, result: DType) -> Option<DType> {
        Some(result)
    }
    fn fuses_epilogue(&self) -> bool {
        true
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        let (_, axis) = parts(&call.attr)?;
        match operands {
            [x] if x.dtype == out.dtype && x.shape == out.shape && axis < out.shape.rank() => Ok(()),
            _ => bad_call(self, "needs one operand of its output's dtype and shape"),
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
        let _ = wanted;
        let (kind, axis) = parts(attr)?;
        let x = inputs[0];
        let ct = match kind {
            // Each x_i feeds y_j for j >= i: the cotangent is the reversed running sum.
            ScanKind::Sum => reverse_cumsum(b, g, axis)?,
            // y_j = prod_{i <= j} x_i: d y_j / d x_i = y_j / x_i (x without zeros).
            ScanKind::Prod => {
                let gy = b.mul(g, y)?;
                let s = reverse_cumsum(b, gy, axis)?;
                b.div(s, x)?
            }
            // y_j = log sum_{i <= j} e^x_i: d y_j / d x_i = e^(x_i - y_j).
            ScanKind::LogSumExp => {
                let ny = b.un(crate::op::UnaryOp::Neg, y)?;
                let w = b.un(crate::op::UnaryOp::Exp, ny)?;
                let gw = b.mul(g, w)?;
                let s = reverse_cumsum(b, gw, axis)?;
                let ex = b.un(crate::op::UnaryOp::Exp, x)?;
                b.mul(s, ex)?
            }
            // y_j = x_{p_j}, p_j the last position at or before j where the running extreme
            // was reached (x_i == y_i marks a new extreme, ties included): each cotangent goes
            // there, as PyTorch's `cummax`/`cummin` indices send it.
            ScanKind::Max | ScanKind::Min => {
                let xs = b.shape(x);
                let pos = crate::grad::iota(b, &xs, axis)?;
                let reached = b.bin(crate::op::BinaryOp::Eq, x, y)?;
                let zero = b.g.py_scalar(crate::Scalar::Int(0), b.loc.clone());
                let marked = b.select(reached, pos, zero)?;
                let p = b.g.library(LibId::SCAN, Attr::Scan(ScanKind::Max, axis), &[marked], b.loc.clone())?;
                let outer: usize = xs.0[..axis].iter().product();
                let inner: usize = xs.0[axis + 1..].iter().product();
                let three = Shape(vec![outer, xs.0[axis], inner]);
                let p = b.reshape(p, &three)?;
                let g3 = b.reshape(g, &three)?;
                let ct = crate::grad::scatter_add_along(b, &xs, axis, p, g3)?;
                b.reshape(ct, &xs)?
            }
        };
        Ok(vec![Some(ct)])
    }
}

/// `flip(cumsum(flip(g, axis), axis), axis)`: the running sum from the end.
pub fn reverse_cumsum(b: &mut Builder<'_>, g: NodeId, axis: usize) -> Result<NodeId> {
    let flipped = b.flip(g, axis)?;
    let s = b.g.library(LibId::SCAN, Attr::Scan(ScanKind::Sum, axis), &[flipped], b.loc.clone())?;
    b.flip(s, axis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_axes_are_checked() {
        for k in [ScanKind::Sum, ScanKind::Prod, ScanKind::Max, ScanKind::Min, ScanKind::LogSumExp] {
            assert_eq!(ScanKind::from_name(k.name()), Some(k));
        }
        let s = Shape(vec![2, 3]);
        let ok = Scan.infer(&Attr::Scan(ScanKind::Sum, 1), &[(VType::strong(DType::F32), &s)]).unwrap();
        assert_eq!(ok, (VType::strong(DType::F32), s.clone()));
        assert!(Scan.infer(&Attr::Scan(ScanKind::Sum, 2), &[(VType::strong(DType::F32), &s)]).is_err());
        assert!(Scan.infer(&Attr::Scan(ScanKind::LogSumExp, 0), &[(VType::strong(DType::I32), &s)]).is_err());
        assert_eq!(Scan.describe(&Attr::Scan(ScanKind::Max, 1)), "cummax[1]");
    }
}
