//! The executing half of kernel-language launches ([`pyasc_ir::library::BlockLaunch`]): the
//! prepared program of the call runs its blocks over the operands, which it writes in place
//! where the program stores. A panic of the block VM is an internal error, and every error
//! names the kernel and the user's launch line.

use crate::block::{GlobalBuf, PreparedBlock};
use crate::library::LibraryKernel;
use crate::view::InputView;
use pyasc_ir::attr::Attr;
use pyasc_ir::error::{IrError, Result, SourceLoc};
use pyasc_ir::library::{BlockCall, LibCall, LibId};
use pyasc_ir::tile::TileKernel;
use std::sync::Arc;

/// Runs kernel-language launches.
pub struct BlockLaunchKernel;

/// The call of `program` for one launch: its blocks `0..block_dim` with integer `args`,
/// launched from `site`.
pub fn block_call(program: &Arc<PreparedBlock>, args: Vec<i64>, block_dim: usize, site: Option<SourceLoc>) -> Attr {
    Attr::Block(BlockCall {
        program: program.clone(),
        name: program.program.name.clone(),
        globals: program.program.globals.clone(),
        args,
        block_dim,
        site,
    })
}

/// The VM's error, naming the kernel and where it was launched.
fn describe(c: &BlockCall, mut e: IrError) -> IrError {
    let launched = match &c.site {
        Some(s) => format!(" launched at {s}"),
        None => String::new(),
    };
    e.message = format!("kernel '{}'{launched}: {}", c.name, e.message);
    e.at(c.site.as_ref())
}

impl LibraryKernel for BlockLaunchKernel {
    fn id(&self) -> LibId {
        LibId::BLOCK_LAUNCH
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        let Attr::Block(c) = &call.attr else { return Err(IrError::internal("a kernel launch needs its program")) };
        let Some(program) = c.program.downcast_ref::<PreparedBlock>() else {
            return Err(IrError::internal("a kernel launch's program is not a prepared block program"));
        };
        if operands.iter().any(|v| !v.is_c_contiguous()) {
            return Err(IrError::internal("kernel-language global buffers must be C-contiguous"));
        }
        // Global memory is written in place (see `pyasc_ir::library::BlockLaunch`).
        let globals: Vec<GlobalBuf> =
            operands.iter().map(|v| GlobalBuf { ptr: v.ptr as *mut u8, len: v.shape.iter().product() }).collect();
        let run = || {
            // SAFETY: the operands are live views of the traced dtypes (the trait's contract);
            // their launchers order this launch as the writer of every buffer it stores into.
            unsafe { program.run(&globals, &c.args, c.block_dim) }
        };
        let threads = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
            .unwrap_or_else(|_| Err(IrError::internal("the block VM panicked (please report it)")))
            .map_err(|e| describe(c, e))?;
        // SAFETY: `out` holds the int64 result (the trait's contract).
        unsafe { (out as *mut i64).write(threads as i64) };
        Ok(())
    }
}
