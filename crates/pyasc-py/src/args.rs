//! Call arguments: each becomes part of the typed signature (dtype and shape, or the kind of
//! a Python scalar) and a raw view the executor reads in place. Python scalars are weakly typed 0-d inputs, so a new value
//! never recompiles.

use crate::arrays::{dtype_of, is_numpy_scalar, numpy, view_of};
use crate::device_array::DeviceArray;
use crate::errors::user_error;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_engine::Signature;
use pyasc_ir::dtype::{VType, WeakKind};
use pyasc_ir::error::ErrorKind;
use pyasc_runtime::buffer::DeviceBuffer;
use pyasc_runtime::InputView;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyTuple};
use std::sync::Arc;

/// Arguments of one call, ready for lookup and execution.
pub struct Args<'py> {
    /// The typed signature, the cache key.
    pub sig: Signature,
    /// Per argument: a view of its memory (scalars point into `scalars`).
    pub views: Vec<InputView>,
    /// Storage of scalar arguments' values.
    scalars: Box<[u64]>,
    /// Per argument: the device buffer of a DeviceArray argument.
    pub devices: Vec<Option<Arc<DeviceBuffer>>>,
    /// Per argument: the host array (NumPy or imported through DLPack) read in place.
    pub hosts: Vec<Option<Bound<'py, PyAny>>>,
    /// The first argument that is another framework's DLPack tensor (outputs take its kind).
    pub foreign: Option<Bound<'py, PyAny>>,
    /// Arrays made here (copies of oddly strided inputs) that views point into.
    _keep: Vec<Bound<'py, PyAny>>,
}

/// Parse the positional arguments of an operator call. `names` are the parameter names
/// of the user's function, for error messages.
pub fn parse<'py>(py: Python<'py>, args: &Bound<'py, PyTuple>, names: &[String]) -> PyResult<Args<'py>> {
    let n = args.len();
    let mut sig = Signature::new();
    let mut views = Vec::with_capacity(n);
    let mut scalars = vec![0u64; n].into_boxed_slice();
    let mut keep = Vec::new();
    let mut devices = vec![None; n];
    let mut hosts: Vec<Option<Bound<'py, PyAny>>> = vec![None; n];
    let mut foreign = None;
    for (i, obj) in args.iter().enumerate() {
        let label = || match names.get(i) {
            Some(name) => format!("argument {i} ({name})"),
            None => format!("argument {i}"),
        };
        if let Ok(d) = obj.cast::<DeviceArray>() {
            let d = d.get();
            sig.push_array(d.dtype, &d.shape);
            views.push(d.view());
            devices[i] = Some(d.buf.clone());
            continue;
        }
        let mut obj = obj;
        if !obj.is_instance_of::<PyUntypedArray>() && !is_scalar(py, &obj)? && obj.hasattr("__dlpack__")? {
            // Another framework's tensor: read it in place through DLPack.
            let arr = numpy(py)?.call_method1("from_dlpack", (&obj,))?;
            if foreign.is_none() {
                foreign = Some(obj.clone());
            }
            obj = arr;
        }
        let arr = match obj.cast::<PyUntypedArray>() {
            Ok(a) => Some(a.clone()),
            Err(_) => None,
        };
        if let Some(arr) = arr {
            let dt = dtype_of(&arr).map_err(|e| user_error(py, e.kind, format!("{}: {}", label(), e.message)))?;
            if !dt.is_executable() {
                return Err(user_error(
                    py,
                    ErrorKind::DType,
                    format!("{}: {dt} arrays are not supported yet; use float32 or float64", label()),
                ));
            }
            let view = match view_of(&arr, dt) {
                Some(v) => v,
                None => {
                    let copy = numpy(py)?.call_method1("ascontiguousarray", (&arr,))?;
                    let v =
                        view_of(copy.cast::<PyUntypedArray>()?, dt).expect("contiguous arrays have element strides");
                    keep.push(copy);
                    v
                }
            };
            sig.push_array(dt, arr.shape());
            views.push(view);
            hosts[i] = Some(arr.into_any());
            continue;
        }
        if is_numpy_scalar(py, &obj)? {
            // A NumPy scalar: a strongly typed 0-d array.
            let arr = numpy(py)?.call_method1("asarray", (&obj,))?;
            let a = arr.cast::<PyUntypedArray>()?;
            let dt = dtype_of(a).map_err(|e| user_error(py, e.kind, format!("{}: {}", label(), e.message)))?;
            if !dt.is_executable() {
                return Err(user_error(
                    py,
                    ErrorKind::DType,
                    format!("{}: {dt} values are not supported yet", label()),
                ));
            }
            let v = view_of(a, dt).expect("0-d arrays have element strides");
            sig.push_array(dt, &[]);
            views.push(v);
            hosts[i] = Some(arr.clone());
            keep.push(arr);
            continue;
        }
        let (kind, bits) = if obj.is_instance_of::<PyBool>() {
            (WeakKind::Bool, obj.extract::<bool>()? as u64)
        } else if obj.is_instance_of::<PyInt>() {
            match obj.extract::<i64>() {
                Ok(v) => (WeakKind::Int, v as u64),
                Err(_) => {
                    return Err(user_error(
                        py,
                        ErrorKind::InvalidArgument,
                        format!("{}: integer does not fit in int64", label()),
                    ))
                }
            }
        } else if obj.is_instance_of::<PyFloat>() {
            (WeakKind::Float, obj.extract::<f64>()?.to_bits())
        } else {
            let tname = obj.get_type().name().map(|s| s.to_string()).unwrap_or_else(|_| "?".into());
            return Err(user_error(
                py,
                ErrorKind::InvalidArgument,
                format!(
                    "{} is a {tname}; operators take NumPy arrays or Python/NumPy scalars (use np.asarray)",
                    label()
                ),
            ));
        };
        scalars[i] = bits;
        sig.push_weak(kind);
        let vt = VType::weak(kind);
        views.push(InputView { ptr: std::ptr::null(), dtype: vt.dtype, shape: vec![], strides: vec![] });
    }
    // Point scalar views at their storage (stable: the boxed slice never moves).
    for (i, v) in views.iter_mut().enumerate() {
        if v.ptr.is_null() {
            v.ptr = &scalars[i] as *const u64 as *const u8;
        }
    }
    Ok(Args { sig, views, scalars, devices, hosts, foreign, _keep: keep })
}

fn is_scalar(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(obj.is_instance_of::<PyBool>()
        || obj.is_instance_of::<PyInt>()
        || obj.is_instance_of::<PyFloat>()
        || is_numpy_scalar(py, obj)?)
}

impl Args<'_> {
    /// True when any argument is a DeviceArray (the call is then asynchronous).
    pub fn any_device(&self) -> bool {
        self.devices.iter().any(Option::is_some)
    }

    /// The storage the scalar arguments' views point into (it must outlive their use).
    pub fn take_scalars(&mut self) -> Box<[u64]> {
        std::mem::take(&mut self.scalars)
    }

    /// Number of scalar slots (one per argument).
    pub fn len(&self) -> usize {
        self.scalars.len()
    }
    /// True when there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.scalars.is_empty()
    }
}
