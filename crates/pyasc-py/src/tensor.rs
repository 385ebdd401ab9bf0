//! The tracer tensor: what an operator function receives instead of arrays. Every
//! operation on it appends a node (with the user's file:line) to the open trace.

use crate::arrays::np_dtype;
pub use crate::trace_ops::ConstArray;
use pyasc_ir::op::BinaryOp;
use pyasc_ir::{DType, NodeId};
use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

pub(crate) use crate::operands::trace_of;
pub use crate::operands::{
    apply, apply_binary, apply_cast, apply_unary, apply_where, captured_array, node_of, parse_dtype,
};
pub use pyasc_engine::trace::{Captured, Trace, TraceRef};

use crate::operands::{dunder, matmul_dunder, trace_error};

/// A traced tensor: a node of the operator's graph, with static dtype and shape.
#[pyclass(module = "pyasc._pyasc", frozen, weakref)]
pub struct Tensor {
    /// The trace the node belongs to.
    pub trace: TraceRef,
    /// The node: replaced when the array is updated in place (`y[i] = v`, `y += 1`), so the
    /// Python object follows NumPy's semantics while the graph stays functional.
    node: std::sync::atomic::AtomicU32,
    dtype: DType,
    shape: Vec<usize>,
}

impl Tensor {
    fn note_shape_read(&self) {
        if let Ok(mut t) = self.trace.lock() {
            t.shape_read = true;
        }
    }

    /// A tensor for node `id` of `trace`.
    pub fn new(trace: TraceRef, id: NodeId, dtype: DType, shape: Vec<usize>) -> Self {
        Tensor { trace, node: std::sync::atomic::AtomicU32::new(id.0), dtype, shape }
    }

    /// The node the tensor holds now.
    pub fn id(&self) -> NodeId {
        NodeId(self.node.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Make the tensor hold node `id` (an updated value of the same dtype and shape).
    pub fn set_id(&self, id: NodeId) {
        self.node.store(id.0, std::sync::atomic::Ordering::Relaxed);
    }

    /// The static shape.
    pub fn dims(&self) -> &[usize] {
        &self.shape
    }

    /// The dtype.
    pub fn dt(&self) -> DType {
        self.dtype
    }
}

fn movement(slf: &Bound<'_, Tensor>, name: &str, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    Ok(py.import("pyasc.movement")?.getattr(format!("_method_{name}"))?.call1((slf, args))?.unbind())
}

/// A reduction method with NumPy's signature for it (`x.sum(axis, dtype, out, keepdims)`).
fn reduce_method(
    slf: &Bound<'_, Tensor>,
    name: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    Ok(numpy_api(py)?.getattr("reduce_method")?.call1((name, slf, args, kwargs))?.unbind())
}

/// `pyasc.<module>.<name>(slf, *args, **kwargs)`: a method whose body is a Python function.
fn module_method(
    slf: &Bound<'_, Tensor>,
    module: &str,
    name: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let mut all = vec![slf.clone().into_any()];
    all.extend(args.iter());
    let f = py.import(format!("pyasc.{module}"))?.getattr(name)?;
    Ok(f.call(PyTuple::new(py, all)?, kwargs)?.unbind())
}

/// `pyasc.updates.<name>(slf, *rest)`.
fn updates_call(slf: &Bound<'_, Tensor>, name: &str, rest: &[&Bound<'_, PyAny>]) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let mut all = vec![slf.clone().into_any()];
    all.extend(rest.iter().map(|o| (*o).clone()));
    Ok(py.import("pyasc.updates")?.getattr(name)?.call1(PyTuple::new(py, all)?)?.unbind())
}

fn numpy_api(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("pyasc._numpy_api")
}

/// `pyasc._composites.<name>(slf)`: a NumPy function built from ops of the table.
fn composite(slf: &Bound<'_, Tensor>, name: &str) -> PyResult<Py<PyAny>> {
    Ok(slf.py().import("pyasc._composites")?.getattr(name)?.call1((slf,))?.unbind())
}

#[pymethods]
impl Tensor {
    /// The static shape.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.note_shape_read();
        PyTuple::new(py, &self.shape)
    }
    /// The dtype, as a `numpy.dtype`.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        np_dtype(py, self.dtype)
    }
    /// True for a Python scalar argument and values computed from Python scalars alone
    /// (NumPy's weakly typed scalars, NEP 50).
    #[getter]
    fn is_weak(&self) -> PyResult<bool> {
        let t = self.trace.lock().map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("trace lock poisoned"))?;
        Ok(t.graph.node(self.id()).vtype.weak.is_some())
    }
    /// The real part: the tensor itself for real dtypes.
    #[getter]
    fn real(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        composite(slf, "real")
    }
    /// The imaginary part: zeros of the tensor's dtype and shape for real dtypes.
    #[getter]
    fn imag(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        composite(slf, "imag")
    }
    /// The complex conjugate: a copy for real dtypes.
    fn conj(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        composite(slf, "conj")
    }
    /// The complex conjugate: a copy for real dtypes.
    fn conjugate(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        composite(slf, "conj")
    }
    /// Number of axes.
    #[getter]
    fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.note_shape_read();
        self.shape.iter().product()
    }
    /// Sum over `axis` (None: all axes).
    #[pyo3(signature = (*args, **kwargs))]
    fn sum(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        reduce_method(slf, "sum", args, kwargs)
    }
    /// Mean over `axis` (None: all axes).
    #[pyo3(signature = (*args, **kwargs))]
    fn mean(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        reduce_method(slf, "mean", args, kwargs)
    }
    /// Maximum over `axis` (None: all axes).
    #[pyo3(signature = (*args, **kwargs))]
    fn max(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        reduce_method(slf, "max", args, kwargs)
    }
    /// Minimum over `axis` (None: all axes).
    #[pyo3(signature = (*args, **kwargs))]
    fn min(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        reduce_method(slf, "min", args, kwargs)
    }
    /// Product over `axis` (None: all axes).
    #[pyo3(signature = (*args, **kwargs))]
    fn prod(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        reduce_method(slf, "prod", args, kwargs)
    }
    /// Index of the maximum along `axis`.
    #[pyo3(signature = (*args, **kwargs))]
    fn argmax(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        reduce_method(slf, "argmax", args, kwargs)
    }
    /// Index of the minimum along `axis`.
    #[pyo3(signature = (*args, **kwargs))]
    fn argmin(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        reduce_method(slf, "argmin", args, kwargs)
    }
    /// True where any element along `axis` is non-zero.
    #[pyo3(signature = (*args, **kwargs))]
    fn any(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        reduce_method(slf, "any", args, kwargs)
    }
    /// True where every element along `axis` is non-zero.
    #[pyo3(signature = (*args, **kwargs))]
    fn all(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        reduce_method(slf, "all", args, kwargs)
    }

    /// Running sums along `axis` (None: over the flattened tensor), NumPy `cumsum`.
    #[pyo3(signature = (axis = None, dtype = None, out = None))]
    fn cumsum(
        slf: &Bound<'_, Self>,
        axis: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
        out: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let f = slf.py().import("pyasc.scans")?.getattr("_method_cumsum")?;
        Ok(f.call1((slf, axis, dtype, out))?.unbind())
    }
    /// Running products along `axis` (None: over the flattened tensor), NumPy `cumprod`.
    #[pyo3(signature = (axis = None, dtype = None, out = None))]
    fn cumprod(
        slf: &Bound<'_, Self>,
        axis: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
        out: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let f = slf.py().import("pyasc.scans")?.getattr("_method_cumprod")?;
        Ok(f.call1((slf, axis, dtype, out))?.unbind())
    }
    /// Variance over `axis` with `ddof` (NumPy's `ndarray.var`).
    #[pyo3(signature = (*args, **kwargs))]
    fn var(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "statistics", "var", args, kwargs)
    }
    /// Standard deviation over `axis` with `ddof` (NumPy's `ndarray.std`).
    #[pyo3(signature = (*args, **kwargs))]
    fn std(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "statistics", "std", args, kwargs)
    }
    /// Limit the values to `[min, max]` (NumPy's `ndarray.clip`).
    #[pyo3(signature = (*args, **kwargs))]
    fn clip(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "statistics", "clip", args, kwargs)
    }
    /// `np.dot(self, other)`.
    #[pyo3(signature = (*args, **kwargs))]
    fn dot(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "contractions", "dot", args, kwargs)
    }
    /// Sum of a diagonal (NumPy's `ndarray.trace`).
    #[pyo3(signature = (*args, **kwargs))]
    fn trace(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "matrices", "trace", args, kwargs)
    }
    /// A diagonal as a view (NumPy's `ndarray.diagonal`).
    #[pyo3(signature = (*args, **kwargs))]
    fn diagonal(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "matrices", "diagonal", args, kwargs)
    }

    /// Indices that sort along `axis` (NumPy's `ndarray.argsort`).
    #[pyo3(signature = (*args, **kwargs))]
    fn argsort(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "_methods", "argsort", args, kwargs)
    }
    /// Indices that partition around `kth` (NumPy's `ndarray.argpartition`).
    #[pyo3(signature = (*args, **kwargs))]
    fn argpartition(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "_methods", "argpartition", args, kwargs)
    }
    /// Insertion points of `v` in this sorted 1-D array (NumPy's `ndarray.searchsorted`).
    #[pyo3(signature = (*args, **kwargs))]
    fn searchsorted(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "_methods", "searchsorted", args, kwargs)
    }
    /// Sort in place along `axis` (a functional update of an array made in the operator).
    #[pyo3(signature = (*args, **kwargs))]
    fn sort(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "_methods", "sort", args, kwargs)
    }
    /// Partition in place around `kth` (a functional update of an array made in the operator).
    #[pyo3(signature = (*args, **kwargs))]
    fn partition(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "_methods", "partition", args, kwargs)
    }
    /// Set every element to `value` in place (a functional update).
    #[pyo3(signature = (*args, **kwargs))]
    fn fill(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "_methods", "fill", args, kwargs)
    }
    /// Set the elements at flat indices in place (a functional update, NumPy's `np.put`).
    #[pyo3(signature = (*args, **kwargs))]
    fn put(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "_methods", "put", args, kwargs)
    }
    /// Round to `decimals` (NumPy's `ndarray.round`).
    #[pyo3(signature = (*args, **kwargs))]
    fn round(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "_methods", "round", args, kwargs)
    }
    /// Elements at `indices` along `axis` (NumPy's `ndarray.take`).
    #[pyo3(signature = (*args, **kwargs))]
    fn take(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "_methods", "take", args, kwargs)
    }
    /// Slices where a static `condition` holds (NumPy's `ndarray.compress`).
    #[pyo3(signature = (*args, **kwargs))]
    fn compress(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "_methods", "compress", args, kwargs)
    }
    /// Data-dependent: raises with the hint to use `pyasc.nonzero(..., size=)`.
    #[pyo3(signature = (*args, **kwargs))]
    fn nonzero(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        module_method(slf, "_methods", "nonzero", args, kwargs)
    }
    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.dt().size()
    }
    /// Bytes of all elements.
    #[getter]
    fn nbytes(&self) -> usize {
        self.note_shape_read();
        self.dt().size() * self.dims().iter().product::<usize>()
    }
    /// The transpose of the last two axes (NumPy's `ndarray.mT`).
    #[getter]
    #[allow(non_snake_case)]
    fn mT(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        Ok(py.import("numpy")?.getattr("swapaxes")?.call1((slf, -1, -2))?.unbind())
    }

    /// Convert to another dtype (NumPy `astype`).
    fn astype(slf: &Bound<'_, Self>, dtype: &Bound<'_, PyAny>) -> PyResult<Py<Tensor>> {
        apply_cast(slf.py(), slf.as_any(), dtype)
    }
    fn __repr__(&self) -> String {
        format!("Tensor(shape={:?}, dtype={}, node=%{})", self.shape, self.dtype, self.id().0)
    }
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.note_shape_read();
        self.shape.first().copied().ok_or_else(|| trace_error(py, "len() of a 0-d tensor"))
    }
    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        Err(trace_error(
            py,
            "the truth value of a traced tensor depends on data: Python control flow (if/while/and/or/bool()) cannot be traced; use pyasc.where(cond, a, b)",
        ))
    }
    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        Err(trace_error(py, "a traced tensor cannot be converted to a Python number"))
    }
    fn __int__(&self, py: Python<'_>) -> PyResult<i64> {
        Err(trace_error(py, "a traced tensor cannot be converted to a Python number"))
    }
    fn __index__(&self, py: Python<'_>) -> PyResult<i64> {
        Err(trace_error(py, "a traced tensor cannot be used as an index or size"))
    }
    #[pyo3(signature = (*_args, **_kwargs))]
    fn __array__(
        &self,
        py: Python<'_>,
        _args: &Bound<'_, PyTuple>,
        _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        Err(trace_error(py, "a traced tensor has no values yet and cannot become a NumPy array inside an operator"))
    }
    /// The transpose (axes reversed).
    #[getter(T)]
    fn transposed(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        movement(slf, "transpose", &PyTuple::empty(slf.py()))
    }
    /// Permute the axes (`x.transpose(1, 0)` or `x.transpose((1, 0))`; none: reversed).
    #[pyo3(signature = (*axes))]
    fn transpose(slf: &Bound<'_, Self>, axes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        movement(slf, "transpose", axes)
    }
    /// Permute the axes in the order given (`x.permute(2, 0, 1)`).
    #[pyo3(signature = (*axes))]
    fn permute(slf: &Bound<'_, Self>, axes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        movement(slf, "permute", axes)
    }
    /// A new shape with the same elements in C order (one extent may be -1).
    #[pyo3(signature = (*shape))]
    fn reshape(slf: &Bound<'_, Self>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        movement(slf, "reshape", shape)
    }
    /// The elements as one axis.
    fn ravel(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        movement(slf, "ravel", &PyTuple::empty(slf.py()))
    }
    /// The elements as one axis, a copy (later updates of this array do not change it).
    fn flatten(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let flat = movement(slf, "ravel", &PyTuple::empty(slf.py()))?;
        Ok(slf.py().import("pyasc.updates")?.getattr("copy")?.call1((flat,))?.unbind())
    }
    /// Drop axes of extent 1.
    #[pyo3(signature = (*axis))]
    fn squeeze(slf: &Bound<'_, Self>, axis: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        movement(slf, "squeeze", axis)
    }
    /// Swap two axes.
    fn swapaxes(slf: &Bound<'_, Self>, a: i64, b: i64) -> PyResult<Py<PyAny>> {
        movement(slf, "swapaxes", &PyTuple::new(slf.py(), [a, b])?)
    }
    /// Indexing: ints, slices with any step, `...`, `None`, integer arrays (take).
    fn __getitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        Ok(py.import("pyasc.movement")?.getattr("getitem")?.call1((slf, key))?.unbind())
    }
    /// `y[key] = value`: a functional update of an array made in the function (NumPy's
    /// semantics; arguments are never written).
    fn __setitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "setitem", &[key, value]).map(|_| ())
    }
    /// JAX's functional updates: `x.at[idx].set(v)`, `.add(v)`, `.multiply(v)`, `.min(v)`,
    /// `.max(v)`, `.get()`.
    #[getter]
    fn at(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        updates_call(slf, "At", &[])
    }
    /// A copy (a new array that later updates of this one do not change).
    fn copy(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        updates_call(slf, "copy", &[])
    }
    fn __iadd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "add").into_any(), o]).map(|_| ())
    }
    fn __isub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "sub").into_any(), o]).map(|_| ())
    }
    fn __imul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "mul").into_any(), o]).map(|_| ())
    }
    fn __itruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "truediv").into_any(), o]).map(|_| ())
    }
    fn __ifloordiv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "floordiv").into_any(), o]).map(|_| ())
    }
    fn __imod__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "mod").into_any(), o]).map(|_| ())
    }
    fn __ipow__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>, _modulo: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "pow").into_any(), o]).map(|_| ())
    }
    fn __iand__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "and").into_any(), o]).map(|_| ())
    }
    fn __ior__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "or").into_any(), o]).map(|_| ())
    }
    fn __ixor__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "xor").into_any(), o]).map(|_| ())
    }
    fn __ilshift__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "lshift").into_any(), o]).map(|_| ())
    }
    fn __irshift__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "rshift").into_any(), o]).map(|_| ())
    }
    fn __imatmul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        updates_call(slf, "inplace", &[&pyo3::types::PyString::new(slf.py(), "matmul").into_any(), o]).map(|_| ())
    }
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Err(trace_error(py, "iterating over a traced tensor is not supported; use vectorised operations"))
    }
    #[pyo3(signature = (ufunc, method, *inputs, **kwargs))]
    fn __array_ufunc__(
        &self,
        py: Python<'_>,
        ufunc: &Bound<'_, PyAny>,
        method: &str,
        inputs: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        Ok(numpy_api(py)?.call_method1("array_ufunc", (ufunc, method, inputs, kwargs))?.unbind())
    }
    fn __array_function__(
        &self,
        py: Python<'_>,
        func: &Bound<'_, PyAny>,
        types: &Bound<'_, PyAny>,
        args: &Bound<'_, PyAny>,
        kwargs: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        Ok(numpy_api(py)?.call_method1("array_function", (func, types, args, kwargs))?.unbind())
    }
    fn __neg__(slf: &Bound<'_, Self>) -> PyResult<Py<Tensor>> {
        apply_unary(slf.py(), "neg", slf.as_any())
    }
    /// `+x`: a new array, as NumPy's `np.positive` (writes into it never reach `x`).
    fn __pos__(slf: &Bound<'_, Self>) -> PyResult<Py<Tensor>> {
        apply_unary(slf.py(), "positive", slf.as_any())
    }
    fn __abs__(slf: &Bound<'_, Self>) -> PyResult<Py<Tensor>> {
        apply_unary(slf.py(), "abs", slf.as_any())
    }
    fn __invert__(slf: &Bound<'_, Self>) -> PyResult<Py<Tensor>> {
        apply_unary(slf.py(), "not", slf.as_any())
    }
    fn __add__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Add, slf.as_any(), o)
    }
    fn __radd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Add, o, slf.as_any())
    }
    fn __sub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Sub, slf.as_any(), o)
    }
    fn __rsub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Sub, o, slf.as_any())
    }
    fn __mul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Mul, slf.as_any(), o)
    }
    fn __rmul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Mul, o, slf.as_any())
    }
    fn __truediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Div, slf.as_any(), o)
    }
    fn __rtruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Div, o, slf.as_any())
    }
    fn __floordiv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::FloorDiv, slf.as_any(), o)
    }
    fn __rfloordiv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::FloorDiv, o, slf.as_any())
    }
    fn __mod__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Mod, slf.as_any(), o)
    }
    fn __rmod__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Mod, o, slf.as_any())
    }
    fn __pow__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>, _modulo: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Pow, slf.as_any(), o)
    }
    fn __rpow__(
        slf: &Bound<'_, Self>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Pow, o, slf.as_any())
    }
    fn __and__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::And, slf.as_any(), o)
    }
    fn __rand__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::And, o, slf.as_any())
    }
    fn __or__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Or, slf.as_any(), o)
    }
    fn __ror__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Or, o, slf.as_any())
    }
    fn __xor__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Xor, slf.as_any(), o)
    }
    fn __rxor__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::Xor, o, slf.as_any())
    }
    fn __lshift__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::LeftShift, slf.as_any(), o)
    }
    fn __rlshift__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::LeftShift, o, slf.as_any())
    }
    fn __rshift__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::RightShift, slf.as_any(), o)
    }
    fn __rrshift__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(slf.py(), BinaryOp::RightShift, o, slf.as_any())
    }
    fn __matmul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        matmul_dunder(slf.py(), slf.as_any(), o)
    }
    fn __rmatmul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        matmul_dunder(slf.py(), o, slf.as_any())
    }
    fn __richcmp__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>, cmp: CompareOp) -> PyResult<Py<PyAny>> {
        let op = match cmp {
            CompareOp::Lt => BinaryOp::Lt,
            CompareOp::Le => BinaryOp::Le,
            CompareOp::Eq => BinaryOp::Eq,
            CompareOp::Ne => BinaryOp::Ne,
            CompareOp::Gt => BinaryOp::Gt,
            CompareOp::Ge => BinaryOp::Ge,
        };
        dunder(slf.py(), op, slf.as_any(), o)
    }
}
