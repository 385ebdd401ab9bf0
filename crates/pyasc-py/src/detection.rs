//! Entry points of the detection kernels (`pyasc.ops.box_iou`, `nms`, `batched_nms`,
//! `nms_mask`): NumPy arrays in, NumPy arrays out, the work done with the GIL released in the
//! runtime's worker pool. The Python wrappers in `pyasc/detection.py` check shapes and dtypes
//! and hand over C-contiguous float32 or float64 boxes, float64 scores and int64 categories;
//! anything else is refused here with a typed error, never read wrongly.

use crate::boundary::{detach_interruptible, guard};
use crate::errors::to_py;
use numpy::ndarray::Array2;
use numpy::{PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyasc_ir::error::{ErrorKind, IrError};
use pyasc_kernels::nms::{self, Coord, Host, Stopped};
use pyasc_runtime::{interrupt, pool};
use pyo3::prelude::*;

fn invalid(message: impl Into<String>) -> PyErr {
    to_py(IrError::new(ErrorKind::InvalidArgument, message))
}

/// The contiguous data of a 2-D array with `cols` columns (any number when `cols` is 0).
fn rows<'a, T: numpy::Element>(a: &'a PyReadonlyArray2<'_, T>, cols: usize, what: &str) -> PyResult<&'a [T]> {
    if cols != 0 && a.shape()[1] != cols {
        return Err(to_py(IrError::new(ErrorKind::Shape, format!("{what} must have {cols} columns"))));
    }
    a.as_slice().map_err(|_| invalid(format!("{what} must be C-contiguous")))
}

/// True when `obj` is a float32 NumPy array (the wrappers send float32 or float64 only).
fn is_f32(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<PyArray2<f32>>().is_ok()
}

/// Runs a sweep with the GIL released, parallel parts on the calling thread and the launch
/// team (awake between a sweep's many short parallel sections, where rayon's sleeping workers
/// would take tens of microseconds to wake for each), Ctrl-C honoured.
fn run_sweep<R: Send>(py: Python<'_>, f: impl FnOnce(&mut Host<'_>) -> Result<R, Stopped> + Send) -> PyResult<R> {
    let out = detach_interruptible(py, move |poll| {
        let par = |n: usize, g: &(dyn Fn(usize) + Sync)| {
            let helpers = pool::num_threads().saturating_sub(1);
            let _ = pool::for_blocks::<()>(n, helpers, |i| {
                g(i);
                Ok(())
            });
        };
        let mut host = Host { par: &par, poll };
        f(&mut host)
    })?;
    out.map_err(|Stopped| to_py(interrupt::interrupted()))
}

fn box_iou_t<'py, T: Coord + numpy::Element>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let (a, b): (PyReadonlyArray2<T>, PyReadonlyArray2<T>) = (a.extract()?, b.extract()?);
    let (sa, sb) = (rows(&a, 4, "boxes1")?, rows(&b, 4, "boxes2")?);
    let (n, m) = (sa.len() / 4, sb.len() / 4);
    // A matrix too large for memory is an OutOfMemoryError, not an aborted process.
    let too_big =
        || to_py(IrError::new(ErrorKind::OutOfMemory, format!("box_iou: a {n} x {m} result does not fit in memory")));
    let len = n.checked_mul(m).ok_or_else(too_big)?;
    let mut out: Vec<T> = Vec::new();
    out.try_reserve_exact(len).map_err(|_| too_big())?;
    out.resize(len, T::ZERO);
    py.detach(|| pool::install(|| nms::box_iou(sa, sb, &mut out)));
    let arr = Array2::from_shape_vec((n, m), out).map_err(|e| to_py(IrError::internal(e.to_string())))?;
    Ok(PyArray2::from_owned_array(py, arr).into_any())
}

/// Pairwise IoU of two `(N, 4)` and `(M, 4)` box arrays of one float dtype: an `(N, M)` array.
#[pyfunction]
pub fn _box_iou<'py>(py: Python<'py>, a: &Bound<'py, PyAny>, b: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    guard(|| if is_f32(a) { box_iou_t::<f32>(py, a, b) } else { box_iou_t::<f64>(py, a, b) })
}

fn nms_t<'py, T: Coord + numpy::Element>(
    py: Python<'py>,
    boxes: &Bound<'py, PyAny>,
    scores: &[f64],
    idxs: Option<&[i64]>,
    iou_threshold: f64,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let boxes: PyReadonlyArray2<T> = boxes.extract()?;
    let b = rows(&boxes, 4, "boxes")?;
    if b.len() != 4 * scores.len() || idxs.is_some_and(|c| c.len() != scores.len()) {
        return Err(to_py(IrError::new(ErrorKind::Shape, "boxes, scores and idxs must have one row per box")));
    }
    let kept = run_sweep(py, |host| match idxs {
        None => nms::nms(b, scores, iou_threshold, host),
        Some(c) => nms::batched_nms(b, scores, c, iou_threshold, host),
    })?;
    Ok(PyArray1::from_vec(py, kept))
}

/// Greedy NMS: the kept indices (int64) in descending score order; with `idxs`, per category.
#[pyfunction]
#[pyo3(signature = (boxes, scores, iou_threshold, idxs = None))]
pub fn _nms<'py>(
    py: Python<'py>,
    boxes: &Bound<'py, PyAny>,
    scores: PyReadonlyArray1<'py, f64>,
    iou_threshold: f64,
    idxs: Option<PyReadonlyArray1<'py, i64>>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    guard(|| {
        let s = scores.as_slice().map_err(|_| invalid("scores must be contiguous"))?;
        let c = match &idxs {
            Some(c) => Some(c.as_slice().map_err(|_| invalid("idxs must be contiguous"))?),
            None => None,
        };
        if is_f32(boxes) {
            nms_t::<f32>(py, boxes, s, c, iou_threshold)
        } else {
            nms_t::<f64>(py, boxes, s, c, iou_threshold)
        }
    })
}

fn nms_mask_t<'py, T: Coord + numpy::Element>(
    py: Python<'py>,
    iou: &Bound<'py, PyAny>,
    iou_threshold: f64,
) -> PyResult<Bound<'py, PyArray1<bool>>> {
    let iou: PyReadonlyArray2<T> = iou.extract()?;
    let n = iou.shape()[0];
    if iou.shape()[1] != n {
        return Err(to_py(IrError::new(ErrorKind::Shape, "the IoU matrix must be square")));
    }
    let m = rows(&iou, 0, "the IoU matrix")?;
    let keep = py.detach(|| nms::nms_mask(m, n, iou_threshold));
    Ok(PyArray1::from_vec(py, keep))
}

/// The greedy sweep over a square IoU matrix in score order: the boolean keep mask.
#[pyfunction]
pub fn _nms_mask<'py>(
    py: Python<'py>,
    iou: &Bound<'py, PyAny>,
    iou_threshold: f64,
) -> PyResult<Bound<'py, PyArray1<bool>>> {
    guard(|| {
        if is_f32(iou) {
            nms_mask_t::<f32>(py, iou, iou_threshold)
        } else {
            nms_mask_t::<f64>(py, iou, iou_threshold)
        }
    })
}
