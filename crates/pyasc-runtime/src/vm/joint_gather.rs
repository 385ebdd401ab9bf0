//! A tile's strided arguments that share one layout (`x[:, 0]`, `x[:, 1]`, ... of a
//! row-major `x`) gathered in one walk ([`crate::column_gather`]): each row's cache line is
//! fetched once for all of them instead of once per argument.

use super::ArgMode;
use crate::column_gather::{gather_columns, Column};
use pyasc_ir::tile::{RegKind, TileKernel};

/// True when an argument with these strides is gathered jointly: its elements are neither
/// contiguous (copied in runs) nor one broadcast value.
pub(super) fn joint(strides: &[isize]) -> bool {
    !matches!(strides.last(), Some(0 | 1))
}

/// Gathers the tile at `start` (`len` positions) of every register in `regs` (strided
/// arguments with [`joint`] strides), those of one element size and layout in one walk.
/// `dst(i)` is register `i`'s scratch tile; `cols` is storage kept between tiles.
///
/// # Safety
/// Every argument must cover the kernel's iteration space; each tile holds `len` elements.
pub(super) unsafe fn gather(
    k: &TileKernel,
    modes: &[ArgMode],
    regs: &[usize],
    dst: impl Fn(usize) -> *mut u8,
    start: usize,
    len: usize,
    cols: &mut Vec<Column>,
) {
    let layout = |i: usize| match (k.regs[i].kind, k.regs[i].dtype.size()) {
        (RegKind::Arg(a), size) => match &modes[a as usize] {
            ArgMode::Strided(p, dims, st) => Some((p.0 as *const u8, size, dims, st)),
            _ => None,
        },
        _ => None,
    };
    for (n, &i) in regs.iter().enumerate() {
        let Some((_, size, dims, st)) = layout(i) else { continue };
        // Gathered with an earlier register of the same layout.
        if regs[..n].iter().any(|&j| layout(j).is_some_and(|(_, s, d, t)| s == size && d == dims && t == st)) {
            continue;
        }
        cols.clear();
        for &j in &regs[n..] {
            if let Some((p, s, d, t)) = layout(j) {
                if s == size && d == dims && t == st {
                    cols.push(Column { base: p, dst: dst(j) });
                }
            }
        }
        // SAFETY: per this function's contract.
        unsafe { gather_columns(size, cols, dims, st, start, len) };
    }
}
