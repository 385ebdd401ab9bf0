//! Tracing entry points for the ops beyond elementwise ones: reductions, matmul, views
//! (movement ops), data movement (pad, concatenate, take) and creation (fill, trace-time
//! constant arrays). Each appends nodes to the trace of its tensor operand.

use crate::arrays::{dtype_of, numpy};
use crate::errors::{to_py, user_error};
use crate::frames::user_loc;
use crate::operator::tensor::{apply, node_of, parse_dtype, trace_of, Tensor};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_ir::error::ErrorKind;
use pyasc_ir::library::ScanKind;
use pyasc_ir::op::{Axes, Op, ReduceOp};
use pyasc_ir::view::{PadMode, PadSpec, SliceDim, ViewSpec};
use pyasc_ir::{Attr, LibId, NodeId, Scalar};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

pub use pyasc_engine::trace::ConstArray;
use pyasc_engine::trace::Trace;

/// Add an array computed at trace time (values fixed for the plan) to the trace of `like`.
#[pyfunction]
pub fn apply_constant_array(py: Python<'_>, like: &Bound<'_, PyAny>, array: &Bound<'_, PyAny>) -> PyResult<Py<Tensor>> {
    let trace = trace_of(&[like]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let arr = numpy(py)?.call_method1("ascontiguousarray", (array,))?;
    let a = arr.cast::<PyUntypedArray>()?;
    let dtype = dtype_of(a).map_err(to_py)?;
    let shape = a.shape().to_vec();
    let bytes = shape.iter().product::<usize>() * dtype.size();
    let src = crate::arrays::view_of(a, dtype).expect("contiguous arrays have element strides");
    // SAFETY: the contiguous array holds `bytes` bytes at `src.ptr` while `arr` is alive.
    let data = unsafe { std::slice::from_raw_parts(src.ptr, bytes) };
    let n = Trace::add_constant(&trace, ConstArray::from_bytes(dtype, shape, data));
    Py::new(py, Tensor::new(trace.clone(), n.id, n.dtype, n.shape))
}

/// `array` (a NumPy array, DeviceArray or number) as a node of the trace of `like`: arrays
/// are captured inputs, read live at every call, as when they meet a tensor in arithmetic.
#[pyfunction]
pub fn apply_capture(py: Python<'_>, like: &Bound<'_, PyAny>, array: &Bound<'_, PyAny>) -> PyResult<Py<Tensor>> {
    let trace = trace_of(&[like]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let id = node_of(py, &trace, array)?;
    let t = trace.lock().expect("trace lock poisoned");
    let n = t.graph.node(id);
    let tensor = Tensor::new(trace.clone(), id, n.dtype(), n.shape.0.clone());
    drop(t);
    Py::new(py, tensor)
}

/// A constant filling `shape` in the trace of `like` (`zeros`, `ones`, `full` inside operators).
#[pyfunction]
pub fn apply_fill(
    py: Python<'_>,
    like: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
    shape: Vec<usize>,
) -> PyResult<Py<Tensor>> {
    let trace = trace_of(&[like]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let dt = parse_dtype(py, dtype)?;
    let v = if let Ok(b) = value.extract::<bool>() {
        Scalar::Bool(b)
    } else if let Ok(i) = value.extract::<i64>() {
        Scalar::Int(i)
    } else if let Ok(u) = value.extract::<u64>() {
        // uint64 values are held by their bits.
        Scalar::Int(u as i64)
    } else {
        Scalar::Float(value.extract::<f64>()?)
    };
    let loc = user_loc(py);
    let mut t = trace.lock().expect("trace lock poisoned");
    let id = t.graph.fill(v, dt, pyasc_ir::Shape(shape.clone()), loc);
    drop(t);
    Py::new(py, Tensor::new(trace.clone(), id, dt, shape))
}

/// A movement op on a traced tensor: `kind` is `transpose` (params: the axes), `reshape`
/// (the new shape), `slice` (one `(start, step, len)` per axis) or `broadcast_to` (the shape).
#[pyfunction]
pub fn apply_view(py: Python<'_>, x: &Bound<'_, PyAny>, kind: &str, params: &Bound<'_, PyAny>) -> PyResult<Py<Tensor>> {
    let spec = match kind {
        "transpose" => ViewSpec::Transpose(params.extract()?),
        "reshape" => ViewSpec::Reshape(params.extract()?),
        "broadcast_to" => ViewSpec::BroadcastTo(params.extract()?),
        "slice" => {
            let dims: Vec<(usize, isize, usize)> = params.extract()?;
            ViewSpec::Slice(dims.into_iter().map(|(start, step, len)| SliceDim { start, step, len }).collect())
        }
        other => return Err(PyTypeError::new_err(format!("unknown view {other}"))),
    };
    let trace = trace_of(&[x]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let id = node_of(py, &trace, x)?;
    let loc = user_loc(py);
    let mut t = trace.lock().expect("trace lock poisoned");
    t.check_open(loc.as_ref()).map_err(to_py)?;
    // NumPy makes an array of a Python number before moving it: the view is strongly typed.
    let id = match t.graph.node(id).vtype.weak {
        Some(_) => {
            let dtype = t.graph.node(id).dtype();
            t.graph.apply(Op::Cast(dtype), &[id], loc.clone()).map_err(to_py)?
        }
        None => id,
    };
    let vid = t.graph.view(spec, id, loc).map_err(to_py)?;
    let n = t.graph.node(vid);
    let tensor = Tensor::new(trace.clone(), vid, n.dtype(), n.shape.0.clone());
    drop(t);
    let tensor = Py::new(py, tensor)?;
    // Views follow updates of the array they view (NumPy's semantics, `pyasc.api.updates`).
    crate::hooks::call(py, "note_view", (x, &tensor, kind, params))?;
    Ok(tensor)
}

/// `np.pad` of a traced tensor: `widths` one `(before, after)` per axis, `mode` one of
/// constant, edge, reflect, wrap.
#[pyfunction]
pub fn apply_pad(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    widths: Vec<(usize, usize)>,
    mode: &str,
    cval: &Bound<'_, PyAny>,
) -> PyResult<Py<Tensor>> {
    let mode = match mode {
        "constant" => PadMode::Constant,
        "edge" => PadMode::Edge,
        "reflect" => PadMode::Reflect,
        "wrap" => PadMode::Wrap,
        other => {
            return Err(user_error(
                py,
                ErrorKind::Unsupported,
                format!("pad mode {other:?} is not supported; use constant, edge, reflect or wrap"),
            ))
        }
    };
    let cval = if let Ok(b) = cval.extract::<bool>() {
        Scalar::Bool(b)
    } else if let Ok(i) = cval.extract::<i64>() {
        Scalar::Int(i)
    } else if let Ok(u) = cval.extract::<u64>() {
        // uint64 values are held by their bits.
        Scalar::Int(u as i64)
    } else {
        Scalar::Float(cval.extract::<f64>()?)
    };
    let trace = trace_of(&[x]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let id = node_of(py, &trace, x)?;
    let loc = user_loc(py);
    let mut t = trace.lock().expect("trace lock poisoned");
    let pid = t.graph.pad(PadSpec { widths, mode, cval }, id, loc).map_err(to_py)?;
    let n = t.graph.node(pid);
    let tensor = Tensor::new(trace.clone(), pid, n.dtype(), n.shape.0.clone());
    drop(t);
    Py::new(py, tensor)
}

/// `np.concatenate(tensors, axis)` on traced tensors (NumPy arrays among them are constants).
#[pyfunction]
pub fn apply_concat(py: Python<'_>, tensors: Vec<Bound<'_, PyAny>>, axis: u16) -> PyResult<Py<Tensor>> {
    let refs: Vec<&Bound<'_, PyAny>> = tensors.iter().collect();
    let trace = trace_of(&refs).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let ids: Vec<NodeId> = tensors.iter().map(|t| node_of(py, &trace, t)).collect::<PyResult<_>>()?;
    let attr = trace.lock().expect("trace lock poisoned").graph.add_attr(Attr::Axis(axis as usize));
    apply(py, &trace, Op::Library(LibId::CONCAT, attr), &ids)
}

/// `np.take(x, indices, axis)` on a traced tensor; `indices` traced or a constant int array.
#[pyfunction]
pub fn apply_take(py: Python<'_>, x: &Bound<'_, PyAny>, indices: &Bound<'_, PyAny>, axis: u16) -> PyResult<Py<Tensor>> {
    let trace = trace_of(&[x]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let idx = if indices.cast::<Tensor>().is_ok() {
        node_of(py, &trace, indices)?
    } else {
        let arr = numpy(py)?.call_method1("asarray", (indices,))?;
        apply_constant_array(py, x, &arr)?.get().id()
    };
    let xid = node_of(py, &trace, x)?;
    let attr = trace.lock().expect("trace lock poisoned").graph.add_attr(Attr::Axis(axis as usize));
    apply(py, &trace, Op::Library(LibId::TAKE, attr), &[xid, idx])
}

/// `a @ b` (NumPy `matmul`) on traced tensors.
#[pyfunction]
pub fn apply_matmul(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<Tensor>> {
    let trace = trace_of(&[a, b]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let ids = [node_of(py, &trace, a)?, node_of(py, &trace, b)?];
    let attr = trace.lock().expect("trace lock poisoned").graph.add_attr(Attr::None);
    apply(py, &trace, Op::Library(LibId::MATMUL, attr), &ids)
}

/// Normalise `axis` (None, an int or a sequence of ints; negative counts from the end) for a
/// tensor of rank `rank` into an axis set.
pub fn parse_axes(py: Python<'_>, axis: Option<&Bound<'_, PyAny>>, rank: usize) -> PyResult<Axes> {
    let list: Vec<i64> = match axis {
        None => return Ok(Axes::all(rank)),
        Some(a) if a.is_none() => return Ok(Axes::all(rank)),
        Some(a) => match a.extract::<i64>() {
            // NumPy reduces a 0-d array over an int axis 0 or -1 (not a tuple) to itself.
            Ok(0 | -1) if rank == 0 => return Ok(Axes(0)),
            Ok(i) => vec![i],
            Err(_) => a.extract::<Vec<i64>>().map_err(|_| {
                user_error(
                    py,
                    ErrorKind::InvalidArgument,
                    format!("axis must be None, an int or a tuple of ints, not {a}"),
                )
            })?,
        },
    };
    let mut mask = 0u64;
    for a in list {
        let i = if a < 0 { a + rank as i64 } else { a };
        if i < 0 || i >= rank as i64 {
            return Err(user_error(
                py,
                ErrorKind::Shape,
                format!("axis {a} is out of bounds for a tensor of rank {rank}"),
            ));
        }
        if mask & (1 << i) != 0 {
            return Err(user_error(py, ErrorKind::Shape, format!("axis {a} is repeated")));
        }
        mask |= 1 << i;
    }
    Ok(Axes(mask))
}

/// A reduction by name (`sum prod max min argmax argmin any all`) of a traced tensor.
#[pyfunction]
#[pyo3(signature = (name, x, axis = None, keepdims = false))]
pub fn apply_reduce(
    py: Python<'_>,
    name: &str,
    x: &Bound<'_, PyAny>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
) -> PyResult<Py<Tensor>> {
    let op = ReduceOp::from_name(name).ok_or_else(|| PyTypeError::new_err(format!("unknown reduction {name}")))?;
    let trace = trace_of(&[x]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let id = node_of(py, &trace, x)?;
    let rank = trace.lock().expect("trace lock poisoned").graph.node(id).shape.rank();
    let axes = parse_axes(py, axis, rank)?;
    if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) && axes.0.count_ones() > 1 && axes != Axes::all(rank) {
        return Err(user_error(py, ErrorKind::InvalidArgument, format!("{name} takes a single axis or None")));
    }
    if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) && axes == Axes::all(rank) && rank > 1 {
        return Err(user_error(
            py,
            ErrorKind::Unsupported,
            format!("{name} over all axes of a {rank}-d tensor needs a flattening reshape, which comes with movement ops; pass an axis"),
        ));
    }
    apply(py, &trace, Op::Reduce { op, axes, keepdims }, &[id])
}

/// A scan by name (`cumsum cumprod cummax cummin logcumsumexp`) of a traced tensor along
/// `axis` (already in range); the tensor has the result's dtype.
#[pyfunction]
pub fn apply_scan(py: Python<'_>, name: &str, x: &Bound<'_, PyAny>, axis: usize) -> PyResult<Py<Tensor>> {
    let kind = ScanKind::from_name(name).ok_or_else(|| PyTypeError::new_err(format!("unknown scan {name}")))?;
    let trace = trace_of(&[x]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let id = node_of(py, &trace, x)?;
    let attr = trace.lock().expect("trace lock poisoned").graph.add_attr(Attr::Scan(kind, axis));
    apply(py, &trace, Op::Library(LibId::SCAN, attr), &[id])
}

/// A convolution of traced tensors: input `(N, C, *spatial)`, weight `(O, C / groups,
/// *kernel)`, one stride, `(before, after)` padding and dilation per spatial dimension.
#[pyfunction]
pub fn apply_conv(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    w: &Bound<'_, PyAny>,
    stride: Vec<usize>,
    pad: Vec<(usize, usize)>,
    dilation: Vec<usize>,
    groups: usize,
) -> PyResult<Py<Tensor>> {
    let trace = trace_of(&[x, w]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let ids = [node_of(py, &trace, x)?, node_of(py, &trace, w)?];
    let spec = pyasc_ir::library::ConvSpec { stride, pad, dilation, groups };
    let attr = trace.lock().expect("trace lock poisoned").graph.add_attr(Attr::Conv(spec));
    apply(py, &trace, Op::Library(LibId::CONV, attr), &ids)
}

/// 2-D pooling (`kind` "max" or "avg") of a traced tensor over its last two axes.
#[pyfunction]
pub fn apply_pool(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    kind: &str,
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 2],
) -> PyResult<Py<Tensor>> {
    use pyasc_ir::library::{PoolKind, PoolSpec};
    let kind = match kind {
        "max" => PoolKind::Max,
        "avg" => PoolKind::Avg,
        other => return Err(PyTypeError::new_err(format!("unknown pooling {other}"))),
    };
    let trace = trace_of(&[x]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let id = node_of(py, &trace, x)?;
    let attr =
        trace.lock().expect("trace lock poisoned").graph.add_attr(Attr::Pool(PoolSpec { kind, kernel, stride, pad }));
    apply(py, &trace, Op::Library(LibId::POOL, attr), &[id])
}

/// `pixel_shuffle(x, r)` of a traced tensor.
#[pyfunction]
pub fn apply_pixel_shuffle(py: Python<'_>, x: &Bound<'_, PyAny>, r: usize) -> PyResult<Py<Tensor>> {
    let trace = trace_of(&[x]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let id = node_of(py, &trace, x)?;
    let attr = trace.lock().expect("trace lock poisoned").graph.add_attr(Attr::Upscale(r));
    apply(py, &trace, Op::Library(LibId::PIXEL_SHUFFLE, attr), &[id])
}

/// Fused attention of traced tensors `q, k, v` and an optional mask (`mask_kind` "bool" or
/// "additive"; a float mask is added to the scaled scores, a boolean one keeps `true`).
#[pyfunction]
#[pyo3(signature = (q, k, v, mask, scale, causal, mask_kind))]
#[allow(clippy::too_many_arguments)]
pub fn apply_attention(
    py: Python<'_>,
    q: &Bound<'_, PyAny>,
    k: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    mask: Option<&Bound<'_, PyAny>>,
    scale: f64,
    causal: bool,
    mask_kind: &str,
) -> PyResult<Py<Tensor>> {
    use pyasc_ir::library::{AttnMask, AttnSpec};
    let trace = trace_of(&[q, k, v]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let mut ids = vec![node_of(py, &trace, q)?, node_of(py, &trace, k)?, node_of(py, &trace, v)?];
    let kind = match (mask, mask_kind) {
        (None, _) => AttnMask::None,
        (Some(_), "bool") => AttnMask::Bool,
        (Some(_), "additive") => AttnMask::Additive,
        (Some(_), other) => return Err(PyTypeError::new_err(format!("unknown mask kind {other}"))),
    };
    if let Some(m) = mask {
        ids.push(node_of(py, &trace, m)?);
    }
    let attr = trace.lock().expect("trace lock poisoned").graph.add_attr(Attr::Attention(AttnSpec {
        scale,
        causal,
        mask: kind,
    }));
    apply(py, &trace, Op::Library(LibId::ATTENTION, attr), &ids)
}
