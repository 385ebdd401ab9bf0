//! Mask loops compiled to machine code: on this platform there is no code generator, and
//! every loop runs on the strip loop ([`crate::lane_loop`]).

use crate::lane_loop::{LaneProgram, LaneReg};

/// A mask loop assembled for this CPU (never made on this platform).
#[derive(Debug)]
pub struct LaneJit(());

impl LaneJit {
    /// Always `None` here.
    pub fn compile(_: &LaneProgram, _: &dyn Fn(u16) -> bool, _: &dyn Fn(u16) -> bool) -> Option<LaneJit> {
        None
    }

    /// Always `None` here.
    pub fn cached(
        _: &LaneProgram,
        _: &dyn Fn(u16) -> bool,
        _: &dyn Fn(u16) -> bool,
    ) -> Option<std::sync::Arc<LaneJit>> {
        None
    }

    /// Lanes per iteration of the compiled loop.
    pub fn lanes_per_turn(&self) -> usize {
        1
    }

    /// Declines: the caller runs the strip loop.
    ///
    /// # Safety
    /// As for [`crate::lane_loop::run`].
    pub unsafe fn run(&self, _: &LaneProgram, _: &[LaneReg], _: usize, _: &mut dyn FnMut() -> bool) -> Option<bool> {
        None
    }
}
