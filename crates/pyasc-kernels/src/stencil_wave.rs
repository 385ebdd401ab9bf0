//! Wavefront temporal blocking: `k` steps of a band of slabs through per-step ring buffers.
//!
//! Step `s` of slab `y` needs slabs `y - lo .. y + hi` of step `s - 1`. Walking the band slab by
//! slab, step 1 computes slab `t - hi` as soon as the input's slab `t` is there, step 2 slab
//! `t - 2 hi`, and so on: each step keeps only its last `lo + hi + 1` slabs in a ring, so the
//! working set is `k` small rings (in L2 whatever the band's size) and bands can be long, which
//! keeps the slabs computed twice (the `k`-step halos where bands meet) few. Step `k` writes the
//! band's slabs to the result. Every cell is computed by the same instructions from the same
//! values as in a plain sweep, so the result is bit-identical.
//!
//! Reads are addressed per slab: the program's linear offsets are split into a slab offset and an
//! offset inside the slab, and each (field, slab offset) pair becomes a source of its own.

use crate::stencil::{eval_range, Instr, Operand, Program, Scratch, Src, StencilFloat};
use crate::stencil_sweep::{restore, Fixed, Layout};

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

/// Slabs each step's ring keeps.
pub(crate) fn ring_len(l: &Layout) -> usize {
    l.lo[0] + l.hi[0] + 1
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
/// holds exactly those slabs. `rings` is `k - 1` scratch rings of [`ring_len`] slabs each.
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
    rings: &mut [Vec<T>],
    scratch: &mut Scratch<T>,
) {
    let slab = l.slab();
    let n0 = l.shape[0];
    let (lo, hi) = (l.lo[0], l.hi[0]);
    let (r0, r1) = (lo, n0 - hi);
    let rl = ring_len(l);
    let pitch = ring_pitch(l, std::mem::size_of::<T>());
    for r in rings.iter_mut() {
        // Room to start the first slab on a line.
        r.resize(rl * pitch + LINE / std::mem::size_of::<T>().max(1), T::from_f64(0.0));
    }
    let at0: Vec<usize> = rings.iter().map(|r| line_start(r)).collect();
    let start = l.lo[1] * l.shape[2] + l.lo[2];
    let end = (l.shape[1] - l.hi[1] - 1) * l.shape[2] + (l.shape[2] - l.hi[2]);
    // Slabs step s computes: the band widened by k - s halos, inside the grid.
    let range = |s: usize| (s0.saturating_sub((k - s) * lo), (s1 + (k - s) * hi).min(n0));
    let t_first = (1..=k).map(|s| range(s).0 + s * hi).min().unwrap_or(0);
    let t_last = (1..=k).map(|s| range(s).1 + s * hi).max().unwrap_or(0);
    let mut spare: Vec<Src<T>> = Vec::with_capacity(sp.sources.len());
    for t in t_first..t_last {
        for s in 1..=k {
            let Some(y) = t.checked_sub(s * hi) else { continue };
            let (a, b) = range(s);
            if y < a || y >= b {
                continue;
            }
            let (done, rest) = rings.split_at_mut(s - 1);
            let out: &mut [T] = if s == k {
                &mut dst[(y - s0) * slab..(y - s0 + 1) * slab]
            } else {
                let slot = at0[s - 1] + (y % rl) * pitch;
                &mut rest[0][slot..slot + slab]
            };
            if y < r0 || y >= r1 {
                fixed_slab(fixed, out, y * slab);
                continue;
            }
            let mut srcs = recycle(std::mem::take(&mut spare));
            for &(f, d0) in &sp.sources {
                let row = (y as isize + d0) as usize;
                let data: &[T] = if f != 0 {
                    &fields[f][row * slab..(row + 1) * slab]
                } else if s == 1 {
                    &src[row * slab..(row + 1) * slab]
                } else {
                    let slot = at0[s - 2] + (row % rl) * pitch;
                    &done[s - 2][slot..slot + slab]
                };
                srcs.push(Src { data, base: 0 });
            }
            eval_range(&sp.prog, &srcs, out, 0, start, end, scratch);
            restore(l, fixed, out, y * slab, y, y + 1);
            spare = recycle(srcs);
        }
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
