//! Stream launches of kernel-language kernels: `kernel[block_dim, stream](*args)`, and launches
//! given a `pyasc.DeviceArray`, are queued on a stream and return at once, as a CUDA
//! `kernel<<<grid, block, 0, stream>>>` launch does.
//!
//! The task holds every argument until it has run: DeviceArrays by their buffers, NumPy arrays
//! by a reference (they are read and written in place when the task runs). DeviceArray
//! arguments are ordered with the work on other streams that writes or reads their buffers,
//! as operator launches are; each buffer the kernel stores into becomes the buffer's latest
//! write, so host reads (`numpy()`) wait for the kernel. An error of the kernel is kept by the
//! stream and raised at its next synchronising call, naming the kernel and the launch line;
//! the DeviceArrays it writes then raise that error on every read.

use crate::device_array::DeviceArray;
use crate::errors::{to_py, user_error};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_ir::error::{ErrorKind, IrError, SourceLoc};
use pyasc_runtime::block::{GlobalBuf, PreparedBlock};
use pyasc_runtime::buffer::DeviceBuffer;
use pyasc_runtime::stream::Stream as RtStream;
use pyasc_runtime::DeviceKind;
use pyo3::prelude::*;
use std::sync::Arc;

/// Bytes every global-memory transfer of the NPU twin must be aligned to.
const NPU_GM_ALIGN: usize = 32;

/// What a queued launch needs, moved into its stream task.
struct Queued {
    program: Arc<PreparedBlock>,
    globals: Vec<GlobalBuf>,
    args: Vec<i64>,
    block_dim: usize,
    /// NumPy array arguments, kept alive until the task has run.
    _arrays: Vec<Py<PyAny>>,
    /// Device buffers the kernel reads, and those it writes.
    reads: Vec<Arc<DeviceBuffer>>,
    writes: Vec<Arc<DeviceBuffer>>,
    /// The user's launch line.
    site: Option<SourceLoc>,
}

// SAFETY: the global buffers point into NumPy arrays held by `_arrays` and device buffers held
// by `reads` and `writes`; nothing else in the struct is tied to the launching thread.
unsafe impl Send for Queued {}

impl Queued {
    fn run(self) -> pyasc_ir::error::Result<()> {
        if let Some(e) = self.reads.iter().find_map(|b| b.poisoned()) {
            // An input left invalid by failed work: what the kernel writes is invalid too.
            for w in &self.writes {
                w.poison(&e);
            }
            return Err(e);
        }
        let run = || {
            // SAFETY: every buffer stays alive while `self` does (see the `Send` impl); the
            // signature the program was traced for fixed each buffer's dtype and length.
            unsafe { self.program.run(&self.globals, &self.args, self.block_dim) }
        };
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
            .unwrap_or_else(|_| Err(IrError::internal("the block VM panicked (please report it)")));
        done.map(|_| ()).map_err(|e| {
            let e = self.describe(e);
            for w in &self.writes {
                w.poison(&e);
            }
            e
        })
    }

    /// The VM's error, naming the kernel and where it was launched.
    fn describe(&self, mut e: IrError) -> IrError {
        let launched = match &self.site {
            Some(s) => format!(" launched at {s}"),
            None => String::new(),
        };
        e.message = format!("kernel '{}'{launched}: {}", self.program.program.name, e.message);
        e.at(self.site.as_ref())
    }
}

/// One array argument as the kernel sees it.
struct Arg {
    buf: GlobalBuf,
    device: Option<Arc<DeviceBuffer>>,
}

/// The launch an argument belongs to.
struct Launching<'a, 'py> {
    py: Python<'py>,
    /// The kernel's name.
    name: &'a str,
    /// Apply the NPU twin's 32-byte transfer alignment to DeviceArrays.
    npu: bool,
}

/// Global memory of array argument `i`: a NumPy array (held in `keep`) or a DeviceArray whose
/// memory the host addresses, C-contiguous, of the traced dtype and length; `write` when the
/// kernel stores into it.
fn arg(
    l: &Launching<'_, '_>,
    i: usize,
    a: &Bound<'_, PyAny>,
    want: pyasc_ir::DType,
    write: bool,
    keep: &mut Vec<Py<PyAny>>,
) -> PyResult<Arg> {
    let (py, name, npu) = (l.py, l.name, l.npu);
    if let Ok(d) = a.cast::<DeviceArray>() {
        let d = d.get();
        let Some(base) = d.dev().host_ptr(&d.buf) else {
            return Err(user_error(
                py,
                ErrorKind::Device,
                format!(
                    "array argument {i} of kernel '{name}' is a DeviceArray on the {} device, whose memory kernels \
                     cannot address; pass np.asarray(a)",
                    d.kind.name()
                ),
            ));
        };
        if d.dtype != want || !d.is_c_contiguous() {
            return Err(to_py(IrError::internal("a DeviceArray does not match the traced kernel")));
        }
        if write && d.buf.is_readonly() {
            return Err(user_error(
                py,
                ErrorKind::InvalidArgument,
                format!(
                    "kernel '{name}' stores into array argument {i}, a DeviceArray over read-only memory (copy it \
                     with pyasc.to_device first)"
                ),
            ));
        }
        let ptr = base.wrapping_add(d.offset);
        let off = ptr as usize % NPU_GM_ALIGN;
        if (npu || d.kind == DeviceKind::NpuTwin) && off != 0 && d.numel() > 0 {
            return Err(user_error(
                py,
                ErrorKind::Alignment,
                format!(
                    "array argument {i} of kernel '{name}' starts {off} bytes past a {NPU_GM_ALIGN}-byte boundary \
                     (ERROR 100001): global memory of an AI Core is {NPU_GM_ALIGN}-byte aligned; use a view whose \
                     byte offset is a multiple of {NPU_GM_ALIGN}"
                ),
            ));
        }
        return Ok(Arg { buf: GlobalBuf { ptr, len: d.numel() }, device: Some(d.buf.clone()) });
    }
    let arr = a.cast::<PyUntypedArray>()?;
    if crate::arrays::dtype_of(arr).ok() != Some(want) || !arr.is_c_contiguous() {
        return Err(to_py(IrError::internal("an array does not match the traced kernel")));
    }
    // SAFETY: the array object is alive; `keep` holds it until the launch has run.
    let ptr = unsafe { (*arr.as_array_ptr()).fields.data } as *mut u8;
    keep.push(a.clone().unbind());
    Ok(Arg { buf: GlobalBuf { ptr, len: arr.len() }, device: None })
}

fn push_unique(v: &mut Vec<Arc<DeviceBuffer>>, b: Arc<DeviceBuffer>) {
    if !v.iter().any(|u| Arc::ptr_eq(u, &b)) {
        v.push(b);
    }
}

/// Queue `program` on `stream` over `arrays` (NumPy arrays and DeviceArrays; `written` the
/// indices of those it stores into) with integer `args`; returns the task's number.
#[allow(clippy::too_many_arguments)]
pub fn enqueue(
    py: Python<'_>,
    program: &Arc<PreparedBlock>,
    arrays: &[Bound<'_, PyAny>],
    written: &[usize],
    args: Vec<i64>,
    block_dim: usize,
    stream: &Arc<RtStream>,
    npu: bool,
) -> PyResult<u64> {
    if arrays.len() != program.program.globals.len() {
        return Err(to_py(IrError::internal("wrong number of arrays for the traced kernel")));
    }
    let site = crate::frames::user_loc(py);
    let launching = Launching { py, name: &program.program.name, npu };
    let mut keep = Vec::new();
    let (mut globals, mut reads, mut writes) = (Vec::new(), Vec::new(), Vec::new());
    for (i, (a, want)) in arrays.iter().zip(&program.program.globals).enumerate() {
        let write = written.contains(&i);
        let got = arg(&launching, i, a, *want, write, &mut keep)?;
        globals.push(got.buf);
        if let Some(b) = got.device {
            push_unique(if write { &mut writes } else { &mut reads }, b);
        }
    }
    // One use per buffer: a buffer both read and written (views of one allocation) is written.
    reads.retain(|b| !writes.iter().any(|w| Arc::ptr_eq(w, b)));
    for b in &reads {
        b.order_on(stream, false);
    }
    for b in &writes {
        b.order_on(stream, true);
    }
    let used: Vec<(Arc<DeviceBuffer>, bool)> =
        reads.iter().map(|b| (b.clone(), false)).chain(writes.iter().map(|b| (b.clone(), true))).collect();
    let task = Queued {
        program: program.clone(),
        globals,
        args,
        block_dim,
        _arrays: keep,
        reads,
        writes: writes.clone(),
        site,
    };
    let seq = stream.enqueue_writing(format!("kernel {}", program.program.name), Box::new(move || task.run()), writes);
    // Recorded once the task has its number (it may already have run by now).
    for (b, write) in &used {
        b.record_use(stream, seq, *write);
    }
    Ok(seq)
}
