//! Call arguments: each becomes part of the typed signature (dtype and shape, or the kind of
//! a Python scalar) and a raw view the executor reads in place. Python scalars are weakly typed 0-d inputs, so a new value
//! never recompiles.

use crate::arrays::{dtype_of, fill_view, is_numpy_scalar, numpy};
use crate::device::device_array::DeviceArray;
use crate::errors::{to_py, user_error};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_engine::Signature;
use pyasc_ir::dtype::{VType, WeakKind};
use pyasc_ir::error::ErrorKind;
use pyasc_ir::DType;
use pyasc_runtime::buffer::DeviceBuffer;
use pyasc_runtime::{DeviceKind, InputView};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PyTuple};
use std::cell::RefCell;
use std::sync::Arc;

/// Storage of one call's arguments, reused by later calls on the same thread, so the cached
/// call path builds its signature and views without allocating.
#[derive(Default)]
struct Buf {
    sig: Signature,
    /// Views; entries past `nviews` are kept for their storage.
    views: Vec<InputView>,
    nviews: usize,
    scalars: Vec<u64>,
    devices: Vec<Option<(Arc<DeviceBuffer>, DeviceKind)>>,
    hosts: Vec<Option<Py<PyAny>>>,
}

impl Buf {
    /// The next view, reusing the storage of an earlier call's.
    fn next_view(&mut self, ptr: *const u8, dtype: DType) -> &mut InputView {
        if self.nviews == self.views.len() {
            self.views.push(InputView { ptr, dtype, shape: Vec::new(), strides: Vec::new() });
        }
        let v = &mut self.views[self.nviews];
        self.nviews += 1;
        v.ptr = ptr;
        v.dtype = dtype;
        v.shape.clear();
        v.strides.clear();
        v
    }
}

thread_local! {
    static POOL: RefCell<Vec<Buf>> = const { RefCell::new(Vec::new()) };
}

/// Arguments of one call, ready for lookup and execution.
pub struct Args<'py> {
    buf: Option<Buf>,
    /// The first argument that is another framework's DLPack tensor (outputs take its kind).
    pub foreign: Option<Bound<'py, PyAny>>,
    /// Arrays made here (copies of oddly strided inputs, imports) that views point into.
    _keep: Vec<Bound<'py, PyAny>>,
}

impl Drop for Args<'_> {
    fn drop(&mut self) {
        if let Some(mut b) = self.buf.take() {
            b.devices.clear();
            b.hosts.clear();
            let _ = POOL.try_with(|p| {
                let mut p = p.borrow_mut();
                if p.len() < 4 {
                    p.push(b);
                }
            });
        }
    }
}

/// Parse the positional arguments of an operator call. `names` are the parameter names
/// of the user's function, for error messages.
pub fn parse<'py>(py: Python<'py>, args: &Bound<'py, PyTuple>, names: &[String]) -> PyResult<Args<'py>> {
    let n = args.len();
    let mut buf = POOL.try_with(|p| p.borrow_mut().pop()).ok().flatten().unwrap_or_default();
    buf.sig.clear();
    buf.nviews = 0;
    buf.scalars.clear();
    buf.scalars.resize(n, 0);
    buf.devices.resize_with(n, || None);
    buf.hosts.resize_with(n, || None);
    let mut parsed = Args { buf: None, foreign: None, _keep: Vec::new() };
    let b = &mut buf;
    let keep = &mut parsed._keep;
    let foreign = &mut parsed.foreign;
    for (i, obj) in args.iter().enumerate() {
        let label = || match names.get(i) {
            Some(name) => format!("argument {i} ({name})"),
            None => format!("argument {i}"),
        };
        if let Ok(d) = obj.cast::<DeviceArray>() {
            let d = d.get();
            b.sig.push_array(d.dtype, &d.shape);
            let v = b.next_view(d.data_ptr(), d.dtype);
            v.shape.extend_from_slice(&d.shape);
            v.strides.extend_from_slice(&d.strides);
            b.devices[i] = Some((d.buf.clone(), d.kind));
            continue;
        }
        let mut obj = obj;
        if !obj.is_instance_of::<PyUntypedArray>() && !is_scalar(py, &obj)? && obj.hasattr("__dlpack__")? {
            // Another framework's tensor: read it in place through DLPack.
            let arr = crate::device::dlpack_import::numpy_from_dlpack(py, &obj)?;
            if foreign.is_none() {
                *foreign = Some(obj.clone());
            }
            keep.push(arr.clone());
            obj = arr;
        }
        let arr = match obj.cast::<PyUntypedArray>() {
            Ok(a) => Some(a.clone()),
            Err(_) => None,
        };
        if let Some(mut arr) = arr {
            crate::arrays::reject_masked(py, &arr, label)?;
            let dt = match dtype_of(&arr) {
                Ok(dt) => dt,
                Err(e) => match crate::arrays::native_copy(py, &arr)? {
                    // Big-endian data (from a file or the network): read through a native copy.
                    Some(copy) => {
                        arr = copy.cast::<PyUntypedArray>()?.clone();
                        keep.push(copy);
                        dtype_of(&arr).map_err(to_py)?
                    }
                    None => return Err(user_error(py, e.kind, format!("{}: {}", label(), e.message))),
                },
            };
            if !fill_view(&arr, dt, b.next_view(std::ptr::null(), dt)) {
                b.nviews -= 1;
                let copy = numpy(py)?.call_method1("ascontiguousarray", (&arr,))?;
                let filled = fill_view(copy.cast::<PyUntypedArray>()?, dt, b.next_view(std::ptr::null(), dt));
                debug_assert!(filled, "contiguous arrays have element strides");
                keep.push(copy);
            }
            b.sig.push_array(dt, arr.shape());
            b.hosts[i] = Some(arr.into_any().unbind());
            continue;
        }
        if is_numpy_scalar(py, &obj)? {
            // A NumPy scalar: a strongly typed 0-d array.
            let arr = numpy(py)?.call_method1("asarray", (&obj,))?;
            let a = arr.cast::<PyUntypedArray>()?;
            let dt = dtype_of(a).map_err(|e| user_error(py, e.kind, format!("{}: {}", label(), e.message)))?;
            fill_view(a, dt, b.next_view(std::ptr::null(), dt));
            b.sig.push_array(dt, &[]);
            b.hosts[i] = Some(arr.clone().unbind());
            keep.push(arr);
            continue;
        }
        let mut wide = false;
        let (kind, bits) = if obj.is_instance_of::<PyBool>() {
            (WeakKind::Bool, obj.extract::<bool>()? as u64)
        } else if obj.is_instance_of::<PyInt>() {
            match (obj.extract::<i64>(), obj.extract::<u64>()) {
                (Ok(v), _) => (WeakKind::Int, v as u64),
                // Above int64: held as uint64, still a weakly typed Python int.
                (_, Ok(v)) => {
                    wide = true;
                    (WeakKind::Int, v)
                }
                _ => {
                    return Err(user_error(
                        py,
                        ErrorKind::Overflow,
                        format!("{}: Python integer {obj} is out of bounds for every integer dtype", label()),
                    ))
                }
            }
        } else if obj.is_instance_of::<PyFloat>() {
            (WeakKind::Float, obj.extract::<f64>()?.to_bits())
        } else if obj.is_instance_of::<PyComplex>() {
            return Err(user_error(
                py,
                ErrorKind::DType,
                format!("{}: complex values are not supported; use float32 or float64", label()),
            ));
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
        b.scalars[i] = bits;
        let vtype = if wide {
            b.sig.push_weak_u64();
            VType { dtype: DType::U64, weak: Some(kind) }
        } else {
            b.sig.push_weak(kind);
            VType::weak(kind)
        };
        // Points into `scalars`, which is not resized before the launch.
        let p = &b.scalars[i] as *const u64 as *const u8;
        b.next_view(p, vtype.dtype);
    }
    parsed.buf = Some(buf);
    Ok(parsed)
}

fn is_scalar(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(obj.is_instance_of::<PyBool>()
        || obj.is_instance_of::<PyInt>()
        || obj.is_instance_of::<PyFloat>()
        || is_numpy_scalar(py, obj)?)
}

impl Args<'_> {
    fn buf(&self) -> &Buf {
        self.buf.as_ref().expect("parsed arguments")
    }

    /// The typed signature, the cache key.
    pub fn sig(&self) -> &Signature {
        &self.buf().sig
    }

    /// Per argument: a view of its memory (scalars point into storage these arguments own).
    pub fn views(&self) -> &[InputView] {
        &self.buf().views[..self.buf().nviews]
    }

    /// Per argument: the device buffer of a DeviceArray argument, and its device.
    pub fn devices(&self) -> &[Option<(Arc<DeviceBuffer>, DeviceKind)>] {
        &self.buf().devices
    }

    /// Per argument: the host array (NumPy or imported through DLPack) read in place.
    pub fn hosts(&self) -> &[Option<Py<PyAny>>] {
        &self.buf().hosts
    }

    /// True when any argument is a DeviceArray (the call is then asynchronous).
    pub fn any_device(&self) -> bool {
        self.devices().iter().any(Option::is_some)
    }

    /// The storage the scalar arguments' views point into (it must outlive their use).
    pub fn take_scalars(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.buf.as_mut().expect("parsed arguments").scalars)
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.buf().nviews
    }
    /// True when there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'py> Args<'py> {
    /// Append the view of an array the plan captured, after the caller's arguments (and
    /// earlier captures); returns its dtype and shape for the caller to check against the plan.
    pub fn push_captured(&mut self, py: Python<'py>, arr: &Bound<'py, PyAny>) -> PyResult<(DType, Vec<usize>)> {
        let mut arr = arr.cast::<PyUntypedArray>()?.clone();
        if let Some(copy) = crate::arrays::native_copy(py, &arr)? {
            arr = copy.cast::<PyUntypedArray>()?.clone();
            self._keep.push(copy);
        }
        let dt = dtype_of(&arr).map_err(|e| user_error(py, e.kind, format!("a captured array: {}", e.message)))?;
        let b = self.buf.as_mut().expect("parsed arguments");
        if !fill_view(&arr, dt, b.next_view(std::ptr::null(), dt)) {
            b.nviews -= 1;
            let copy = numpy(py)?.call_method1("ascontiguousarray", (&arr,))?;
            fill_view(copy.cast::<PyUntypedArray>()?, dt, b.next_view(std::ptr::null(), dt));
            self._keep.push(copy.into_any());
        }
        b.devices.push(None);
        b.hosts.push(Some(arr.clone().into_any().unbind()));
        Ok((dt, arr.shape().to_vec()))
    }

    /// Drop the captured arrays' views pushed since parsing (before checking another plan).
    pub fn clear_captured(&mut self) {
        let n = self.sig().args().len();
        let b = self.buf.as_mut().expect("parsed arguments");
        b.nviews = n;
        b.devices.truncate(n);
        b.hosts.truncate(n);
    }
}
