//! Python operands as graph nodes: Python and NumPy scalars, constant arrays, captured
//! arrays and tracers become nodes of the open trace, and the elementwise entry points
//! (`apply_unary`, `apply_binary`, `apply_where`, `apply_cast`, the operators' dunders)
//! append ops over them with the user's line.

use crate::arrays::{dtype_of, is_numpy_scalar, numpy};
use crate::errors::{to_py, user_error};
use crate::frames::user_loc;
use crate::operator::tensor::{Captured, Tensor, Trace, TraceRef};
use crate::operator::trace_ops::apply_matmul;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_ir::error::ErrorKind;
use pyasc_ir::op::{BinaryOp, Op, UnaryOp};
use pyasc_ir::{DType, NodeId, Scalar, SourceLoc};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};
use std::sync::Arc;

pub(crate) fn trace_error(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    user_error(py, ErrorKind::Trace, msg)
}

/// Append `op` over `operands` to `trace`, typed, with the user's line.
pub fn apply(py: Python<'_>, trace: &TraceRef, op: Op, operands: &[NodeId]) -> PyResult<Py<Tensor>> {
    let loc = user_loc(py);
    let n = crate::boundary::guard(|| {
        crate::boundary::test_panic(crate::boundary::PANIC_IN_TRACE);
        Trace::apply(trace, op, operands, loc).map_err(to_py)
    })?;
    Py::new(py, Tensor::new(trace.clone(), n.id, n.dtype, n.shape))
}

/// The node for an operand: a tensor of this trace, or a constant (Python scalar,
/// NumPy scalar, 0-d array).
pub fn node_of(py: Python<'_>, trace: &TraceRef, obj: &Bound<'_, PyAny>) -> PyResult<NodeId> {
    if let Ok(t) = obj.cast::<Tensor>() {
        let t = t.get();
        if !Arc::ptr_eq(&t.trace, trace) {
            return Err(trace_error(py, "a tensor from another operator's trace was used here"));
        }
        return Ok(t.id());
    }
    let loc = user_loc(py);
    let np_scalar = is_numpy_scalar(py, obj)?;
    let scalar = if np_scalar {
        None
    } else if obj.is_instance_of::<PyBool>() {
        Some(Scalar::Bool(obj.extract()?))
    } else if obj.is_instance_of::<PyInt>() {
        match obj.extract::<i64>() {
            Ok(v) => Some(Scalar::Int(v)),
            Err(_) => match obj.extract::<u64>() {
                // Above int64: a Python int held as uint64 bits, still weakly typed.
                Ok(v) => {
                    let weak = pyasc_ir::dtype::VType { dtype: DType::U64, weak: Some(pyasc_ir::dtype::WeakKind::Int) };
                    let mut t = trace.lock().expect("trace lock poisoned");
                    return Ok(t.graph.constant(Scalar::Int(v as i64), weak, loc));
                }
                Err(_) => {
                    return Err(user_error(
                        py,
                        ErrorKind::Overflow,
                        format!("Python integer {obj} is out of bounds for every integer dtype pyasc computes in"),
                    ))
                }
            },
        }
    } else if obj.is_instance_of::<PyFloat>() {
        Some(Scalar::Float(obj.extract()?))
    } else {
        None
    };
    let mut t = trace.lock().expect("trace lock poisoned");
    if let Some(s) = scalar {
        return Ok(t.graph.py_scalar(s, loc));
    }
    drop(t);
    let np = numpy(py)?;
    if obj.is_instance(&np.getattr("ndarray")?)? {
        return capture(py, trace, obj, loc);
    }
    if obj.is_instance(&np.getattr("generic")?)? {
        // A NumPy scalar: immutable, so a strongly typed constant.
        let arr = np.call_method1("asarray", (obj,))?;
        let arr = arr.cast::<PyUntypedArray>()?;
        let dt = dtype_of(arr).map_err(|e| to_py(e.at(loc.as_ref())))?;
        let item = arr.call_method0("item")?;
        let value = if dt == DType::Bool {
            Scalar::Bool(item.extract()?)
        } else if dt.is_float() {
            Scalar::Float(item.extract()?)
        } else if dt == DType::U64 {
            // uint64 values are held by their bits.
            Scalar::Int(item.extract::<u64>()? as i64)
        } else {
            Scalar::Int(item.extract()?)
        };
        let mut t = trace.lock().expect("trace lock poisoned");
        return Ok(t.graph.constant(value, pyasc_ir::dtype::VType::strong(dt), loc));
    }
    Err(user_error(
        py,
        ErrorKind::DType,
        format!("operand of type {} cannot be used in an operator", obj.get_type().name()?),
    ))
}

/// The input for a NumPy array the function reads from outside itself (a global, a closure
/// variable, an attribute): an implicit argument read from the live array at every call.
fn capture(py: Python<'_>, trace: &TraceRef, obj: &Bound<'_, PyAny>, loc: Option<SourceLoc>) -> PyResult<NodeId> {
    crate::arrays::reject_masked(py, obj, || "a captured array".to_string())?;
    // A subclass (np.matrix, a memmap) is read through a base-class view of the same memory.
    let arr = numpy(py)?.call_method1("asarray", (obj,))?;
    let a = arr.cast::<PyUntypedArray>()?;
    // Big-endian arrays are read through a native copy at every call (see `push_captured`).
    let native = crate::arrays::native_copy(py, a)?;
    let dtype = match &native {
        Some(c) => dtype_of(c.cast::<PyUntypedArray>()?),
        None => dtype_of(a),
    }
    .map_err(|e| to_py(e.at(loc.as_ref())))?;
    let captured = Captured {
        dtype,
        shape: a.shape().to_vec(),
        key: obj.as_ptr() as usize,
        handle: Arc::new(arr.clone().unbind()),
    };
    let n = Trace::add_captured(trace, captured, loc.as_ref()).map_err(to_py)?;
    Ok(n.id)
}

/// The handle of a captured array (see [`capture`]) back as the Python array.
pub fn captured_array<'py>(py: Python<'py>, c: &Captured) -> Option<Bound<'py, PyAny>> {
    c.handle.downcast_ref::<Py<PyAny>>().map(|o| o.bind(py).clone())
}

/// The trace of the first traced tensor among `objs`.
pub(crate) fn trace_of(objs: &[&Bound<'_, PyAny>]) -> Option<TraceRef> {
    objs.iter().find_map(|o| o.cast::<Tensor>().ok().map(|t| t.get().trace.clone()))
}

fn binary(py: Python<'_>, op: BinaryOp, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<Tensor>> {
    let trace = trace_of(&[a, b]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    if op.class() == pyasc_ir::op::BinaryClass::Compare {
        // A Python int beyond every integer dtype compares as NumPy 2 compares it: by value.
        // Its float is beyond every integer too, so comparing with the float is exact.
        let (a, b) = (beyond_ints(py, a)?, beyond_ints(py, b)?);
        let x = node_of(py, &trace, &a)?;
        let y = node_of(py, &trace, &b)?;
        return apply(py, &trace, Op::Binary(op), &[x, y]);
    }
    let x = node_of(py, &trace, a)?;
    let y = node_of(py, &trace, b)?;
    apply(py, &trace, Op::Binary(op), &[x, y])
}

/// `obj`, or an infinity of its sign when it is a Python int outside `[-2**63, 2**64)`: every
/// integer compares with such an int as with that infinity.
fn beyond_ints<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if !obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyBool>() {
        return Ok(obj.clone());
    }
    if obj.extract::<i64>().is_ok() || obj.extract::<u64>().is_ok() {
        return Ok(obj.clone());
    }
    let v = if obj.lt(0)? { f64::NEG_INFINITY } else { f64::INFINITY };
    Ok(PyFloat::new(py, v).into_any())
}

/// True for complex operands (complex traced values, Python and NumPy complex numbers,
/// complex arrays): their arithmetic is built from real ops in `pyasc.core._complex`.
fn is_complex(py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<bool> {
    if o.is_instance_of::<Tensor>() || o.is_instance_of::<PyFloat>() || o.is_instance_of::<PyInt>() {
        return Ok(false);
    }
    if o.is_instance_of::<pyo3::types::PyComplex>() || o.hasattr("_pyasc_complex")? {
        return Ok(true);
    }
    match o.getattr("dtype") {
        Ok(d) if o.is_instance(&numpy(py)?.getattr("ndarray")?)? || is_numpy_scalar(py, o)? => {
            Ok(d.getattr("kind")?.extract::<String>()? == "c")
        }
        _ => Ok(false),
    }
}

/// A binary operator of a traced tensor: real operands here, complex ones in Python.
pub(crate) fn dunder(py: Python<'_>, op: BinaryOp, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    if is_complex(py, a)? || is_complex(py, b)? {
        return Ok(crate::hooks::call(py, "complex_binary", (op.name(), a, b))?.unbind());
    }
    binary(py, op, a, b).map(Py::into_any)
}

/// `a @ b` of a traced tensor: real operands here, complex ones in Python.
pub(crate) fn matmul_dunder(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    if is_complex(py, a)? || is_complex(py, b)? {
        return Ok(crate::hooks::call(py, "complex_binary", ("matmul", a, b))?.unbind());
    }
    apply_matmul(py, a, b).map(Py::into_any)
}

/// `pyasc` elementwise function of one operand by name, on a traced tensor.
#[pyfunction]
pub fn apply_unary(py: Python<'_>, name: &str, x: &Bound<'_, PyAny>) -> PyResult<Py<Tensor>> {
    let op = UnaryOp::from_name(name).ok_or_else(|| PyTypeError::new_err(format!("unknown unary op {name}")))?;
    let trace = trace_of(&[x]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let id = node_of(py, &trace, x)?;
    apply(py, &trace, Op::Unary(op), &[id])
}

/// `pyasc` elementwise function of two operands by name, on traced tensors.
#[pyfunction]
pub fn apply_binary(py: Python<'_>, name: &str, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<Tensor>> {
    let op = BinaryOp::from_name(name).ok_or_else(|| PyTypeError::new_err(format!("unknown binary op {name}")))?;
    binary(py, op, a, b)
}

/// `where(cond, a, b)` on traced tensors.
#[pyfunction]
pub fn apply_where(
    py: Python<'_>,
    cond: &Bound<'_, PyAny>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<Py<Tensor>> {
    let trace = trace_of(&[cond, a, b]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let ids = [node_of(py, &trace, cond)?, node_of(py, &trace, a)?, node_of(py, &trace, b)?];
    apply(py, &trace, Op::Where, &ids)
}

/// Parse anything `numpy.dtype()` accepts into a pyasc dtype.
pub fn parse_dtype(py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<DType> {
    let name: String = numpy(py)?.getattr("dtype")?.call1((dtype,))?.getattr("name")?.extract()?;
    DType::from_name(&name).ok_or_else(|| {
        user_error(
            py,
            ErrorKind::DType,
            format!("dtype {name} is not supported; use bool, (u)int8/16/32/64, float16, bfloat16, float32 or float64"),
        )
    })
}

/// `x.astype(dtype)` on a traced tensor.
#[pyfunction]
pub fn apply_cast(py: Python<'_>, x: &Bound<'_, PyAny>, dtype: &Bound<'_, PyAny>) -> PyResult<Py<Tensor>> {
    let to = parse_dtype(py, dtype)?;
    let trace = trace_of(&[x]).ok_or_else(|| PyTypeError::new_err("no traced tensor among the operands"))?;
    let id = node_of(py, &trace, x)?;
    apply(py, &trace, Op::Cast(to), &[id])
}
