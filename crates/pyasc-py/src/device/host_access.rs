//! How the host reads and writes a DeviceArray. Where the array's device lets the host
//! address its memory ([`pyasc_runtime::Device::host_ptr`]) the host works on a NumPy view of
//! it; otherwise on a staged copy of the bytes the array spans, moved with the device's own
//! copies ([`pyasc_runtime::Device::copy_out`], [`pyasc_runtime::Device::copy_in`]).
//!
//! None of these wait for queued work: callers call [`DeviceArray::wait_host`] first.

use crate::arrays::{dtype_of, numpy, view_of, wrap_memory};
use crate::device::device_array::DeviceArray;
use crate::errors::to_py;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_ir::DType;
use pyo3::prelude::*;

/// A host copy of the bytes a DeviceArray spans, and a view of it with the array's layout.
struct Staged<'py> {
    /// The copied bytes (a NumPy `uint8` array).
    bytes: Bound<'py, PyAny>,
    /// Address of the copy's first byte.
    ptr: *mut u8,
    /// The array's elements within the copy.
    view: Bound<'py, PyAny>,
    /// First byte of the span in the device buffer.
    start: usize,
    /// Bytes in the span.
    len: usize,
}

impl DeviceArray {
    /// The bytes this array's elements span in its buffer: first byte and length.
    fn span(&self) -> (usize, usize) {
        if self.numel() == 0 {
            return (self.offset, 0);
        }
        let size = self.dtype.size() as isize;
        let (mut lo, mut hi) = (0isize, 0isize);
        for (d, s) in self.shape.iter().zip(&self.strides) {
            let reach = (*d as isize - 1) * s * size;
            if reach < 0 {
                lo += reach;
            } else {
                hi += reach;
            }
        }
        ((self.offset as isize + lo) as usize, (hi - lo + size) as usize)
    }

    /// A NumPy view of the device memory (kept alive by `owner`), or `None` when the host
    /// cannot address it.
    pub fn host_view<'py>(&self, owner: &Bound<'py, Self>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(base) = self.dev().host_ptr(&self.buf) else { return Ok(None) };
        let data = base.wrapping_add(self.offset);
        // SAFETY: the view covers exactly this array's elements in host-addressable memory;
        // `owner` keeps the buffer alive.
        let view =
            unsafe { wrap_memory(owner.py(), data, self.dtype, &self.shape, &self.strides, owner.clone().into_any()) }
                .map_err(to_py)?;
        if self.buf.is_readonly() {
            view.getattr("flags")?.setattr("writeable", false)?;
        }
        Ok(Some(view))
    }

    /// Copy the bytes this array spans to the host.
    fn stage<'py>(&self, py: Python<'py>) -> PyResult<Staged<'py>> {
        let (start, len) = self.span();
        let (bytes, ptr) = crate::arrays::empty(py, DType::U8, &[len], false).map_err(to_py)?;
        let (dev, buf, p) = (self.dev(), self.buf.clone(), ptr as usize);
        py.detach(move || {
            // SAFETY: the new array holds `len` bytes and nothing else refers to it yet.
            let dst = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) };
            dev.copy_out(&buf, start, dst)
        })
        .map_err(to_py)?;
        let first = ptr.wrapping_add(self.offset - start);
        // SAFETY: the span copy holds every element of the view; the view keeps `bytes` alive.
        let view =
            unsafe { wrap_memory(py, first, self.dtype, &self.shape, &self.strides, bytes.clone()) }.map_err(to_py)?;
        Ok(Staged { bytes, ptr, view, start, len })
    }

    /// The array's elements as a NumPy array: a view of the device memory, or a host copy.
    pub fn host_readable<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let me = slf.get();
        match me.host_view(slf)? {
            Some(view) => Ok(view),
            None => Ok(me.stage(slf.py())?.view),
        }
    }

    /// Copy a host array (any layout, dtype cast and broadcast as NumPy's `copyto`) into this
    /// array now.
    pub fn write_host(slf: &Bound<'_, Self>, src: &Bound<'_, PyAny>) -> PyResult<()> {
        let me = slf.get();
        let py = slf.py();
        let np = numpy(py)?;
        if let Ok(arr) = src.cast::<PyUntypedArray>() {
            let same = dtype_of(arr).ok() == Some(me.dtype) && arr.shape() == me.shape.as_slice();
            if same && arr.is_c_contiguous() && me.is_c_contiguous() {
                let v = view_of(arr, me.dtype).expect("contiguous arrays have element strides");
                return me.copy_in_bytes(py, v.ptr);
            }
        }
        if let Some(view) = me.host_view(slf)? {
            np.call_method1("copyto", (view, src))?;
            return Ok(());
        }
        if me.is_c_contiguous() {
            // Cast and broadcast on the host, then one copy in.
            let (tmp, p) = crate::arrays::empty(py, me.dtype, &me.shape, false).map_err(to_py)?;
            np.call_method1("copyto", (&tmp, src))?;
            me.copy_in_bytes(py, p)?;
            drop(tmp);
            return Ok(());
        }
        // A strided view of memory the host cannot address: read, modify and write back the
        // bytes it spans (the bytes between its elements are written back unchanged).
        let staged = me.stage(py)?;
        np.call_method1("copyto", (&staged.view, src))?;
        let (dev, buf, p, start, len) = (me.dev(), me.buf.clone(), staged.ptr as usize, staged.start, staged.len);
        py.detach(move || {
            // SAFETY: the staged copy holds `len` bytes and is kept alive below.
            let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
            dev.copy_in(&buf, start, bytes)
        })
        .map_err(to_py)?;
        drop(staged.bytes);
        Ok(())
    }

    /// Copy this (C-contiguous) array's bytes in from host address `src`, the GIL released.
    fn copy_in_bytes(&self, py: Python<'_>, src: *const u8) -> PyResult<()> {
        let (src_p, n) = (src as usize, self.numel() * self.dtype.size());
        let (dev, buf, offset) = (self.dev(), self.buf.clone(), self.offset);
        py.detach(move || {
            if n == 0 {
                return Ok(());
            }
            // SAFETY: the caller's contiguous source holds `n` bytes and outlives the copy.
            let bytes = unsafe { std::slice::from_raw_parts(src_p as *const u8, n) };
            dev.copy_in(&buf, offset, bytes)
        })
        .map_err(to_py)
    }
}
