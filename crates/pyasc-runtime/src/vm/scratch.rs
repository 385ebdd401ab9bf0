//! Scratch memory of a block: one tile per scratch or gathered register, kept per thread
//! between blocks (tiny launches allocate nothing) and never cleared, since every register's
//! tile is written before it is read.

use crate::instr::Val;
use pyasc_ir::error::Result;
use pyasc_ir::tile::{RegKind, TileKernel};
use std::cell::Cell;

#[repr(C, align(64))]
#[derive(Copy, Clone)]
pub(super) struct Line([u8; 64]);

/// Scratch memory of one block: one tile per scratch or gathered register.
#[derive(Default)]
pub(super) struct Scratch {
    pub(super) mem: Vec<Line>,
    pub(super) offsets: Vec<Option<usize>>,
    pub(super) vals: Vec<Val>,
    /// Register values for one row (row kernels broadcast per-row values row by row).
    pub(super) row_vals: Vec<Val>,
    /// Per body instruction: its value when all its operands are broadcast values (the same
    /// for every tile, so computed once per block).
    pub(super) uniform: Vec<Option<pyasc_ir::Scalar>>,
    /// Registers of the current tile gathered jointly ([`super::joint_gather`]).
    pub(super) joint: Vec<usize>,
    /// Storage of [`super::joint_gather::gather`].
    pub(super) columns: Vec<crate::column_gather::Column>,
}

thread_local! {
    /// The scratch of the calling thread's previous block, kept for its storage.
    static SPARE: Cell<Option<Scratch>> = const { Cell::new(None) };
}

impl Scratch {
    /// Scratch for a block of `k`, reusing the storage of the calling thread's previous block
    /// (tiny launches then allocate nothing here). Hand it back with [`Scratch::release`].
    /// A tile too large for memory (a reduction over a very long row) is an
    /// `OutOfMemoryError`, never an abort.
    /// `steps` holds each output's element stride: per-row outputs stored as columns of a
    /// stack (a stride other than 1) are computed into scratch.
    pub(super) fn take(k: &TileKernel, gathered: &[bool], streamed: bool, steps: &[usize]) -> Result<Self> {
        Self::take_for(k, gathered, streamed, steps, k.tile_elems, k.tile_elems / k.row_len.max(1))
    }

    /// Scratch of `elems` elements per element register and `row_elems` per per-row register.
    pub(super) fn take_sized(k: &TileKernel, gathered: &[bool], elems: usize, row_elems: usize) -> Result<Self> {
        Self::take_for(k, gathered, false, &[], elems, row_elems)
    }

    fn take_for(
        k: &TileKernel,
        gathered: &[bool],
        streamed: bool,
        steps: &[usize],
        tile: usize,
        row_elems: usize,
    ) -> Result<Self> {
        let mut s = SPARE.with(Cell::take).unwrap_or_default();
        s.offsets.clear();
        let mut lines = 0usize;
        for r in &k.regs {
            let needs = match r.kind {
                RegKind::Tile => true,
                RegKind::Arg(a) => gathered.get(a as usize).copied().unwrap_or(false),
                RegKind::Out(o) => (streamed && !r.row) || (r.row && steps.get(o as usize).is_some_and(|s| *s != 1)),
                _ => false,
            };
            if needs {
                s.offsets.push(Some(lines * 64));
                let elems = if r.row { row_elems } else { tile };
                lines += (elems.max(1) * r.dtype.size()).div_ceil(64);
            } else {
                s.offsets.push(None);
            }
        }
        // Every register's tile is written (by its gather or its instruction) before it is
        // read, so storage kept from an earlier block is reused as it is: clearing it cost
        // as much as a small kernel's work.
        if s.mem.len() < lines {
            s.mem.try_reserve_exact(lines - s.mem.len()).map_err(|_| {
                pyasc_ir::IrError::new(
                    pyasc_ir::error::ErrorKind::OutOfMemory,
                    format!("out of memory: kernel {} needs {} bytes of tile scratch per block", k.name, lines * 64),
                )
            })?;
            s.mem.resize(lines, Line([0; 64]));
        }
        let zero = Val::Scalar(pyasc_ir::Scalar::Int(0));
        s.vals.clear();
        s.vals.resize(k.regs.len(), zero);
        s.row_vals.clear();
        s.row_vals.resize(k.regs.len(), zero);
        s.uniform.clear();
        s.uniform.resize(k.body.len(), None);
        s.joint.clear();
        Ok(s)
    }

    /// Keep the storage for the calling thread's next block.
    pub(super) fn release(self) {
        SPARE.with(|c| c.set(Some(self)));
    }
}
