//! Stencil sweeps with temporal blocking: N applications of a [`Program`] in one call.
//!
//! The grid is seen as slabs along axis 0 (rows of a 2-D grid, planes of a 3-D one, single
//! cells of a 1-D one); [`Layout`] gives the grid's extents, always as three axes, and the
//! halo, which bounds the interior that is computed. Cells outside the interior are fixed:
//! they hold [`Fixed`] values after every step (`cval`, or the input's own values).
//!
//! Each band of slabs is one unit of work. A band's interior cells form one linear run, so a
//! band is evaluated as one run over the flattened grid; the fixed cells inside it (the halo
//! columns of every row) are computed as garbage and then restored, which is cheaper than
//! breaking the run at every row end.
//!
//! With `k > 1` steps per block (temporal blocking), a band copies its slabs plus `k` halos
//! on each side into a thread-local buffer sized to the L2 cache and advances `k` steps there,
//! each step computing a band that shrinks by one halo per side (overlapped trapezoids); the
//! last step writes the band's own slabs to the global result. Bands repeat the few cells their
//! neighbours also compute, and main memory is read and written once per `k` steps. Every cell
//! of every step is computed by the same instructions from the same values, so the result is
//! bit-identical to `k` separate applications.

use crate::stencil::{eval_range, Program, Scratch, Src, StencilFloat};
pub use pyasc_ir::library::stencil::Layout;
use std::any::Any;
use std::sync::Mutex;

/// The values of the cells outside the interior.
#[derive(Copy, Clone)]
pub enum Fixed<'a, T> {
    /// Every such cell holds this value.
    Const(T),
    /// Each such cell holds this array's value (the input's own border).
    From(&'a [T]),
}

impl<T: StencilFloat> Fixed<'_, T> {
    fn write(&self, dst: &mut [T], global: usize) {
        if dst.len() <= 2 {
            // The halo columns of a row are a cell or two: stores, not a call to memcpy or
            // memset (which LLVM makes of any copy or fill loop).
            let at = |i: usize| match self {
                Fixed::Const(v) => *v,
                Fixed::From(a) => a[global + i],
            };
            if let Some(d) = dst.first_mut() {
                *d = at(0);
            }
            if let Some(d) = dst.get_mut(1) {
                *d = at(1);
            }
            return;
        }
        match self {
            Fixed::Const(v) => dst.fill(*v),
            Fixed::From(a) => dst.copy_from_slice(&a[global..global + dst.len()]),
        }
    }
}

/// Rewrites the fixed cells of slabs `s0..s1` in `dst` (whose first cell is global `base`).
pub(crate) fn restore<T: StencilFloat>(l: &Layout, fixed: Fixed<T>, dst: &mut [T], base: usize, s0: usize, s1: usize) {
    let (slab, n2) = (l.slab(), l.shape[2]);
    let (r0, r1) = l.inner(0);
    let (a1, b1) = l.inner(1);
    let (a2, b2) = l.inner(2);
    for s in s0..s1 {
        let g = s * slab;
        if s < r0 || s >= r1 {
            fixed.write(&mut dst[g - base..g - base + slab], g);
            continue;
        }
        // Rows before and after the interior are contiguous blocks of the slab.
        fixed.write(&mut dst[g - base..g + a1 * n2 - base], g);
        fixed.write(&mut dst[g + b1 * n2 - base..g + slab - base], g + b1 * n2);
        if a2 > 0 || b2 < n2 {
            for i in a1..b1 {
                let row = g + i * n2;
                fixed.write(&mut dst[row - base..row - base + a2], row);
                fixed.write(&mut dst[row + b2 - base..row + n2 - base], row + b2);
            }
        }
    }
}

/// One step over slabs `s0..s1` (clamped to the interior): compute, then restore fixed cells.
#[allow(clippy::too_many_arguments)]
fn step_slabs<T: StencilFloat>(
    prog: &Program,
    l: &Layout,
    fixed: Fixed<T>,
    srcs: &[Src<T>],
    dst: &mut [T],
    base: usize,
    s0: usize,
    s1: usize,
    scratch: &mut Scratch<T>,
) {
    let (r0, r1) = l.inner(0);
    let (c0, c1) = (s0.max(r0), s1.min(r1));
    if c0 < c1 {
        let (slab, n2) = (l.slab(), l.shape[2]);
        let start = c0 * slab + l.lo[1] * n2 + l.lo[2];
        let end = (c1 - 1) * slab + (l.shape[1] - l.hi[1] - 1) * n2 + (n2 - l.hi[2]);
        eval_range(prog, srcs, dst, base, start, end, scratch);
    }
    restore(l, fixed, dst, base, s0, s1);
}

/// How a sweep is cut: steps per block and slabs per band.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Blocking {
    /// Steps each band advances in its local buffer before writing back (1: no temporal blocking).
    pub steps: usize,
    /// Slabs each band owns.
    pub band: usize,
    /// Steps are pipelined slab by slab through per-step rings ([`crate::stencil::wave`]) rather
    /// than advanced as overlapped trapezoids in a band-sized buffer.
    pub wave: bool,
    /// Slabs a wavefront step computes per visit (1 without a wavefront).
    pub group: usize,
}

/// Slabs of at least this many cells are swept as a wavefront.
const WAVE_SLAB: usize = 256;
/// Most steps one wavefront advances.
const WAVE_STEPS: usize = 32;
/// Fewest steps per wavefront for which rings of twice the fewest slabs are worth it.
const WAVE_MIN_STEPS: usize = 8;

/// Chooses the blocking: a wavefront's rings, or two local buffers of a band and its `k` halos,
/// fit in `cache_bytes`.
///
/// A wavefront's rings hold twice the fewest slabs they could, rounded up to a power of two,
/// when that still leaves [`WAVE_MIN_STEPS`] steps: each visit of a step then computes several
/// slabs from slabs the step before it has just written, which are still in L1. Otherwise
/// (large slabs, such as the planes of a 3-D grid) they hold the fewest, one slab computed per
/// visit. 100 Jacobi steps on 2048 x 2048 float32 (rings of 8 rows, 6 per visit, 15 steps per
/// block) took 28.3-28.5 ms against 30.1-30.3 ms with rings of 4 rows (2 per visit, 32 steps per
/// block) on a 2-core Xeon. Blocks are evened out: 100 steps of at most 16 are 7 blocks of 15 or
/// fewer, not 6 of 16 and one of 4, so that the steps computed twice where bands meet are fewest.
pub fn blocking(l: &Layout, elem: usize, steps: usize, threads: usize, cache_bytes: usize) -> Blocking {
    let halo = l.lo[0] + l.hi[0];
    let n0 = l.shape[0];
    if steps > 1 && l.slab() >= WAVE_SLAB {
        let pitch = crate::stencil::wave::ring_pitch(l, elem) * elem;
        let fewest = crate::stencil::wave::ring_len(l, 1);
        let more = (2 * fewest).next_power_of_two();
        let steps_for = |rl: usize| steps.min(WAVE_STEPS).min(1 + cache_bytes / (rl * pitch).max(1));
        let rl = if steps_for(more) >= WAVE_MIN_STEPS.min(steps) { more } else { fewest };
        let k = steps_for(rl);
        if k > 1 {
            let k = steps.div_ceil(steps.div_ceil(k));
            let band = n0.div_ceil(threads.max(1)).max(1);
            return Blocking { steps: k, band, wave: true, group: crate::stencil::wave::group_for(l, rl) };
        }
    }
    let cap = cache_bytes / (2 * l.slab() * elem).max(1);
    let k = if halo == 0 { steps.min(8) } else { steps.min(8).min(cap / (2 * halo)) };
    if k <= 1 || steps == 1 {
        let band = n0.div_ceil(8 * threads.max(1)).max(1);
        return Blocking { steps: 1, band, wave: false, group: 1 };
    }
    let band = (cap - k * halo).min(n0.div_ceil(2 * threads.max(1))).max(1);
    Blocking { steps: k, band, wave: false, group: 1 }
}

/// The sources of one step: the first field's current state, the other fields as given.
fn srcs_of<'a, T>(fields: &[&'a [T]], first: &'a [T], base: usize) -> Vec<Src<'a, T>> {
    let mut v: Vec<Src<T>> = fields.iter().map(|f| Src { data: f, base: 0 }).collect();
    v[0] = Src { data: first, base };
    v
}

/// Runs `f(0..n)`, each once, on any threads: how a sweep spreads its bands.
pub type Par<'a> = &'a dyn Fn(usize, &(dyn Fn(usize) + Sync));

/// A band's two local buffers and its registers, kept for the next band.
type Locals<T> = Mutex<Vec<(Vec<T>, Vec<T>, Scratch<T>, Vec<Vec<T>>)>>;

/// The local buffers and rings of finished sweeps, for the next sweep: fresh ones fault in their
/// pages on every call (page clearing took about 4% of a profile of 100 Jacobi steps over
/// 2048 x 2048 float32, whose rings take 1 MiB per thread). Entries are
/// `Vec<(Vec<T>, Vec<T>, Vec<Vec<T>>)>` of one element type.
static KEPT: Mutex<Vec<Box<dyn Any + Send>>> = Mutex::new(Vec::new());

/// Most sets of buffers [`KEPT`] holds (one per thread of a sweep is enough).
const KEPT_MAX: usize = 16;

type Buffers<T> = Vec<(Vec<T>, Vec<T>, Vec<Vec<T>>)>;

/// The kept buffers of element type `T` (empty when there are none).
fn take_kept<T: StencilFloat>() -> Buffers<T> {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    match kept.iter().position(|b| b.is::<Buffers<T>>()) {
        Some(i) => *kept.swap_remove(i).downcast::<Buffers<T>>().expect("checked by `is`"),
        None => Vec::new(),
    }
}

/// Drops every kept buffer (`pyasc.empty_cache`); returns the bytes they held.
pub fn release_kept() -> usize {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = kept.iter().map(|b| kept_bytes::<f32>(b.as_ref()) + kept_bytes::<f64>(b.as_ref())).sum();
    kept.clear();
    bytes
}

fn kept_bytes<T: StencilFloat>(b: &(dyn Any + Send)) -> usize {
    let Some(bufs) = b.downcast_ref::<Buffers<T>>() else { return 0 };
    let cells: usize = bufs
        .iter()
        .map(|(b0, b1, rings)| b0.capacity() + b1.capacity() + rings.iter().map(Vec::capacity).sum::<usize>())
        .sum();
    cells * std::mem::size_of::<T>()
}

/// Keeps a sweep's buffers for the next one.
fn keep<T: StencilFloat>(mut bufs: Buffers<T>) {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = kept.iter().position(|b| b.is::<Buffers<T>>()) {
        let mine = kept[i].downcast_mut::<Buffers<T>>().expect("checked by `is`");
        mine.append(&mut bufs);
        mine.truncate(KEPT_MAX);
    } else {
        bufs.truncate(KEPT_MAX);
        kept.push(Box::new(bufs));
    }
}

#[derive(Copy, Clone)]
struct SendPtr<T>(*mut T);
// SAFETY: bands write disjoint slab ranges of the buffer the pointer addresses.
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as above; a block's source is only read.
unsafe impl<T> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    fn get(self) -> *mut T {
        self.0
    }
}

/// Applies `prog` `steps` times: `fields[0]` is the first state, `out` receives the last.
///
/// `par(n, f)` must call `f(0..n)` once each, in any order and on any threads. Fields other
/// than the first are read unchanged by every step. `cache_bytes` sizes the local buffers.
/// `spare`, when given, holds as many cells as `out` and is the state between blocks of
/// steps (a caller's warm buffer: a fresh one faults in its pages on every call); otherwise
/// one is allocated when there is more than one block.
#[allow(clippy::too_many_arguments)]
pub fn sweep<T: StencilFloat>(
    prog: &Program,
    l: &Layout,
    fields: &[&[T]],
    fixed: Fixed<T>,
    out: &mut [T],
    spare: Option<&mut [T]>,
    steps: usize,
    threads: usize,
    cache_bytes: usize,
    par: Par,
) -> Result<(), String> {
    l.check()?;
    prog.check(fields.len())?;
    let len = l.cells();
    if fields.iter().any(|f| f.len() != len) || out.len() != len {
        return Err(format!("stencil arrays must hold {len} cells"));
    }
    if let Fixed::From(a) = fixed {
        if a.len() != len {
            return Err(format!("the fixed values must hold {len} cells"));
        }
    }
    if steps == 0 {
        out.copy_from_slice(fields[0]);
        return Ok(());
    }
    let plan = blocking(l, std::mem::size_of::<T>(), steps, threads, cache_bytes);
    let blocks = steps.div_ceil(plan.steps);
    let mut own: Vec<T> = Vec::new();
    let tmp: &mut [T] = match spare {
        Some(t) if t.len() == len => t,
        Some(_) => return Err(format!("the spare stencil buffer must hold {len} cells")),
        None if blocks > 1 => {
            own.resize(len, T::from_f64(0.0));
            &mut own
        }
        None => &mut own,
    };
    let bands = l.shape[0].div_ceil(plan.band);
    let slab = l.slab();
    let locals: Locals<T> =
        Mutex::new(take_kept::<T>().into_iter().map(|(b0, b1, rings)| (b0, b1, Scratch::new(prog), rings)).collect());
    let slab_prog = if plan.wave { Some(crate::stencil::wave::SlabProgram::new(prog, l)) } else { None };
    let out_ptr = SendPtr(out.as_mut_ptr());
    let tmp_ptr = SendPtr(tmp.as_mut_ptr());
    let mut done = 0;
    for b in 0..blocks {
        let k = plan.steps.min(steps - done);
        done += k;
        // The last block writes `out`; the ones before alternate so that holds.
        let dst_ptr = if (blocks - 1 - b).is_multiple_of(2) { out_ptr } else { tmp_ptr };
        let src_ptr = if b == 0 {
            None
        } else if (blocks - b).is_multiple_of(2) {
            Some(out_ptr)
        } else {
            Some(tmp_ptr)
        };
        let band_work = |i: usize| {
            let src: &[T] = match src_ptr {
                None => fields[0],
                // SAFETY: the buffer holds `len` cells and is not written during this block.
                Some(p) => unsafe { std::slice::from_raw_parts(p.get(), len) },
            };
            let (s0, s1) = (i * plan.band, ((i + 1) * plan.band).min(l.shape[0]));
            // SAFETY: bands own disjoint slab ranges of the destination, which holds `len` cells.
            let dst = unsafe { std::slice::from_raw_parts_mut(dst_ptr.get().add(s0 * slab), (s1 - s0) * slab) };
            let mut local = locals.lock().expect("stencil buffers poisoned").pop();
            let (mut b0, mut b1, mut scratch, mut rings) =
                local.take().unwrap_or_else(|| (Vec::new(), Vec::new(), Scratch::new(prog), Vec::new()));
            if let (Some(sp), true) = (slab_prog.as_ref(), k > 1) {
                rings.resize_with(k - 1, Vec::new);
                crate::stencil::wave::wave_band(
                    sp,
                    l,
                    fields,
                    src,
                    fixed,
                    dst,
                    s0,
                    s1,
                    k,
                    plan.group,
                    &mut rings[..k - 1],
                    &mut scratch,
                );
            } else if k == 1 {
                let srcs = srcs_of(fields, src, 0);
                step_slabs(prog, l, fixed, &srcs, dst, s0 * slab, s0, s1, &mut scratch);
            } else {
                let e0 = s0.saturating_sub(k * l.lo[0]);
                let e1 = (s1 + k * l.hi[0]).min(l.shape[0]);
                let (g0, g1) = (e0 * slab, e1 * slab);
                b0.clear();
                b0.extend_from_slice(&src[g0..g1]);
                // Every cell of b1 a later step reads is written by the step before it.
                b1.resize(g1 - g0, T::from_f64(0.0));
                for s in 1..k {
                    let w0 = s0.saturating_sub((k - s) * l.lo[0]).max(e0);
                    let w1 = (s1 + (k - s) * l.hi[0]).min(e1);
                    let (from, to) = if s % 2 == 1 { (&b0, &mut b1) } else { (&b1, &mut b0) };
                    let srcs = srcs_of(fields, from.as_slice(), g0);
                    step_slabs(prog, l, fixed, &srcs, to, g0, w0, w1, &mut scratch);
                }
                let from = if (k - 1) % 2 == 1 { &b1 } else { &b0 };
                let srcs = srcs_of(fields, from.as_slice(), g0);
                step_slabs(prog, l, fixed, &srcs, dst, s0 * slab, s0, s1, &mut scratch);
            }
            locals.lock().expect("stencil buffers poisoned").push((b0, b1, scratch, rings));
        };
        par(bands, &band_work);
    }
    let locals = locals.into_inner().unwrap_or_else(|e| e.into_inner());
    keep(locals.into_iter().map(|(b0, b1, _, rings)| (b0, b1, rings)).collect());
    Ok(())
}
