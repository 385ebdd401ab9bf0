//! Tracing entry point of the sort library op: `np.sort`, `np.argsort`, partitions, top-k,
//! gathers along an axis, `searchsorted`, `unique` and the order statistics, all as one op
//! whose attribute says what it computes.

use crate::errors::user_error;
use crate::operator::tensor::{apply, node_of, trace_of, Tensor};
use pyasc_ir::error::ErrorKind;
use pyasc_ir::library::{SortMode, SortSpec};
use pyasc_ir::op::Op;
use pyasc_ir::{Attr, LibId, Scalar};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A sort op on traced `x` (and `other`: indices of a gather, values of a searchsorted):
/// `mode` is one of sort, argsort, partition, argpartition, topk, gather, searchsorted,
/// unique, quantile, median. Axes, positions and quantiles arrive normalised.
#[pyfunction]
#[pyo3(signature = (mode, x, other = None, axis = 0, k = 0, kth = vec![], stable = false, right = false,
                    size = 0, fill = None, q = vec![], q_shape = vec![], skip_nan = false, weak_q = false))]
#[allow(clippy::too_many_arguments)]
pub fn apply_sort(
    py: Python<'_>,
    mode: &str,
    x: &Bound<'_, PyAny>,
    other: Option<&Bound<'_, PyAny>>,
    axis: usize,
    k: usize,
    kth: Vec<usize>,
    stable: bool,
    right: bool,
    size: usize,
    fill: Option<&Bound<'_, PyAny>>,
    q: Vec<f64>,
    q_shape: Vec<usize>,
    skip_nan: bool,
    weak_q: bool,
) -> PyResult<Py<Tensor>> {
    let mode = match mode {
        "sort" => SortMode::Sort,
        "argsort" => SortMode::ArgSort { stable },
        "partition" => SortMode::Partition(kth),
        "argpartition" => SortMode::ArgPartition(kth),
        "topk" => SortMode::TopK(k),
        "gather" => SortMode::Gather,
        "searchsorted" => SortMode::SearchSorted { right },
        "unique" => {
            let fill = match fill {
                None => None,
                Some(f) if f.is_none() => None,
                Some(f) => Some(if let Ok(b) = f.extract::<bool>() {
                    Scalar::Bool(b)
                } else if let Ok(i) = f.extract::<i64>() {
                    Scalar::Int(i)
                } else {
                    Scalar::Float(f.extract::<f64>()?)
                }),
            };
            SortMode::Unique { size, fill }
        }
        "quantile" => SortMode::Quantile { q, q_shape, skip_nan, weak_q },
        "median" => SortMode::Median { skip_nan },
        other => return Err(user_error(py, ErrorKind::Internal, format!("unknown sort mode {other}"))),
    };
    let mut operands = vec![x];
    if let Some(o) = other {
        operands.push(o);
    }
    let trace = trace_of(&operands).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let ids = operands.iter().map(|o| node_of(py, &trace, o)).collect::<PyResult<Vec<_>>>()?;
    let attr = trace.lock().expect("trace lock poisoned").graph.add_attr(Attr::Sort(SortSpec { mode, axis }));
    apply(py, &trace, Op::Library(LibId::SORT, attr), &ids)
}
