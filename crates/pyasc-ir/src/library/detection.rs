//! Detection routines as library ops: pairwise box IoU, greedy non-maximum suppression (plain,
//! per category, and over a given IoU matrix), and the row filter of a detector's post-processing
//! (`x[x[:, column] > threshold]`) as a selection and a gather.
//!
//! Boxes are `(N, 4)` corner rows of float32 or float64. Results whose length depends on the
//! values are *counted lists*: a vector of `n + 1` elements whose first element is the count
//! `c` and whose next `c` elements are the list (the rest is unspecified). NMS writes its kept
//! indices that way (int64), the row selection its selected rows (uint32); the gather then
//! copies the `c` rows into a result of exactly that many rows.

use super::{LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{ErrorKind, IrError, Result};
use crate::shape::Shape;

/// NMS thresholds.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct NmsSpec {
    /// A box is suppressed by a kept box of higher score whose IoU with it is above this.
    pub iou_threshold: f64,
    /// Only boxes scoring strictly above this take part (`None`: all).
    pub score_threshold: Option<f64>,
}

/// The row filter's test: rows whose value in `column` is strictly above `threshold` (already
/// rounded to the matrix's dtype).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RowFilter {
    /// The column tested.
    pub column: usize,
    /// The bound, exclusive.
    pub threshold: f64,
}

fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64)
}

fn shape_err(m: &str) -> IrError {
    IrError::new(ErrorKind::Shape, m.to_string())
}

/// The row count of `(n, 4)` boxes of a float dtype.
fn boxes(t: VType, s: &Shape, what: &str) -> Result<usize> {
    if !is_float(t.dtype) {
        return Err(IrError::new(ErrorKind::DType, format!("{what} must be float32 or float64")));
    }
    match s.0.as_slice() {
        [n, 4] => Ok(*n),
        _ => Err(shape_err(&format!("{what} must have shape (N, 4)"))),
    }
}

/// Pairwise IoU of `(N, 4)` and `(M, 4)` boxes of one dtype: an `(N, M)` matrix.
pub struct BoxIou;

impl LibraryOp for BoxIou {
    fn id(&self) -> LibId {
        LibId::BOX_IOU
    }
    fn name(&self) -> &'static str {
        "box_iou"
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 2
    }
    fn infer(&self, _attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let [(ta, sa), (tb, sb)] = operands else { return Err(IrError::internal("box_iou takes two operands")) };
        let (n, m) = (boxes(*ta, sa, "boxes1")?, boxes(*tb, sb, "boxes2")?);
        if ta.dtype != tb.dtype {
            return Err(IrError::new(ErrorKind::DType, "both box arrays must have one dtype"));
        }
        Ok((VType::strong(ta.dtype), Shape(vec![n, m])))
    }
}

/// Greedy NMS of `(N, 4)` boxes by float64 scores (and int64 categories with a third operand):
/// the kept indices in descending score order, as an int64 counted list.
pub struct Nms;

impl LibraryOp for Nms {
    fn id(&self) -> LibId {
        LibId::NMS
    }
    fn name(&self) -> &'static str {
        "nms"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::Nms(s) => format!("nms[iou>{}]", s.iou_threshold),
            _ => self.name().to_string(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 2 || n == 3
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        if !matches!(attr, Attr::Nms(_)) {
            return Err(IrError::internal("nms needs its thresholds"));
        }
        let n = boxes(operands[0].0, operands[0].1, "boxes")?;
        let per_box = |(t, s): &(VType, &Shape), dt: DType| t.dtype == dt && s.0 == [n];
        if !per_box(&operands[1], DType::F64) || operands.get(2).is_some_and(|c| !per_box(c, DType::I64)) {
            return Err(shape_err("boxes, scores and idxs must have one row per box"));
        }
        Ok((VType::strong(DType::I64), Shape(vec![n + 1])))
    }
    fn reinfers(&self) -> bool {
        false
    }
}

/// The greedy sweep over a square IoU matrix whose rows are in score order: the keep mask.
pub struct NmsMask;

impl LibraryOp for NmsMask {
    fn id(&self) -> LibId {
        LibId::NMS_MASK
    }
    fn name(&self) -> &'static str {
        "nms_mask"
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 1
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        if !matches!(attr, Attr::Nms(_)) {
            return Err(IrError::internal("nms_mask needs its threshold"));
        }
        let (t, s) = operands[0];
        if !is_float(t.dtype) {
            return Err(IrError::new(ErrorKind::DType, "the IoU matrix must be float32 or float64"));
        }
        match s.0.as_slice() {
            [n, m] if n == m => Ok((VType::strong(DType::Bool), Shape(vec![*n]))),
            _ => Err(shape_err("the IoU matrix must be square")),
        }
    }
}

/// The rows of an `(N, C)` float matrix whose value in a column is above a threshold: their
/// indices in order, as a uint32 counted list (`N` below 2^32).
pub struct SelectRows;

impl LibraryOp for SelectRows {
    fn id(&self) -> LibId {
        LibId::SELECT_ROWS
    }
    fn name(&self) -> &'static str {
        "select_rows"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::RowFilter(f) => format!("select_rows[x[:, {}] > {}]", f.column, f.threshold),
            _ => self.name().to_string(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 1
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let Attr::RowFilter(f) = attr else { return Err(IrError::internal("select_rows needs its test")) };
        let (t, s) = operands[0];
        if !is_float(t.dtype) {
            return Err(IrError::new(ErrorKind::DType, "the matrix must be float32 or float64"));
        }
        match s.0.as_slice() {
            [n, c] if f.column < *c && u32::try_from(*n).is_ok() => Ok((VType::strong(DType::U32), Shape(vec![n + 1]))),
            [_, c] => Err(shape_err(&format!("column {} is out of range for {c} columns", f.column))),
            _ => Err(shape_err("the matrix must have two axes")),
        }
    }
    fn reinfers(&self) -> bool {
        false
    }
}

/// Rows `idx` of an `(N, C)` matrix, in order: a `(len(idx), C)` matrix (indices below `N`).
pub struct GatherRows;

impl LibraryOp for GatherRows {
    fn id(&self) -> LibId {
        LibId::GATHER_ROWS
    }
    fn name(&self) -> &'static str {
        "gather_rows"
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 2
    }
    fn infer(&self, _attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let [(tx, sx), (ti, si)] = operands else { return Err(IrError::internal("gather_rows takes two operands")) };
        match (sx.0.as_slice(), si.0.as_slice()) {
            ([_, c], [k]) if ti.dtype == DType::U32 => Ok((*tx, Shape(vec![*k, *c]))),
            _ => Err(shape_err("gather_rows takes a matrix and a vector of uint32 row indices")),
        }
    }
    fn reinfers(&self) -> bool {
        false
    }
}
