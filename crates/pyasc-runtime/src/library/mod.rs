//! The executing half of library kernels: one [`LibraryKernel`] per library op of
//! [`pyasc_ir::library`], registered once in [`KERNELS`] and found by [`LibId`]. A kernel
//! plan naming an id without a routine here fails to run; it never falls back to anything.

pub mod attention;
pub mod attention_backward;
pub mod conv;
pub mod detection;
pub mod gemm;
pub mod pad;
pub mod pooling;
pub mod scan;
pub mod scatter;
pub mod shuffle;
pub mod sort;
pub mod stencil;

use crate::view::InputView;
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::library::{LibCall, LibId};
use pyasc_ir::tile::TileKernel;

/// A library routine as the VM runs it.
pub trait LibraryKernel: Sync {
    /// The library op it runs.
    fn id(&self) -> LibId;
    /// `out = op(operands)`, with `k` the calling kernel (for its name and source lines).
    ///
    /// # Safety
    /// `operands` must be live views and `out` must hold the result of the kernel's first
    /// output buffer (its shape and dtype).
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, k: &TileKernel) -> Result<()>;
}

/// Every library routine, in any order: each names its op (a test checks that every op of
/// the registry has exactly one).
pub static KERNELS: &[&dyn LibraryKernel] = &[
    &crate::gemm::MatMulKernel,
    &crate::pad::PadKernel,
    &crate::pad::ConcatKernel,
    &crate::pad::TakeKernel,
    &crate::scan::ScanKernel,
    &crate::sort::SortKernel,
    &crate::scatter::ScatterKernel,
    &crate::scatter::NonZeroKernel,
    &crate::conv::ConvKernel,
    &crate::pooling::PoolKernel,
    &crate::shuffle::ShuffleKernel,
    &crate::attention::AttentionKernel,
    &crate::attention_backward::AttentionBackwardKernel,
    &crate::attention::AttentionStatsKernel,
    &crate::detection::BoxIouKernel,
    &crate::detection::NmsKernel,
    &crate::detection::NmsMaskKernel,
    &crate::detection::SelectRowsKernel,
    &crate::detection::GatherRowsKernel,
    &crate::stencil::StencilKernel,
    &crate::block_launch::BlockLaunchKernel,
];

/// The routine of library op `id`.
pub fn kernel(id: LibId) -> Result<&'static dyn LibraryKernel> {
    KERNELS
        .iter()
        .copied()
        .find(|k| k.id() == id)
        .ok_or_else(|| IrError::internal(format!("no routine runs library op #{}", id.0)))
}

/// Run a kernel's library call.
///
/// # Safety
/// As for [`LibraryKernel::run`], with `args` holding at least the call's operands.
pub unsafe fn run_call(call: &LibCall, k: &TileKernel, args: &[&InputView], out: *mut u8) -> Result<()> {
    let routine = kernel(call.id)?;
    let operands = args
        .get(..call.operands as usize)
        .ok_or_else(|| IrError::internal(format!("kernel {}: missing library operands", k.name)))?;
    // SAFETY: per this function's contract.
    unsafe { routine.run(call, operands, out, k) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_library_op_has_one_routine() {
        for op in pyasc_ir::library::REGISTRY.iter() {
            assert_eq!(KERNELS.iter().filter(|k| k.id() == op.id()).count(), 1, "{}", op.name());
        }
        assert_eq!(KERNELS.len(), pyasc_ir::library::REGISTRY.len());
    }

    #[test]
    fn an_unknown_library_op_is_an_error() {
        let err = kernel(LibId(999)).err().expect("no routine");
        assert!(err.message.contains("#999"), "{}", err.message);
    }
}
