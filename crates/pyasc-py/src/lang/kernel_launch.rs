//! Stream launches of kernel-language kernels: `kernel[block_dim, stream](*args)`, and launches
//! given a `pyasc.DeviceArray`, are queued on a stream and return at once, as a CUDA
//! `kernel<<<grid, block, 0, stream>>>` launch does.
//!
//! Each launch is the library op `BlockLaunch`, queued through the engine's door on the
//! stream's device (`Device::launch`). The task holds every argument until it has run:
//! DeviceArrays by their buffers, NumPy arrays by a reference (they are read and written in
//! place when the task runs). DeviceArray
//! arguments are ordered with the work on other streams that writes or reads their buffers,
//! as operator launches are; each buffer the kernel stores into becomes the buffer's latest
//! write, so host reads (`numpy()`) wait for the kernel. An error of the kernel is kept by the
//! stream and raised at its next synchronising call, naming the kernel and the launch line;
//! the DeviceArrays it writes then raise that error on every read.

use crate::device::device_array::DeviceArray;
use crate::errors::{to_py, user_error};
use crate::library_launch::{plan_for, KERNEL};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyasc_engine::door::{queue, Launcher};
use pyasc_engine::library_call::LibraryPlan;
use pyasc_ir::error::{ErrorKind, IrError};
use pyasc_ir::library::LibId;
use pyasc_runtime::block::PreparedBlock;
use pyasc_runtime::block_launch::block_call;
use pyasc_runtime::buffer::DeviceBuffer;
use pyasc_runtime::stream::Stream as RtStream;
use pyasc_runtime::{device_for, DeviceKind, InputView, OutputPtr, RunOptions, StreamLaunch};
use pyo3::prelude::*;
use std::sync::Arc;

/// Bytes every global-memory transfer of the NPU twin must be aligned to.
const NPU_GM_ALIGN: usize = 32;

/// One array argument as the kernel sees it.
struct Arg {
    view: InputView,
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
        let view = InputView::contiguous(ptr, want, vec![d.numel()]);
        return Ok(Arg { view, device: Some(d.buf.clone()) });
    }
    let arr = a.cast::<PyUntypedArray>()?;
    if crate::arrays::dtype_of(arr).ok() != Some(want) || !arr.is_c_contiguous() {
        return Err(to_py(IrError::internal("an array does not match the traced kernel")));
    }
    // SAFETY: the array object is alive; `keep` holds it until the launch has run.
    let ptr = unsafe { (*arr.as_array_ptr()).fields.data } as *const u8;
    keep.push(a.clone().unbind());
    Ok(Arg { view: InputView::contiguous(ptr, want, vec![arr.len()]), device: None })
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
        globals.push(got.view);
        if let Some(b) = got.device {
            push_unique(if write { &mut writes } else { &mut reads }, b);
        }
    }
    // One use per buffer: a buffer both read and written (views of one allocation) is written.
    reads.retain(|b| !writes.iter().any(|w| Arc::ptr_eq(w, b)));
    let name = &program.program.name;
    let call = block_call(program, args, block_dim, site);
    let plan = plan_for(LibId::BLOCK_LAUNCH, call, &globals, Some(name))?;
    // The launch's int64 result (the threads used), alive in the task until it ran.
    let threads = Box::new(0i64);
    let outputs = vec![OutputPtr(&*threads as *const i64 as *mut u8)];
    let launch = StreamLaunch {
        plan: Arc::new(LibraryPlan { plan }),
        inputs: globals,
        outputs,
        reads,
        writes,
        keep: Some(Box::new((keep, threads))),
        opts: RunOptions::default(),
        on_done: None,
    };
    let who = Launcher { name, front_end: KERNEL.name };
    queue(who, device_for(DeviceKind::Cpu), stream, launch).map_err(to_py)
}
