//! Wavefront temporal blocking: `k` steps of a band of slabs through per-step ring buffers.
//!
//! Step `s` of slab `y` needs slabs `y - lo .. y + hi` of step `s - 1`. Walking the band `g`
//! slabs at a time, step 1 computes slabs `g t - hi ..` as soon as the input's slabs are there,
//! step 2 slabs `g t - 2 hi ..`, and so on: each step keeps only its last `lo + hi + g` slabs in
//! a ring, so the working set is `k` small rings (in L2 whatever the band's size) and bands can
//! be long, which keeps the slabs computed twice (the `k`-step halos where bands meet) few. Of
//! the slabs a visit reads, the last `g` were written by the step before it a moment ago and are
//! still in L1; only `lo + hi` come back from L2. Step `k` writes the band's slabs to the
//! result. Every cell is computed by the same instructions from the same values as in a plain
//! sweep, so the result is bit-identical.
//!
//! Reads are addressed per slab: the program's linear offsets are split into a slab offset and an
//! offset inside the slab, and each (field, slab offset) pair becomes a source of its own. A
//! slab is computed as whole vectors from its first cell to its last (see [`WholeRun`]), and a
//! program that is one sum of reads runs straight on the sum kernel.

use crate::stencil::sweep::{restore, Fixed, Layout};
use crate::stencil::{eval_range, sum_run, BinOp, Instr, Operand, Program, Scratch, Src, StencilFloat, MAX_SUM};

/// A program whose reads address single slabs: read `i` takes field `sources[i].0` at slab
/// offset `sources[i].1`.
pub(crate) struct SlabProgram {
    pub(crate) prog: Program,
    pub(crate) sources: Vec<(usize, isize)>,
}

impl SlabProgram {
    /// Splits each read's linear offset into (slab offset, offset inside the slab).
    pub(crate) fn new(prog: &Program, l: &Layout) -> SlabProgram {
        let slab = (l.shape[1] * l.shape[2]) as isize;
        let before = (l.lo[1] * l.shape[2] + l.lo[2]) as isize;
        let mut sources: Vec<(usize, isize)> = Vec::new();
        let mut map = |op: Operand| -> Operand {
            match op {
                Operand::Read { field, offset } => {
                    let d0 = (offset + before).div_euclid(slab);
                    let key = (field, d0);
                    let i = sources.iter().position(|s| *s == key).unwrap_or_else(|| {
                        sources.push(key);
                        sources.len() - 1
                    });
                    Operand::Read { field: i, offset: offset - d0 * slab }
                }
                other => other,
            }
        };
        let instrs = prog
            .instrs
            .iter()
            .map(|ins| match ins {
                Instr::Bin { op, a, b, dest } => Instr::Bin { op: *op, a: map(*a), b: map(*b), dest: *dest },
                Instr::Un { op, a, dest } => Instr::Un { op: *op, a: map(*a), dest: *dest },
                Instr::Sum { ops, neg, post, dest } => Instr::Sum {
                    ops: ops.iter().map(|o| map(*o)).collect(),
                    neg: neg.clone(),
                    post: *post,
                    dest: *dest,
                },
            })
            .collect();
        SlabProgram { prog: Program { instrs, tmps: prog.tmps }, sources }
    }
}

/// Slabs each step's ring keeps when a step computes `g` slabs per visit: the `lo` slabs
/// before them, the `g` slabs, and the `hi` slabs the step before it has computed past them.
pub(crate) fn ring_len(l: &Layout, g: usize) -> usize {
    l.lo[0] + l.hi[0] + g
}

/// Slabs per visit that fill a ring of `rl` slabs.
pub(crate) fn group_for(l: &Layout, rl: usize) -> usize {
    rl.saturating_sub(l.lo[0] + l.hi[0]).max(1)
}

/// Cells from one ring slab's start to the next: the slab rounded up to whole cache lines, plus
/// three lines. Slabs of a power-of-two size otherwise start at one offset modulo 4 KiB and the
/// rows a step reads and writes compete for the same L1 sets.
pub(crate) fn ring_pitch(l: &Layout, elem: usize) -> usize {
    let elem = elem.max(1);
    (l.slab() * elem).div_ceil(LINE) * LINE / elem + 3 * LINE / elem
}

/// Bytes of a cache line.
const LINE: usize = 64;

/// The first index of `v` whose address is a multiple of a cache line.
fn line_start<T>(v: &[T]) -> usize {
    let elem = std::mem::size_of::<T>().max(1);
    (LINE - v.as_ptr() as usize % LINE) % LINE / elem
}

/// Advances slabs `s0..s1` by `k` steps from `src` (the first field's state) into `dst`, which
/// holds exactly those slabs; each step computes `g` slabs per visit. `rings` is `k - 1`
/// scratch rings of [`ring_len`] slabs each.
#[allow(clippy::too_many_arguments)]
pub(crate) fn wave_band<T: StencilFloat>(
    sp: &SlabProgram,
    l: &Layout,
    fields: &[&[T]],
    src: &[T],
    fixed: Fixed<T>,
    dst: &mut [T],
    s0: usize,
    s1: usize,
    k: usize,
    g: usize,
    rings: &mut [Vec<T>],
    scratch: &mut Scratch<T>,
) {
    let slab = l.slab();
    let n0 = l.shape[0];
    let (lo, hi) = (l.lo[0], l.hi[0]);
    let (r0, r1) = (lo, n0 - hi);
    let rl = ring_len(l, g);
    // A slab's slot: a mask when the ring's length is a power of two (the rings of several slabs
    // per visit), a division otherwise (rings of large slabs, where it costs nothing).
    let slot_of = |row: usize| if rl.is_power_of_two() { row & (rl - 1) } else { row % rl };
    let pitch = ring_pitch(l, std::mem::size_of::<T>());
    let lanes = (LINE / std::mem::size_of::<T>().max(1)).max(1);
    let start = l.lo[1] * l.shape[2] + l.lo[2];
    let end = (l.shape[1] - l.hi[1] - 1) * l.shape[2] + (l.shape[2] - l.hi[2]);
    let run = whole_run(&sp.prog, start, end, slab, lanes);
    let direct = DirectSum::of(&sp.prog);
    // Room before the first slot for a line start and the run's reads before it, and after
    // the last slot for its reads past it.
    let room = run.pad.div_ceil(lanes) * lanes;
    for r in rings.iter_mut() {
        r.resize(rl * pitch + lanes + 2 * room, T::from_f64(0.0));
    }
    let at0: Vec<usize> = rings.iter().map(|r| line_start(r) + room).collect();
    // Slabs step s computes: the band widened by k - s halos, inside the grid.
    let range = |s: usize| (s0.saturating_sub((k - s) * lo), (s1 + (k - s) * hi).min(n0));
    // Step s computes slabs `g t - s hi ..` (g of them) at time t: the step before it has just
    // computed the last g of the slabs they read.
    let t_first = (1..=k).map(|s| (range(s).0 + s * hi) / g).min().unwrap_or(0);
    let t_last = (1..=k).map(|s| (range(s).1 + s * hi).div_ceil(g)).max().unwrap_or(0);
    let mut spare: Vec<Src<T>> = Vec::with_capacity(sp.sources.len());
    for t in t_first..t_last {
        for s in 1..=k {
            let (a, b) = range(s);
            let first = (g * t).saturating_sub(s * hi).max(a);
            for y in first..(g * t + g).saturating_sub(s * hi).min(b) {
                let (done, rest) = rings.split_at_mut(s - 1);
                let out: &mut [T] = if s == k {
                    &mut dst[(y - s0) * slab..(y - s0 + 1) * slab]
                } else {
                    let slot = at0[s - 1] + slot_of(y) * pitch;
                    &mut rest[0][slot..slot + slab]
                };
                if y < r0 || y >= r1 {
                    fixed_slab(fixed, out, y * slab);
                    continue;
                }
                let mut srcs = recycle(std::mem::take(&mut spare));
                // The whole-vector run when every grid-backed source has the room around its
                // slab (rows at the grid's ends may not); the interior's run otherwise.
                let len = n0 * slab;
                let wide = sp.sources.iter().all(|&(f, d0)| {
                    let row = (y as isize + d0) as usize;
                    (f == 0 && s > 1) || (row * slab >= run.pad && (row + 1) * slab + run.pad <= len)
                });
                let pad = if wide { run.pad } else { 0 };
                for &(f, d0) in &sp.sources {
                    let row = (y as isize + d0) as usize;
                    let (from, to) = (row * slab, (row + 1) * slab);
                    let data: &[T] = if f != 0 {
                        &fields[f][from - pad..to + pad]
                    } else if s == 1 {
                        &src[from - pad..to + pad]
                    } else {
                        let slot = at0[s - 2] + slot_of(row) * pitch;
                        &done[s - 2][slot - pad..slot + slab + pad]
                    };
                    srcs.push(Src { data, base: 0 });
                }
                if let (Some(d), true) = (direct.as_ref(), wide) {
                    let n = run.to - run.from;
                    let mut ops: [&[T]; MAX_SUM] = [&[]; MAX_SUM];
                    for (o, &(i, off)) in ops.iter_mut().zip(&d.reads) {
                        let at = (run.from + pad).wrapping_add_signed(off);
                        *o = &srcs[i].data[at..at + n];
                    }
                    sum_run(&ops[..d.reads.len()], &d.neg, d.post, &mut out[run.from..run.to]);
                } else if wide {
                    eval_range(&sp.prog, &srcs, out, pad, run.from + pad, run.to + pad, scratch);
                } else {
                    eval_range(&sp.prog, &srcs, out, 0, start, end, scratch);
                }
                restore(l, fixed, out, y * slab, y, y + 1);
                spare = recycle(srcs);
            }
        }
    }
}

/// A slab's cells computed as whole vectors: `from..to` covers the interior's run `start..end`
/// rounded out to vector boundaries inside the slab, so the kernel needs no masked head or tail
/// (the cells outside the interior are computed as garbage and then restored, as the halo
/// columns inside the run already are). `pad`: cells each source needs beyond its slab on
/// either side.
struct WholeRun {
    from: usize,
    to: usize,
    pad: usize,
}

fn whole_run(prog: &Program, start: usize, end: usize, slab: usize, lanes: usize) -> WholeRun {
    let from = start / lanes * lanes;
    let to = (end.div_ceil(lanes) * lanes).min(slab);
    let (omin, omax) = prog.offset_range();
    let before = (-(from as isize + omin)).max(0) as usize;
    let after = (to as isize - 1 + omax - (slab as isize - 1)).max(0) as usize;
    WholeRun { from, to, pad: before.max(after) }
}

/// A program that is one sum of reads, run straight on the sum kernel: per slab, the
/// instruction loop of [`eval_range`] would cost as much as a tenth of the slab's sum.
struct DirectSum<T> {
    /// (source, offset inside the slab) of each operand.
    reads: Vec<(usize, isize)>,
    neg: Vec<bool>,
    post: Option<(BinOp, T)>,
}

impl<T: StencilFloat> DirectSum<T> {
    fn of(prog: &Program) -> Option<Self> {
        let [Instr::Sum { ops, neg, post, dest: None }] = prog.instrs.as_slice() else { return None };
        let reads = ops
            .iter()
            .map(|op| match op {
                Operand::Read { field, offset } => Some((*field, *offset)),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(DirectSum { reads, neg: neg.clone(), post: post.map(|(op, v)| (op, T::from_f64(v))) })
    }
}

/// An empty vector with `v`'s allocation, for sources of another lifetime (collecting in place
/// reuses the allocation; no element is ever mapped).
fn recycle<'a, 'b, T>(mut v: Vec<Src<'a, T>>) -> Vec<Src<'b, T>> {
    v.clear();
    v.into_iter().map(|_| unreachable!("the vector is empty")).collect()
}

fn fixed_slab<T: StencilFloat>(fixed: Fixed<T>, out: &mut [T], global: usize) {
    match fixed {
        Fixed::Const(v) => out.fill(v),
        Fixed::From(a) => out.copy_from_slice(&a[global..global + out.len()]),
    }
}
