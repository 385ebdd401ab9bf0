//! The tracer tensor: what an operator function receives instead of arrays. Every
//! operation on it appends a node (with the user's file:line) to the open trace. Methods whose
//! bodies are Python (movement, functional updates, NumPy's method signatures and protocols)
//! are attached to this class by the package (`pyasc.core._tensor_methods`).

use crate::arrays::np_dtype;
pub use crate::operator::trace_ops::ConstArray;
use pyasc_ir::op::BinaryOp;
use pyasc_ir::{DType, NodeId};
use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

pub(crate) use crate::operator::operands::trace_of;
pub use crate::operator::operands::{
    apply, apply_binary, apply_cast, apply_unary, apply_where, captured_array, node_of, parse_dtype,
};
pub use pyasc_engine::trace::{Captured, Trace, TraceRef};

use crate::operator::operands::{dunder, matmul_dunder, trace_error};

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
    /// Which trace the tensor belongs to (an opaque key, equal for tensors of one trace).
    #[getter]
    fn _trace_key(&self) -> usize {
        std::sync::Arc::as_ptr(&self.trace) as usize
    }
    /// The tensor's node in its trace (graphs list operands in this order).
    #[getter]
    fn _node(&self) -> u32 {
        self.id().0
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
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Err(trace_error(py, "iterating over a traced tensor is not supported; use vectorised operations"))
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
