//! Scans along one axis (`np.cumsum`, `np.cumprod`, `ufunc.accumulate`), run over the
//! worker pool.
//!
//! The operand is any strided view (transposed, reversed, broadcast); the output is
//! C-contiguous. Two shapes of work:
//!
//! * **columns**: when the axes after the scanned one are many and contiguous (a scan down
//!   axis 0 of a matrix), blocks of columns are scanned together, row after row, with one
//!   running value per column in a small buffer (vectorised across the columns).
//! * **lines**: otherwise each line along the axis is scanned on its own, in fixed blocks of
//!   [`BLOCK`] elements (strided lines through a small buffer). Many lines are spread over
//!   the workers; a few long lines are split: every block's total is computed in parallel,
//!   the totals are folded in order into each block's carry, and the blocks are scanned in
//!   parallel from their carries. A line gives the same bits either way, so results never
//!   depend on the thread count.
//!
//! [`scan_rows`] runs the same segment primitives over the rows of one tile: the row scan
//! instruction of fused row kernels (a row gives the same bits there as here).

use crate::library::LibraryKernel;
use crate::pool::{for_blocks, num_threads};
use crate::view::InputView;
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::library::{LibCall, ScanKind};
use pyasc_ir::tile::TileKernel;
use pyasc_ir::{Attr, DType, LibId};
use pyasc_kernels::scan::{columns, LogSumExp, Max, Min, Prod, ScanOp, Sum};

/// Elements of a line scanned as one block (and the unit a long line is split into).
pub const BLOCK: usize = 1 << 16;
/// Elements of a strided line moved through the buffer at a time (a multiple of the SIMD width).
const CHUNK: usize = 2048;
/// Columns scanned together (at most).
const COLUMNS: usize = 256;
/// Below this many elements a scan runs on the calling thread alone.
const PARALLEL_MIN: usize = 1 << 15;

/// `out = scan(x)` along `axis`, with `out` C-contiguous of `x`'s shape and dtype.
///
/// # Safety
/// `x` must be a live view and `out` writable for its elements.
pub unsafe fn run_scan(x: &InputView, out: *mut u8, kind: ScanKind, axis: usize) -> Result<()> {
    // SAFETY: per this function's contract.
    unsafe { run_scan_with(x, out, kind, axis, Split::Auto) }
}

/// How lines are spread over the workers (tests force each way).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Split {
    /// Whole lines per worker when there are enough of them, else blocks of long lines.
    Auto,
    /// Whole lines per worker.
    Lines,
    /// Blocks of lines in parallel (totals first).
    Blocks,
}

/// [`run_scan`] with the split chosen.
///
/// # Safety
/// As for [`run_scan`].
pub unsafe fn run_scan_with(x: &InputView, out: *mut u8, kind: ScanKind, axis: usize, split: Split) -> Result<()> {
    if axis >= x.shape.len() {
        return Err(IrError::internal("scan axis out of range"));
    }
    struct Whole<'a> {
        x: &'a InputView,
        out: *mut u8,
        axis: usize,
        split: Split,
    }
    impl WithOp for Whole<'_> {
        unsafe fn run<S: ScanOp>(self, op: S) -> Result<()> {
            // SAFETY: per `run_scan_with`'s contract; the dtype matches the op's element type.
            unsafe { drive(op, self.x, self.out.cast(), self.axis, self.split) }
        }
    }
    // SAFETY: per this function's contract.
    unsafe { with_op(kind, x.dtype, Whole { x, out, axis, split }) }
}

/// `out[r, :] = scan(x[r, :])` for `rows` rows of `len` elements, both C-contiguous: the row
/// scan instruction of a fused row kernel, on the tile it computes.
///
/// # Safety
/// `x` must hold `rows * len` elements of `dtype` and `out` be writable for as many, not
/// overlapping `x`.
pub unsafe fn scan_rows(
    kind: ScanKind,
    dtype: DType,
    x: *const u8,
    out: *mut u8,
    rows: usize,
    len: usize,
) -> Result<()> {
    struct Rows {
        x: *const u8,
        out: *mut u8,
        rows: usize,
        len: usize,
    }
    impl WithOp for Rows {
        unsafe fn run<S: ScanOp>(self, op: S) -> Result<()> {
            let (x, out) = (self.x as *const S::T, self.out as *mut S::T);
            for r in 0..self.rows {
                // SAFETY: row `r` of both tiles lies inside them (the caller's contract).
                unsafe {
                    let xs = std::slice::from_raw_parts(x.add(r * self.len), self.len);
                    let os = std::slice::from_raw_parts_mut(out.add(r * self.len), self.len);
                    op.run(xs, Some(os), None, op.identity());
                }
            }
            Ok(())
        }
    }
    // SAFETY: per this function's contract.
    unsafe { with_op(kind, dtype, Rows { x, out, rows, len }) }
}

/// Work generic over the scan operation, run by [`with_op`] with the op of a kind and dtype.
pub(crate) trait WithOp {
    /// Run with `op`.
    ///
    /// # Safety
    /// The memory the work touches holds `S::T` elements.
    unsafe fn run<S: ScanOp>(self, op: S) -> Result<()>;
}

/// Run `work` with the scan op of `kind` on `dtype` elements (bools as 0/1 bytes: sums are
/// running ors, products running ands); the one match on dtypes of the scan routines.
///
/// # Safety
/// As for [`WithOp::run`], with elements of `dtype`.
pub(crate) unsafe fn with_op<W: WithOp>(kind: ScanKind, dtype: DType, work: W) -> Result<()> {
    macro_rules! go {
        ($op:expr) => {
            // SAFETY: per this function's contract; the dtype matches the op's element type.
            unsafe { work.run($op) }
        };
    }
    macro_rules! num {
        ($t:ty) => {
            match kind {
                ScanKind::Sum => go!(Sum::<$t>::default()),
                ScanKind::Prod => go!(Prod::<$t>::default()),
                ScanKind::Max => go!(Max::<$t>::default()),
                ScanKind::Min => go!(Min::<$t>::default()),
                ScanKind::LogSumExp => unsupported(kind, dtype),
            }
        };
    }
    match dtype {
        DType::Bool => match kind {
            ScanKind::Sum | ScanKind::Max => go!(Max::<u8>::default()),
            ScanKind::Prod | ScanKind::Min => go!(Min::<u8>::default()),
            ScanKind::LogSumExp => unsupported(kind, dtype),
        },
        DType::I8 => num!(i8),
        DType::U8 => num!(u8),
        DType::I16 => num!(i16),
        DType::U16 => num!(u16),
        DType::I32 => num!(i32),
        DType::U32 => num!(u32),
        DType::I64 => num!(i64),
        DType::U64 => num!(u64),
        DType::F32 => match kind {
            ScanKind::LogSumExp => go!(LogSumExp::<f32>::default()),
            _ => num!(f32),
        },
        DType::F64 => match kind {
            ScanKind::LogSumExp => go!(LogSumExp::<f64>::default()),
            _ => num!(f64),
        },
        _ => unsupported(kind, dtype),
    }
}

fn unsupported(kind: ScanKind, dtype: DType) -> Result<()> {
    Err(IrError::internal(format!("no {} routine for {dtype}", kind.name())))
}

/// Element offset of flat index `i` over `dims` with `strides` (C order).
fn offset(mut i: usize, dims: &[usize], strides: &[isize]) -> isize {
    let mut off = 0isize;
    for d in (0..dims.len()).rev() {
        off += (i % dims[d]) as isize * strides[d];
        i /= dims[d];
    }
    off
}

/// The single stride of `dims` when they walk memory as one axis (`Some(1)` when empty).
fn linear(dims: &[usize], strides: &[isize]) -> Option<isize> {
    let mut stride: Option<isize> = None;
    let mut extent = 1usize;
    for d in (0..dims.len()).rev() {
        if dims[d] == 1 {
            continue;
        }
        match stride {
            None => stride = Some(strides[d]),
            Some(s) if strides[d] == s * extent as isize => {}
            Some(_) => return None,
        }
        extent *= dims[d];
    }
    Some(stride.unwrap_or(1))
}

/// A raw address shared by the workers.
#[derive(Copy, Clone)]
struct Addr(usize);

/// The axes around the scanned one, with the views' layout.
struct Layout<'a> {
    outer_dims: &'a [usize],
    outer_strides: &'a [isize],
    inner_dims: &'a [usize],
    inner_strides: &'a [isize],
    /// The inner axes as one stride, when they are.
    inner_linear: Option<isize>,
    /// Elements along the scanned axis and its stride.
    n: usize,
    stride: isize,
    outer: usize,
    inner: usize,
}

impl Layout<'_> {
    fn inner_offset(&self, i: usize) -> isize {
        match self.inner_linear {
            Some(s) => i as isize * s,
            None => offset(i, self.inner_dims, self.inner_strides),
        }
    }
}

/// # Safety
/// `x` holds `S::T` elements over its view; `out` is writable for them, C-contiguous.
unsafe fn drive<S: ScanOp>(op: S, x: &InputView, out: *mut S::T, axis: usize, split: Split) -> Result<()> {
    let numel: usize = x.shape.iter().product();
    if numel == 0 {
        return Ok(());
    }
    let inner_linear = linear(&x.shape[axis + 1..], &x.strides[axis + 1..]);
    let l = Layout {
        outer_dims: &x.shape[..axis],
        outer_strides: &x.strides[..axis],
        inner_dims: &x.shape[axis + 1..],
        inner_strides: &x.strides[axis + 1..],
        inner_linear,
        n: x.shape[axis],
        stride: x.strides[axis],
        outer: x.shape[..axis].iter().product(),
        inner: x.shape[axis + 1..].iter().product(),
    };
    let helpers = if numel >= PARALLEL_MIN { num_threads() - 1 } else { 0 };
    let (src, dst) = (Addr(x.ptr as usize), Addr(out as usize));
    if l.inner >= 16 && l.inner_linear == Some(1) {
        // SAFETY: per this function's contract.
        unsafe { by_columns(op, &l, src, dst, helpers) }
    } else {
        // SAFETY: as above.
        unsafe { by_lines(op, &l, src, dst, helpers, split) }
    }
}

/// Fails once the launch running this scan is cancelled (Ctrl-C): checked before each unit
/// of work, so a long scan stops within one unit.
fn check(token: &Option<std::sync::Arc<crate::interrupt::Token>>) -> Result<()> {
    token.as_ref().map_or(Ok(()), |t| t.check())
}

/// # Safety
/// As for [`drive`], with the inner axes contiguous.
unsafe fn by_columns<S: ScanOp>(op: S, l: &Layout<'_>, src: Addr, dst: Addr, helpers: usize) -> Result<()> {
    let token = crate::interrupt::current();
    // Narrower blocks (down to 16 columns) when there are too few for every worker.
    let wanted = 4 * (helpers + 1);
    let width = l.inner.div_ceil(wanted.div_ceil(l.outer)).next_multiple_of(16).clamp(16, COLUMNS);
    let per_outer = l.inner.div_ceil(width);
    let units = l.outer * per_outer;
    for_blocks(units, helpers, |u| -> Result<()> {
        check(&token)?;
        let (o, c0) = (u / per_outer, (u % per_outer) * width);
        let w = width.min(l.inner - c0);
        let mut acc = vec![op.identity(); w];
        let xo = offset(o, l.outer_dims, l.outer_strides) + c0 as isize;
        let oo = (o * l.n * l.inner + c0) as isize;
        // SAFETY: rows of `w` columns starting at `c0` lie inside both views.
        unsafe {
            columns(
                op,
                &mut acc,
                (src.0 as *const S::T).offset(xo),
                l.stride,
                (dst.0 as *mut S::T).offset(oo),
                l.inner as isize,
                l.n,
            )
        };
        Ok(())
    })
}

/// One line: where it starts in the input and the output, and their strides.
#[derive(Copy, Clone)]
struct Line {
    x: isize,
    out: isize,
    out_stride: isize,
}

fn line(l: &Layout<'_>, i: usize) -> Line {
    let (o, k) = (i / l.inner, i % l.inner);
    Line {
        x: offset(o, l.outer_dims, l.outer_strides) + l.inner_offset(k),
        out: (o * l.n * l.inner + k) as isize,
        out_stride: l.inner as isize,
    }
}

/// Scan block `b` of `line` from `carry`, storing when `store`; returns the block's total.
///
/// # Safety
/// As for [`drive`]; `buf` is scratch space the caller owns.
#[allow(clippy::too_many_arguments)]
unsafe fn block<S: ScanOp>(
    op: S,
    l: &Layout<'_>,
    src: Addr,
    dst: Addr,
    ln: Line,
    b: usize,
    carry: Option<S::A>,
    store: bool,
    buf: &mut Vec<S::T>,
) -> S::A {
    let (start, end) = (b * BLOCK, ((b + 1) * BLOCK).min(l.n));
    let x = (src.0 as *const S::T).wrapping_offset(ln.x + start as isize * l.stride);
    let out = (dst.0 as *mut S::T).wrapping_offset(ln.out + start as isize * ln.out_stride);
    let len = end - start;
    let mut r = op.identity();
    if l.stride == 1 && ln.out_stride == 1 {
        // SAFETY: the block lies inside both views, which do not overlap.
        unsafe {
            let xs = std::slice::from_raw_parts(x, len);
            let os = store.then(|| std::slice::from_raw_parts_mut(out, len));
            return op.run(xs, os, carry, r);
        }
    }
    if buf.len() < 2 * CHUNK {
        buf.resize(2 * CHUNK, op.store(op.identity()));
    }
    let (bx, bo) = buf.split_at_mut(CHUNK);
    let mut c = 0;
    while c < len {
        let m = CHUNK.min(len - c);
        // SAFETY: elements c..c + m of the block lie inside the views.
        unsafe {
            let xs: &[S::T] = if l.stride == 1 {
                std::slice::from_raw_parts(x.add(c), m)
            } else {
                for (j, v) in bx[..m].iter_mut().enumerate() {
                    *v = *x.offset((c + j) as isize * l.stride);
                }
                &bx[..m]
            };
            if !store {
                r = op.run(xs, None, carry, r);
            } else if ln.out_stride == 1 {
                r = op.run(xs, Some(std::slice::from_raw_parts_mut(out.add(c), m)), carry, r);
            } else {
                r = op.run(xs, Some(&mut bo[..m]), carry, r);
                for (j, v) in bo[..m].iter().enumerate() {
                    *out.offset((c + j) as isize * ln.out_stride) = *v;
                }
            }
        }
        c += m;
    }
    r
}

/// The carry into the block after one with carry `c` and total `t`.
fn fold<S: ScanOp>(op: S, c: Option<S::A>, t: S::A) -> Option<S::A> {
    Some(match c {
        None => t,
        Some(c) => op.combine(c, t),
    })
}

/// # Safety
/// As for [`drive`].
unsafe fn by_lines<S: ScanOp>(op: S, l: &Layout<'_>, src: Addr, dst: Addr, helpers: usize, split: Split) -> Result<()> {
    let token = crate::interrupt::current();
    let lines = l.outer * l.inner;
    let nb = l.n.div_ceil(BLOCK);
    let blocks = match split {
        Split::Auto => nb > 1 && lines < 2 * (helpers + 1) && helpers > 0,
        Split::Lines => false,
        Split::Blocks => true,
    };
    if !blocks {
        // Whole lines per unit, enough of them that a unit is worth a claim.
        let per = (BLOCK / l.n.max(1)).clamp(1, lines);
        return for_blocks(lines.div_ceil(per), helpers, |u| -> Result<()> {
            check(&token)?;
            let mut buf = Vec::new();
            for i in u * per..((u + 1) * per).min(lines) {
                let ln = line(l, i);
                let mut carry = None;
                for b in 0..nb {
                    // SAFETY: per this function's contract.
                    let t = unsafe { block(op, l, src, dst, ln, b, carry, true, &mut buf) };
                    carry = fold(op, carry, t);
                }
            }
            Ok(())
        });
    }
    // Totals of every block but each line's last, in parallel.
    let totals: Vec<std::sync::Mutex<Option<S::A>>> = (0..lines * nb).map(|_| std::sync::Mutex::new(None)).collect();
    for_blocks(lines * nb, helpers, |u| -> Result<()> {
        check(&token)?;
        let (i, b) = (u / nb, u % nb);
        if b + 1 < nb {
            let mut buf = Vec::new();
            // SAFETY: per this function's contract.
            let t = unsafe { block(op, l, src, dst, line(l, i), b, None, false, &mut buf) };
            *totals[u].lock().expect("scan totals") = Some(t);
        }
        Ok(())
    })?;
    // Each block's carry: the totals before it, folded in order.
    let mut carries: Vec<Option<S::A>> = Vec::with_capacity(lines * nb);
    for i in 0..lines {
        let mut c = None;
        for b in 0..nb {
            carries.push(c);
            if b + 1 < nb {
                let t = totals[i * nb + b].lock().expect("scan totals").expect("every total computed");
                c = fold(op, c, t);
            }
        }
    }
    for_blocks(lines * nb, helpers, |u| -> Result<()> {
        check(&token)?;
        let mut buf = Vec::new();
        // SAFETY: per this function's contract.
        unsafe { block(op, l, src, dst, line(l, u / nb), u % nb, carries[u], true, &mut buf) };
        Ok(())
    })
}

/// Scans as a library routine.
pub struct ScanKernel;

impl LibraryKernel for ScanKernel {
    fn id(&self) -> LibId {
        LibId::SCAN
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match (&call.attr, operands) {
            // SAFETY: per the trait's contract.
            (Attr::Scan(kind, axis), [x]) => unsafe { run_scan(x, out, *kind, *axis) },
            _ => Err(IrError::internal("a scan takes one operand and a scan attribute")),
        }
    }
}
