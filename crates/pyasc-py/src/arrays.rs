//! NumPy arrays at the boundary: dtype mapping, zero-copy views of inputs and
//! allocation of outputs.

use numpy::{npyffi, Element, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::DType;
use pyasc_runtime::buffer::DeviceBuffer;
use pyasc_runtime::{device_for, DeviceKind, InputView};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::sync::Arc;

/// A native-byte-order copy of an array of numbers stored in the other byte order (`>f4` on a
/// little-endian host); `None` for any other array.
pub fn native_copy<'py>(py: Python<'py>, arr: &Bound<'py, PyUntypedArray>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let d = arr.dtype();
    let native = matches!(d.byteorder(), b'=' | b'|') || (d.byteorder() == b'<') == cfg!(target_endian = "little");
    if native || !matches!(d.kind(), b'b' | b'i' | b'u' | b'f') {
        return Ok(None);
    }
    let native = d.call_method1("newbyteorder", ("=",))?;
    Ok(Some(numpy(py)?.call_method1("ascontiguousarray", (arr, native))?))
}

/// The pyasc dtype of a NumPy array, or a typed error naming what is unsupported.
pub fn dtype_of(arr: &Bound<'_, PyUntypedArray>) -> Result<DType> {
    let d = arr.dtype();
    let native = matches!(d.byteorder(), b'=' | b'|') || (d.byteorder() == b'<') == cfg!(target_endian = "little");
    let dt = match (d.kind(), d.itemsize()) {
        (b'b', 1) => Some(DType::Bool),
        (b'i', 1) => Some(DType::I8),
        (b'u', 1) => Some(DType::U8),
        (b'i', 2) => Some(DType::I16),
        (b'u', 2) => Some(DType::U16),
        (b'i', 4) => Some(DType::I32),
        (b'u', 4) => Some(DType::U32),
        (b'i', 8) => Some(DType::I64),
        (b'u', 8) => Some(DType::U64),
        (b'f', 2) => Some(DType::F16),
        // ml_dtypes' bfloat16 (the NumPy bfloat16 of JAX and TensorFlow) is a kind-'V' type.
        (b'V', 2) if d.typeobj().name().is_ok_and(|n| n == "bfloat16") => Some(DType::BF16),
        (b'f', 4) => Some(DType::F32),
        (b'f', 8) => Some(DType::F64),
        _ => None,
    };
    match dt {
        Some(dt) if native => Ok(dt),
        _ => Err(IrError::new(
            ErrorKind::DType,
            format!("arrays of dtype {} are not supported; use bool, (u)int8/16/32/64, float16, bfloat16, float32 or float64", d),
        )),
    }
}

/// A view of an array's memory in place; strides are converted to elements.
/// `None` when a stride is not a multiple of the item size (the caller then copies).
pub fn view_of(arr: &Bound<'_, PyUntypedArray>, dtype: DType) -> Option<InputView> {
    let size = dtype.size() as isize;
    let strides: Option<Vec<isize>> =
        arr.strides().iter().map(|s| if s % size == 0 { Some(s / size) } else { None }).collect();
    // SAFETY: the array object is alive for the duration of the call.
    let ptr = unsafe { (*arr.as_array_ptr()).fields.data } as *const u8;
    Some(InputView { ptr, dtype, shape: arr.shape().to_vec(), strides: strides? })
}

/// Fill `view` (already holding the dtype, with empty shape and strides) with the array's
/// address, shape and strides in elements, reusing its storage. False when a stride is not a
/// multiple of the item size (the caller then copies).
pub fn fill_view(arr: &Bound<'_, PyUntypedArray>, dtype: DType, view: &mut InputView) -> bool {
    let size = dtype.size() as isize;
    view.dtype = dtype;
    view.shape.clear();
    view.shape.extend_from_slice(arr.shape());
    view.strides.clear();
    for s in arr.strides() {
        if s % size != 0 {
            return false;
        }
        view.strides.push(s / size);
    }
    // SAFETY: the array object is alive for the duration of the call.
    view.ptr = unsafe { (*arr.as_array_ptr()).fields.data } as *const u8;
    true
}

static NP: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The `numpy` module.
pub fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(NP.get_or_try_init(py, || py.import("numpy").map(|m| m.unbind()))?.bind(py))
}

static GENERIC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// True for NumPy scalars (`np.float32(1)`, `np.float64(2)`, ...), which are strongly typed
/// even where they subclass Python's `float`.
pub fn is_numpy_scalar(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    let generic = GENERIC.get_or_try_init(py, || numpy(py)?.getattr("generic").map(|g| g.unbind()))?;
    obj.is_instance(generic.bind(py))
}

/// `numpy.dtype(name)` for a pyasc dtype.
pub fn np_dtype<'py>(py: Python<'py>, dt: DType) -> PyResult<Bound<'py, PyAny>> {
    numpy(py)?.getattr("dtype")?.call1((dt.name(),))
}

/// Outputs at least this large come from the caching pool (warm pages, no page faults).
pub const POOL_MIN_BYTES: usize = 256 * 1024;

/// Owner of a pool block backing a NumPy array; the block returns to the pool when the
/// array (its base object) is collected.
#[pyclass(module = "pyasc._pyasc", frozen)]
pub struct PoolBuffer {
    block: Arc<DeviceBuffer>,
}

#[pymethods]
impl PoolBuffer {
    /// Bytes of the block.
    #[getter]
    fn nbytes(&self) -> usize {
        self.block.len()
    }
}

/// A C-contiguous array of `T` over a new pool block.
fn pooled<'py, T: Element>(py: Python<'py>, shape: &[usize], bytes: usize) -> Result<(Bound<'py, PyAny>, *mut u8)> {
    let block = device_for(DeviceKind::Cpu).alloc(bytes, 128)?;
    let data = block.ptr();
    let owner = Py::new(py, PoolBuffer { block })
        .map_err(|e| IrError::new(ErrorKind::OutOfMemory, format!("cannot create the buffer owner: {e}")))?;
    let mut dims: Vec<npyffi::npy_intp> = shape.iter().map(|d| *d as npyffi::npy_intp).collect();
    // SAFETY: `data` holds `bytes` >= the array's size, aligned to 128; the array takes a
    // reference to `owner`, which keeps the block alive for the array's lifetime.
    unsafe {
        let arr = npyffi::PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            numpy::dtype::<T>(py).into_dtype_ptr(),
            dims.len() as std::os::raw::c_int,
            dims.as_mut_ptr(),
            std::ptr::null_mut(),
            data as *mut std::os::raw::c_void,
            npyffi::NPY_ARRAY_CARRAY,
            std::ptr::null_mut(),
        );
        if arr.is_null() {
            return Err(numpy_failed(py, "the output array"));
        }
        let arr = Bound::from_owned_ptr(py, arr);
        set_base(py, &arr, owner.into_any().into_bound(py))?;
        Ok((arr, data))
    }
}

/// The error for an array NumPy could not create (it has set a Python exception, taken here
/// so it does not leak into a later call): an `OutOfMemoryError` naming NumPy's reason.
fn numpy_failed(py: Python<'_>, what: &str) -> IrError {
    let why = PyErr::take(py).map(|e| e.to_string()).unwrap_or_else(|| "no reason given".into());
    IrError::new(ErrorKind::OutOfMemory, format!("NumPy could not allocate {what}: {why}"))
}

/// Make `base` the owner of `arr`'s memory.
fn set_base(py: Python<'_>, arr: &Bound<'_, PyAny>, base: Bound<'_, PyAny>) -> Result<()> {
    // SAFETY: `arr` is a new NumPy array; the call steals the reference to `base`.
    let r = unsafe {
        npyffi::PY_ARRAY_API.PyArray_SetBaseObject(py, arr.as_ptr() as *mut npyffi::PyArrayObject, base.into_ptr())
    };
    if r < 0 {
        return Err(numpy_failed(py, "the owner link of an array"));
    }
    Ok(())
}

/// A new C-contiguous array of `T` in NumPy's own memory, or an `OutOfMemoryError`.
fn numpy_owned<'py, T: Element>(py: Python<'py>, shape: &[usize]) -> Result<(Bound<'py, PyAny>, *mut u8)> {
    let mut dims: Vec<npyffi::npy_intp> = shape.iter().map(|d| *d as npyffi::npy_intp).collect();
    if crate::boundary::test_fault(crate::boundary::FAIL_NUMPY_ALLOC) {
        // A request NumPy refuses, to exercise the failure path.
        dims.push(-1);
    }
    // SAFETY: a new array with NumPy-owned memory; the result is checked for null.
    unsafe {
        let arr = npyffi::PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            numpy::dtype::<T>(py).into_dtype_ptr(),
            dims.len() as std::os::raw::c_int,
            dims.as_mut_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
        );
        if arr.is_null() {
            return Err(numpy_failed(py, "the output array"));
        }
        let data = (*(arr as *mut npyffi::PyArrayObject)).fields.data as *mut u8;
        Ok((Bound::from_owned_ptr(py, arr), data))
    }
}

/// The NumPy descriptor of a pyasc dtype.
fn descr(py: Python<'_>, dtype: DType) -> Result<Bound<'_, numpy::PyArrayDescr>> {
    Ok(match dtype {
        DType::Bool => numpy::dtype::<bool>(py),
        DType::I8 => numpy::dtype::<i8>(py),
        DType::U8 => numpy::dtype::<u8>(py),
        DType::I16 => numpy::dtype::<i16>(py),
        DType::U16 => numpy::dtype::<u16>(py),
        DType::I32 => numpy::dtype::<i32>(py),
        DType::U32 => numpy::dtype::<u32>(py),
        DType::I64 => numpy::dtype::<i64>(py),
        DType::U64 => numpy::dtype::<u64>(py),
        DType::F16 => numpy::dtype::<half::f16>(py),
        DType::BF16 => {
            // NumPy knows bfloat16 once ml_dtypes has registered it.
            py.import("ml_dtypes")
                .map_err(|e| IrError::new(ErrorKind::Unsupported, format!("bfloat16 needs ml_dtypes: {e}")))?;
            numpy::dtype::<half::bf16>(py)
        }
        DType::F32 => numpy::dtype::<f32>(py),
        DType::F64 => numpy::dtype::<f64>(py),
    })
}

/// A NumPy array over memory pyasc owns (`base` keeps it alive): `strides` in elements.
///
/// # Safety
/// `data` must address every element reachable through `shape` and `strides` for as long as
/// `base` lives.
pub unsafe fn wrap_memory<'py>(
    py: Python<'py>,
    data: *mut u8,
    dtype: DType,
    shape: &[usize],
    strides: &[isize],
    base: Bound<'py, PyAny>,
) -> Result<Bound<'py, PyAny>> {
    let size = dtype.size() as isize;
    let mut dims: Vec<npyffi::npy_intp> = shape.iter().map(|d| *d as npyffi::npy_intp).collect();
    let mut st: Vec<npyffi::npy_intp> = strides.iter().map(|s| (*s * size) as npyffi::npy_intp).collect();
    let d = descr(py, dtype)?;
    // SAFETY: per this function's contract; the array holds a reference to `base`.
    unsafe {
        let arr = npyffi::PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            d.into_dtype_ptr(),
            dims.len() as std::os::raw::c_int,
            dims.as_mut_ptr(),
            st.as_mut_ptr(),
            data as *mut std::os::raw::c_void,
            npyffi::NPY_ARRAY_WRITEABLE,
            std::ptr::null_mut(),
        );
        if arr.is_null() {
            return Err(numpy_failed(py, "an array view"));
        }
        let arr = Bound::from_owned_ptr(py, arr);
        set_base(py, &arr, base)?;
        Ok(arr)
    }
}

/// A new uninitialised C-contiguous array of `dtype` and `shape`, and its data pointer.
/// Large arrays live in pool blocks, small ones in NumPy's own allocation.
/// `force_pool` forces pool memory (128-byte aligned), which other frameworks can alias.
pub fn empty<'py>(
    py: Python<'py>,
    dtype: DType,
    shape: &[usize],
    force_pool: bool,
) -> Result<(Bound<'py, PyAny>, *mut u8)> {
    let bytes = pyasc_ir::Shape(shape.to_vec()).checked_bytes(dtype.size()).ok_or_else(|| {
        IrError::shape(format!("an output of shape {shape:?} and dtype {dtype} is too large to address"))
    })?;
    macro_rules! alloc {
        ($t:ty) => {{
            if force_pool || bytes >= POOL_MIN_BYTES {
                pooled::<$t>(py, shape, bytes)?
            } else {
                // Every element is written by the kernel before Python can read it.
                numpy_owned::<$t>(py, shape)?
            }
        }};
    }
    Ok(match dtype {
        DType::Bool => alloc!(bool),
        DType::I8 => alloc!(i8),
        DType::U8 => alloc!(u8),
        DType::I16 => alloc!(i16),
        DType::U16 => alloc!(u16),
        DType::I32 => alloc!(i32),
        DType::U32 => alloc!(u32),
        DType::I64 => alloc!(i64),
        DType::U64 => alloc!(u64),
        DType::F16 => alloc!(half::f16),
        DType::BF16 => {
            descr(py, DType::BF16)?;
            alloc!(half::bf16)
        }
        DType::F32 => alloc!(f32),
        DType::F64 => alloc!(f64),
    })
}

/// A `MaskedArrayError`-style refusal for `numpy.ma` arrays, whose mask pyasc would silently
/// drop; exact `ndarray`s pass with one pointer comparison.
pub fn reject_masked(py: Python<'_>, obj: &Bound<'_, PyAny>, what: impl FnOnce() -> String) -> PyResult<()> {
    static NDARRAY: std::sync::atomic::AtomicPtr<pyo3::ffi::PyTypeObject> =
        std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
    let mut ndarray = NDARRAY.load(std::sync::atomic::Ordering::Relaxed);
    if ndarray.is_null() {
        // SAFETY: reading the address of NumPy's array type object, which lives as long as NumPy.
        ndarray = unsafe { npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type) };
        NDARRAY.store(ndarray, std::sync::atomic::Ordering::Relaxed);
    }
    // SAFETY: `obj` is a live object; its type pointer is only compared.
    if unsafe { pyo3::ffi::Py_TYPE(obj.as_ptr()) } == ndarray {
        return Ok(());
    }
    if obj.is_instance(&numpy(py)?.getattr("ma")?.getattr("MaskedArray")?)? {
        return Err(crate::errors::user_error(
            py,
            pyasc_ir::error::ErrorKind::InvalidArgument,
            format!("{}: masked arrays are not supported (the mask would be lost); pass m.filled(value) or np.ma.getdata(m)", what()),
        ));
    }
    Ok(())
}
