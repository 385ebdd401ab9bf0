//! The check behind `@pyasc.fused_operator`: the plan is one kernel, or a `FusionError` names
//! the source line whose op starts the second kernel and says what kind of kernel it needs.

use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::library::lookup;
use pyasc_ir::tile::{KernelPlan, TileKernel};

fn describe(k: &TileKernel) -> String {
    if let Some(call) = &k.library {
        let name = lookup(call.id).map(|op| op.name()).unwrap_or("library");
        return format!("a {name} routine, which runs as its own kernel");
    }
    if k.row_len > 0 {
        format!(
            "a reduction over rows of {} elements that cannot share the previous kernel's iteration space",
            k.row_len
        )
    } else {
        format!(
            "an elementwise kernel over shape {:?} that cannot share the previous kernel's iteration space",
            k.shape.0
        )
    }
}

/// `Ok` when `plan` has at most one kernel; else the `FusionError` for `@pyasc.fused_operator`.
pub fn check_one_kernel(plan: &KernelPlan, name: &str) -> Result<()> {
    let Some(second) = plan.kernels.get(1) else { return Ok(()) };
    let loc = second.locs.first();
    let at = loc.map(|l| format!(" the op at line {} starts kernel 2:", l.line)).unwrap_or_default();
    let msg = format!("fused operator {name} needs {} kernels, not one;{at} {}", plan.kernels.len(), describe(second));
    Err(IrError::new(ErrorKind::Fusion, msg).at(loc))
}
