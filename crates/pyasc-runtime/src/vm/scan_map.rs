//! The fused row scan of row kernels ([`Instr::ScanMap`](pyasc_ir::tile::Instr::ScanMap)):
//! `post(scan(pre(x)))` along every row with the input read once and the destination written
//! once. float32 running sums whose steps take broadcast scalars run the steps in the scan's
//! own registers where the ISA allows ([`pyasc_kernels::scan_map`]). Otherwise each row is
//! walked in chunks that fit the first-level cache: the steps before the scan run from the
//! input into a chunk buffer, the scan continues the row's running value through the chunk
//! into a second buffer (or straight into the destination), and the steps after it run from
//! there into the destination. Every step is the elementwise kernel its unfused instruction
//! runs, and a row scanned in chunks gives the bits of one scanned whole (the running value
//! carries across), so results are the unfused program's to the bit.

use crate::instr::{exec_binary, write_scalar, Val};
use crate::scan::{with_op, WithOp};
use pyasc_ir::error::Result;
use pyasc_ir::library::ScanKind;
use pyasc_ir::tile::MapStep;
use pyasc_ir::DType;
use pyasc_kernels::scan::{ScanOp, Sum};
use pyasc_kernels::scan_map::{sum_map_f32, Step, MAX_STEPS};

/// Bytes of one chunk buffer: two of them and a chunk of input and output stay in L1.
const CHUNK_BYTES: usize = 4096;

/// `dst[r, :] = post(scan(pre(src[r, :])))` for `rows` rows of `row_len` elements of `dtype`:
/// `steps.all[..steps.pre]` are applied before the scan, the rest after it, each with its
/// operand (an element tile laid out as the rows, or a broadcast scalar).
///
/// # Safety
/// `src` and every step operand (unless scalars) must address `rows * row_len` elements of
/// `dtype`; `dst` must be writable for as many and overlap none of them.
pub unsafe fn scan_map_rows(
    kind: ScanKind,
    dtype: DType,
    src: Val,
    steps: Steps<'_>,
    dst: Val,
    rows: usize,
    row_len: usize,
) -> Result<()> {
    let Val::Ptr(dst) = dst else { return Err(pyasc_ir::error::IrError::internal("scan into a scalar register")) };
    let work = Rows { dtype, src, steps: steps.all, pre: steps.pre.min(steps.all.len()), dst, rows, row_len };
    // SAFETY: per this function's contract.
    if unsafe { in_registers(kind, &work) } {
        return Ok(());
    }
    // SAFETY: per this function's contract.
    unsafe { with_op(kind, dtype, work) }
}

/// The steps of a fused scan with their operands: `all[..pre]` come before the scan.
#[derive(Copy, Clone)]
pub struct Steps<'a> {
    /// Every step with its operand's value.
    pub all: &'a [(MapStep, Val)],
    /// How many come before the scan.
    pub pre: usize,
}

/// float32 running sums whose steps all take broadcast scalars, with the steps in the scan's
/// registers ([`pyasc_kernels::scan_map`]); false (nothing written) where that has no form
/// for these operands or this ISA.
///
/// # Safety
/// As for [`scan_map_rows`].
unsafe fn in_registers(kind: ScanKind, w: &Rows<'_>) -> bool {
    let (dtype, steps, pre, dst, rows, row_len) = (w.dtype, w.steps, w.pre, w.dst, w.rows, w.row_len);
    let Val::Ptr(x) = w.src else { return false };
    if kind != ScanKind::Sum || dtype != DType::F32 || steps.len() > MAX_STEPS {
        return false;
    }
    let mut scalar = [Step { op: pyasc_ir::op::BinaryOp::Add, swap: false, arg: 0.0 }; MAX_STEPS];
    for (d, (s, v)) in scalar.iter_mut().zip(steps) {
        let Val::Scalar(c) = v else { return false };
        if !Step::supported(s.op) {
            return false;
        }
        *d = Step { op: s.op, swap: s.swap, arg: c.as_f64() as f32 };
    }
    let (before, after) = scalar[..steps.len()].split_at(pre.min(steps.len()));
    let op = Sum::<f32>::default();
    for r in 0..rows {
        // SAFETY: row `r` of the source and the destination lies inside them (the caller's contract).
        let (xs, os) = unsafe {
            (
                std::slice::from_raw_parts((x as *const f32).add(r * row_len), row_len),
                std::slice::from_raw_parts_mut((dst as *mut f32).add(r * row_len), row_len),
            )
        };
        if sum_map_f32(xs, os, before, after, op.identity()).is_none() {
            // No fused scan here: the first row returns before anything is written.
            return false;
        }
    }
    true
}

/// The operands of [`scan_map_rows`].
struct Rows<'a> {
    dtype: DType,
    src: Val,
    steps: &'a [(MapStep, Val)],
    pre: usize,
    dst: *mut u8,
    rows: usize,
    row_len: usize,
}

/// `v` moved on by `elems` elements of `size` bytes (scalars stay as they are).
///
/// # Safety
/// A pointer must stay inside its allocation.
unsafe fn at(v: Val, elems: usize, size: usize) -> Val {
    match v {
        // SAFETY: per the contract.
        Val::Ptr(p) => Val::Ptr(unsafe { p.add(elems * size) }),
        s => s,
    }
}

impl WithOp for Rows<'_> {
    unsafe fn run<S: ScanOp>(self, op: S) -> Result<()> {
        let size = self.dtype.size();
        let chunk = (CHUNK_BYTES / size).max(1);
        let mut store = [[0u64; CHUNK_BYTES / 8]; 2];
        let [b0, b1] = &mut store;
        let bufs = [b0.as_mut_ptr() as *mut u8, b1.as_mut_ptr() as *mut u8];
        let (before, after) = self.steps.split_at(self.pre);
        // The buffer a step writes: the one its input is not in.
        let next = |held: Option<usize>| held.map_or(0, |b| b ^ 1);
        for r in 0..self.rows {
            let mut acc = op.identity();
            let mut i = 0;
            while i < self.row_len {
                let m = chunk.min(self.row_len - i);
                let first = r * self.row_len + i;
                // SAFETY: elements first..first + m of every operand and of the destination lie
                // inside them (the caller's contract); the buffers hold `chunk` elements.
                unsafe {
                    let out = self.dst.add(first * size);
                    let mut cur = at(self.src, first, size);
                    let mut held = None;
                    for (s, arg) in before {
                        let b = next(held);
                        let arg = at(*arg, first, size);
                        let (x, y) = if s.swap { (arg, cur) } else { (cur, arg) };
                        exec_binary(s.op, self.dtype, x, y, Val::Ptr(bufs[b]), m)?;
                        (cur, held) = (Val::Ptr(bufs[b]), Some(b));
                    }
                    let input = match cur {
                        Val::Ptr(p) => p as *const S::T,
                        Val::Scalar(v) => {
                            // A broadcast value: each element of the chunk is that value.
                            let b = next(held);
                            for e in 0..m {
                                write_scalar(bufs[b].add(e * size), self.dtype, v)?;
                            }
                            held = Some(b);
                            bufs[b] as *const S::T
                        }
                    };
                    let (scanned, into) = if after.is_empty() {
                        (out, None)
                    } else {
                        let b = next(held);
                        (bufs[b], Some(b))
                    };
                    let xs = std::slice::from_raw_parts(input, m);
                    let os = std::slice::from_raw_parts_mut(scanned as *mut S::T, m);
                    acc = op.run(xs, Some(os), None, acc);
                    (cur, held) = (Val::Ptr(scanned), into);
                    for (k, (s, arg)) in after.iter().enumerate() {
                        let b = next(held);
                        let target = if k + 1 == after.len() { out } else { bufs[b] };
                        let arg = at(*arg, first, size);
                        let (x, y) = if s.swap { (arg, cur) } else { (cur, arg) };
                        exec_binary(s.op, self.dtype, x, y, Val::Ptr(target), m)?;
                        (cur, held) = (Val::Ptr(target), Some(b));
                    }
                }
                i += m;
            }
        }
        Ok(())
    }
}
