//! Row-wise modes of the sort op: every row along the axis (any strides) is read into
//! scratch, processed, and written into the C-contiguous output; blocks of rows are spread
//! over the worker pool.

use super::keys::Elem;
use super::radix::{sort_keys, sort_pairs, Pair};
use super::{select, simd};
use crate::view::InputView;
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::library::{SortMode, SortSpec};

/// Rows along one axis of a strided view: `outer` x `inner` rows of `n` elements.
pub struct Geometry {
    outer_shape: Vec<usize>,
    outer_strides: Vec<isize>,
    inner_shape: Vec<usize>,
    inner_strides: Vec<isize>,
    /// Elements per row.
    pub n: usize,
    /// Distance between neighbours in a row.
    pub stride: isize,
    /// Rows over the axes before the axis.
    pub outer: usize,
    /// Rows over the axes after it.
    pub inner: usize,
}

impl Geometry {
    /// The rows of `shape`/`strides` along `axis`.
    pub fn new(shape: &[usize], strides: &[isize], axis: usize) -> Geometry {
        Geometry {
            outer_shape: shape[..axis].to_vec(),
            outer_strides: strides[..axis].to_vec(),
            inner_shape: shape[axis + 1..].to_vec(),
            inner_strides: strides[axis + 1..].to_vec(),
            n: shape[axis],
            stride: strides[axis],
            outer: shape[..axis].iter().product(),
            inner: shape[axis + 1..].iter().product(),
        }
    }

    /// Element offset of the first element of row `r` (`r = o * inner + i`).
    pub fn offset(&self, r: usize) -> isize {
        let (mut o, mut i) = (r / self.inner.max(1), r % self.inner.max(1));
        let mut off = 0isize;
        for d in (0..self.inner_shape.len()).rev() {
            off += (i % self.inner_shape[d]) as isize * self.inner_strides[d];
            i /= self.inner_shape[d];
        }
        for d in (0..self.outer_shape.len()).rev() {
            off += (o % self.outer_shape[d]) as isize * self.outer_strides[d];
            o /= self.outer_shape[d];
        }
        off
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.outer * self.inner
    }
}

/// A pointer shared by the workers, each writing its own rows.
#[derive(Copy, Clone)]
struct Shared(*mut u8);
// SAFETY: workers write disjoint rows; the data outlives the launch.
unsafe impl Sync for Shared {}
// SAFETY: as above.
unsafe impl Send for Shared {}

/// Read `n` elements at `p`, `stride` apart, into `buf`.
///
/// # Safety
/// The elements must be readable.
#[inline]
pub unsafe fn read_row<T: Copy>(p: *const T, n: usize, stride: isize, buf: &mut Vec<T>) {
    buf.clear();
    buf.reserve(n);
    if stride == 1 {
        // SAFETY: per the contract.
        unsafe {
            std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), n);
            buf.set_len(n);
        }
    } else {
        // SAFETY: per the contract.
        buf.extend((0..n).map(|j| unsafe { *p.offset(j as isize * stride) }));
    }
}

/// Run `f` over row ranges, in parallel when the work is large enough. Each range is run in
/// pieces of about 64 Ki elements, with the launch's cancellation (Ctrl-C) checked before each.
fn par_rows(rows: usize, per_row: usize, f: impl Fn(std::ops::Range<usize>) -> Result<()> + Sync) -> Result<()> {
    let threads = crate::pool::num_threads();
    let work = rows.saturating_mul(per_row.max(1));
    let token = crate::interrupt::current();
    let piece = ((1usize << 16) / per_row.max(1)).max(1);
    let run = |range: std::ops::Range<usize>| -> Result<()> {
        let mut start = range.start;
        while start < range.end {
            if let Some(t) = &token {
                t.check()?;
            }
            let end = (start + piece).min(range.end);
            f(start..end)?;
            start = end;
        }
        Ok(())
    };
    let blocks = if threads == 1 || work < 1 << 15 { 1 } else { rows.min(threads * 8) };
    if blocks <= 1 {
        return run(0..rows);
    }
    crate::pool::for_blocks(blocks, threads - 1, |b| run(b * rows / blocks..(b + 1) * rows / blocks))
}

/// Output extent along the axis of a row mode (the order statistics drop it).
fn out_extent(mode: &SortMode, n: usize, idx_n: usize) -> usize {
    match mode {
        SortMode::TopK(k) => *k,
        SortMode::Gather => idx_n,
        SortMode::Quantile { .. } | SortMode::Median { .. } => 1,
        _ => n,
    }
}

/// Run a row mode of `spec` over `operands[0]` (and the indices of a gather).
///
/// # Safety
/// The operands must be readable over their views and `out` writable for the result.
pub unsafe fn run<T: Elem>(spec: &SortSpec, operands: &[&InputView], out: *mut u8) -> Result<()> {
    let x = operands[0];
    let axis = spec.axis;
    let g = Geometry::new(&x.shape, &x.strides, axis);
    let gi = match spec.mode {
        SortMode::Gather => {
            let idx = operands.get(1).ok_or_else(|| IrError::internal("a gather needs indices"))?;
            Some(Geometry::new(&idx.shape, &idx.strides, axis))
        }
        _ => None,
    };
    if g.n > u32::MAX as usize {
        return Err(IrError::new(
            ErrorKind::Unsupported,
            format!("sorting rows of {} elements (at most 2^32 - 1)", g.n),
        ));
    }
    let m = out_extent(&spec.mode, g.n, gi.as_ref().map_or(0, |gi| gi.n));
    let rows = g.rows();
    if rows == 0 || m == 0 {
        return Ok(());
    }
    let xp = Shared(x.ptr as *mut u8);
    let op = Shared(out);
    let ip = Shared(operands.get(1).map_or(std::ptr::null(), |v| v.ptr) as *mut u8);
    let inner = g.inner.max(1);
    par_rows(rows, g.n.max(m), |range| {
        let (xp, op, ip) = (&xp, &op, &ip);
        let mut s = Scratch::<T>::default();
        for r in range {
            let (o, i) = (r / inner, r % inner);
            // SAFETY: the row lies in the operand; offsets come from its shape and strides.
            unsafe { read_row((xp.0 as *const T).offset(g.offset(r)), g.n, g.stride, &mut s.row) };
            // Output row r: element j at (o * m + j) * inner + i.
            let base = (o * m * inner + i) as isize;
            let step = inner as isize;
            // SAFETY: each row writes its own elements of the output.
            unsafe {
                match &spec.mode {
                    SortMode::Sort => sort_row(&mut s, op.0 as *mut T, base, step),
                    SortMode::ArgSort { .. } => {
                        argsort(&mut s);
                        write(op.0 as *mut i64, base, step, s.pairs.iter().map(|p| p.idx as i64));
                    }
                    SortMode::Partition(ks) => {
                        s.keys.clear();
                        s.keys.extend(s.row.iter().map(|v| v.key()));
                        if ks.len() == 1 {
                            s.keys.select_nth_unstable(ks[0]);
                        } else {
                            sort_keys(&mut s.keys, &mut s.tmp);
                        }
                        write(op.0 as *mut T, base, step, s.keys.iter().map(|k| T::from_key(*k)));
                    }
                    SortMode::ArgPartition(ks) => {
                        s.pairs.clear();
                        s.pairs.extend(s.row.iter().enumerate().map(|(j, v)| Pair { key: v.ckey(), idx: j as u32 }));
                        if ks.len() == 1 {
                            s.pairs.select_nth_unstable(ks[0]);
                        } else {
                            sort_pairs(&mut s.pairs, &mut s.ptmp);
                        }
                        write(op.0 as *mut i64, base, step, s.pairs.iter().map(|p| p.idx as i64));
                    }
                    SortMode::TopK(k) => {
                        select::top_k(&s.row, *k, &mut s.pairs, &mut s.ptmp);
                        write(op.0 as *mut i64, base, step, s.pairs.iter().map(|p| p.idx as i64));
                    }
                    SortMode::Gather => {
                        let gi = gi.as_ref().expect("a gather has indices");
                        let ids = (ip.0 as *const i64).offset(gi.offset(r));
                        for j in 0..m {
                            let v = *ids.offset(j as isize * gi.stride);
                            let jj = if v < 0 { v + g.n as i64 } else { v };
                            if jj < 0 || jj >= g.n as i64 {
                                return Err(IrError::new(
                                    ErrorKind::Shape,
                                    format!("index {v} is out of bounds for an axis of length {}", g.n),
                                ));
                            }
                            *(op.0 as *mut T).offset(base + j as isize * step) = s.row[jj as usize];
                        }
                    }
                    SortMode::Median { skip_nan } => {
                        let v = select::median(&s.row, *skip_nan, &mut s.keys);
                        select::store_stat::<T>(op.0, spec_f32::<T>(true), r, v);
                    }
                    SortMode::Quantile { q, skip_nan, weak_q, .. } => {
                        let f32_out = spec_f32::<T>(*weak_q);
                        select::quantiles(&s.row, q, *skip_nan, f32_out, &mut s.keys, &mut s.stats);
                        for (qi, v) in s.stats.iter().enumerate() {
                            select::store_stat::<T>(op.0, f32_out, qi * rows + r, *v);
                        }
                    }
                    SortMode::SearchSorted { .. } | SortMode::Unique { .. } => {
                        return Err(IrError::internal("not a row mode"));
                    }
                }
            }
        }
        Ok(())
    })
}

/// True when an order statistic of `T` is float32 (float32 input and a weak `q`).
fn spec_f32<T: Elem>(weak: bool) -> bool {
    weak && std::mem::size_of::<T>() == 4 && T::FLOAT
}

/// Per-worker scratch.
pub struct Scratch<T: Elem> {
    row: Vec<T>,
    keys: Vec<T::K>,
    tmp: Vec<T::K>,
    tmp32: Vec<u32>,
    pairs: Vec<Pair<T::K>>,
    ptmp: Vec<Pair<T::K>>,
    stats: Vec<f64>,
}

impl<T: Elem> Default for Scratch<T> {
    fn default() -> Self {
        Scratch { row: vec![], keys: vec![], tmp: vec![], tmp32: vec![], pairs: vec![], ptmp: vec![], stats: vec![] }
    }
}

/// Sort the row in `s` and write it at `out + base`, `step` apart. The key maps around the
/// sort are compiled for AVX-512 and AVX2 too (the compiler vectorises them), chosen at run
/// time.
///
/// # Safety
/// The output positions must be writable.
unsafe fn sort_row<T: Elem>(s: &mut Scratch<T>, out: *mut T, base: isize, step: isize) {
    #[cfg(target_arch = "x86_64")]
    {
        use pyasc_kernels::isa::{active, Isa};
        match active() {
            // SAFETY: the ISA was detected on this CPU; per the contract.
            Isa::Avx512 => return unsafe { sort_row_avx512(s, out, base, step) },
            // SAFETY: as above.
            Isa::Avx2Fma => return unsafe { sort_row_avx2(s, out, base, step) },
            _ => {}
        }
    }
    // SAFETY: per the contract.
    unsafe { sort_row_body(s, out, base, step) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn sort_row_avx512<T: Elem>(s: &mut Scratch<T>, out: *mut T, base: isize, step: isize) {
    // SAFETY: per the caller.
    unsafe { sort_row_body(s, out, base, step) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sort_row_avx2<T: Elem>(s: &mut Scratch<T>, out: *mut T, base: isize, step: isize) {
    // SAFETY: per the caller.
    unsafe { sort_row_body(s, out, base, step) }
}

#[inline(always)]
unsafe fn sort_row_body<T: Elem>(s: &mut Scratch<T>, out: *mut T, base: isize, step: isize) {
    let n = s.row.len();
    s.keys.clear();
    s.keys.resize(n, T::K::default());
    for (k, v) in s.keys.iter_mut().zip(&s.row) {
        *k = v.key();
    }
    if !simd::sort_keys(&mut s.keys, &mut s.tmp32) {
        sort_keys(&mut s.keys, &mut s.tmp);
    }
    if step == 1 {
        // SAFETY: per the contract: n writable elements at out + base.
        let dst = unsafe { std::slice::from_raw_parts_mut(out.offset(base), n) };
        for (d, k) in dst.iter_mut().zip(&s.keys) {
            *d = T::from_key(*k);
        }
    } else {
        // SAFETY: per the contract.
        unsafe { write(out, base, step, s.keys.iter().map(|k| T::from_key(*k))) };
    }
}

/// `s.pairs` = the row's (key, index) pairs in stable sorted order.
fn argsort<T: Elem>(s: &mut Scratch<T>) {
    s.pairs.clear();
    s.pairs.extend(s.row.iter().enumerate().map(|(j, v)| Pair { key: v.ckey(), idx: j as u32 }));
    sort_pairs(&mut s.pairs, &mut s.ptmp);
}

/// Write `vals` at `base`, `base + step`, ...
///
/// # Safety
/// Every position must be writable.
#[inline]
unsafe fn write<U: Copy>(p: *mut U, base: isize, step: isize, vals: impl Iterator<Item = U>) {
    if step == 1 {
        for (j, v) in vals.enumerate() {
            // SAFETY: per the contract.
            unsafe { *p.offset(base + j as isize) = v };
        }
    } else {
        for (j, v) in vals.enumerate() {
            // SAFETY: per the contract.
            unsafe { *p.offset(base + j as isize * step) = v };
        }
    }
}
