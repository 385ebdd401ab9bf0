//! Launching a library routine on NumPy arrays (the detection routines, stencil sweeps,
//! kernel-language kernels): the
//! arrays become views, `pyasc_engine::library_call` makes the one-kernel plan, and the plan
//! runs on the host CPU through the engine's door with the GIL released, Ctrl-C honoured.

use crate::arrays::empty;
use crate::boundary::detach_interruptible;
use crate::errors::to_py;
use pyasc_engine::door::{run_now, Launcher};
use pyasc_engine::library_call::{library_plan, result_of};
use pyasc_ir::attr::Attr;
use pyasc_ir::library::LibId;
use pyasc_ir::tile::KernelPlan;
use pyasc_runtime::{device_for, DeviceKind, InputView, OutputPtr, RunOptions};
use pyo3::prelude::*;

/// A launch's plan, views and output, moved to the thread that runs it without the GIL.
struct Call {
    front_end: &'static str,
    plan: KernelPlan,
    inputs: Vec<InputView>,
    out: OutputPtr,
}

// SAFETY: the views and the output address arrays the caller keeps alive until the launch
// returns; nothing else writes them meanwhile.
unsafe impl Send for Call {}

impl Call {
    fn run(self) -> pyasc_ir::error::Result<()> {
        let name = self.plan.kernels[0].name.clone();
        let who = Launcher { name: &name, front_end: self.front_end };
        run_now(who, device_for(DeviceKind::Cpu), &self.plan, &self.inputs, &[self.out], RunOptions::default())
            .map(|_| ())
    }
}

/// The plan of library op `id` with `attr` on `inputs`, its kernel named as the op (or
/// `name`); an operand the op refuses is its typed error.
pub fn plan_for(id: LibId, attr: Attr, inputs: &[InputView], name: Option<&str>) -> PyResult<KernelPlan> {
    let operands: Vec<_> = inputs.iter().map(|v| (v.dtype, v.shape.as_slice())).collect();
    let name = match name {
        Some(n) => n,
        None => id.op().map_err(to_py)?.name(),
    };
    library_plan(name, id, attr, &operands).map_err(to_py)
}

/// Run `plan` on `inputs`, writing `out` (which holds the plan's result, C-contiguous),
/// launched by `front`.
///
/// # Safety
/// The views must address live memory of their dtypes and shapes and `out` memory for the
/// result until this returns.
pub unsafe fn launch_into(
    py: Python<'_>,
    front: Front,
    plan: KernelPlan,
    inputs: Vec<InputView>,
    out: OutputPtr,
) -> PyResult<()> {
    let call = Call { front_end: front.name, plan, inputs, out };
    if front.interruptible {
        detach_interruptible(py, move |_| call.run())?.map_err(to_py)
    } else {
        py.detach(move || call.run()).map_err(to_py)
    }
}

/// Who launches a routine: the front end's name in launch events, and whether the launch
/// polls for Ctrl-C (long or unbounded work), or just releases the GIL (short linear passes,
/// where the poll's set-up would be a visible share of the call).
#[derive(Copy, Clone)]
pub struct Front {
    /// The front end's name.
    pub name: &'static str,
    /// Poll for Ctrl-C while the launch runs.
    pub interruptible: bool,
}

/// Kernel-language launches.
pub const KERNEL: Front = Front { name: "kernel", interruptible: true };
/// Stencil sweeps.
pub const STENCIL: Front = Front { name: "stencil", interruptible: true };
/// NMS sweeps.
pub const NMS: Front = Front { name: "detection", interruptible: true };
/// The other detection routines (box IoU, row selection and gather, the sweep over an IoU
/// matrix): linear or quadratic passes over their operands.
pub const DETECTION: Front = Front { name: "detection", interruptible: false };

/// Run routine `id` with `attr` on `inputs`, launched by `front`: a new NumPy array of its result.
///
/// # Safety
/// The views must address live memory of their dtypes and shapes until this returns.
pub unsafe fn launch_new<'py>(
    py: Python<'py>,
    front: Front,
    id: LibId,
    attr: Attr,
    inputs: Vec<InputView>,
) -> PyResult<Bound<'py, PyAny>> {
    let plan = plan_for(id, attr, &inputs, None)?;
    let (dt, shape) = result_of(&plan);
    let (arr, ptr) = empty(py, dt, shape, false).map_err(to_py)?;
    // SAFETY: the caller's contract; `ptr` holds the new array's elements.
    unsafe { launch_into(py, front, plan, inputs, OutputPtr(ptr))? };
    Ok(arr)
}
