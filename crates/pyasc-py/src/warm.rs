//! The Python objects the binding caches in once-cells, made while `import pyasc` runs.
//!
//! A once-cell of PyO3 (and of rust-numpy) is filled with the interpreter detached: the
//! thread that fills it marks the cell as being filled, then waits for the GIL. Another thread
//! that holds the GIL and calls `os.fork()` in that moment leaves the child with a cell marked
//! "being filled" by a thread that does not exist there, and the child's first use of it waits
//! forever. Filling every cell on the importing thread, before any other thread can reach
//! them, closes that window: after `import pyasc` no cell is ever filled again.

use pyo3::prelude::*;

/// Fill the binding's cached Python objects: rust-numpy's C API table, NumPy version and borrow
/// registry, the `numpy` module and `numpy.generic`,
/// the `pyasc.errors` and `pyasc._hooks` modules, the `pyasc` logger and the frames skipped
/// when finding the user's line, and PyO3's interned names the binding's paths use. Called once
/// at the end of `pyasc/__init__.py`.
#[pyfunction]
pub fn _warm(py: Python<'_>) -> PyResult<()> {
    use numpy::PyArrayMethods;
    // rust-numpy's C API table (type objects, array creation), its NumPy version (descriptor
    // fields) and its borrow registry.
    let probe = numpy::PyArray1::<f64>::zeros(py, 1, false);
    crate::arrays::dtype_of(probe.as_untyped()).map_err(crate::errors::to_py)?;
    drop(probe.readonly());
    crate::arrays::empty(py, pyasc_ir::DType::F32, &[1], false).map_err(crate::errors::to_py)?;
    crate::arrays::numpy(py)?;
    crate::arrays::is_numpy_scalar(py, probe.as_any())?;
    crate::errors::errors_module(py)?;
    crate::hooks::hooks(py)?;
    crate::log::logger(py)?;
    crate::frames::skip_prefixes(py);
    // PyO3's interned attribute names on the binding's paths: `__bool__` (a NumPy bool read
    // as a Rust bool) and a type's `__name__`, `__qualname__` and `__module__`.
    let np_true = crate::arrays::numpy(py)?.getattr("bool_")?.call1((true,))?;
    np_true.extract::<bool>()?;
    let t = probe.get_type();
    t.name()?;
    t.qualname()?;
    t.module()?;
    Ok(())
}
