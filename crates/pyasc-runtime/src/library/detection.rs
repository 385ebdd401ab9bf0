//! The executing half of the detection library ops ([`pyasc_ir::library::BoxIou`], `Nms`,
//! `NmsMask`, `SelectRows`, `GatherRows`): `pyasc-kernels`' routines over C-contiguous
//! operands, their parallel parts on the calling thread and the launch team (awake between a
//! sweep's many short parallel sections, where rayon's sleeping workers would take tens of
//! microseconds to wake for each), a user interrupt polled on the calling thread.

use crate::interrupt;
use crate::library::LibraryKernel;
use crate::pool;
use crate::view::InputView;
use pyasc_ir::attr::Attr;
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::library::{LibCall, LibId};
use pyasc_ir::tile::TileKernel;
use pyasc_ir::DType;
use pyasc_kernels::filter_rows::{block_range, blocks, copy_rows, select_rows, BLOCK_ROWS};
use pyasc_kernels::nms::{self, Coord, Host, Stopped};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The elements of a C-contiguous view.
///
/// # Safety
/// `v` must be a live view of `T` elements that outlives the returned slice's use.
unsafe fn slice<'a, T>(v: &InputView, what: &str) -> Result<&'a [T]> {
    if !v.is_c_contiguous() {
        return Err(IrError::internal(format!("{what} must be C-contiguous")));
    }
    let n = v.shape.iter().product();
    // SAFETY: a live C-contiguous view of `n` elements of `T` (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(v.ptr as *const T, n) })
}

/// Runs `f(i)` for every `i < n` on the calling thread and the launch team.
fn par(n: usize, f: &(dyn Fn(usize) + Sync)) {
    let helpers = pool::num_threads().saturating_sub(1);
    let _ = pool::for_blocks::<()>(n, helpers, |i| {
        f(i);
        Ok(())
    });
}

/// Runs a sweep with the parallel parts on the workers, stopped by a user interrupt.
fn sweep<R>(f: impl FnOnce(&mut Host<'_>) -> std::result::Result<R, Stopped>) -> Result<R> {
    let mut poll = interrupt::run_poll;
    let mut host = Host { par: &par, poll: &mut poll };
    f(&mut host).map_err(|Stopped| interrupt::interrupted())
}

/// Writes `list` as a counted list (its length, then its elements) to `out`.
///
/// # Safety
/// `out` must hold `list.len() + 1` elements of `T`.
unsafe fn write_counted<T: Copy>(out: *mut u8, count: T, list: &[T]) {
    let out = out as *mut T;
    // SAFETY: per the contract, `out` holds the count and the list.
    unsafe {
        out.write(count);
        std::ptr::copy_nonoverlapping(list.as_ptr(), out.add(1), list.len());
    }
}

/// Runs the box IoU routine.
pub struct BoxIouKernel;

fn box_iou_t<T: Coord>(a: &InputView, b: &InputView, out: *mut u8) -> Result<()> {
    // SAFETY: the trait's contract: live operands, `out` holds the `(N, M)` result.
    let (sa, sb) = unsafe { (slice::<T>(a, "boxes1")?, slice::<T>(b, "boxes2")?) };
    // SAFETY: as above.
    let dst = unsafe { std::slice::from_raw_parts_mut(out as *mut T, a.shape[0] * b.shape[0]) };
    pool::install(|| nms::box_iou(sa, sb, dst));
    Ok(())
}

impl LibraryKernel for BoxIouKernel {
    fn id(&self) -> LibId {
        LibId::BOX_IOU
    }
    unsafe fn run(&self, _call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match operands {
            [a, b] if a.dtype == DType::F32 => box_iou_t::<f32>(a, b, out),
            [a, b] => box_iou_t::<f64>(a, b, out),
            _ => Err(IrError::internal("box_iou takes two operands")),
        }
    }
}

/// Runs greedy NMS, plain or per category.
pub struct NmsKernel;

fn nms_t<T: Coord>(spec: &pyasc_ir::library::NmsSpec, operands: &[&InputView], out: *mut u8) -> Result<()> {
    // SAFETY: the trait's contract: live operands of the checked dtypes.
    let (b, s) = unsafe { (slice::<T>(operands[0], "boxes")?, slice::<f64>(operands[1], "scores")?) };
    let kept = match operands.get(2) {
        None => sweep(|h| nms::nms(b, s, spec.iou_threshold, spec.score_threshold, h))?,
        Some(c) => {
            // SAFETY: as above.
            let c = unsafe { slice::<i64>(c, "idxs")? };
            sweep(|h| nms::batched_nms(b, s, c, spec.iou_threshold, spec.score_threshold, h))?
        }
    };
    // SAFETY: `out` holds `N + 1` int64 and at most `N` boxes are kept.
    unsafe { write_counted(out, kept.len() as i64, &kept) };
    Ok(())
}

impl LibraryKernel for NmsKernel {
    fn id(&self) -> LibId {
        LibId::NMS
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        let Attr::Nms(spec) = &call.attr else { return Err(IrError::internal("nms needs its thresholds")) };
        match operands.first().map(|b| b.dtype) {
            Some(DType::F32) => nms_t::<f32>(spec, operands, out),
            Some(DType::F64) => nms_t::<f64>(spec, operands, out),
            _ => Err(IrError::internal("nms takes float32 or float64 boxes")),
        }
    }
}

/// Runs the greedy sweep over an IoU matrix.
pub struct NmsMaskKernel;

fn nms_mask_t<T: Coord>(iou: &InputView, threshold: f64, out: *mut u8) -> Result<()> {
    // SAFETY: the trait's contract: a live square matrix.
    let m = unsafe { slice::<T>(iou, "the IoU matrix")? };
    let n = iou.shape[0];
    let keep = nms::nms_mask(m, n, threshold);
    // SAFETY: `out` holds `n` bools.
    unsafe { std::ptr::copy_nonoverlapping(keep.as_ptr(), out as *mut bool, n) };
    Ok(())
}

impl LibraryKernel for NmsMaskKernel {
    fn id(&self) -> LibId {
        LibId::NMS_MASK
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match (&call.attr, operands) {
            (Attr::Nms(s), [m]) if m.dtype == DType::F32 => nms_mask_t::<f32>(m, s.iou_threshold, out),
            (Attr::Nms(s), [m]) => nms_mask_t::<f64>(m, s.iou_threshold, out),
            _ => Err(IrError::internal("nms_mask takes a threshold and one matrix")),
        }
    }
}

/// Runs the row selection: each block of rows lists its selected rows into its own part of
/// the result (no allocation while threads run: they would wait on the allocator's lock), then
/// the blocks' lists are moved together behind the count.
pub struct SelectRowsKernel;

fn select_t<T: Copy + PartialOrd + Send + Sync>(x: &InputView, column: usize, t: T, out: *mut u8) -> Result<()> {
    // SAFETY: the trait's contract: a live `(N, C)` matrix.
    let data = unsafe { slice::<T>(x, "the matrix")? };
    let (n, cols) = (x.shape[0], x.shape[1]);
    let nb = blocks(n);
    let counts: Vec<AtomicUsize> = (0..nb).map(|_| AtomicUsize::new(0)).collect();
    // The list starts after the count.
    let idx = (out as *mut u32).wrapping_add(1) as usize;
    let select = |b: usize| {
        let rows = block_range(b, n);
        // SAFETY: block `b` writes only its own rows' slots of the `N + 1` the result holds.
        let part = unsafe { std::slice::from_raw_parts_mut((idx as *mut u32).add(rows.start), rows.len()) };
        counts[b].store(select_rows(data, cols, column, t, rows, part), Ordering::Relaxed);
    };
    if nb > 1 {
        par(nb, &select);
    } else if nb == 1 {
        select(0);
    }
    let mut kept = 0usize;
    for (b, c) in counts.iter().enumerate() {
        let (start, c) = (block_range(b, n).start, c.load(Ordering::Relaxed));
        // SAFETY: both ranges lie in the result's list; `kept <= start`, so `copy` (memmove).
        unsafe { std::ptr::copy((idx as *const u32).add(start), (idx as *mut u32).add(kept), c) };
        kept += c;
    }
    // SAFETY: the result's first element is the count (below 2^32: N is, checked by infer).
    unsafe { (out as *mut u32).write(kept as u32) };
    Ok(())
}

impl LibraryKernel for SelectRowsKernel {
    fn id(&self) -> LibId {
        LibId::SELECT_ROWS
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match (&call.attr, operands) {
            (Attr::RowFilter(f), [x]) if x.dtype == DType::F32 => select_t(x, f.column, f.threshold as f32, out),
            (Attr::RowFilter(f), [x]) => select_t(x, f.column, f.threshold, out),
            _ => Err(IrError::internal("select_rows takes a test and one matrix")),
        }
    }
}

/// Runs the row gather over the source's blocks of rows: block `b` copies the selected rows
/// that lie in the source's block `b` (indices ascending, as the selection lists them), so with
/// the selection's blocks on the same threads a core copies the rows it has just tested, and the
/// next kernel over the result finds them in that core's cache.
pub struct GatherRowsKernel;

fn gather_t<T: Copy + Send + Sync>(x: &InputView, idx: &InputView, out: *mut u8) -> Result<()> {
    // SAFETY: the trait's contract: a live matrix and a live index vector.
    let (data, idx) = unsafe { (slice::<T>(x, "the matrix")?, slice::<u32>(idx, "the row indices")?) };
    let (n, cols) = (x.shape[0], x.shape[1]);
    if idx.iter().any(|&i| i as usize >= n) {
        return Err(IrError::internal("gather_rows: a row index is out of range"));
    }
    let nb = blocks(n);
    // Where each source block's indices start: consecutive ranges covering the list whatever
    // its order (ascending indices, as the selection writes them, keep each copy on the core
    // that tested those rows).
    let mut starts = Vec::with_capacity(nb + 1);
    for b in 0..nb {
        let at = idx.partition_point(|&i| (i as usize) < b * BLOCK_ROWS);
        starts.push(at.max(starts.last().copied().unwrap_or(0)));
    }
    starts.push(idx.len());
    let dst = out as usize;
    let copy = |b: usize| {
        let r = starts[b]..starts[b + 1];
        // SAFETY: block `b` writes only rows `r` of the `(len(idx), C)` result.
        let part = unsafe { std::slice::from_raw_parts_mut((dst as *mut T).add(r.start * cols), r.len() * cols) };
        copy_rows(data, cols, &idx[r], part);
    };
    match nb {
        0 => {}
        1 => copy(0),
        _ => par(nb, &copy),
    }
    Ok(())
}

impl LibraryKernel for GatherRowsKernel {
    fn id(&self) -> LibId {
        LibId::GATHER_ROWS
    }
    unsafe fn run(&self, _call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match operands {
            [x, i] if x.dtype == DType::F32 => gather_t::<f32>(x, i, out),
            [x, i] if x.dtype == DType::F64 => gather_t::<f64>(x, i, out),
            _ => Err(IrError::internal("gather_rows takes a float matrix and row indices")),
        }
    }
}
