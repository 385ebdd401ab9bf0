//! `pyasc.DeviceArray`: an array in the memory of a device, viewed with any shape, strides
//! and offset. Work on it is asynchronous and stream-ordered; every host access (`numpy()`,
//! `copy_to`, `np.asarray`, DLPack export) first waits for the work that writes it and raises
//! that work's error, if any. The memory is reached only through the array's
//! [`pyasc_runtime::Device`] (see `host_access` for the host's reads and writes).

use crate::arrays::{dtype_of, numpy, view_of};
use crate::device::stream;
use crate::errors::{to_py, user_error};
use crate::operator::tensor::parse_dtype;
use numpy::PyUntypedArray;
use pyasc_ir::error::ErrorKind;
use pyasc_ir::DType;
use pyasc_runtime::buffer::DeviceBuffer;
use pyasc_runtime::{device_for, Device, DeviceKind, InputView};
use pyo3::exceptions::{PyBufferError, PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyInt, PySlice, PySliceMethods, PyTuple};
use std::sync::Arc;

/// Default alignment of device allocations, in bytes.
pub const DEFAULT_ALIGNMENT: i64 = 128;

/// Bytes every global-memory transfer of the NPU twin must be aligned to.
const NPU_GM_ALIGN: usize = 32;

/// An array in device memory.
#[pyclass(module = "pyasc._pyasc", name = "DeviceArray", frozen)]
pub struct DeviceArray {
    /// The memory (shared by views).
    pub buf: Arc<DeviceBuffer>,
    /// Byte offset of element `[0, 0, ...]` in the buffer.
    pub offset: usize,
    /// Extents.
    pub shape: Vec<usize>,
    /// Strides in elements.
    pub strides: Vec<isize>,
    /// Element type.
    pub dtype: DType,
    /// Alignment the memory was allocated with.
    pub alignment: usize,
    /// The device the memory belongs to.
    pub kind: DeviceKind,
}

fn c_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut s = 1isize;
    for (st, d) in strides.iter_mut().zip(shape).rev() {
        *st = s;
        s *= (*d).max(1) as isize;
    }
    strides
}

fn parse_shape(shape: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    if let Ok(n) = shape.extract::<usize>() {
        return Ok(vec![n]);
    }
    shape.extract::<Vec<usize>>().map_err(|_| {
        user_error(
            shape.py(),
            ErrorKind::Shape,
            format!("shape must be an int or a sequence of non-negative ints, not {shape}"),
        )
    })
}

impl DeviceArray {
    /// A new C-contiguous array over a fresh buffer of the device new arrays are placed on.
    pub fn alloc(dtype: DType, shape: Vec<usize>, alignment: usize) -> pyasc_ir::error::Result<DeviceArray> {
        DeviceArray::alloc_on(crate::device::placement::array_kind(), dtype, shape, alignment)
    }

    /// A new C-contiguous array over a fresh buffer of the device of `kind`.
    pub fn alloc_on(
        kind: DeviceKind,
        dtype: DType,
        shape: Vec<usize>,
        alignment: usize,
    ) -> pyasc_ir::error::Result<DeviceArray> {
        let sh = pyasc_ir::Shape(shape);
        sh.check_size(dtype.size())?;
        let bytes = sh.numel() * dtype.size();
        let shape = sh.0;
        let buf = device_for(kind).alloc(bytes, alignment)?;
        Ok(DeviceArray { buf, offset: 0, strides: c_strides(&shape), shape, dtype, alignment, kind })
    }

    /// The device the memory belongs to: every access to it goes through this.
    pub fn dev(&self) -> &'static dyn Device {
        device_for(self.kind)
    }

    /// Address of element `[0, 0, ...]` as the device's kernels see it (for host memory, the
    /// host address).
    pub fn data_ptr(&self) -> *mut u8 {
        self.dev().device_ptr(&self.buf).wrapping_add(self.offset)
    }

    /// The executor's view of the array.
    pub fn view(&self) -> InputView {
        InputView { ptr: self.data_ptr(), dtype: self.dtype, shape: self.shape.clone(), strides: self.strides.clone() }
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// On the NPU twin: an `AlignmentError` (code 100001) at the user's line when the array's
    /// first element is not on a 32-byte boundary, so a transfer `what` names would be misaligned.
    pub fn check_npu_transfer(&self, py: Python<'_>, what: &str) -> PyResult<()> {
        let off = self.data_ptr() as usize % NPU_GM_ALIGN;
        if self.kind != DeviceKind::NpuTwin || off == 0 || self.numel() == 0 {
            return Ok(());
        }
        Err(user_error(
            py,
            ErrorKind::Alignment,
            format!(
                "{what} NPU DeviceArray starts {off} bytes past a {NPU_GM_ALIGN}-byte boundary (ERROR 100001): \
                 global-memory transfers of an AI Core must be {NPU_GM_ALIGN}-byte aligned; use a view whose byte \
                 offset is a multiple of {NPU_GM_ALIGN}"
            ),
        ))
    }

    /// True when the elements are contiguous in C order.
    pub fn is_c_contiguous(&self) -> bool {
        self.numel() <= 1
            || self.shape.iter().zip(&self.strides).zip(c_strides(&self.shape)).all(|((d, s), c)| *d == 1 || *s == c)
    }

    /// DLPack's `(device_type, device_id)` of the memory, or a BufferError where the device
    /// cannot export it.
    pub fn dlpack_device(&self) -> PyResult<(i32, i32)> {
        self.dev().dlpack_device().ok_or_else(|| {
            PyBufferError::new_err(format!(
                "a DeviceArray on the {} device cannot be exported through DLPack; use np.asarray(a) for a host copy",
                self.kind.name()
            ))
        })
    }

    /// Wait (GIL released) until the host may read (or write) the memory, then raise any
    /// pending error of the stream that wrote it.
    pub fn wait_host(&self, py: Python<'_>, write: bool) -> PyResult<()> {
        let buf = self.buf.clone();
        py.detach(move || buf.wait_host(write));
        crate::operator::log_queued_launches(py);
        if let Some((core, _)) = self.buf.last_writer() {
            core.take_error().map_err(to_py)?;
        }
        if !write {
            // Work that should have written this array failed: every read raises its error.
            if let Some(e) = self.buf.poisoned() {
                return Err(to_py(e));
            }
        }
        Ok(())
    }
}

#[pymethods]
impl DeviceArray {
    /// Allocate an array of `shape` and `dtype` (contents undefined, like `pyasc.empty`) with
    /// its start aligned to `alignment` bytes (a power of two; default 128). `device="npu"`
    /// places it on the NPU twin, whose transfers (`copy_from`, `copy_to`, operator
    /// arguments) must start on 32-byte boundaries.
    #[new]
    #[pyo3(signature = (shape, dtype = None, alignment = DEFAULT_ALIGNMENT, device = None))]
    fn py_new(
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        alignment: i64,
        device: Option<&str>,
    ) -> PyResult<Self> {
        crate::boundary::guard(|| {
            let kind = array_device(py, device, alignment)?;
            let shape = parse_shape(shape)?;
            let dtype = match dtype {
                Some(d) if !d.is_none() => parse_dtype(py, d)?,
                _ => DType::F32,
            };
            if alignment <= 0 || !(alignment as u64).is_power_of_two() {
                return Err(user_error(
                    py,
                    ErrorKind::Alignment,
                    format!("alignment must be a positive power of two, not {alignment}"),
                ));
            }
            DeviceArray::alloc_on(kind, dtype, shape, alignment as usize)
                .map_err(|e| to_py(e.at(crate::frames::user_loc(py).as_ref())))
        })
    }

    /// Extents.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }
    /// Element type as a `numpy.dtype`.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::arrays::np_dtype(py, self.dtype)
    }
    /// Strides in bytes, like NumPy.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let size = self.dtype.size() as isize;
        PyTuple::new(py, self.strides.iter().map(|s| s * size))
    }
    /// Number of axes.
    #[getter]
    fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.numel()
    }
    /// Bytes of one element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.dtype.size()
    }
    /// Bytes of the elements.
    #[getter]
    fn nbytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }
    /// The alignment the memory was allocated with, in bytes.
    #[getter(alignment)]
    fn get_alignment(&self) -> usize {
        self.alignment
    }
    /// Address of the first element.
    #[getter]
    fn data_ptr_int(&self) -> usize {
        self.data_ptr() as usize
    }
    /// True when the elements are contiguous in C order.
    #[getter]
    fn c_contiguous(&self) -> bool {
        self.is_c_contiguous()
    }
    /// The device the memory belongs to.
    #[getter]
    fn device(&self) -> &'static str {
        self.kind.name()
    }

    /// Copy `src` (a NumPy array, anything `np.asarray` accepts, or a DeviceArray) into this
    /// array, in order on the current stream. Shapes must match or broadcast; dtypes are cast
    /// as NumPy's `copyto` casts them.
    fn copy_from(slf: &Bound<'_, Self>, src: &Bound<'_, PyAny>) -> PyResult<()> {
        crate::boundary::guard(|| {
            let py = slf.py();
            let me = slf.get();
            me.check_npu_transfer(py, "copy_from: this")?;
            if let Ok(other) = src.cast::<DeviceArray>() {
                other.get().check_npu_transfer(py, "copy_from: the source")?;
            }
            crate::arrays::reject_masked(py, src, || "copy_from".into())?;
            if me.buf.is_readonly() {
                return Err(user_error(
                    py,
                    ErrorKind::InvalidArgument,
                    "this DeviceArray shares read-only memory (imported from a read-only or immutable array): \
                     copy it first (pyasc.to_device) to write to it",
                ));
            }
            let stream = stream::current();
            if let Ok(other) = src.cast::<DeviceArray>() {
                let o = other.get();
                let direct = o.kind == me.kind && o.shape == me.shape && o.dtype == me.dtype;
                if !direct || !o.is_c_contiguous() || !me.is_c_contiguous() {
                    // Layout, dtype or device changes go through the host.
                    o.wait_host(py, false)?;
                    me.wait_host(py, true)?;
                    let host = DeviceArray::host_readable(other)?;
                    return DeviceArray::write_host(slf, &host);
                }
                me.dev().copy_async(&stream, &me.buf, me.offset, &o.buf, o.offset, me.nbytes()).map_err(to_py)?;
                return Ok(());
            }
            let np = numpy(py)?;
            let arr = np.call_method1("asarray", (src,))?;
            let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
            let fits = shape == me.shape
                || np
                    .call_method1("broadcast_shapes", (PyTuple::new(py, &shape)?, PyTuple::new(py, &me.shape)?))
                    .ok()
                    .and_then(|s| s.extract::<Vec<usize>>().ok())
                    == Some(me.shape.clone());
            if !fits {
                return Err(user_error(
                    py,
                    ErrorKind::Shape,
                    format!("copy_from: source of shape {shape:?} does not fit a DeviceArray of shape {:?}", me.shape),
                ));
            }
            let busy = !stream.query() || me.buf.last_writer().is_some_and(|(c, seq)| !c.is_done(seq));
            if !busy {
                return DeviceArray::write_host(slf, &arr);
            }
            // Work on the array or the stream is pending: snapshot the source now, copy in order.
            let staged = DeviceArray::alloc_on(me.kind, me.dtype, me.shape.clone(), DEFAULT_ALIGNMENT as usize);
            let staged = Py::new(py, staged.map_err(to_py)?)?;
            DeviceArray::write_host(staged.bind(py), &arr)?;
            let st = staged.get();
            if me.is_c_contiguous() {
                me.dev().copy_async(&stream, &me.buf, me.offset, &st.buf, st.offset, me.nbytes()).map_err(to_py)?;
            } else {
                me.wait_host(py, true)?;
                let host = DeviceArray::host_readable(staged.bind(py))?;
                DeviceArray::write_host(slf, &host)?;
            }
            Ok(())
        })
    }

    /// Copy this array into the NumPy array `dst` (waits for the work that writes it).
    fn copy_to(slf: &Bound<'_, Self>, dst: &Bound<'_, PyAny>) -> PyResult<()> {
        crate::boundary::guard(|| {
            let me = slf.get();
            me.check_npu_transfer(slf.py(), "copy_to: this")?;
            me.wait_host(slf.py(), false)?;
            let host = DeviceArray::host_readable(slf)?;
            numpy(slf.py())?.call_method1("copyto", (dst, host))?;
            Ok(())
        })
    }

    /// A NumPy copy of the array (waits for the work that writes it).
    fn numpy<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        crate::boundary::guard(|| {
            let py = slf.py();
            let me = slf.get();
            me.wait_host(py, false)?;
            if me.is_c_contiguous() {
                let (out, p) = crate::arrays::empty(py, me.dtype, &me.shape, false).map_err(to_py)?;
                let (dst, n) = (p as usize, me.nbytes());
                let (dev, buf, offset) = (me.dev(), me.buf.clone(), me.offset);
                py.detach(move || {
                    if n == 0 {
                        return Ok(());
                    }
                    // SAFETY: the new array holds `n` bytes and nothing else refers to it yet.
                    let bytes = unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, n) };
                    dev.copy_out(&buf, offset, bytes)
                })
                .map_err(to_py)?;
                return Ok(out);
            }
            let host = DeviceArray::host_readable(slf)?;
            numpy(py)?.call_method1("array", (host,))
        })
    }

    /// NumPy's array protocol: a copy, or with `copy=False` a view of the device memory
    /// (a ValueError where the host cannot address it).
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::boundary::guard(|| {
            let me = slf.get();
            let arr = if copy == Some(false) {
                let Some(view) = me.host_view(slf)? else {
                    return Err(user_error(
                        slf.py(),
                        ErrorKind::InvalidArgument,
                        format!(
                            "a DeviceArray on the {} device cannot be viewed by the host without a copy; \
                             use np.asarray(a) or a.numpy()",
                            me.kind.name()
                        ),
                    ));
                };
                me.wait_host(slf.py(), true)?;
                view
            } else {
                DeviceArray::numpy(slf)?
            };
            match dtype {
                Some(d) if !d.is_none() => arr.call_method1("astype", (d,)),
                _ => Ok(arr),
            }
        })
    }

    /// DLPack export (zero-copy), after the work that writes the array; a BufferError where
    /// the device cannot export its memory.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        slf: &Bound<'_, Self>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        crate::boundary::guard(|| {
            let _ = (stream, max_version);
            let py = slf.py();
            let me = slf.get();
            let device = me.dlpack_device()?;
            if let Some(dev) = dl_device {
                if dev.extract::<(i32, i32)>().ok() != Some(device) {
                    return Err(PyBufferError::new_err(format!(
                        "DeviceArray memory is on DLPack device {device:?}; it cannot be exported to {dev}"
                    )));
                }
            }
            me.wait_host(py, false)?;
            if copy == Some(true) {
                let dup = DeviceArray::alloc_on(me.kind, me.dtype, me.shape.clone(), me.alignment).map_err(to_py)?;
                let dup = Py::new(py, dup)?;
                DeviceArray::write_host(dup.bind(py), &DeviceArray::host_readable(slf)?)?;
                let d = dup.get();
                return crate::device::dlpack::export_capsule(
                    py,
                    d.data_ptr(),
                    device,
                    &d.shape,
                    &d.strides,
                    d.dtype,
                    dup.clone_ref(py).into_any(),
                );
            }
            crate::device::dlpack::export_capsule(
                py,
                me.data_ptr(),
                device,
                &me.shape,
                &me.strides,
                me.dtype,
                slf.clone().into_any().unbind(),
            )
        })
    }

    /// DLPack device of the memory: `(kDLCPU, 0)` for host memory.
    fn __dlpack_device__(&self) -> PyResult<(i32, i32)> {
        self.dlpack_device()
    }

    fn __len__(&self) -> PyResult<usize> {
        self.shape.first().copied().ok_or_else(|| PyTypeError::new_err("len() of a 0-d DeviceArray"))
    }

    /// Indexing with ints, slices (any step), `...` and `None` makes views.
    fn __getitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<DeviceArray> {
        crate::boundary::guard(|| {
            let me = slf.get();
            let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
                Ok(t) => t.iter().collect(),
                Err(_) => vec![key.clone()],
            };
            // Integer-like keys (NumPy integer scalars, 0-d integer arrays) index like ints, as in NumPy.
            let items: Vec<Bound<'_, PyAny>> = items
                .into_iter()
                .map(|k| match as_index(&k) {
                    Some(i) => i,
                    None => k,
                })
                .collect();
            let consumed = items.iter().filter(|k| !k.is_none() && !k.is_instance_of::<PyEllipsis>()).count();
            if consumed > me.shape.len() {
                return Err(PyIndexError::new_err(format!(
                    "too many indices for an array of {} dimensions",
                    me.shape.len()
                )));
            }
            let size = me.dtype.size() as isize;
            let mut offset = me.offset as isize;
            let (mut shape, mut strides) = (Vec::new(), Vec::new());
            let mut axis = 0usize;
            let mut seen_ellipsis = false;
            for k in &items {
                if k.is_none() {
                    shape.push(1);
                    strides.push(0);
                } else if k.is_instance_of::<PyEllipsis>() {
                    if seen_ellipsis {
                        return Err(PyIndexError::new_err("an index can only have a single ellipsis"));
                    }
                    seen_ellipsis = true;
                    let skip = me.shape.len() - consumed;
                    for _ in 0..skip {
                        shape.push(me.shape[axis]);
                        strides.push(me.strides[axis]);
                        axis += 1;
                    }
                } else if let Ok(sl) = k.cast::<PySlice>() {
                    let ind = sl.indices(me.shape[axis] as isize)?;
                    offset += ind.start * me.strides[axis] * size;
                    shape.push(ind.slicelength);
                    strides.push(ind.step * me.strides[axis]);
                    axis += 1;
                } else if k.is_instance_of::<PyInt>() {
                    let i: isize = k.extract().map_err(|_| {
                        PyIndexError::new_err(format!("index {k} cannot fit into an index-sized integer"))
                    })?;
                    let n = me.shape[axis] as isize;
                    let j = if i < 0 { i + n } else { i };
                    if j < 0 || j >= n {
                        return Err(PyIndexError::new_err(format!(
                            "index {i} is out of bounds for axis {axis} with size {n}"
                        )));
                    }
                    offset += j * me.strides[axis] * size;
                    axis += 1;
                } else {
                    return Err(PyIndexError::new_err(format!(
                        "DeviceArray indices must be ints, slices, ... or None, not {}",
                        k.get_type().name()?
                    )));
                }
            }
            while axis < me.shape.len() {
                shape.push(me.shape[axis]);
                strides.push(me.strides[axis]);
                axis += 1;
            }
            // An empty view may point anywhere; keep it at the start of the buffer.
            let offset = if shape.contains(&0) { 0 } else { offset as usize };
            Ok(DeviceArray {
                buf: me.buf.clone(),
                offset,
                shape,
                strides,
                dtype: me.dtype,
                alignment: me.alignment,
                kind: me.kind,
            })
        })
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        crate::boundary::guard(|| {
            let me = slf.get();
            let head = format!("DeviceArray(shape={:?}, dtype={}, alignment={})", me.shape, me.dtype, me.alignment);
            if me.numel() > 64 {
                return Ok(head);
            }
            let host = DeviceArray::numpy(slf)?;
            Ok(format!("{head}\n{}", host.repr()?))
        })
    }
}

/// The device kind a new DeviceArray asking for `device` lives on (`None`, "cpu" and "auto":
/// the CPU or the test placement; "npu": the NPU twin, which needs `alignment` of at least
/// 32 bytes).
fn array_device(py: Python<'_>, device: Option<&str>, alignment: i64) -> PyResult<DeviceKind> {
    let kind = match device.map(DeviceKind::parse).transpose().map_err(to_py)? {
        Some(DeviceKind::NpuTwin) => DeviceKind::NpuTwin,
        Some(DeviceKind::Cpu) | None => crate::device::placement::array_kind(),
        Some(_) => {
            return Err(user_error(
                py,
                ErrorKind::InvalidArgument,
                format!("device must be 'cpu', 'npu' or 'auto', not {device:?}"),
            ))
        }
    };
    if kind == DeviceKind::NpuTwin && alignment > 0 && alignment < NPU_GM_ALIGN as i64 {
        return Err(user_error(
            py,
            ErrorKind::Alignment,
            format!("an NPU DeviceArray needs an alignment of at least {NPU_GM_ALIGN} bytes (ERROR 100001), not {alignment}"),
        ));
    }
    Ok(kind)
}

/// Copy any array-like to a new DeviceArray (`dtype` casts; `alignment` in bytes; `device`
/// as for `DeviceArray`).
#[pyfunction]
#[pyo3(signature = (a, dtype = None, alignment = DEFAULT_ALIGNMENT, device = None))]
pub fn to_device(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    alignment: i64,
    device: Option<&str>,
) -> PyResult<Py<DeviceArray>> {
    crate::boundary::guard(|| {
        let kind = array_device(py, device, alignment)?;
        crate::arrays::reject_masked(py, a, || "to_device".into())?;
        if let Ok(d) = a.cast::<DeviceArray>() {
            if dtype.is_none() {
                let src = d.get();
                let out = Py::new(
                    py,
                    DeviceArray::alloc_on(kind, src.dtype, src.shape.clone(), alignment.max(1) as usize)
                        .map_err(to_py)?,
                )?;
                DeviceArray::copy_from(out.bind(py), d.as_any())?;
                return Ok(out);
            }
        }
        let np = numpy(py)?;
        let arr = if a.hasattr("__dlpack__")? && !a.is_instance(&np.getattr("ndarray")?)? {
            np.call_method1("from_dlpack", (a,))?
        } else {
            np.call_method1("asarray", (a,))?
        };
        let arr = match dtype {
            Some(d) if !d.is_none() => arr.call_method1("astype", (d,))?,
            _ => arr,
        };
        let dt = dtype_of(arr.cast::<PyUntypedArray>()?).map_err(to_py)?;
        let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
        if alignment <= 0 || !(alignment as u64).is_power_of_two() {
            return Err(user_error(
                py,
                ErrorKind::Alignment,
                format!("alignment must be a positive power of two, not {alignment}"),
            ));
        }
        let out = Py::new(py, DeviceArray::alloc_on(kind, dt, shape, alignment as usize).map_err(to_py)?)?;
        DeviceArray::write_host(out.bind(py), &arr)?;
        Ok(out)
    })
}

/// A new DeviceArray with undefined contents (`device` as for `DeviceArray`).
#[pyfunction]
#[pyo3(signature = (shape, dtype = None, alignment = DEFAULT_ALIGNMENT, device = None))]
pub fn empty(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    alignment: i64,
    device: Option<&str>,
) -> PyResult<DeviceArray> {
    crate::boundary::guard(|| DeviceArray::py_new(py, shape, dtype, alignment, device))
}

/// A new DeviceArray of zeros (`device` as for `DeviceArray`).
#[pyfunction]
#[pyo3(signature = (shape, dtype = None, alignment = DEFAULT_ALIGNMENT, device = None))]
pub fn zeros(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    alignment: i64,
    device: Option<&str>,
) -> PyResult<DeviceArray> {
    crate::boundary::guard(|| {
        let a = DeviceArray::py_new(py, shape, dtype, alignment, device)?;
        let (dev, buf, n) = (a.dev(), a.buf.clone(), a.nbytes());
        py.detach(move || dev.fill_zero(&buf, 0, n)).map_err(to_py)?;
        Ok(a)
    })
}

/// A DeviceArray over the memory of any DLPack-capable CPU tensor: shared (zero-copy) where
/// the device addresses host memory, else copied to the device.
#[pyfunction]
pub fn from_dlpack(py: Python<'_>, t: &Bound<'_, PyAny>) -> PyResult<DeviceArray> {
    crate::boundary::guard(|| {
        if let Ok(d) = t.cast::<DeviceArray>() {
            let s = d.get();
            return Ok(DeviceArray {
                buf: s.buf.clone(),
                offset: s.offset,
                shape: s.shape.clone(),
                strides: s.strides.clone(),
                dtype: s.dtype,
                alignment: s.alignment,
                kind: s.kind,
            });
        }
        let arr = crate::device::dlpack_import::numpy_from_dlpack(py, t)?;
        let a = arr.cast::<PyUntypedArray>()?;
        let dt = dtype_of(a).map_err(to_py)?;
        let v = view_of(a, dt)
            .ok_or_else(|| user_error(py, ErrorKind::Alignment, "tensor strides are not multiples of its item size"))?;
        // The lowest and highest addresses the view reaches.
        let size = dt.size() as isize;
        let (mut lo, mut hi) = (0isize, 0isize);
        for (d, s) in v.shape.iter().zip(&v.strides) {
            if *d == 0 {
                lo = 0;
                hi = -size;
                break;
            }
            let span = (*d as isize - 1) * s * size;
            if span < 0 {
                lo += span
            } else {
                hi += span
            }
        }
        // SAFETY: `lo` is the lowest byte offset any element of the view reaches, so `base` lies
        // inside the array's allocation.
        let base = unsafe { (v.ptr as *mut u8).offset(lo) };
        let bytes = (hi - lo + size).max(0) as usize;
        // Read-only sources (NumPy's flag, DLPack's read-only bit) and JAX's immutable arrays are
        // never written through pyasc.
        let writeable: bool = arr.getattr("flags")?.getattr("writeable")?.extract()?;
        let module: String = t.get_type().getattr("__module__")?.extract().unwrap_or_default();
        let readonly = !writeable || module.starts_with("jax");
        let owner: Py<PyAny> = arr.clone().unbind();
        let kind = crate::device::placement::array_kind();
        let dev = device_for(kind);
        // SAFETY: `base` and `bytes` cover every element of the array, which `owner` keeps alive;
        // read-only sources are imported read-only.
        let buf = unsafe { dev.import_host(base, bytes, Box::new(owner), readonly) }.map_err(to_py)?;
        let align = 1usize << (dev.device_ptr(&buf) as usize).trailing_zeros().min(12);
        Ok(DeviceArray {
            buf,
            offset: (-lo) as usize,
            shape: v.shape,
            strides: v.strides,
            dtype: dt,
            alignment: align,
            kind,
        })
    })
}

/// The Python int an integer-like index key stands for (`operator.index`), leaving ints, bools,
/// slices, `None`, `...` and everything else as they are.
fn as_index<'py>(k: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    if k.is_instance_of::<PyInt>() || k.is_instance_of::<PyBool>() || k.is_none() {
        return None;
    }
    if k.is_instance_of::<PySlice>() || k.is_instance_of::<PyEllipsis>() || !k.hasattr("__index__").ok()? {
        return None;
    }
    k.call_method0("__index__").ok()
}
