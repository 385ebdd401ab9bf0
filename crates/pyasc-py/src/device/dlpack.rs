//! DLPack export: memory owned by a Python object handed to another framework without a copy.
//!
//! [`export_capsule`] wraps a pointer, shape, element strides and dtype in a heap-allocated
//! `DLManagedTensor` inside a legacy `"dltensor"` PyCapsule. The tensor's `manager_ctx` owns the
//! shape and stride arrays and a strong reference to the memory's owner, so the memory lives as
//! long as the consumer holds the tensor. A consumer takes ownership by renaming the capsule to
//! `"used_dltensor"` and later calls the deleter; a capsule dropped unconsumed calls the deleter
//! from its destructor. The device code and the data address come from the exporter (a
//! DeviceArray's from its `Device`). The structs follow `dlpack.h` (v0.8 ABI, unversioned).
//!
//! [`_DLPackView`] and [`_dlpack_selftest`] exist for tests: they export a NumPy array's memory
//! through the same path `DeviceArray.__dlpack__` uses.

use std::ffi::{c_void, CStr};

use numpy::PyUntypedArray;
use pyasc_ir::error::{ErrorKind, IrError};
use pyasc_ir::DType;
use pyasc_runtime::DLPACK_CPU;
use pyo3::ffi;
use pyo3::prelude::*;

/// The capsule name of an unconsumed legacy DLPack tensor.
const CAPSULE_NAME: &CStr = c"dltensor";

/// Where a tensor lives (`DLDevice`).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct DLDevice {
    /// Device type code (`kDLCPU` = 1).
    pub device_type: i32,
    /// Device ordinal.
    pub device_id: i32,
}

/// An element type (`DLDataType`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DLDataType {
    /// Type code: 0 signed int, 1 unsigned int, 2 float, 4 bfloat, 6 bool.
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes per element (1 for scalars).
    pub lanes: u16,
}

/// A strided view of memory (`DLTensor`).
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    /// Address of the first element (after `byte_offset`).
    pub data: *mut c_void,
    /// Where the memory lives.
    pub device: DLDevice,
    /// Number of dimensions.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// A tensor plus what keeps its memory alive (`DLManagedTensor`).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// Private to the producer: a [`Context`].
    pub manager_ctx: *mut c_void,
    /// Frees the tensor and releases the memory's owner; called once by whoever owns it last.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// What `manager_ctx` points at: the owner of the memory and the arrays the tensor points into.
struct Context {
    owner: Option<Py<PyAny>>,
    _shape: Vec<i64>,
    _strides: Vec<i64>,
}

/// The DLPack type of a pyasc dtype.
pub fn dl_dtype(dtype: DType) -> DLDataType {
    let (code, bits) = match dtype {
        DType::Bool => (6, 8),
        DType::I8 => (0, 8),
        DType::U8 => (1, 8),
        DType::I16 => (0, 16),
        DType::U16 => (1, 16),
        DType::I32 => (0, 32),
        DType::U32 => (1, 32),
        DType::I64 => (0, 64),
        DType::U64 => (1, 64),
        DType::F16 => (2, 16),
        DType::BF16 => (4, 16),
        DType::F32 => (2, 32),
        DType::F64 => (2, 64),
    };
    DLDataType { code, bits, lanes: 1 }
}

/// Free a managed tensor made by [`export_capsule`], releasing its owner.
///
/// # Safety
/// `t` must come from [`export_capsule`] and must not have been deleted before. The GIL need
/// not be held.
unsafe extern "C" fn deleter(t: *mut DLManagedTensor) {
    if t.is_null() {
        return;
    }
    // SAFETY: `t` and its context were made by `Box::into_raw` in `export_capsule` and are freed once.
    let (tensor, mut ctx) = unsafe { (Box::from_raw(t), Box::from_raw((*t).manager_ctx as *mut Context)) };
    if let Some(owner) = ctx.owner.take() {
        // SAFETY: a plain query of the interpreter's state.
        if unsafe { ffi::Py_IsInitialized() } == 0 {
            // The interpreter is shutting down (a consumer's array freed with the modules):
            // nothing can be attached to any more, and the process frees the owner's memory.
            std::mem::forget(owner);
        } else {
            Python::attach(move |_py| drop(owner));
        }
    }
    drop(ctx);
    drop(tensor);
}

/// Destructor of the capsule: frees the tensor unless a consumer took it (renamed the capsule).
///
/// # Safety
/// Called by CPython with a capsule object, holding the GIL.
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: CPython passes a live capsule and holds the GIL; IsValid sets no exception.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, CAPSULE_NAME.as_ptr()) != 1 {
            return;
        }
        let t = ffi::PyCapsule_GetPointer(capsule, CAPSULE_NAME.as_ptr()) as *mut DLManagedTensor;
        if let Some(del) = (!t.is_null()).then(|| (*t).deleter).flatten() {
            del(t);
        }
    }
}

/// A legacy `"dltensor"` capsule over `data` on DLPack device `(device_type, device_id)` that
/// keeps `owner` alive until the consumer (or the unconsumed capsule) lets go. `strides_elems`
/// are in elements, one per dimension.
pub fn export_capsule(
    py: Python<'_>,
    data: *mut u8,
    (device_type, device_id): (i32, i32),
    shape: &[usize],
    strides_elems: &[isize],
    dtype: DType,
    owner: Py<PyAny>,
) -> PyResult<Py<PyAny>> {
    if shape.len() != strides_elems.len() {
        return Err(crate::errors::to_py(IrError::new(
            ErrorKind::Internal,
            format!("DLPack export: {} extents but {} strides", shape.len(), strides_elems.len()),
        )));
    }
    let mut shape: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    let mut strides: Vec<i64> = strides_elems.iter().map(|&s| s as i64).collect();
    let (shape_ptr, strides_ptr) = (shape.as_mut_ptr(), strides.as_mut_ptr());
    let ndim = shape.len() as i32;
    let ctx = Box::into_raw(Box::new(Context { owner: Some(owner), _shape: shape, _strides: strides }));
    let tensor = Box::into_raw(Box::new(DLManagedTensor {
        dl_tensor: DLTensor {
            data: data as *mut c_void,
            device: DLDevice { device_type, device_id },
            ndim,
            dtype: dl_dtype(dtype),
            shape: shape_ptr,
            strides: strides_ptr,
            byte_offset: 0,
        },
        manager_ctx: ctx as *mut c_void,
        deleter: Some(deleter),
    }));
    // SAFETY: the name is a static C string; the destructor frees `tensor` unless consumed.
    let cap = unsafe { ffi::PyCapsule_New(tensor as *mut c_void, CAPSULE_NAME.as_ptr(), Some(capsule_destructor)) };
    if cap.is_null() {
        // SAFETY: the capsule was not made, so nobody else frees the tensor.
        unsafe { deleter(tensor) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `cap` is a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, cap) }.unbind())
}

/// A test object exposing a NumPy array through `__dlpack__` / `__dlpack_device__`.
#[pyclass(module = "pyasc._pyasc", frozen, name = "_DLPackView")]
pub struct DLPackView {
    array: Py<PyUntypedArray>,
}

#[pymethods]
impl DLPackView {
    /// A new legacy DLPack capsule over the array's memory (the keywords of the DLPack 2023
    /// protocol are accepted and ignored: the memory is on the host and never copied).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<Py<PyAny>>,
        max_version: Option<Py<PyAny>>,
        dl_device: Option<Py<PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let _ = (stream, max_version, dl_device);
        if copy == Some(true) {
            return Err(crate::errors::to_py(IrError::new(
                ErrorKind::Unsupported,
                "this view exports its memory in place; copy=True is not supported",
            )));
        }
        let arr = self.array.bind(py);
        let dtype = crate::arrays::dtype_of(arr).map_err(crate::errors::to_py)?;
        let view = crate::arrays::view_of(arr, dtype).ok_or_else(|| {
            crate::errors::to_py(IrError::new(ErrorKind::Alignment, "array strides are not whole elements"))
        })?;
        let owner = arr.clone().into_any().unbind();
        export_capsule(py, view.ptr as *mut u8, (DLPACK_CPU, 0), &view.shape, &view.strides, dtype, owner)
    }

    /// `(kDLCPU, 0)`.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (DLPACK_CPU, 0)
    }
}

/// Wrap a NumPy array in a [`DLPackView`] (a test hook for the DLPack export path).
#[pyfunction]
pub fn _dlpack_selftest(array: Bound<'_, PyUntypedArray>) -> DLPackView {
    DLPackView { array: array.unbind() }
}
