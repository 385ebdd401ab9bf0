//! Entry points of the detection routines (`pyasc.ops.box_iou`, `nms`, `batched_nms`,
//! `nms_mask`, `filter_rows`): NumPy arrays in, NumPy arrays out. Each is a library op
//! (`pyasc_ir::library::detection`) launched through the engine's door with the GIL released
//! ([`crate::library_launch`]). The Python wrappers in `pyasc/nn/detection.py` check shapes and dtypes
//! and hand over C-contiguous float32 or float64 boxes, float32 or float64 scores and int64
//! categories; anything else is refused here with a typed error, never read wrongly. The
//! `_fast` entries take the common call straight from the wrapper, check it here and decline
//! (`None`) whatever they do not take, so that the wrapper's checks and errors run only then:
//! after other work has left the caches cold, the wrapper's NumPy calls took longer than the
//! 1153-box NMS itself.

use crate::boundary::guard;
use crate::errors::to_py;
use crate::library_launch::{launch_into, launch_new, plan_for, DETECTION, NMS};
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyasc_ir::attr::Attr;
use pyasc_ir::error::{ErrorKind, IrError};
use pyasc_ir::library::{LibId, NmsSpec, RowFilter};
use pyasc_ir::DType;
use pyasc_runtime::{InputView, OutputPtr};
use pyo3::prelude::*;

/// The element types of boxes, IoU matrices and filtered matrices.
trait Coord: numpy::Element + Copy {
    const DTYPE: DType;
    /// True when `v` is neither infinite nor NaN.
    fn finite(v: Self) -> bool;
}

impl Coord for f32 {
    const DTYPE: DType = DType::F32;
    fn finite(v: f32) -> bool {
        v.is_finite()
    }
}

impl Coord for f64 {
    const DTYPE: DType = DType::F64;
    fn finite(v: f64) -> bool {
        v.is_finite()
    }
}

/// A view of the C-contiguous data `v` of `shape`.
fn view<T: Coord>(v: &[T], shape: Vec<usize>) -> InputView {
    InputView::contiguous(v.as_ptr() as *const u8, T::DTYPE, shape)
}

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
    n.checked_mul(m).and_then(|l| l.checked_mul(std::mem::size_of::<T>())).ok_or_else(too_big)?;
    // SAFETY: the views address the readonly arrays' data, alive until the call returns.
    unsafe { launch_new(py, DETECTION, LibId::BOX_IOU, Attr::None, vec![view(sa, vec![n, 4]), view(sb, vec![m, 4])]) }
}

/// Pairwise IoU of two `(N, 4)` and `(M, 4)` box arrays of one float dtype: an `(N, M)` array.
#[pyfunction]
pub fn _box_iou<'py>(py: Python<'py>, a: &Bound<'py, PyAny>, b: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    guard(|| if is_f32(a) { box_iou_t::<f32>(py, a, b) } else { box_iou_t::<f64>(py, a, b) })
}

/// True when every value is finite.
fn all_finite<T: Coord>(v: &[T]) -> bool {
    v.iter().fold(true, |ok, &x| ok & T::finite(x))
}

/// The scores as float64, read through any strides (float32 widens exactly); an error when one
/// is NaN.
fn scores_f64(scores: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    let s: Vec<f64> = if let Ok(a) = scores.cast::<PyArray1<f32>>() {
        a.readonly().as_array().iter().map(|&v| f64::from(v)).collect()
    } else {
        let a: PyReadonlyArray1<f64> = scores.extract()?;
        a.as_array().to_vec()
    };
    if s.iter().any(|v| v.is_nan()) {
        return Err(invalid("scores contain NaN"));
    }
    Ok(s)
}

/// The boxes' values after the checks every NMS entry makes: C-contiguous `(N, 4)` rows, one
/// per score (and per category), all finite.
fn checked_boxes<'a, T: Coord + numpy::Element>(
    boxes: &'a PyReadonlyArray2<'_, T>,
    n: usize,
    idxs: Option<&[i64]>,
) -> PyResult<&'a [T]> {
    let b = rows(boxes, 4, "boxes")?;
    if b.len() != 4 * n || idxs.is_some_and(|c| c.len() != n) {
        return Err(to_py(IrError::new(ErrorKind::Shape, "boxes, scores and idxs must have one row per box")));
    }
    if !all_finite(b) {
        return Err(invalid("boxes contain NaN or infinity"));
    }
    Ok(b)
}

/// The sweep over checked boxes, the kept indices as a NumPy array.
fn run_nms<'py, T: Coord>(
    py: Python<'py>,
    b: &[T],
    scores: &[f64],
    idxs: Option<&[i64]>,
    iou_threshold: f64,
    score_threshold: Option<f64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let n = scores.len();
    let mut inputs =
        vec![view(b, vec![n, 4]), InputView::contiguous(scores.as_ptr() as *const u8, DType::F64, vec![n])];
    if let Some(c) = idxs {
        inputs.push(InputView::contiguous(c.as_ptr() as *const u8, DType::I64, vec![n]));
    }
    let plan = plan_for(LibId::NMS, Attr::Nms(NmsSpec { iou_threshold, score_threshold }), &inputs, None)?;
    // The kept indices as a counted list: their number, then the indices.
    let mut counted = vec![0i64; n + 1];
    // SAFETY: the views address the callers' slices, alive until the call returns; `counted`
    // holds the plan's `n + 1` int64 result.
    unsafe { launch_into(py, NMS, plan, inputs, OutputPtr(counted.as_mut_ptr() as *mut u8))? };
    let kept = counted[0] as usize;
    Ok(PyArray1::from_slice(py, &counted[1..1 + kept]))
}

fn nms_t<'py, T: Coord + numpy::Element>(
    py: Python<'py>,
    boxes: &Bound<'py, PyAny>,
    scores: &[f64],
    idxs: Option<&[i64]>,
    iou_threshold: f64,
    score_threshold: Option<f64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let boxes: PyReadonlyArray2<T> = boxes.extract()?;
    let b = checked_boxes(&boxes, scores.len(), idxs)?;
    run_nms(py, b, scores, idxs, iou_threshold, score_threshold)
}

/// Greedy NMS: the kept indices (int64) in descending score order; with `idxs`, per category;
/// with `score_threshold`, only boxes scoring strictly above it take part. Boxes are
/// C-contiguous float32 or float64 `(N, 4)`, scores float32 or float64; boxes with NaN or
/// infinity and NaN scores are refused (`InvalidArgumentError`).
#[pyfunction]
#[pyo3(signature = (boxes, scores, iou_threshold, idxs = None, score_threshold = None))]
pub fn _nms<'py>(
    py: Python<'py>,
    boxes: &Bound<'py, PyAny>,
    scores: &Bound<'py, PyAny>,
    iou_threshold: f64,
    idxs: Option<PyReadonlyArray1<'py, i64>>,
    score_threshold: Option<f64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    guard(|| {
        let s = scores_f64(scores)?;
        let c = match &idxs {
            Some(c) => Some(c.as_slice().map_err(|_| invalid("idxs must be contiguous"))?),
            None => None,
        };
        if is_f32(boxes) {
            nms_t::<f32>(py, boxes, &s, c, iou_threshold, score_threshold)
        } else {
            nms_t::<f64>(py, boxes, &s, c, iou_threshold, score_threshold)
        }
    })
}

/// Whether `obj` is a float32 or float64 two-dimensional NumPy array.
fn float_matrix(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<PyArray2<f32>>().is_ok() || obj.cast::<PyArray2<f64>>().is_ok()
}

/// [`_nms_fast`] for boxes of type `T`.
fn nms_fast_t<'py, T: Coord + numpy::Element>(
    py: Python<'py>,
    boxes: &Bound<'py, PyAny>,
    scores: &Bound<'py, PyAny>,
    iou_threshold: f64,
    score_threshold: Option<f64>,
) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
    let boxes: PyReadonlyArray2<T> = boxes.extract()?;
    let Ok(s) = scores_f64(scores) else { return Ok(None) };
    let Ok(b) = checked_boxes(&boxes, s.len(), None) else { return Ok(None) };
    run_nms(py, b, &s, None, iou_threshold, score_threshold).map(Some)
}

/// `nms` for the common call, with nothing left for the Python wrapper to check: C-contiguous
/// float32 or float64 `(N, 4)` boxes, finite; float32 or float64 scores of any stride, none
/// NaN; a float IoU threshold that is not NaN; a float score threshold or none (compared as
/// NumPy compares a Python float with the scores' dtype). `None` for anything else, which the
/// wrapper then checks and reports at the caller's line.
#[pyfunction]
#[pyo3(signature = (boxes, scores, iou_threshold, score_threshold = None))]
pub fn _nms_fast<'py>(
    py: Python<'py>,
    boxes: &Bound<'py, PyAny>,
    scores: &Bound<'py, PyAny>,
    iou_threshold: f64,
    score_threshold: Option<f64>,
) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
    guard(|| {
        let f32_scores = scores.cast::<PyArray1<f32>>().is_ok();
        if !(f32_scores || scores.cast::<PyArray1<f64>>().is_ok()) || iou_threshold.is_nan() {
            return Ok(None);
        }
        // A Python float against float32 scores compares as the float32 nearest to it.
        let st = score_threshold.map(|t| if f32_scores { f64::from(t as f32) } else { t });
        if is_f32(boxes) {
            nms_fast_t::<f32>(py, boxes, scores, iou_threshold, st)
        } else if boxes.cast::<PyArray2<f64>>().is_ok() {
            nms_fast_t::<f64>(py, boxes, scores, iou_threshold, st)
        } else {
            Ok(None)
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
    let attr = Attr::Nms(NmsSpec { iou_threshold, score_threshold: None });
    // SAFETY: the view addresses the readonly array's data, alive until the call returns.
    let keep = unsafe { launch_new(py, DETECTION, LibId::NMS_MASK, attr, vec![view(m, vec![n, n])])? };
    Ok(keep.cast_into::<PyArray1<bool>>()?)
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

fn filter_rows_t<'py, T: Coord>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    column: usize,
    threshold: T,
) -> PyResult<Bound<'py, PyAny>>
where
    f64: From<T>,
{
    let x: PyReadonlyArray2<T> = x.extract()?;
    let (n, cols) = (x.shape()[0], x.shape()[1]);
    let data = rows(&x, 0, "x")?;
    let test = RowFilter { column, threshold: f64::from(threshold) };
    // Two launches: the selected rows as a uint32 counted list, then those rows.
    let inputs = vec![view(data, vec![n, cols])];
    let plan = plan_for(LibId::SELECT_ROWS, Attr::RowFilter(test), &inputs, None)?;
    let mut counted = vec![0u32; n + 1];
    // SAFETY: the view addresses the readonly array's data, alive until the call returns;
    // `counted` holds the plan's `n + 1` uint32 result.
    unsafe { launch_into(py, DETECTION, plan, inputs, OutputPtr(counted.as_mut_ptr() as *mut u8))? };
    let kept = counted[0] as usize;
    let idx = InputView::contiguous(counted[1..].as_ptr() as *const u8, DType::U32, vec![kept]);
    // SAFETY: as above; `idx` addresses the first `kept` selected rows in `counted`.
    unsafe { launch_new(py, DETECTION, LibId::GATHER_ROWS, Attr::None, vec![view(data, vec![n, cols]), idx]) }
}

/// `filter_rows` for the common call: a C-contiguous float32 or float64 matrix of fewer than
/// 2^32 rows, a column index in range (negative counts from the end) and a float threshold
/// (compared as NumPy compares a Python float with the matrix's dtype). `None` for anything
/// else, which the Python wrapper then handles.
#[pyfunction]
pub fn _filter_rows_fast<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    column: &Bound<'py, PyAny>,
    threshold: f64,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    guard(|| {
        if !float_matrix(x) {
            return Ok(None);
        }
        let a = x.cast::<numpy::PyUntypedArray>()?;
        let (n, cols) = (a.shape()[0], a.shape()[1] as i64);
        let Ok(c) = column.extract::<i64>() else { return Ok(None) };
        if !a.is_c_contiguous() || u32::try_from(n).is_err() || !(-cols..cols).contains(&c) {
            return Ok(None);
        }
        let c = c.rem_euclid(cols) as usize;
        Ok(Some(if is_f32(x) {
            filter_rows_t::<f32>(py, x, c, threshold as f32)?
        } else {
            filter_rows_t::<f64>(py, x, c, threshold)?
        }))
    })
}

/// `x[x[:, column] > threshold]` of a C-contiguous float32 or float64 matrix (`threshold`
/// already in `x`'s dtype), in two parallel passes over row blocks.
#[pyfunction]
pub fn _filter_rows<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    column: usize,
    threshold: f64,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        if is_f32(x) {
            filter_rows_t::<f32>(py, x, column, threshold as f32)
        } else {
            filter_rows_t::<f64>(py, x, column, threshold)
        }
    })
}
