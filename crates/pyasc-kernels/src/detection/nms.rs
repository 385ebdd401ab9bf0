//! Detection kernels: pairwise box IoU and greedy non-maximum suppression (NMS).
//!
//! Boxes are `x1, y1, x2, y2` rows of float32 or float64 ([`Coord`]). The arithmetic follows
//! torchvision's CPU kernels operation for operation, in the boxes' own dtype: areas are
//! `(x2 - x1) * (y2 - y1)`, the intersection is `max(0, min(x2) - max(x1)) * max(0, min(y2) - max(y1))`
//! and the IoU is `inter / (area_a + area_b - inter)`.
//!
//! * [`box_iou`] fills an `n × m` matrix, rows spread over the worker pool, each row one SIMD
//!   loop over the second set (kept as five contiguous columns). Where the union is zero (two
//!   zero-area boxes) it writes 0, where torchvision's division gives NaN.
//! * [`nms`] sorts the boxes by score (descending, stable: ties keep the lower index first) and
//!   runs the suppression of the CUDA kernels of torchvision and detectron on the CPU: for each
//!   box, a 64-bit mask per block of 64 later boxes says which of them it suppresses (IoU
//!   strictly above the threshold; a NaN IoU suppresses nothing), rows computed in parallel;
//!   one sequential sweep ORs the masks of kept boxes into a removal bitset. The sweep takes
//!   the next rows not yet removed (up to [`CHUNK_ROWS`], fewer while most rows of a chunk
//!   turn out suppressed by earlier rows of the same chunk), computes their masks in parallel,
//!   then sweeps them (a chunk small enough for the calling thread is one row: nothing is
//!   gained by computing rows together there): rows removed by earlier chunks are never
//!   computed, so clustered inputs (most boxes suppressed) cost far less than the full
//!   triangle, and the masks in memory stay at `CHUNK_ROWS × n / 64` words. Once at most half
//!   of the boxes past the sweep's position are still live, those are gathered into new
//!   columns (in order, with their original positions), so later masks are computed over live
//!   boxes only: 20,000 clustered boxes 14.5-15.2 -> 11.1 ms, the YOLOv5 example's 851 boxes
//!   26.5 -> 24.2 us back to back.
//! * [`batched_nms`] runs [`nms`] within each category (boxes of different categories never
//!   suppress each other) and returns the kept boxes in global score order.
//! * [`nms_mask`] is the sweep alone over a given IoU matrix whose rows are in score order.
//!
//! The IoU loops are monomorphised per ISA through [`crate::dispatch`]; the threshold is
//! compared in the boxes' dtype through [`Coord::floor_of`], which gives the same answer as
//! comparing the IoU widened to float64 against the float64 threshold (torchvision's rule).

use crate::dispatch::{dispatch, Kernel, Simd};
use rayon::prelude::*;
use std::ops::{Add, Div, Mul, Sub};
use std::time::{Duration, Instant};

/// Rows not yet removed whose suppression masks are computed together before the sweep takes them.
pub const CHUNK_ROWS: usize = 64;

/// The fewest rows a chunk shrinks to.
const MIN_CHUNK_ROWS: usize = 8;

/// Lanes per suppression mask word.
const LANES: usize = 64;

/// Below this many IoU pairs per chunk the rows are computed on the calling thread: handing a
/// chunk to the pool costs a few microseconds, as much as a chunk of 64 rows of some two
/// thousand boxes computes in. Over clustered boxes on two cores, one thread against two took
/// 102 against 143 us for 1,000 boxes and the same time for 2,000 to 3,000; two threads win
/// from about 5,000 boxes (1.42 against 1.70 ms).
const PARALLEL_PAIRS: usize = 1 << 17;

/// How often a long sweep asks the host whether to stop.
const POLL_EVERY: Duration = Duration::from_millis(20);

/// A box coordinate type: float32 or float64.
pub trait Coord:
    Copy
    + Send
    + Sync
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + 'static
{
    /// Zero.
    const ZERO: Self;
    /// The largest value of this type that is at most `t` (NaN for NaN), so that for every
    /// `x` of this type `x > floor_of(t)` exactly when `f64::from(x) > t`.
    fn floor_of(t: f64) -> Self;

    /// Bit `k` set where box `a`'s IoU with box `k` of `cols` (`x1, y1, x2, y2, area`) is
    /// above `t` (clear for NaN): [`inter_union`] and the division in AVX-512 registers,
    /// operation for operation, so each IoU is the portable loop's.
    ///
    /// # Safety
    /// The CPU supports AVX-512F: call it only from kernels run for [`Simd::AVX512`].
    #[cfg(target_arch = "x86_64")]
    unsafe fn iou_mask_avx512(a: [Self; 5], cols: [&[Self; LANES]; 5], t: Self) -> u64;
}

/// The IoU masks in AVX-512 registers for one element type: `$n` lanes per vector.
///
/// `max(a, b)` is `a < b ? b : a` and `vmaxps(b, a)` is `b > a ? b : a`, the same choice for
/// every input (NaN and signed zeros included); likewise `min(a, b)` is `vminps(b, a)`.
macro_rules! iou_mask_avx512 {
    ($name:ident, $t:ty, $n:literal, $v:ty, $set1:ident, $load:ident, $max:ident, $min:ident, $add:ident,
     $sub:ident, $mul:ident, $div:ident, $cmp:ident) => {
        /// [`Coord::iou_mask_avx512`] for this element type.
        ///
        /// # Safety
        /// The CPU supports AVX-512F.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        unsafe fn $name(a: [$t; 5], cols: [&[$t; LANES]; 5], t: $t) -> u64 {
            use std::arch::x86_64::*;
            let [ax1, ay1, ax2, ay2, aar] = a.map(|x| $set1(x));
            let (zero, tv) = ($set1(0.0), $set1(t));
            let mut bits = 0u64;
            for g in 0..LANES / $n {
                // SAFETY: lanes $n g..$n (g + 1) lie inside each column's block.
                let [x1, y1, x2, y2, ar]: [$v; 5] = cols.map(|c| unsafe { $load(c.as_ptr().add($n * g)) });
                let w = $max($sub($min(x2, ax2), $max(x1, ax1)), zero);
                let h = $max($sub($min(y2, ay2), $max(y1, ay1)), zero);
                let inter = $mul(w, h);
                let iou = $div(inter, $sub($add(aar, ar), inter));
                bits |= u64::from($cmp::<_CMP_GT_OQ>(iou, tv)) << ($n * g);
            }
            bits
        }
    };
}

iou_mask_avx512!(
    iou_mask_f32,
    f32,
    16,
    __m512,
    _mm512_set1_ps,
    _mm512_loadu_ps,
    _mm512_max_ps,
    _mm512_min_ps,
    _mm512_add_ps,
    _mm512_sub_ps,
    _mm512_mul_ps,
    _mm512_div_ps,
    _mm512_cmp_ps_mask
);
iou_mask_avx512!(
    iou_mask_f64,
    f64,
    8,
    __m512d,
    _mm512_set1_pd,
    _mm512_loadu_pd,
    _mm512_max_pd,
    _mm512_min_pd,
    _mm512_add_pd,
    _mm512_sub_pd,
    _mm512_mul_pd,
    _mm512_div_pd,
    _mm512_cmp_pd_mask
);

impl Coord for f32 {
    const ZERO: f32 = 0.0;
    fn floor_of(t: f64) -> f32 {
        let c = t as f32;
        if f64::from(c) > t {
            c.next_down()
        } else {
            c
        }
    }
    #[cfg(target_arch = "x86_64")]
    unsafe fn iou_mask_avx512(a: [f32; 5], cols: [&[f32; LANES]; 5], t: f32) -> u64 {
        // SAFETY: the caller's contract.
        unsafe { iou_mask_f32(a, cols, t) }
    }
}

impl Coord for f64 {
    const ZERO: f64 = 0.0;
    fn floor_of(t: f64) -> f64 {
        t
    }
    #[cfg(target_arch = "x86_64")]
    unsafe fn iou_mask_avx512(a: [f64; 5], cols: [&[f64; LANES]; 5], t: f64) -> u64 {
        // SAFETY: the caller's contract.
        unsafe { iou_mask_f64(a, cols, t) }
    }
}

/// `par(n, f)`: runs `f(i)` for every `i < n`, spread over worker threads.
pub type ParFn = dyn Fn(usize, &(dyn Fn(usize) + Sync)) + Sync;

/// The host services a long sweep uses: `par(n, f)` runs `f(0)..f(n - 1)`, spread over the
/// host's worker threads (each index once, in any order, all done when it returns), and `poll`
/// runs on the calling thread every few tens of milliseconds and stops the sweep when it
/// returns true.
pub struct Host<'a> {
    /// Runs `f(i)` for every `i < n` on the worker threads.
    pub par: &'a ParFn,
    /// Returns true when the work should stop (a user interrupt).
    pub poll: &'a mut dyn FnMut() -> bool,
}

/// The sweep was stopped by [`Host::poll`] before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// `std::max` as C++ writes it: `a < b ? b : a`.
#[inline(always)]
fn max<T: Coord>(a: T, b: T) -> T {
    if a < b {
        b
    } else {
        a
    }
}

/// `std::min` as C++ writes it: `b < a ? b : a`.
#[inline(always)]
fn min<T: Coord>(a: T, b: T) -> T {
    if b < a {
        b
    } else {
        a
    }
}

/// Boxes as five columns (corners and area), zero-padded to a whole number of mask blocks.
pub struct Columns<T> {
    x1: Vec<T>,
    y1: Vec<T>,
    x2: Vec<T>,
    y2: Vec<T>,
    area: Vec<T>,
    len: usize,
}

impl<T: Coord> Columns<T> {
    /// Columns of the boxes `boxes[4 * i .. 4 * i + 4]` for `i` in `order`.
    pub fn gather(boxes: &[T], order: impl ExactSizeIterator<Item = usize>) -> Columns<T> {
        let len = order.len();
        let padded = len.div_ceil(LANES) * LANES;
        let column = || vec![T::ZERO; padded];
        let mut c = Columns { x1: column(), y1: column(), x2: column(), y2: column(), area: column(), len };
        // Indexed stores into zeroed columns: pushes kept five lengths in memory, one
        // dependent load and store each per value.
        let (x1, y1, x2, y2, area) =
            (&mut c.x1[..len], &mut c.y1[..len], &mut c.x2[..len], &mut c.y2[..len], &mut c.area[..len]);
        for (k, i) in order.enumerate().take(len) {
            let b: &[T; 4] = boxes[4 * i..4 * i + 4].try_into().unwrap();
            x1[k] = b[0];
            y1[k] = b[1];
            x2[k] = b[2];
            y2[k] = b[3];
            area[k] = (b[2] - b[0]) * (b[3] - b[1]);
        }
        c
    }

    /// Columns of the boxes of `c` at `positions`, in that order.
    fn at(c: &Columns<T>, positions: &[usize]) -> Columns<T> {
        let len = positions.len();
        let padded = len.div_ceil(LANES) * LANES;
        let pick = |v: &[T]| {
            let mut out = vec![T::ZERO; padded];
            for (o, &p) in out.iter_mut().zip(positions) {
                *o = v[p];
            }
            out
        };
        Columns { x1: pick(&c.x1), y1: pick(&c.y1), x2: pick(&c.x2), y2: pick(&c.y2), area: pick(&c.area), len }
    }

    /// Number of boxes (without the padding).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no boxes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Corners and area of box `i`.
    #[inline(always)]
    fn get(&self, i: usize) -> [T; 5] {
        [self.x1[i], self.y1[i], self.x2[i], self.y2[i], self.area[i]]
    }
}

/// Intersection and union of box `a` (corners and area) with one box of the columns.
#[inline(always)]
fn inter_union<T: Coord>(a: [T; 5], x1: T, y1: T, x2: T, y2: T, area: T) -> (T, T) {
    let w = max(T::ZERO, min(a[2], x2) - max(a[0], x1));
    let h = max(T::ZERO, min(a[3], y2) - max(a[1], y1));
    let inter = w * h;
    (inter, a[4] + area - inter)
}

/// One row of IoUs: box `a` against every box of `c`, written to `out`.
struct IouRow<'a, T> {
    a: [T; 5],
    c: &'a Columns<T>,
    out: &'a mut [T],
}

impl<T: Coord> Kernel for IouRow<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let m = self.out.len();
        let (x1, y1, x2, y2, ar) =
            (&self.c.x1[..m], &self.c.y1[..m], &self.c.x2[..m], &self.c.y2[..m], &self.c.area[..m]);
        for j in 0..m {
            let (inter, union) = inter_union(self.a, x1[j], y1[j], x2[j], y2[j], ar[j]);
            let q = inter / union;
            self.out[j] = if union == T::ZERO { T::ZERO } else { q };
        }
    }
}

/// Pairwise IoU of `a` (`4n` values) and `b` (`4m` values) into `out` (`n × m`, row-major),
/// rows spread over the current rayon pool.
pub fn box_iou<T: Coord>(a: &[T], b: &[T], out: &mut [T]) {
    let (n, m) = (a.len() / 4, b.len() / 4);
    assert!(a.len() == 4 * n && b.len() == 4 * m && out.len() == n * m, "box_iou: bad lengths");
    if n == 0 || m == 0 {
        return;
    }
    let ca = Columns::gather(a, 0..n);
    let cb = Columns::gather(b, 0..m);
    let row = |(i, o): (usize, &mut [T])| dispatch(IouRow { a: ca.get(i), c: &cb, out: o });
    if n * m < PARALLEL_PAIRS {
        out.chunks_mut(m).enumerate().for_each(row);
    } else {
        out.par_chunks_mut(m).enumerate().with_min_len((PARALLEL_PAIRS / m).max(1)).for_each(row);
    }
}

/// The suppression masks of box `r`: bit `k` of `out[b - r / 64]` is set when box `r`'s IoU
/// with box `64 b + k` is above `t` (bits of boxes at or before `r`, and of the padding, are
/// meaningless and never read).
struct MaskRow<'a, T> {
    r: usize,
    t: T,
    c: &'a Columns<T>,
    out: &'a mut [u64],
}

impl<T: Coord> Kernel for MaskRow<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let a = self.c.get(self.r);
        let first = self.r / LANES;
        for (w, word) in self.out.iter_mut().enumerate() {
            let base = (first + w) * LANES;
            let x1: &[T; LANES] = self.c.x1[base..base + LANES].try_into().unwrap();
            let y1: &[T; LANES] = self.c.y1[base..base + LANES].try_into().unwrap();
            let x2: &[T; LANES] = self.c.x2[base..base + LANES].try_into().unwrap();
            let y2: &[T; LANES] = self.c.y2[base..base + LANES].try_into().unwrap();
            let ar: &[T; LANES] = self.c.area[base..base + LANES].try_into().unwrap();
            #[cfg(target_arch = "x86_64")]
            if S::AVX512 {
                // In registers: IoUs stored by the compiler's (narrower) vectors and reloaded
                // whole for the compares stall on every reload.
                // SAFETY: kernels run for `S::AVX512` only on CPUs with AVX-512F.
                *word = unsafe { T::iou_mask_avx512(a, [x1, y1, x2, y2, ar], self.t) };
                continue;
            }
            // IoUs first (one clean SIMD loop), then the comparison packed 8 lanes at a time.
            let mut iou = [T::ZERO; LANES];
            for k in 0..LANES {
                let (inter, union) = inter_union(a, x1[k], y1[k], x2[k], y2[k], ar[k]);
                iou[k] = inter / union;
            }
            let mut flags = [0u8; LANES];
            for k in 0..LANES {
                flags[k] = u8::from(iou[k] > self.t);
            }
            let mut bits = 0u64;
            for (g, f) in flags.chunks_exact(8).enumerate() {
                bits |= u64::from(pack8(u64::from_le_bytes(f.try_into().unwrap()))) << (8 * g);
            }
            *word = bits;
        }
    }
}

/// Packs eight 0/1 bytes (byte `i` of `x`) into the bits of one byte (bit `i`): the multiply
/// moves byte `i`'s low bit to bit `56 + i`, and no other partial product reaches the top byte.
#[inline(always)]
pub(crate) fn pack8(x: u64) -> u8 {
    (x.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

#[inline(always)]
fn removed(remv: &[u64], i: usize) -> bool {
    (remv[i / LANES] >> (i % LANES)) & 1 == 1
}

/// Boxes at positions `from..n` not yet removed (`from < n`; bits of the padding past `n`,
/// which a negative threshold sets, do not count).
fn live_from(remv: &[u64], from: usize, n: usize) -> usize {
    let (first, last) = (from / LANES, (n - 1) / LANES);
    let gone: u32 = (first..=last)
        .map(|w| {
            let lo = if w == first { from % LANES } else { 0 };
            let hi = if w == last { (n - 1) % LANES + 1 } else { LANES };
            let bits = if hi - lo == LANES { u64::MAX } else { ((1u64 << (hi - lo)) - 1) << lo };
            (remv[w] & bits).count_ones()
        })
        .sum();
    n - from - gone as usize
}

/// Fewest boxes past the sweep's cursor worth gathering into new columns.
const COMPACT_MIN: usize = 4 * LANES;

/// Greedy suppression over boxes already in score order: the positions (into `c`) of the kept
/// boxes, in order.
pub fn sweep<T: Coord>(c: &Columns<T>, iou_threshold: f64, host: &mut Host<'_>) -> Result<Vec<usize>, Stopped> {
    let mut n = c.len();
    let t = T::floor_of(iou_threshold);
    let mut blocks = n.div_ceil(LANES);
    let mut remv = vec![0u64; blocks];
    // After compaction: the live boxes' columns and each position's original position.
    let mut compacted: Option<(Columns<T>, Vec<usize>)> = None;
    let mut checked_block = 0;
    let mut keep = Vec::new();
    let mut masks: Vec<u64> = Vec::new();
    let mut live: Vec<usize> = Vec::with_capacity(CHUNK_ROWS);
    // Rows per chunk: halved after a chunk whose rows were mostly suppressed by rows of the same
    // chunk (their masks were computed for nothing), doubled after one that kept most of them.
    let mut chunk = CHUNK_ROWS;
    let mut cursor = 0;
    let mut next_poll = Instant::now() + POLL_EVERY;
    let mut swept = 0usize;
    while cursor < n {
        // Once at most half of the boxes past the cursor are still live, the rest are
        // gathered into new columns: masks are then computed over live boxes only.
        if cursor / LANES > checked_block && n - cursor >= COMPACT_MIN {
            checked_block = cursor / LANES;
            let live = live_from(&remv, cursor, n);
            if 2 * live <= n - cursor {
                let positions: Vec<usize> = (cursor..n).filter(|&i| !removed(&remv, i)).collect();
                let (cols, map) = match &compacted {
                    Some((cc, m)) => (cc, Some(m)),
                    None => (c, None),
                };
                let next = Columns::at(cols, &positions);
                let original = positions.iter().map(|&p| map.map_or(p, |m| m[p])).collect();
                compacted = Some((next, original));
                (n, cursor, checked_block) = (positions.len(), 0, 0);
                blocks = n.div_ceil(LANES);
                remv.clear();
                remv.resize(blocks, 0);
                continue;
            }
        }
        let (c, map) = match &compacted {
            Some((cc, m)) => (cc, Some(m)),
            None => (c, None),
        };
        // Rows whose masks would be computed on the calling thread go one at a time: a row
        // computed after the rows above it were swept is never one they suppress, so no mask
        // is computed for nothing (the YOLOv5 example's 851 boxes above its score threshold,
        // 70 kept: the whole call 45 -> 34 us on one thread).
        let take = if chunk * (n - cursor) < PARALLEL_PAIRS { 1 } else { chunk };
        // The next rows not yet removed: only they can be kept, so only their masks are needed.
        live.clear();
        while cursor < n && live.len() < take {
            if cursor % LANES == 0 && remv[cursor / LANES] == u64::MAX {
                cursor += LANES;
                continue;
            }
            if !removed(&remv, cursor) {
                live.push(cursor);
            }
            cursor += 1;
        }
        let Some(&first) = live.first() else { break };
        let first_block = first / LANES;
        let row_words = blocks - first_block;
        masks.resize(masks.len().max(live.len() * row_words), 0);
        let rows = &mut masks[..live.len() * row_words];
        let live_rows = &live;
        // Row r's masks start at its own block; the words before it are not needed.
        let fill = |(k, out): (usize, &mut [u64])| {
            let r = live_rows[k];
            dispatch(MaskRow { r, t, c, out: &mut out[r / LANES - first_block..] });
        };
        if live.len() * (n - first) < PARALLEL_PAIRS {
            rows.chunks_mut(row_words).enumerate().for_each(fill);
        } else {
            let base = RowsPtr(rows.as_mut_ptr());
            let one = |k: usize| {
                // SAFETY: `k < live.len()`, so row `k` lies inside `rows`; each index runs once,
                // so no two calls write the same words.
                let out = unsafe { std::slice::from_raw_parts_mut(base.at(k * row_words), row_words) };
                fill((k, out));
            };
            (host.par)(live.len(), &one);
        }
        let kept_before = keep.len();
        for (k, &r) in live.iter().enumerate() {
            if removed(&remv, r) {
                continue;
            }
            keep.push(map.map_or(r, |m| m[r]));
            let row = &rows[k * row_words + r / LANES - first_block..(k + 1) * row_words];
            for (d, &m) in remv[r / LANES..].iter_mut().zip(row) {
                *d |= m;
            }
        }
        chunk = if 2 * (keep.len() - kept_before) >= live.len() {
            (2 * chunk).min(CHUNK_ROWS)
        } else {
            (chunk / 2).max(MIN_CHUNK_ROWS)
        };
        // A row at a time takes well under a microsecond per row for a few thousand boxes:
        // reading the clock after every one cost 3% of the YOLOv5 example's call.
        swept += 1;
        if (take > 1 || swept.is_multiple_of(32)) && Instant::now() >= next_poll {
            if (host.poll)() {
                return Err(Stopped);
            }
            next_poll = Instant::now() + POLL_EVERY;
        }
    }
    Ok(keep)
}

/// A key whose ascending order is `s`'s descending order: NaN first, then the numbers from
/// largest to smallest, with -0 equal to +0.
#[inline]
fn descending_key(s: f64) -> u64 {
    if s.is_nan() {
        return 0;
    }
    let bits = (if s == 0.0 { 0.0f64 } else { s }).to_bits();
    let ascending = if bits >> 63 == 1 { !bits } else { bits | 1 << 63 };
    // NaN takes 0; no number maps there (the largest ascending key is below u64::MAX).
    !ascending
}

/// `0..n` sorted by `scores` descending, stably (ties keep the lower index first; NaN counts
/// as the largest score).
pub fn score_order(scores: &[f64]) -> Vec<usize> {
    score_order_above(scores, None)
}

/// [`score_order`] of the scores strictly above `above` only (all of them for `None`; a NaN
/// score is never above a threshold).
pub fn score_order_above(scores: &[f64], above: Option<f64>) -> Vec<usize> {
    let mut keyed: Vec<(u64, usize)> = match above {
        None => scores.iter().enumerate().map(|(i, &s)| (descending_key(s), i)).collect(),
        Some(t) => scores.iter().enumerate().filter(|(_, &s)| s > t).map(|(i, &s)| (descending_key(s), i)).collect(),
    };
    // The index makes every key distinct, so an unstable sort gives the stable order; the
    // radix sort is stable itself (851 float32 scores: 9.3 -> 7.2 us).
    if keyed.len() > 1 << 14 {
        keyed.par_sort_unstable();
    } else {
        crate::radix::sort_stable(&mut keyed);
    }
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// Greedy NMS with torchvision's semantics: the indices of the kept boxes of `boxes` (`4n`
/// values, `x1 y1 x2 y2` rows), in descending score order; a box is dropped when its IoU with
/// a kept box of higher rank is strictly above `iou_threshold`. With `score_threshold`, boxes
/// whose score is not strictly above it take no part (ONNX's `NonMaxSuppression` rule).
pub fn nms<T: Coord>(
    boxes: &[T],
    scores: &[f64],
    iou_threshold: f64,
    score_threshold: Option<f64>,
    host: &mut Host<'_>,
) -> Result<Vec<i64>, Stopped> {
    assert_eq!(boxes.len(), 4 * scores.len(), "nms: one score per box");
    let order = score_order_above(scores, score_threshold);
    let c = Columns::gather(boxes, order.iter().copied());
    let kept = sweep(&c, iou_threshold, host)?;
    Ok(kept.into_iter().map(|p| order[p] as i64).collect())
}

/// NMS within each category `idxs[i]` (boxes of different categories never suppress each
/// other), the kept indices in descending score order (ties: lower index first), as
/// torchvision's `batched_nms`; `score_threshold` as for [`nms`].
pub fn batched_nms<T: Coord>(
    boxes: &[T],
    scores: &[f64],
    idxs: &[i64],
    iou_threshold: f64,
    score_threshold: Option<f64>,
    host: &mut Host<'_>,
) -> Result<Vec<i64>, Stopped> {
    assert!(
        boxes.len() == 4 * scores.len() && idxs.len() == scores.len(),
        "batched_nms: one score and category per box"
    );
    let order = score_order_above(scores, score_threshold);
    let mut rank = vec![0usize; scores.len()];
    for (k, &i) in order.iter().enumerate() {
        rank[i] = k;
    }
    // Score order within each category (a stable sort by category keeps it).
    let mut by_cat = order;
    by_cat.sort_by_key(|&i| idxs[i]);
    let mut kept: Vec<usize> = Vec::new();
    let mut start = 0;
    while start < by_cat.len() {
        let cat = idxs[by_cat[start]];
        let end = start + by_cat[start..].iter().take_while(|&&i| idxs[i] == cat).count();
        let group = &by_cat[start..end];
        let c = Columns::gather(boxes, group.iter().copied());
        kept.extend(sweep(&c, iou_threshold, host)?.into_iter().map(|p| group[p]));
        start = end;
    }
    kept.sort_unstable_by_key(|&i| rank[i]);
    Ok(kept.into_iter().map(|i| i as i64).collect())
}

/// `removed[j] |= row[j] > t` over one row of an IoU matrix.
struct OrRow<'a, T> {
    row: &'a [T],
    t: T,
    removed: &'a mut [u8],
}

impl<T: Coord> Kernel for OrRow<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        for (r, &v) in self.removed.iter_mut().zip(self.row) {
            *r |= u8::from(v > self.t);
        }
    }
}

/// The greedy sweep over a precomputed `n × n` IoU matrix whose rows and columns are in score
/// order: `keep[i]` is true when no kept box before `i` has an IoU with it strictly above
/// `iou_threshold` (NaN entries suppress nothing).
pub fn nms_mask<T: Coord>(iou: &[T], n: usize, iou_threshold: f64) -> Vec<bool> {
    assert_eq!(iou.len(), n * n, "nms_mask: the matrix must be n × n");
    let t = T::floor_of(iou_threshold);
    let mut removed = vec![0u8; n];
    let mut keep = vec![false; n];
    for i in 0..n {
        if removed[i] != 0 {
            continue;
        }
        keep[i] = true;
        dispatch(OrRow { row: &iou[i * n + i + 1..(i + 1) * n], t, removed: &mut removed[i + 1..] });
    }
    keep
}

/// The rows of a chunk's masks, shared by the threads that each fill other rows.
#[derive(Clone, Copy)]
struct RowsPtr(*mut u64);
// SAFETY: every thread writes only the rows of the indices it is given (see the sweep).
unsafe impl Send for RowsPtr {}
// SAFETY: as above.
unsafe impl Sync for RowsPtr {}

impl RowsPtr {
    /// The word `i` words past the start (a method, so closures capture the whole wrapper).
    fn at(self, i: usize) -> *mut u64 {
        self.0.wrapping_add(i)
    }
}

/// A [`Host`] for callers without a worker pool of their own: `par` runs on the current rayon
/// pool and `poll` never stops.
pub fn with_plain_host<R>(f: impl FnOnce(&mut Host<'_>) -> R) -> R {
    let par = |n: usize, g: &(dyn Fn(usize) + Sync)| (0..n).into_par_iter().for_each(g);
    let mut poll = || false;
    let mut host = Host { par: &par, poll: &mut poll };
    f(&mut host)
}
