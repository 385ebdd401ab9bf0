//! Intermediate results of debug operators, copied out kernel by kernel.
//!
//! While capture is switched on ([`set_active`], done by `pyasc.debug.capture()` and the
//! debug server), a launch of a `debug=True` operator (compiled one op per kernel) asks for
//! [`crate::RunOptions::keep_outputs`]: after each kernel the executor copies every buffer
//! the kernel wrote into a [`KernelOutput`] of the run's statistics. With capture off
//! nothing is copied or kept.

use pyasc_ir::error::SourceLoc;
use pyasc_ir::tile::TileKernel;
use pyasc_ir::DType;
use std::sync::atomic::{AtomicBool, Ordering};

static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Switch capture on or off for the whole process.
pub fn set_active(on: bool) {
    ACTIVE.store(on, Ordering::Release);
}

/// Whether debug operators keep their intermediate results now.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

/// A copy of one buffer a kernel wrote.
#[derive(Clone, Debug)]
pub struct KernelOutput {
    /// The kernel's name.
    pub kernel: String,
    /// What the kernel computes: its library routine and instructions' function names
    /// (`"exp"`, `"matmul"`), joined by `+`.
    pub op: String,
    /// The user's source lines of the kernel's ops.
    pub locs: Vec<SourceLoc>,
    /// Element type.
    pub dtype: DType,
    /// Logical shape.
    pub shape: Vec<usize>,
    /// The elements, C order, native byte order.
    pub bytes: Vec<u8>,
}

/// The function names of a kernel: its library routine, then each instruction's.
pub fn op_names(k: &TileKernel) -> String {
    let mut names: Vec<String> = k.library.iter().map(|l| l.describe()).collect();
    for ins in &k.body {
        let text = pyasc_ir::print::instr_to_string(k, ins);
        let f = text.split_once(" = ").map_or(text.as_str(), |(_, rhs)| rhs);
        names.push(f.split('(').next().unwrap_or(f).trim().to_string());
    }
    names.join("+")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches() {
        assert!(!active());
        set_active(true);
        assert!(active());
        set_active(false);
        assert!(!active());
    }
}
