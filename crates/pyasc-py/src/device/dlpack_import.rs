//! Importing DLPack tensors as NumPy arrays, bfloat16 included.
//!
//! NumPy's `from_dlpack` refuses DLPack's bfloat16 type code. For such a tensor the legacy
//! capsule is taken from the producer, its element type relabelled as uint16 in place, the
//! capsule handed to NumPy through [`Relabelled`], and the resulting array viewed as
//! `ml_dtypes.bfloat16`: the memory stays shared, as for every other dtype.

use crate::device::dlpack::{DLDataType, DLManagedTensor};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A producer of one capsule whose tensor was relabelled.
#[pyclass(module = "pyasc._pyasc")]
pub struct Relabelled {
    capsule: Py<PyAny>,
    device: Py<PyAny>,
}

#[pymethods]
impl Relabelled {
    /// The relabelled capsule (keyword arguments such as `stream` are accepted and ignored:
    /// the producer already synchronized when it made the capsule).
    #[pyo3(signature = (**_kwargs))]
    fn __dlpack__(&self, py: Python<'_>, _kwargs: Option<&Bound<'_, PyDict>>) -> Py<PyAny> {
        self.capsule.clone_ref(py)
    }

    /// The producer's device.
    fn __dlpack_device__(&self, py: Python<'_>) -> Py<PyAny> {
        self.device.clone_ref(py)
    }
}

/// `numpy.from_dlpack(t)`, also for bfloat16 tensors.
pub fn numpy_from_dlpack<'py>(py: Python<'py>, t: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let np = py.import("numpy")?;
    let err = match np.call_method1("from_dlpack", (t,)) {
        Ok(a) => return Ok(a),
        Err(e) => e,
    };
    let Ok(capsule) = t.call_method0("__dlpack__") else { return Err(err) };
    // SAFETY: a legacy capsule named "dltensor" holds a DLManagedTensor that stays valid while
    // the capsule is alive and unconsumed; only its element type is changed, before anyone
    // else reads it.
    unsafe {
        let p = ffi::PyCapsule_GetPointer(capsule.as_ptr(), c"dltensor".as_ptr()) as *mut DLManagedTensor;
        if p.is_null() {
            ffi::PyErr_Clear();
            return Err(err);
        }
        let dt = &mut (*p).dl_tensor.dtype;
        if *dt != (DLDataType { code: 4, bits: 16, lanes: 1 }) {
            return Err(err);
        }
        *dt = DLDataType { code: 1, bits: 16, lanes: 1 };
    }
    let device = t.call_method0("__dlpack_device__")?.unbind();
    let shim = Bound::new(py, Relabelled { capsule: capsule.unbind(), device })?;
    let raw = np.call_method1("from_dlpack", (shim,))?;
    raw.call_method1("view", (py.import("ml_dtypes")?.getattr("bfloat16")?,))
}
