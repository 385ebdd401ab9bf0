//! `dst(f32) = a(bf16) @ b(bf16)` on AVX-512 BF16 (`vdpbf16ps`), float32 accumulation.
//!
//! The classic blocked scheme: for each block of `NC` columns and `KC` depth, the block of `b`
//! is packed once into panels of [`NR`] columns; then tasks (blocks of rows, split over the
//! rayon pool) pack their rows of `a` into panels of [`MR`] rows and run the micro-kernel
//! over every (row panel, column panel) pair. Packing interleaves pairs of consecutive `k`:
//! one 32-bit word holds `x[k]` in its low half and `x[k+1]` in its high half, the layout
//! `vdpbf16ps` multiplies (each float32 lane gains `a0*b0 + a1*b1`). A depth that is odd, and
//! rows or columns past the matrix edge, are packed as zeros, so the micro-kernel always runs
//! a full tile; a partial tile is stored through a buffer.
//!
//! The micro-kernel keeps a 6 x 64 tile of float32 sums in 24 of the 32 zmm registers; for
//! each pair of `k` it loads four 64-byte lines of `b` and broadcasts one word of `a` per row:
//! 24 `vdpbf16ps` (one per cycle on Zen 4), no shuffles. The packed depth is long (2,048):
//! each tile of `dst` is then read and written once per 2,048 of `k` rather than once per L1-sized
//! block, which measured 0.21 vs 0.18 TFLOP/s per core on 2048² (panels stream from L2 with
//! room to spare: 320 bytes per 24 cycles).
//!
//! `vdpbf16ps` rounds to nearest even and treats subnormal inputs and results as zero (its
//! fixed behaviour): values below 1.2e-38 in magnitude, far below the float32 sums' error.

use crate::gemm::{MatMut, MatRef};
use half::bf16;
use rayon::prelude::*;
use std::arch::x86_64::*;

/// Rows of the micro-tile.
const MR: usize = 6;
/// zmm vectors (16 columns each) per micro-tile row.
const NV: usize = 4;
/// Columns of the micro-tile.
const NR: usize = 16 * NV;
/// Depth of a packed block (even); a panel of `b` is `KC x NR` bf16 (256 KiB, in L2).
const KC: usize = 2048;
/// Columns of a packed block of `b` (with `KC`, an 8 MiB block).
const NC: usize = 2048;
/// Most row panels one task packs (its block of `a`: up to 24 x 6 x 2048 bf16, 576 KiB).
const MAX_TASK_PANELS: usize = 24;

/// One cache line of packed words; packed buffers are vectors of these, so 64-byte aligned.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u32; 16]);

/// A zeroed buffer of at least `words` packed words.
fn buffer(words: usize) -> Vec<Line> {
    vec![Line([0; 16]); words.div_ceil(16)]
}

/// The words of a buffer.
fn words(buf: &mut [Line]) -> &mut [u32] {
    // SAFETY: a `Line` is exactly 16 `u32`s with no padding, so the buffer is `16 * len`
    // initialised words, borrowed mutably for the returned lifetime.
    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u32>(), buf.len() * 16) }
}

/// Raw operands shared by the tasks (also by the few-row path's workers).
#[derive(Clone, Copy)]
pub(crate) struct Shared {
    pub(crate) a: MatRef<bf16>,
    pub(crate) b: MatRef<bf16>,
    pub(crate) dst: *mut f32,
    pub(crate) drs: isize,
    pub(crate) dcs: isize,
}

// SAFETY: the tasks read `a` and `b` (valid for the call, per the caller's contract) and write
// disjoint parts of `dst`, so sharing the pointers between threads is sound.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

/// Whether this CPU has the instructions this module needs.
pub(crate) fn available() -> bool {
    is_x86_feature_detected!("avx512bf16")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
}

/// The bits of element (i, j).
///
/// # Safety
/// (i, j) must be an element of `x`.
#[inline(always)]
unsafe fn at(x: &MatRef<bf16>, i: usize, j: usize) -> u32 {
    // SAFETY: the caller names an element of the operand.
    unsafe { (*x.ptr.offset(i as isize * x.rs + j as isize * x.cs)).to_bits() as u32 }
}

/// Packs `b[k0..k0+kc, j0..j0+cols]` (`cols <= NR`) into one panel of `kc.div_ceil(2) * NR`
/// words: word `p*NR + j` holds `b[k0+2p, j0+j]` low and `b[k0+2p+1, j0+j]` high.
///
/// # Safety
/// The block must lie inside `b`; the CPU must have AVX-512 F/BW/VL (the loops are compiled
/// for them).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn pack_b(out: &mut [u32], b: &MatRef<bf16>, k0: usize, kc: usize, j0: usize, cols: usize) {
    let kp = kc.div_ceil(2);
    for p in 0..kp {
        let (k, two) = (k0 + 2 * p, 2 * p + 1 < kc);
        let row = &mut out[p * NR..(p + 1) * NR];
        if b.cs == 1 && cols == NR && two {
            // SAFETY: two full rows of NR contiguous elements inside `b`.
            let (r0, r1) = unsafe {
                let r0 = b.ptr.offset(k as isize * b.rs + j0 as isize).cast::<u16>();
                (std::slice::from_raw_parts(r0, NR), std::slice::from_raw_parts(r0.offset(b.rs), NR))
            };
            for j in 0..NR {
                row[j] = r0[j] as u32 | (r1[j] as u32) << 16;
            }
            continue;
        }
        for (j, w) in row.iter_mut().enumerate() {
            *w = if j >= cols {
                0
            } else {
                // SAFETY: k, k+1 (when `two`) and j0+j lie inside the block.
                unsafe { at(b, k, j0 + j) | if two { at(b, k + 1, j0 + j) << 16 } else { 0 } }
            };
        }
    }
}

/// Packs `a[i0..i0+rows, k0..k0+kc]` (`rows <= MR`) into one panel of `kc.div_ceil(2) * MR`
/// words: word `p*MR + i` holds `a[i0+i, k0+2p]` low and `a[i0+i, k0+2p+1]` high.
///
/// # Safety
/// The block must lie inside `a`; the CPU must have AVX-512 F/BW/VL.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn pack_a(out: &mut [u32], a: &MatRef<bf16>, i0: usize, rows: usize, k0: usize, kc: usize) {
    let kp = kc.div_ceil(2);
    if a.cs == 1 {
        // Rows are contiguous: a pair is one unaligned 32-bit read.
        for i in 0..MR {
            if i >= rows {
                (0..kp).for_each(|p| out[p * MR + i] = 0);
                continue;
            }
            // SAFETY: row i0+i from column k0 lies inside `a`.
            let r = unsafe { a.ptr.offset((i0 + i) as isize * a.rs + k0 as isize).cast::<u16>() };
            for p in 0..kc / 2 {
                // SAFETY: columns k0+2p and k0+2p+1 lie inside the block.
                out[p * MR + i] = unsafe { r.add(2 * p).cast::<u32>().read_unaligned() };
            }
            if kc % 2 == 1 {
                // SAFETY: the last column of the block.
                out[(kp - 1) * MR + i] = unsafe { *r.add(kc - 1) } as u32;
            }
        }
        return;
    }
    for p in 0..kp {
        let (k, two) = (k0 + 2 * p, 2 * p + 1 < kc);
        for (i, w) in out[p * MR..(p + 1) * MR].iter_mut().enumerate() {
            *w = if i >= rows {
                0
            } else {
                // SAFETY: i0+i, k and k+1 (when `two`) lie inside the block.
                unsafe { at(a, i0 + i, k) | if two { at(a, i0 + i, k + 1) << 16 } else { 0 } }
            };
        }
    }
}

/// The 32 bfloat16 values of a vector of 16 words (a bit cast).
#[inline(always)]
fn bh(x: __m512i) -> __m512bh {
    // SAFETY: both are 512-bit plain-data vectors; every bit pattern is valid in either.
    unsafe { std::mem::transmute::<__m512i, __m512bh>(x) }
}

/// `c[..rows, ..cols] (+)= A @ B` for one packed `MR x kp` panel `a` and `kp x NR` panel `b`:
/// overwrites when `add` is false, else adds to what `c` holds.
///
/// # Safety
/// `a` and `b` must address `kp * MR` and `kp * NR` words, `b` 64-byte aligned; the
/// `rows x cols` block at `c` (strides `rs`, `cs`) must be writable (and readable if `add`).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
#[allow(clippy::too_many_arguments)]
unsafe fn micro(
    kp: usize,
    a: *const u32,
    b: *const u32,
    c: *mut f32,
    rs: isize,
    cs: isize,
    rows: usize,
    cols: usize,
    add: bool,
) {
    // One row of the tile for one k pair: broadcast a word of `a`, NV dot products.
    macro_rules! row {
        ($acc:ident, $bv:ident, $a:ident, $i:literal; ($($v:literal)*)) => {
            // SAFETY: word $i of this k pair's words of `a`.
            let av = bh(_mm512_set1_epi32(unsafe { *$a.add($i) } as i32));
            $( $acc[$i][$v] = _mm512_dpbf16_ps($acc[$i][$v], av, $bv[$v]); )*
        };
    }
    // Written out row by row (constant indices), so the sums live in registers.
    macro_rules! tile {
        ($($i:literal)* ; $vs:tt) => {{
            let mut acc = [[_mm512_setzero_ps(); NV]; MR];
            let (mut a, mut b) = (a, b);
            for _ in 0..kp {
                let mut bv = [bh(_mm512_setzero_si512()); NV];
                for (v, x) in bv.iter_mut().enumerate() {
                    // SAFETY: one aligned line of this k pair's words of `b`, inside the panel.
                    *x = bh(unsafe { _mm512_load_si512(b.add(16 * v).cast()) });
                }
                $( row!(acc, bv, a, $i; $vs); )*
                // SAFETY: the next k pair's words (one past the end after the last, never read).
                unsafe { (a, b) = (a.add(MR), b.add(NR)) };
            }
            let mut out = [[_mm512_setzero_ps(); NV]; MR];
            $( out[$i] = acc[$i]; )*
            out
        }};
    }
    const _: () = assert!(MR == 6 && NV == 4, "the lists below spell out MR rows of NV vectors");
    let acc = tile!(0 1 2 3 4 5; (0 1 2 3));
    if rows == MR && cols == NR && cs == 1 {
        for (i, row) in acc.iter().enumerate() {
            for (v, s) in row.iter().enumerate() {
                // SAFETY: 16 contiguous elements of row i of the full tile at `c`.
                unsafe {
                    let p = c.offset(i as isize * rs).add(16 * v);
                    let x = if add { _mm512_add_ps(*s, _mm512_loadu_ps(p)) } else { *s };
                    _mm512_storeu_ps(p, x);
                }
            }
        }
        return;
    }
    let mut tile = [0f32; MR * NR];
    for (i, row) in acc.iter().enumerate() {
        for (v, s) in row.iter().enumerate() {
            // SAFETY: 16 elements inside `tile`.
            unsafe { _mm512_storeu_ps(tile.as_mut_ptr().add(i * NR + 16 * v), *s) };
        }
    }
    for i in 0..rows {
        for j in 0..cols {
            // SAFETY: (i, j) lies inside the writable block at `c`.
            unsafe {
                let p = c.offset(i as isize * rs + j as isize * cs);
                *p = if add { *p + tile[i * NR + j] } else { tile[i * NR + j] };
            }
        }
    }
}

/// One task: rows panels `rp`, column panels `cp` of the current block.
#[derive(Clone, Copy)]
struct Task {
    rp: (usize, usize),
    cp: (usize, usize),
}

/// Splits `row_panels x col_panels` into tasks: row blocks of at most [`MAX_TASK_PANELS`]
/// panels, as many as a multiple of `threads`, then columns split until there are at least
/// two tasks per thread.
fn plan(row_panels: usize, col_panels: usize, threads: usize) -> Vec<Task> {
    let threads = threads.max(1);
    let mut nr = row_panels.div_ceil(MAX_TASK_PANELS);
    if threads > 1 {
        nr = nr.div_ceil(threads) * threads;
    }
    let nr = nr.clamp(1, row_panels);
    let nc = (2 * threads).div_ceil(nr).clamp(1, col_panels);
    let split = |total: usize, parts: usize, i: usize| (total * i / parts, total * (i + 1) / parts);
    let mut tasks = Vec::with_capacity(nr * nc);
    for r in 0..nr {
        for c in 0..nc {
            tasks.push(Task { rp: split(row_panels, nr, r), cp: split(col_panels, nc, c) });
        }
    }
    tasks
}

/// `dst = a @ b` on this path. `k > 0`, shapes checked by the caller.
///
/// # Safety
/// As for [`crate::gemm::matmul_bf16`]; the CPU must pass [`available`].
pub(crate) unsafe fn matmul(dst: MatMut<f32>, a: MatRef<bf16>, b: MatRef<bf16>, threads: usize) {
    if crate::gemm::bf16_thin::suits(&a, &b) {
        // SAFETY: forwarded; `available` covers the thin path's features.
        return unsafe { crate::gemm::bf16_thin::matmul(dst, a, b, threads) };
    }
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let shared = Shared { a, b, dst: dst.ptr, drs: dst.rs, dcs: dst.cs };
    let row_panels = m.div_ceil(MR);
    let mut bbuf = buffer(KC.min(k).div_ceil(2) * NR * NC.min(n).div_ceil(NR));
    for jc in (0..n).step_by(NC) {
        let nc = NC.min(n - jc);
        let col_panels = nc.div_ceil(NR);
        for pc in (0..k).step_by(KC) {
            let kc = KC.min(k - pc);
            let kp = kc.div_ceil(2);
            let bw = &mut words(&mut bbuf)[..col_panels * kp * NR];
            let pack = |(c, out): (usize, &mut [u32])| {
                let sh = &shared; // the whole (Sync) struct, not its raw-pointer fields
                let j0 = jc + c * NR;
                // SAFETY: the panel lies inside `b` (columns clipped to the matrix); the CPU passed
                // `available` (this function's contract).
                unsafe { pack_b(out, &sh.b, pc, kc, j0, NR.min(n - j0)) }
            };
            if threads > 1 {
                bw.par_chunks_mut(kp * NR).enumerate().for_each(pack);
            } else {
                bw.chunks_mut(kp * NR).enumerate().for_each(pack);
            }
            let bp: &[u32] = bw;
            let run = |t: &Task| {
                let sh = &shared;
                let mut abuf = buffer((t.rp.1 - t.rp.0) * kp * MR);
                let aw = words(&mut abuf);
                for (r, out) in (t.rp.0..t.rp.1).zip(aw.chunks_mut(kp * MR)) {
                    let i0 = r * MR;
                    // SAFETY: the panel lies inside `a` (rows clipped to the matrix); the CPU passed
                    // `available`.
                    unsafe { pack_a(out, &sh.a, i0, MR.min(m - i0), pc, kc) };
                }
                for c in t.cp.0..t.cp.1 {
                    let (j0, bpanel) = (jc + c * NR, &bp[c * kp * NR..]);
                    for (r, apanel) in (t.rp.0..t.rp.1).zip(aw.chunks(kp * MR)) {
                        let i0 = r * MR;
                        // SAFETY: full packed panels; the tile at (i0, j0), clipped to `dst`,
                        // belongs to this task alone; `available` was checked by the caller.
                        unsafe {
                            let c = sh.dst.offset(i0 as isize * sh.drs + j0 as isize * sh.dcs);
                            micro(
                                kp,
                                apanel.as_ptr(),
                                bpanel.as_ptr(),
                                c,
                                sh.drs,
                                sh.dcs,
                                MR.min(m - i0),
                                NR.min(n - j0),
                                pc > 0,
                            )
                        };
                    }
                }
            };
            let tasks = plan(row_panels, col_panels, threads);
            if threads > 1 {
                tasks.par_iter().for_each(run);
            } else {
                tasks.iter().for_each(run);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::plan;

    #[test]
    fn plans_cover_every_panel_once() {
        for (rows, cols, threads) in [(1, 1, 2), (147, 64, 2), (3, 200, 2), (500, 1, 4), (10, 10, 1)] {
            let mut seen = vec![0u8; rows * cols];
            let tasks = plan(rows, cols, threads);
            for t in &tasks {
                for r in t.rp.0..t.rp.1 {
                    for c in t.cp.0..t.cp.1 {
                        seen[r * cols + c] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "{rows}x{cols}");
            assert!(tasks.len() >= (2 * threads).min(rows * cols) || threads == 1);
        }
    }
}
