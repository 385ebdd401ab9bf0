//! Row kernels: an argument that is constant along each row (a column `x[:, 4:5]` broadcast
//! over the row's elements, as in a detector's `x[:, 5:] * x[:, 4:5]`) read as one value per
//! row instead of a filled tile.
//!
//! Gathered as a tile, such an argument is written `row_len` times per row and read back by
//! every instruction that uses it. When every instruction that reads it is float arithmetic
//! whose result has one value per element, [`per_row`] marks its register as per-row for the
//! launch and narrows its layout to one position per row: the VM gathers one value per row and
//! the arithmetic broadcasts it over the row ([`crate::instr::exec_binary_rows`]), with the
//! same values as the filled tile.

use super::ArgMode;
use pyasc_ir::op::BinaryClass;
use pyasc_ir::tile::{Instr, RegKind, TileKernel};
use pyasc_ir::DType;

/// Per register of `k`: whether it is an argument read as one value per row in this launch
/// (its mode in `modes` narrowed to the rows). Empty when none is (or `k` is no row kernel).
pub(super) fn per_row(k: &TileKernel, modes: &mut [ArgMode]) -> Vec<bool> {
    let c = k.row_len;
    if c == 0 {
        return Vec::new();
    }
    let mut rows = vec![false; k.regs.len()];
    for (a, mode) in modes.iter_mut().enumerate() {
        let declared = k.regs.iter().any(|r| r.row && r.kind == RegKind::Arg(a as u16));
        if declared {
            // Compiled as one value per row (viewed with unit extents on the reduced axes).
            narrow_declared(mode, c);
            for (i, r) in k.regs.iter().enumerate() {
                if r.kind == RegKind::Arg(a as u16) {
                    rows[i] = true;
                }
            }
            continue;
        }
        let ArgMode::Strided(p, dims, st) = mode else { continue };
        let n = dims.len();
        // Constant along the innermost dim, which holds whole rows; an argument also constant
        // along the outermost dim keeps its periodic gather.
        if n < 2 || st[n - 1] != 0 || !dims[n - 1].is_multiple_of(c) || st[0] == 0 {
            continue;
        }
        let regs: Vec<usize> = (0..k.regs.len()).filter(|&i| k.regs[i].kind == RegKind::Arg(a as u16)).collect();
        if regs.is_empty() || !regs.iter().all(|&i| read_as_rows(k, i)) {
            continue;
        }
        let mut rdims = dims[..n - 1].to_vec();
        let mut rst = st[..n - 1].to_vec();
        if dims[n - 1] > c {
            rdims.push(dims[n - 1] / c);
            rst.push(0);
        }
        *mode = ArgMode::Strided(*p, rdims, rst);
        for i in regs {
            rows[i] = true;
        }
    }
    if rows.iter().any(|r| *r) {
        rows
    } else {
        Vec::new()
    }
}

/// Narrows the layout of an argument compiled as one value per row (its registers are
/// declared per row) to one position per row: the innermost collapsed dim holds whole rows
/// with stride 0 (the reduced axes have unit extents in its view); a run of several rows of
/// one value (an outer axis broadcast too) keeps one stride-0 position per row.
fn narrow_declared(mode: &mut ArgMode, c: usize) {
    let ArgMode::Strided(p, dims, st) = mode else { return };
    let n = dims.len();
    debug_assert!(n >= 1 && st[n - 1] == 0 && dims[n - 1].is_multiple_of(c), "a per-row argument spans whole rows");
    let mut rdims = dims[..n - 1].to_vec();
    let mut rst = st[..n - 1].to_vec();
    if dims[n - 1] > c || rdims.is_empty() {
        rdims.push(dims[n - 1] / c);
        rst.push(0);
    }
    *mode = ArgMode::Strided(*p, rdims, rst);
}

/// Whether register `r` (float32 or float64) is read only by float arithmetic with one result
/// per element, each of which broadcasts a per-row operand in one dispatch.
fn read_as_rows(k: &TileKernel, r: usize) -> bool {
    if !matches!(k.regs[r].dtype, DType::F32 | DType::F64) {
        return false;
    }
    let mut readers = k.body.iter().filter(|i| i.srcs().iter().any(|s| s.0 as usize == r)).peekable();
    readers.peek().is_some()
        && readers.all(|i| match *i {
            Instr::Binary { op, dst, a, b } => {
                matches!(op.class(), BinaryClass::Arith | BinaryClass::Float)
                    && !k.regs[dst.0 as usize].row
                    && k.regs[a.0 as usize].dtype == k.regs[r].dtype
                    && k.regs[b.0 as usize].dtype == k.regs[r].dtype
            }
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::SendPtr;
    use pyasc_ir::op::{BinaryOp, ReduceOp};
    use pyasc_ir::tile::{Reg, RegDecl};

    /// A row kernel over rows of 8: r0 a float32 argument, r1 a float32 tile argument, r2 a
    /// float32 tile, r3 a float32 per-row result.
    fn rows(body: Vec<Instr>) -> TileKernel {
        let regs = vec![
            RegDecl { dtype: DType::F32, kind: RegKind::Arg(0), row: false },
            RegDecl { dtype: DType::F32, kind: RegKind::Arg(1), row: false },
            RegDecl { dtype: DType::F32, kind: RegKind::Tile, row: false },
            RegDecl { dtype: DType::F32, kind: RegKind::Tile, row: true },
        ];
        let mut k = crate::test_kernel::kernel(64, 64, regs, body);
        k.row_len = 8;
        k
    }

    /// Argument 0 as a column of an (8, 10) array broadcast over rows of 8.
    fn modes() -> Vec<ArgMode> {
        let column = ArgMode::Strided(SendPtr(std::ptr::null_mut()), vec![8, 8], vec![10, 0]);
        vec![column, ArgMode::Strided(SendPtr(std::ptr::null_mut()), vec![8, 8], vec![10, 1])]
    }

    fn layout(m: &ArgMode) -> (Vec<usize>, Vec<isize>) {
        match m {
            ArgMode::Strided(_, d, s) => (d.clone(), s.clone()),
            _ => panic!("strided"),
        }
    }

    #[test]
    fn a_column_read_by_arithmetic_becomes_one_value_per_row() {
        let mul = Instr::Binary { op: BinaryOp::Mul, dst: Reg(2), a: Reg(1), b: Reg(0) };
        let max = Instr::Reduce { op: ReduceOp::Max, dst: Reg(3), src: Reg(2) };
        let k = rows(vec![mul, max]);
        let mut m = modes();
        assert_eq!(per_row(&k, &mut m), vec![true, false, false, false]);
        assert_eq!(layout(&m[0]), (vec![8], vec![10]));
        assert_eq!(layout(&m[1]), (vec![8, 8], vec![10, 1]));
        // A constant run of two rows per position keeps one value per row.
        let mut m = vec![ArgMode::Strided(SendPtr(std::ptr::null_mut()), vec![4, 16], vec![10, 0])];
        assert!(per_row(&k, &mut m)[0]);
        assert_eq!(layout(&m[0]), (vec![4, 2], vec![10, 0]));
    }

    #[test]
    fn other_readers_layouts_or_kernels_keep_the_filled_tile() {
        let keeps = |k: &TileKernel, mut m: Vec<ArgMode>| {
            let before = layout(&m[0]);
            assert!(per_row(k, &mut m).is_empty());
            assert_eq!(layout(&m[0]), before);
        };
        let mul = Instr::Binary { op: BinaryOp::Mul, dst: Reg(2), a: Reg(1), b: Reg(0) };
        // A comparison, a reduction of the column itself, a per-row result.
        let cmp = Instr::Binary { op: BinaryOp::Gt, dst: Reg(2), a: Reg(1), b: Reg(0) };
        keeps(&rows(vec![cmp]), modes());
        keeps(&rows(vec![mul, Instr::Reduce { op: ReduceOp::Sum, dst: Reg(3), src: Reg(0) }]), modes());
        // Never read; not a row kernel.
        keeps(&rows(vec![Instr::Reduce { op: ReduceOp::Sum, dst: Reg(3), src: Reg(1) }]), modes());
        let mut k = rows(vec![mul]);
        k.row_len = 0;
        keeps(&k, modes());
        // Constant along runs shorter than a row; constant along the outermost dim too.
        keeps(&rows(vec![mul]), vec![ArgMode::Strided(SendPtr(std::ptr::null_mut()), vec![16, 4], vec![10, 0])]);
        keeps(&rows(vec![mul]), vec![ArgMode::Strided(SendPtr(std::ptr::null_mut()), vec![8, 8], vec![0, 0])]);
    }
}
