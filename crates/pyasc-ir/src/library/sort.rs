//! Sorting and selection along one axis: `np.sort`, `np.argsort`, `np.partition`,
//! `np.argpartition`, top-k indices, a gather along the axis (top-k values from their
//! indices), `np.searchsorted`, `np.unique` with a static size, and the order statistics
//! (`np.median`, `np.nanmedian`, `np.quantile`, `np.percentile`). One library op whose
//! attribute ([`SortSpec`]) selects what it computes, so each result is one output.
//!
//! Floats order as NumPy sorts them: NaN after `+inf`, `-0.0` equal to `0.0` where indices or
//! comparisons are produced.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::scalar::Scalar;
use crate::shape::Shape;
use crate::tile::BufferDecl;
use crate::view::SliceDim;

/// What a sort call computes.
#[derive(Clone, Debug, PartialEq)]
pub enum SortMode {
    /// The sorted values.
    Sort,
    /// The indices that sort; `stable` keeps equal elements in index order.
    ArgSort {
        /// Ties by index.
        stable: bool,
    },
    /// Values partitioned around each of the (ascending, in-range) positions.
    Partition(Vec<usize>),
    /// Indices partitioned around each of the positions.
    ArgPartition(Vec<usize>),
    /// Indices of the `k` largest, largest first, ties by lower index (`jax.lax.top_k`).
    TopK(usize),
    /// `take_along_axis(x, idx)`: two operands, the result has the indices' shape.
    Gather,
    /// Insertion points of the second operand's values in the sorted 1-D first operand.
    SearchSorted {
        /// `side='right'`.
        right: bool,
    },
    /// The sorted distinct values of the whole array (NaNs as one), cut or filled to `size`.
    Unique {
        /// Extent of the result.
        size: usize,
        /// Value of the padding; `None` pads with the smallest value.
        fill: Option<Scalar>,
    },
    /// NumPy's linear-method quantiles at `q` (in `[0, 1]`), whose shape `q_shape` leads the
    /// result; a NaN in a row makes its quantiles NaN unless `skip_nan`.
    Quantile {
        /// The quantiles, flattened.
        q: Vec<f64>,
        /// Their shape.
        q_shape: Vec<usize>,
        /// `nan*` functions: NaNs are dropped from each row.
        skip_nan: bool,
        /// `q` was a Python number: a float32 input computes (and returns) float32.
        weak_q: bool,
    },
    /// `np.median` (the mean of the middle pair, in the input's float dtype).
    Median {
        /// `np.nanmedian`.
        skip_nan: bool,
    },
}

/// The attribute of a sort call: what it computes, along which axis.
#[derive(Clone, Debug, PartialEq)]
pub struct SortSpec {
    /// The computation.
    pub mode: SortMode,
    /// The axis (ignored by `Unique`, which reads the whole array, and by `SearchSorted`).
    pub axis: usize,
}

impl SortSpec {
    /// The dtype of an order statistic of `x` (NumPy: float32 stays, others are float64).
    pub fn stat_dtype(x: DType) -> DType {
        if x == DType::F32 {
            DType::F32
        } else {
            DType::F64
        }
    }

    /// Result dtype and shape for operands of these types.
    pub fn result(&self, operands: &[(VType, &Shape)]) -> Result<(DType, Shape)> {
        let (xt, xs) = operands[0];
        let dt = xt.dtype;
        if !(dt.is_int() || dt.is_float() || dt == DType::Bool) || matches!(dt, DType::F16 | DType::BF16) {
            return Err(IrError::dtype(format!("sorting {dt} arrays is not supported")));
        }
        let rank = xs.rank();
        let needs_axis = !matches!(self.mode, SortMode::Unique { .. } | SortMode::SearchSorted { .. });
        if needs_axis && self.axis >= rank {
            return Err(IrError::shape(format!("axis {} is out of bounds for an array of rank {rank}", self.axis)));
        }
        let n = if needs_axis { xs.0[self.axis] } else { 0 };
        let kth_ok = |ks: &[usize]| match ks.iter().find(|&&k| k >= n) {
            Some(k) => Err(IrError::shape(format!("kth {k} is out of bounds for an axis of length {n}"))),
            None => Ok(()),
        };
        match &self.mode {
            SortMode::Sort => Ok((dt, xs.clone())),
            SortMode::ArgSort { .. } => Ok((DType::I64, xs.clone())),
            SortMode::Partition(ks) => kth_ok(ks).map(|_| (dt, xs.clone())),
            SortMode::ArgPartition(ks) => kth_ok(ks).map(|_| (DType::I64, xs.clone())),
            SortMode::TopK(k) => {
                if *k > n {
                    return Err(IrError::shape(format!("top_k: k={k} is larger than the axis length {n}")));
                }
                let mut d = xs.0.clone();
                d[self.axis] = *k;
                Ok((DType::I64, Shape(d)))
            }
            SortMode::Gather => {
                let (it, is) = operands
                    .get(1)
                    .copied()
                    .ok_or_else(|| IrError::internal("a gather along an axis needs indices"))?;
                let off = |s: &Shape| {
                    s.0.iter().enumerate().filter(|(i, _)| *i != self.axis).map(|(_, d)| *d).collect::<Vec<_>>()
                };
                if it.dtype != DType::I64 || is.rank() != rank || off(is) != off(xs) {
                    return Err(IrError::shape(format!(
                        "gather along axis {}: indices {is} do not fit {xs}",
                        self.axis
                    )));
                }
                Ok((dt, is.clone()))
            }
            SortMode::SearchSorted { .. } => {
                let (vt, vs) =
                    operands.get(1).copied().ok_or_else(|| IrError::internal("searchsorted needs values"))?;
                if rank != 1 {
                    return Err(IrError::shape(format!("searchsorted: the sorted array must be 1-D, not {xs}")));
                }
                if vt.dtype != dt {
                    return Err(IrError::dtype(format!("searchsorted: values of {} in an array of {dt}", vt.dtype)));
                }
                Ok((DType::I64, vs.clone()))
            }
            SortMode::Unique { size, .. } => Ok((dt, Shape(vec![*size]))),
            SortMode::Quantile { q, q_shape, weak_q, .. } => {
                if q.len() != q_shape.iter().product::<usize>() {
                    return Err(IrError::internal("quantiles do not fill their shape"));
                }
                if n == 0 {
                    return Err(IrError::shape("quantile of an empty axis"));
                }
                let mut d = q_shape.clone();
                d.extend(xs.0.iter().enumerate().filter(|(i, _)| *i != self.axis).map(|(_, d)| *d));
                let out = if *weak_q { Self::stat_dtype(dt) } else { DType::F64 };
                Ok((out, Shape(d)))
            }
            SortMode::Median { .. } => {
                let d = xs.0.iter().enumerate().filter(|(i, _)| *i != self.axis).map(|(_, d)| *d).collect();
                Ok((Self::stat_dtype(dt), Shape(d)))
            }
        }
    }
}

/// Sorting and selection.
pub struct SortOp;

fn spec(attr: &Attr) -> Result<&SortSpec> {
    match attr {
        Attr::Sort(s) => Ok(s),
        _ => Err(IrError::internal("a sort op needs a sort attribute")),
    }
}

impl LibraryOp for SortOp {
    fn id(&self) -> LibId {
        LibId::SORT
    }
    fn name(&self) -> &'static str {
        "sort"
    }
    fn describe(&self, attr: &Attr) -> String {
        match spec(attr) {
            Ok(s) => format!("sort[{:?}, axis={}]", s.mode, s.axis),
            Err(_) => "sort".into(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 1 || n == 2
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let s = spec(attr)?;
        let two = matches!(s.mode, SortMode::Gather | SortMode::SearchSorted { .. });
        if operands.len() != 1 + two as usize {
            return Err(IrError::internal(format!("sort {:?} takes {} operands", s.mode, 1 + two as usize)));
        }
        let (dt, shape) = s.result(operands)?;
        Ok((VType::strong(dt), shape))
    }
    fn operand_dtype(&self, _i: usize, _result: DType) -> Option<DType> {
        None
    }
    fn reinfers(&self) -> bool {
        // Positions (kth from the end, k, quantile neighbours) are resolved for one extent.
        false
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        let s = spec(&call.attr)?;
        let ops: Vec<(VType, &Shape)> = operands.iter().map(|d| (VType::strong(d.dtype), &d.shape)).collect();
        if ops.is_empty() {
            return bad_call(self, "has no operand");
        }
        let (dt, shape) = s.result(&ops)?;
        if dt != out.dtype || shape != out.shape {
            return bad_call(self, "has an output of another type or shape");
        }
        Ok(())
    }

    fn vjp(
        &self,
        attr: &Attr,
        b: &mut crate::grad::Builder<'_>,
        inputs: &[crate::graph::NodeId],
        _y: crate::graph::NodeId,
        g: crate::graph::NodeId,
        wanted: &[bool],
    ) -> Result<Vec<Option<crate::graph::NodeId>>> {
        // Values that are elements of x moved along the axis send their cotangents back to
        // where they came from: the positions a new argsort (argpartition) finds, or the
        // gathered indices.
        let Attr::Sort(spec) = attr else { return Err(IrError::internal("sort needs a sort attribute")) };
        let x = inputs[0];
        let axis = spec.axis;
        let idx = match &spec.mode {
            SortMode::Sort => {
                let mode = SortMode::ArgSort { stable: true };
                b.g.library(LibId::SORT, Attr::Sort(SortSpec { mode, axis }), &[x], b.loc.clone())?
            }
            SortMode::Partition(kth) => {
                let mode = SortMode::ArgPartition(kth.clone());
                b.g.library(LibId::SORT, Attr::Sort(SortSpec { mode, axis }), &[x], b.loc.clone())?
            }
            SortMode::Gather => inputs[1],
            SortMode::Median { skip_nan: false } | SortMode::Quantile { skip_nan: false, .. } => {
                return Ok(vec![Some(order_statistic_vjp(b, spec, x, g)?)]);
            }
            SortMode::Median { .. } | SortMode::Quantile { .. } => {
                return Ok(vec![Some(nan_order_statistic_vjp(b, spec, x, g)?)]);
            }
            SortMode::Unique { .. } => {
                return Err(crate::grad::no_rule(&self.describe(attr)));
            }
            _ => return Ok(vec![None; inputs.len()]),
        };
        let mut out = vec![None; inputs.len()];
        if wanted[0] {
            let xs = b.shape(x);
            let gs = b.shape(g);
            let outer: usize = gs.0[..axis].iter().product();
            let inner: usize = gs.0[axis + 1..].iter().product();
            let three = Shape(vec![outer, gs.0[axis], inner]);
            let idx = b.cast(idx, DType::I64)?;
            let idx = b.reshape(idx, &three)?;
            let vals = b.reshape(g, &three)?;
            out[0] = Some(crate::grad::scatter_add_along(b, &xs, axis, idx, vals)?);
        }
        Ok(out)
    }
}

/// The cotangent of `x` for a median or linear quantile along `spec.axis` with cotangent `g`:
/// each statistic is a weighted sum of one or two sorted elements (the middle pair's mean,
/// `s[lo] * (1 - f) + s[lo + 1] * f` at position `q * (n - 1) = lo + f`), whose cotangents go
/// back to where a stable argsort found them (JAX's rule through its sort).
fn order_statistic_vjp(
    b: &mut crate::grad::Builder<'_>,
    spec: &SortSpec,
    x: crate::graph::NodeId,
    g: crate::graph::NodeId,
) -> Result<crate::graph::NodeId> {
    let axis = spec.axis;
    let xs = b.shape(x);
    let n = xs.0[axis];
    let outer: usize = xs.0[..axis].iter().product();
    let inner: usize = xs.0[axis + 1..].iter().product();
    // Per statistic: the sorted positions and their weights.
    let picks: Vec<Vec<(usize, f64)>> = match &spec.mode {
        SortMode::Median { .. } if n % 2 == 1 => vec![vec![(n / 2, 1.0)]],
        SortMode::Median { .. } => vec![vec![(n / 2 - 1, 0.5), (n / 2, 0.5)]],
        SortMode::Quantile { q, .. } => q
            .iter()
            .map(|&q| {
                let at = q * (n - 1) as f64;
                let lo = (at.floor() as usize).min(n - 1);
                let f = at - lo as f64;
                if f > 0.0 && lo + 1 < n {
                    vec![(lo, 1.0 - f), (lo + 1, f)]
                } else {
                    vec![(lo, 1.0)]
                }
            })
            .collect(),
        _ => return Err(IrError::internal("not an order statistic")),
    };
    let mode = SortMode::ArgSort { stable: true };
    let order = b.g.library(LibId::SORT, Attr::Sort(SortSpec { mode, axis }), &[x], b.loc.clone())?;
    let order = b.reshape(order, &Shape(vec![outer, n, inner]))?;
    let g = b.cast(g, b.dtype(x))?;
    let g = b.reshape(g, &Shape(vec![picks.len(), outer, 1, inner]))?;
    let mut total: Option<crate::graph::NodeId> = None;
    for (i, pick) in picks.iter().enumerate() {
        let gi = b.slice_axis(g, 0, SliceDim { start: i, step: 1, len: 1 })?;
        let gi = b.reshape(gi, &Shape(vec![outer, 1, inner]))?;
        for &(k, w) in pick {
            let idx = b.slice_axis(order, 1, SliceDim { start: k, step: 1, len: 1 })?;
            let vals = b.scale(w, gi)?;
            let back = crate::grad::scatter_add_along(b, &xs, axis, idx, vals)?;
            total = Some(match total {
                Some(t) => b.add(t, back)?,
                None => back,
            });
        }
    }
    total.ok_or_else(|| IrError::internal("an order statistic without positions"))
}

/// The cotangent of `x` for `nanmedian` or a linear `nanquantile` along `spec.axis`: as
/// [`order_statistic_vjp`] over each row's `c` non-NaN elements, which the stable argsort puts
/// first, so the sorted positions `lo = floor(q (c - 1))` and `lo + 1` and the weight
/// `f = q (c - 1) - lo` differ by row and are computed as values; a row of NaNs (`c = 0`)
/// sends back nothing (JAX's rule).
fn nan_order_statistic_vjp(
    b: &mut crate::grad::Builder<'_>,
    spec: &SortSpec,
    x: crate::graph::NodeId,
    g: crate::graph::NodeId,
) -> Result<crate::graph::NodeId> {
    use crate::op::{BinaryOp, ReduceOp, UnaryOp};
    let axis = spec.axis;
    let xs = b.shape(x);
    let n = xs.0[axis];
    let outer: usize = xs.0[..axis].iter().product();
    let inner: usize = xs.0[axis + 1..].iter().product();
    let qs: Vec<f64> = match &spec.mode {
        SortMode::Median { .. } => vec![0.5],
        SortMode::Quantile { q, .. } => q.clone(),
        _ => return Err(IrError::internal("not an order statistic")),
    };
    let dt = b.dtype(x);
    let three = Shape(vec![outer, n, inner]);
    let mode = SortMode::ArgSort { stable: true };
    let order = b.g.library(LibId::SORT, Attr::Sort(SortSpec { mode, axis }), &[x], b.loc.clone())?;
    let order = b.reshape(order, &three)?;
    // Per row: the count of non-NaN elements; per sorted position: its index.
    let x3 = b.reshape(x, &three)?;
    let nan = b.un(UnaryOp::IsNan, x3)?;
    let nan = b.cast(nan, dt)?;
    let (zero, one) = (b.c(0.0), b.c(1.0));
    let valid = b.sub(one, nan)?;
    let count = b.reduce(ReduceOp::Sum, valid, &[1], true)?;
    let some = b.bin(BinaryOp::Gt, count, zero)?;
    let pos = crate::grad::iota(b, &Shape(vec![1, n, 1]), 1)?;
    let pos = b.cast(pos, dt)?;
    let last = b.sub(count, one)?;
    let g = b.cast(g, dt)?;
    let g = b.reshape(g, &Shape(vec![qs.len(), outer, 1, inner]))?;
    let mut total: Option<crate::graph::NodeId> = None;
    for (i, &q) in qs.iter().enumerate() {
        let gi = b.slice_axis(g, 0, SliceDim { start: i, step: 1, len: 1 })?;
        let gi = b.reshape(gi, &Shape(vec![outer, 1, inner]))?;
        let at = b.scale(q, last)?;
        let lo = b.un(UnaryOp::Floor, at)?;
        let f = b.sub(at, lo)?;
        let hi = b.add(lo, one)?;
        let (on_lo, on_hi) = (b.bin(BinaryOp::Eq, pos, lo)?, b.bin(BinaryOp::Eq, pos, hi)?);
        let keep = b.sub(one, f)?;
        let w_lo = b.select(on_lo, keep, zero)?;
        let w_hi = b.select(on_hi, f, zero)?;
        let w = b.add(w_lo, w_hi)?;
        let w = b.select(some, w, zero)?;
        let vals = b.mul(w, gi)?;
        total = Some(match total {
            Some(t) => b.add(t, vals)?,
            None => vals,
        });
    }
    let vals = total.ok_or_else(|| IrError::internal("an order statistic without positions"))?;
    crate::grad::scatter_add_along(b, &xs, axis, order, vals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn infer(mode: SortMode, axis: usize, shape: &[usize], dt: DType) -> Result<(VType, Shape)> {
        let s = Shape(shape.to_vec());
        SortOp.infer(&Attr::Sort(SortSpec { mode, axis }), &[(VType::strong(dt), &s)])
    }

    #[test]
    fn result_types() {
        let (t, s) = infer(SortMode::TopK(3), 1, &[4, 10], DType::F32).unwrap();
        assert_eq!((t.dtype, s.0), (DType::I64, vec![4, 3]));
        let (t, s) = infer(SortMode::Median { skip_nan: false }, 0, &[4, 10], DType::I16).unwrap();
        assert_eq!((t.dtype, s.0), (DType::F64, vec![10]));
        let q = SortMode::Quantile { q: vec![0.1, 0.5], q_shape: vec![2], skip_nan: false, weak_q: true };
        let (t, s) = infer(q, 1, &[4, 10], DType::F32).unwrap();
        assert_eq!((t.dtype, s.0), (DType::F32, vec![2, 4]));
        assert!(infer(SortMode::TopK(11), 1, &[4, 10], DType::F32).is_err());
        assert!(infer(SortMode::Partition(vec![10]), 1, &[4, 10], DType::F32).is_err());
        assert!(infer(SortMode::Sort, 2, &[4, 10], DType::F32).is_err());
    }
}
