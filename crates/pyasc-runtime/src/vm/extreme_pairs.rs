//! A row maximum and the position of that maximum (or a minimum and its position) of the same
//! float32 tile in one pass: a detector's best class score `c.max(axis=1)` beside its best class
//! `c.argmax(axis=1)`.
//!
//! Both reductions find each row's extreme, so a kernel that asks for both would scan every
//! row three times (the extreme twice, then its first position). [`pairs`] matches each such
//! pair of instructions once per launch; the VM runs the first of a pair as one row pass that
//! writes both results and skips the second. Values are bit-identical to the separate
//! reductions: the same kernel finds the extreme for both.
//!
//! When the pair's source is a product that nothing else reads, of an element tile and a
//! per-row value (`x[:, 5:] * x[:, 4:5]`), the pair multiplies as it reduces
//! ([`pyasc_kernels::scaled_extreme`]) and the multiply is skipped: the product is never
//! written. The YOLOv5 candidates kernel (1153 rows of 80) took 26-28 us back to back
//! instead of 31-33 us. When the element operand is an argument of whole contiguous rows
//! that nothing else reads (`x[:, 5:]` of the 85-column rows), the pair reads it in place
//! instead of gathering it into a tile ([`direct_rows`]): 24-25 -> 21-22 us.

use crate::instr::Val;
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::op::{BinaryOp, ReduceOp};
use pyasc_ir::tile::{Instr, Reg, RegKind, TileKernel};
use pyasc_ir::DType;

/// An instruction's part in a pair.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Pair {
    /// Not paired: runs as usual.
    Alone,
    /// The first of a pair: runs both reductions, the second's result written to `other`.
    /// `scaled`: the source is the product of an element register and a per-row one (or a
    /// scalar), computed by a [`Pair::Feed`] instruction that only this pair reads.
    First { max: bool, other: Reg, scaled: Option<(Reg, Reg)> },
    /// The second of a pair: its result is already written when its source is a tile.
    Second,
    /// The multiply that computes a scaled pair's source: skipped when the pair multiplies
    /// as it reduces (when its element operand `elem` is a tile in this launch).
    Feed { elem: Reg },
}

/// The pairing of `k`'s body, one entry per instruction: an arg reduction and a value
/// reduction of the same kind (max with argmax, min with argmin) over the same float32
/// source, with nothing in between writing the source or touching the second's result.
/// Empty when nothing pairs (or `k` is no row kernel). `row_args` marks the arguments read
/// one value per row in this launch.
pub(super) fn pairs(k: &TileKernel, row_args: &[bool]) -> Vec<Pair> {
    let mut out = Vec::new();
    if k.row_len == 0 {
        return out;
    }
    let extreme = |i: &Instr| match *i {
        Instr::Reduce { op, dst, src } => match op {
            ReduceOp::Max | ReduceOp::ArgMax => Some((true, matches!(op, ReduceOp::ArgMax), dst, src)),
            ReduceOp::Min | ReduceOp::ArgMin => Some((false, matches!(op, ReduceOp::ArgMin), dst, src)),
            _ => None,
        },
        _ => None,
    };
    for (j, ins) in k.body.iter().enumerate() {
        if out.get(j).is_some_and(|p| *p != Pair::Alone) {
            continue;
        }
        let Some((max, arg, dst, src)) = extreme(ins) else { continue };
        if k.regs[src.0 as usize].dtype != DType::F32 {
            continue;
        }
        // The arg reduction writes int64 positions, the value reduction float32 extremes.
        let dtypes_fit = |arg: bool, r: Reg| k.regs[r.0 as usize].dtype == if arg { DType::I64 } else { DType::F32 };
        for (m, later) in k.body.iter().enumerate().skip(j + 1) {
            if let Some((max2, arg2, dst2, src2)) = extreme(later) {
                let free = out.get(m).is_none_or(|p| *p == Pair::Alone);
                let fit = dtypes_fit(arg, dst) && dtypes_fit(arg2, dst2);
                if src2 == src && max2 == max && arg2 != arg && free && fit && dst2 != src {
                    let between = &k.body[j + 1..m];
                    let untouched =
                        between.iter().all(|i| i.dst() != src && i.dst() != dst2 && !i.srcs().contains(&dst2));
                    if untouched {
                        out.resize(k.body.len(), Pair::Alone);
                        let fed = feeding_product(k, row_args, j, m, [dst, dst2]);
                        out[j] = Pair::First { max, other: dst2, scaled: fed.map(|(_, e, r)| (e, r)) };
                        out[m] = Pair::Second;
                        if let Some((f, elem, _)) = fed {
                            out[f] = Pair::Feed { elem };
                        }
                    }
                    break;
                }
            }
            if later.dst() == src {
                break;
            }
        }
    }
    out
}

/// The float32 multiply that writes the source of the pair at `j` and `m` (results
/// `results`), when the pair can compute it as it reduces: its product is a scratch tile that
/// nothing else reads, one operand is an element tile and the other per row (or a scalar),
/// and nothing before the pair's second instruction writes either operand. Returns the
/// multiply's position, its element operand and its per-row operand.
fn feeding_product(
    k: &TileKernel,
    row_args: &[bool],
    j: usize,
    m: usize,
    results: [Reg; 2],
) -> Option<(usize, Reg, Reg)> {
    let src = k.body[j].srcs()[0];
    let f = k.body[..j].iter().rposition(|i| i.dst() == src)?;
    let Instr::Binary { op: BinaryOp::Mul, a, b, .. } = k.body[f] else { return None };
    let decl = |r: Reg| k.regs[r.0 as usize];
    let per_row = |r: Reg| {
        decl(r).row
            || row_args.get(r.0 as usize).copied().unwrap_or(false)
            || matches!(decl(r).kind, RegKind::Scalar(_))
    };
    let element = |r: Reg| !per_row(r) && matches!(decl(r).kind, RegKind::Tile | RegKind::Arg(_));
    let (e, r) = if element(a) && per_row(b) {
        (a, b)
    } else if element(b) && per_row(a) {
        (b, a)
    } else {
        return None;
    };
    let f32s = [src, e, r].iter().all(|x| decl(*x).dtype == DType::F32);
    let scratch = decl(src).kind == RegKind::Tile && !decl(src).row;
    let readers = k.body.iter().enumerate().filter(|(_, i)| i.srcs().contains(&src)).map(|(p, _)| p);
    let only_pair = readers.into_iter().all(|p| p == j || p == m);
    let kept = k.body[f + 1..=m].iter().all(|i| i.dst() != e && i.dst() != r);
    let apart = !results.contains(&e) && !results.contains(&r);
    (f32s && scratch && only_pair && kept && apart).then_some((f, e, r))
}

/// Runs the pair that `first` starts over `rows` rows of `row_len` float32 values in `vals`:
/// the extremes into the value reduction's register, their first positions (int64) into the
/// arg reduction's; `other` is the second instruction's result register.
///
/// # Safety
/// The source register must hold `rows * row_len` float32 values, the value register `rows`
/// float32 slots and the index register `rows` int64 slots.
pub(super) unsafe fn run(
    first: &Instr,
    other: Reg,
    max: bool,
    vals: &[Val],
    rows: usize,
    row_len: usize,
) -> Result<()> {
    let Instr::Reduce { op, dst, src } = *first else { return Err(IrError::internal("a pair starts at a reduction")) };
    let (value, index) = if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) { (other, dst) } else { (dst, other) };
    let ptr = |r: Reg| match vals[r.0 as usize] {
        Val::Ptr(p) => Ok(p),
        Val::Scalar(_) => Err(IrError::internal("a paired reduction without a tile")),
    };
    let (x, v, i) = (ptr(src)?, ptr(value)?, ptr(index)?);
    // SAFETY: per this function's contract.
    unsafe {
        pyasc_kernels::reduce::extreme_and_arg_rows_f32(
            std::slice::from_raw_parts(x as *const f32, rows * row_len),
            row_len,
            max,
            std::slice::from_raw_parts_mut(v as *mut f32, rows),
            std::slice::from_raw_parts_mut(i as *mut i64, rows),
        )
    };
    Ok(())
}

/// Runs a scaled pair (see [`Pair::First`]): each row of the element register `elem` times
/// its value of `scale` (one per row, or a scalar), reduced without writing the products.
/// The rows of `elem` start `stride` values apart (`row_len` for a tile, the argument's row
/// stride when it is read in place: [`direct_rows`]).
///
/// # Safety
/// As for [`run`], with `elem` holding `rows` rows of `row_len` float32 values `stride` apart
/// and `scale` `rows` float32 slots or a scalar.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run_scaled(
    first: &Instr,
    other: Reg,
    max: bool,
    (elem, scale): (Reg, Reg),
    vals: &[Val],
    rows: usize,
    row_len: usize,
    stride: usize,
) -> Result<()> {
    let Instr::Reduce { op, dst, .. } = *first else { return Err(IrError::internal("a pair starts at a reduction")) };
    let (value, index) = if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) { (other, dst) } else { (dst, other) };
    let ptr = |r: Reg| match vals[r.0 as usize] {
        Val::Ptr(p) => Ok(p),
        Val::Scalar(_) => Err(IrError::internal("a paired reduction without a tile")),
    };
    let (x, v, i) = (ptr(elem)?, ptr(value)?, ptr(index)?);
    let one;
    let scale: &[f32] = match vals[scale.0 as usize] {
        // SAFETY: per this function's contract, a per-row register holds `rows` values.
        Val::Ptr(p) => unsafe { std::slice::from_raw_parts(p as *const f32, rows) },
        Val::Scalar(s) => {
            one = [s.as_f64() as f32];
            &one
        }
    };
    // SAFETY: per this function's contract.
    unsafe {
        pyasc_kernels::scaled_extreme::scaled_extreme_and_arg_rows_f32(
            std::slice::from_raw_parts(x as *const f32, rows.saturating_sub(1) * stride + row_len),
            stride,
            scale,
            row_len,
            max,
            std::slice::from_raw_parts_mut(v as *mut f32, rows),
            std::slice::from_raw_parts_mut(i as *mut i64, rows),
        )
    };
    Ok(())
}

/// Per argument of `k`: the row stride (in elements) at which a scaled pair reads it in place,
/// without gathering it into a tile, when its only reader is the skipped multiply of a
/// scaled pair and its layout is whole contiguous rows (`x[:, 5:]` of a wider matrix).
pub(super) fn direct_rows(k: &TileKernel, pairs: &[Pair], modes: &[super::ArgMode]) -> Vec<Option<usize>> {
    let mut out = vec![None; modes.len()];
    for (j, p) in pairs.iter().enumerate() {
        let Pair::Feed { elem } = *p else { continue };
        let RegKind::Arg(a) = k.regs[elem.0 as usize].kind else { continue };
        let super::ArgMode::Strided(_, dims, st) = &modes[a as usize] else { continue };
        let rows_layout = dims.len() == 2 && dims[1] == k.row_len && st[1] == 1 && st[0] >= k.row_len as isize;
        let readers = k.body.iter().filter(|i| i.srcs().contains(&elem)).count();
        let alone = k.regs.iter().filter(|r| r.kind == RegKind::Arg(a)).count() == 1;
        if rows_layout && readers == 1 && alone && k.body[j].srcs().contains(&elem) {
            out[a as usize] = Some(st[0] as usize);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyasc_ir::op::BinaryOp;
    use pyasc_ir::tile::{RegDecl, RegKind};

    fn reduce(op: ReduceOp, dst: u16, src: u16) -> Instr {
        Instr::Reduce { op, dst: Reg(dst), src: Reg(src) }
    }

    /// A row kernel over rows of 8: r0 and r1 float32 tiles, r2 an int64 per-row result,
    /// r3 and r4 float32 per-row results.
    fn rows(body: Vec<Instr>) -> TileKernel {
        let reg = |dtype, row| RegDecl { dtype, kind: RegKind::Tile, row };
        let regs = vec![
            reg(DType::F32, false),
            reg(DType::F32, false),
            reg(DType::I64, true),
            reg(DType::F32, true),
            reg(DType::F32, true),
        ];
        let mut k = crate::test_kernel::kernel(64, 64, regs, body);
        k.row_len = 8;
        k
    }

    #[test]
    fn an_argmax_pairs_with_the_max_of_the_same_rows_in_either_order() {
        let k = rows(vec![reduce(ReduceOp::ArgMax, 2, 0), reduce(ReduceOp::Max, 3, 0)]);
        assert_eq!(pairs(&k, &[]), vec![Pair::First { max: true, other: Reg(3), scaled: None }, Pair::Second]);
        let k = rows(vec![reduce(ReduceOp::Min, 3, 0), reduce(ReduceOp::Sum, 4, 0), reduce(ReduceOp::ArgMin, 2, 0)]);
        assert_eq!(
            pairs(&k, &[]),
            vec![Pair::First { max: false, other: Reg(2), scaled: None }, Pair::Alone, Pair::Second]
        );
    }

    #[test]
    fn reductions_of_other_rows_kinds_or_a_changed_source_stay_alone() {
        let alone = |body: Vec<Instr>| assert!(pairs(&rows(body), &[]).iter().all(|p| *p == Pair::Alone));
        // Different sources, different kinds, two values.
        alone(vec![reduce(ReduceOp::ArgMax, 2, 0), reduce(ReduceOp::Max, 3, 1)]);
        alone(vec![reduce(ReduceOp::ArgMax, 2, 0), reduce(ReduceOp::Min, 3, 0)]);
        alone(vec![reduce(ReduceOp::Max, 4, 0), reduce(ReduceOp::Max, 3, 0)]);
        // The source is rewritten in between.
        let write = Instr::Binary { op: BinaryOp::Add, dst: Reg(0), a: Reg(1), b: Reg(1) };
        alone(vec![reduce(ReduceOp::ArgMax, 2, 0), write, reduce(ReduceOp::Max, 3, 0)]);
        // The second's result is read in between (it would be written too early).
        let read = Instr::Binary { op: BinaryOp::Add, dst: Reg(4), a: Reg(3), b: Reg(3) };
        alone(vec![reduce(ReduceOp::ArgMax, 2, 0), read, reduce(ReduceOp::Max, 3, 0)]);
        // Not a row kernel.
        let mut k = rows(vec![reduce(ReduceOp::ArgMax, 2, 0), reduce(ReduceOp::Max, 3, 0)]);
        k.row_len = 0;
        assert!(pairs(&k, &[]).is_empty());
    }
}
