//! Fused scaled dot-product attention over the flash-attention blocks of `pyasc-kernels`.
//!
//! The work is one unit per (head, block of [`BLOCK_Q`] queries; the ragged block first),
//! spread over the launch team ([`crate::pool::for_blocks`]); each unit packs its queries transposed and scaled, then walks
//! the head's keys block by block (only up to its last query when causal: blocks above the
//! diagonal are never computed). Leading (batch, head) dimensions broadcast: an operand with
//! extent 1 there is read with stride 0. float32 keys and values are read in place through
//! their strides; bfloat16 and float16 ones are converted to float32 once per head and worker
//! (a thread-local copy reused by the next unit of the same head) and compute into a float32
//! result; float64 computes in float64. The mask is read through its strides into each block
//! of scores: `false` makes a score `-inf`, a float is added. Peak extra memory is the
//! per-worker scratch (a block of scores, the output block, and for 16-bit inputs one head's
//! keys and values in float32), independent of `Lq x Lk`.

use crate::pool::num_threads;
use crate::view::{InputView, SendPtr};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::library::{attention_shape, AttnMask, AttnSpec, LibCall, LibId};
use pyasc_ir::tile::TileKernel;
use pyasc_ir::{Attr, DType, Shape};
use pyasc_kernels::attention::{attend_f32, attend_f64, scratch_len, AttnFloat, MaskFn, QueryBlock, Strided, BLOCK_Q};
use pyasc_kernels::convert16::{bf16_to_f32, bf16_value, f16_to_f32, f16_value};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// An operand's batch strides aligned to the result's batch dimensions (0 where broadcast).
pub(crate) fn batch_strides_of(v: &InputView, batch: &[usize]) -> Vec<isize> {
    batch_strides(v, batch)
}

/// An operand's batch strides aligned to the result's batch dimensions (0 where broadcast).
fn batch_strides(v: &InputView, batch: &[usize]) -> Vec<isize> {
    let r = v.shape.len();
    let nb = r.saturating_sub(2).min(r);
    let lead = batch.len() - nb;
    (0..batch.len()).map(|d| if d < lead || v.shape[d - lead] == 1 { 0 } else { v.strides[d - lead] }).collect()
}

/// The element offset of flat batch index `flat` for an operand with `strides`.
fn batch_offset(batch: &[usize], strides: &[isize], mut flat: usize) -> isize {
    let mut off = 0;
    for d in (0..batch.len()).rev() {
        off += (flat % batch[d]) as isize * strides[d];
        flat /= batch[d];
    }
    off
}

/// Read element `off` of a float view as f64.
///
/// # Safety
/// The element must be readable and of `dtype`.
#[inline(always)]
unsafe fn read(ptr: *const u8, dtype: DType, off: isize) -> f64 {
    // SAFETY: per the contract.
    unsafe {
        match dtype {
            DType::F32 => *(ptr as *const f32).offset(off) as f64,
            DType::F64 => *(ptr as *const f64).offset(off),
            DType::F16 => f16_value(*(ptr as *const u16).offset(off)) as f64,
            DType::BF16 => bf16_value(*(ptr as *const u16).offset(off)) as f64,
            DType::Bool => f64::from(*ptr.offset(off)),
            _ => f64::NAN,
        }
    }
}

/// The compute types: float32 (for float32 and 16-bit operands) and float64.
trait Compute: AttnFloat {
    fn from_f64(x: f64) -> Self;
    /// The block routine.
    ///
    /// # Safety
    /// As for [`attend_f32`].
    unsafe fn attend(b: &QueryBlock<'_, Self>, m: Option<MaskFn<'_, Self>>, s: &mut [Self], out: *mut Self, rs: isize);
    fn scratch(t: &mut Scratch) -> &mut Vec<Self>;
}

impl Compute for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    unsafe fn attend(b: &QueryBlock<'_, f32>, m: Option<MaskFn<'_, f32>>, s: &mut [f32], out: *mut f32, rs: isize) {
        // SAFETY: forwarded.
        unsafe { attend_f32(b, m, s, out, rs) }
    }
    fn scratch(t: &mut Scratch) -> &mut Vec<f32> {
        &mut t.f32
    }
}

impl Compute for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
    unsafe fn attend(b: &QueryBlock<'_, f64>, m: Option<MaskFn<'_, f64>>, s: &mut [f64], out: *mut f64, rs: isize) {
        // SAFETY: forwarded.
        unsafe { attend_f64(b, m, s, out, rs) }
    }
    fn scratch(t: &mut Scratch) -> &mut Vec<f64> {
        &mut t.f64
    }
}

/// Per-thread buffers: query block and scores (float32 or float64), and one head's keys and
/// values converted to float32, tagged with the call and head they belong to.
#[derive(Default)]
struct Scratch {
    f32: Vec<f32>,
    f64: Vec<f64>,
    kv: Vec<f32>,
    kv_of: Option<(u64, usize)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Tags the converted keys and values of each call apart.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Convert `rows x cols` 16-bit elements at `src` (strides `rs`, `cs`) into `dst`, row-major.
///
/// # Safety
/// Every addressed element must be readable.
unsafe fn widen(src: *const u16, rs: isize, cs: isize, rows: usize, cols: usize, bf: bool, dst: &mut [f32]) {
    for r in 0..rows {
        let d = &mut dst[r * cols..(r + 1) * cols];
        // SAFETY: row r of the caller's matrix.
        let row = unsafe { src.offset(r as isize * rs) };
        if cs == 1 {
            // SAFETY: a contiguous row of `cols` elements.
            let s = unsafe { std::slice::from_raw_parts(row, cols) };
            if bf {
                bf16_to_f32(s, d);
            } else {
                f16_to_f32(s, d);
            }
        } else {
            for (c, x) in d.iter_mut().enumerate() {
                // SAFETY: element (r, c).
                let h = unsafe { *row.offset(c as isize * cs) };
                *x = if bf { bf16_value(h) } else { f16_value(h) };
            }
        }
    }
}

/// Where a block's mask lies: element (i, j) of the block at `ptr + base + i*sq + j*sk`.
pub(crate) struct MaskAt {
    pub(crate) ptr: *const u8,
    pub(crate) dtype: DType,
    pub(crate) base: isize,
    pub(crate) sq: isize,
    pub(crate) sk: isize,
}

/// `out[i * ri + j * cj] = f(mask(i, j))` over a block's valid queries, one query (a run of
/// the mask along the keys) at a time.
///
/// # Safety
/// Every addressed mask element must be readable as an `M`.
#[inline(always)]
unsafe fn each<T: Copy, M: Copy>(
    out: &mut [T],
    (rows, bc): (usize, usize),
    (ri, cj): (usize, usize),
    at: &MaskAt,
    f: impl Fn(M) -> T,
) {
    let p = at.ptr as *const M;
    for i in 0..rows {
        let run = at.base + i as isize * at.sq;
        for j in 0..bc {
            // SAFETY: element (i, j) of the block, per the contract.
            out[i * ri + j * cj] = f(unsafe { *p.offset(run + j as isize * at.sk) });
        }
    }
}

/// The mask's addends of a block of `rows` queries and `bc` keys, query `i` and key `j` at
/// `out[i * ri + j * cj]`: `0` or `-inf` for a boolean mask, the values of a float one
/// (converted by `of`).
///
/// # Safety
/// As for [`each`], with the mask's own dtype.
pub(crate) unsafe fn mask_block<T: AttnFloat>(
    out: &mut [T],
    size: (usize, usize),
    strides: (usize, usize),
    at: &MaskAt,
    boolean: bool,
    of: impl Fn(f64) -> T,
) {
    // SAFETY: forwarded, each arm reading the mask's dtype.
    unsafe {
        match at.dtype {
            _ if boolean => each(out, size, strides, at, |m: u8| if m != 0 { T::ZERO } else { T::NEG_INF }),
            DType::F32 => each(out, size, strides, at, |m: f32| of(m as f64)),
            DType::F64 => each(out, size, strides, at, |m: f64| of(m)),
            DType::F16 => each(out, size, strides, at, |m: u16| of(f16_value(m) as f64)),
            DType::BF16 => each(out, size, strides, at, |m: u16| of(bf16_value(m) as f64)),
            _ => each(out, size, strides, at, |m: u8| of(f64::from(m))),
        }
    }
}

/// The row and column strides of a mask view's last two axes as a `Lq x Lk` matrix (0 along
/// an axis it broadcasts over).
pub(crate) fn mask_strides(m: &InputView) -> (isize, isize) {
    let mr = m.shape.len();
    (
        if mr >= 2 && m.shape[mr - 2] != 1 { m.strides[mr - 2] } else { 0 },
        if mr >= 1 && m.shape[mr - 1] != 1 { m.strides[mr - 1] } else { 0 },
    )
}

/// Everything a unit needs, shared by all of them.
struct Plan<'a> {
    q: &'a InputView,
    k: &'a InputView,
    v: &'a InputView,
    mask: Option<&'a InputView>,
    spec: &'a AttnSpec,
    batch: Vec<usize>,
    strides: [Vec<isize>; 4],
    lq: usize,
    lk: usize,
    d: usize,
    dv: usize,
    /// Each query's log-sum-exp follows its outputs (rows of `dv + 1`).
    stats: bool,
    call: u64,
}

// SAFETY: units only read the views (memory nobody writes during the launch) and write
// disjoint rows of the result.
unsafe impl Sync for Plan<'_> {}

impl Plan<'_> {
    /// Unit `t` (head `t / blocks`, query block `t % blocks`) into `out`.
    ///
    /// # Safety
    /// The views must be live; `out` must hold the result in `T`.
    unsafe fn unit<T: Compute>(&self, t: usize, blocks: usize, out: &SendPtr) {
        // The ragged block is the first, the cheapest one when causal (it sees fewest keys).
        let (bh, qb) = (t / blocks, t % blocks);
        let end = self.lq - (blocks - 1 - qb) * BLOCK_Q;
        let q0 = end.saturating_sub(BLOCK_Q);
        let rows = end - q0;
        let off = |i: usize| batch_offset(&self.batch, &self.strides[i], bh);
        let (q, k, v) = (self.q, self.k, self.v);
        let (r, d, dv, lk) = (q.shape.len(), self.d, self.dv, self.lk);
        let (kr, vr) = (k.shape.len(), v.shape.len());
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            let s = &mut *s;
            // Keys and values in the compute type: in place, or one head widened to float32.
            let (kptr, vptr) = (k.ptr, v.ptr);
            let (ks, vs);
            if q.dtype.is_half() {
                if s.kv_of != Some((self.call, bh)) {
                    s.kv.resize(lk * (d + dv), 0.0);
                    let (kd, vd) = s.kv.split_at_mut(lk * d);
                    let bf = q.dtype == DType::BF16;
                    // SAFETY: this head's keys and values lie inside their views.
                    unsafe {
                        let kp = (kptr as *const u16).offset(off(1));
                        widen(kp, k.strides[kr - 2], k.strides[kr - 1], lk, d, bf, kd);
                        let vp = (vptr as *const u16).offset(off(2));
                        widen(vp, v.strides[vr - 2], v.strides[vr - 1], lk, dv, bf, vd);
                    }
                    s.kv_of = Some((self.call, bh));
                }
                let p = s.kv.as_ptr() as *const T;
                ks = Strided { ptr: p, rs: d as isize, cs: 1 };
                // SAFETY: the values follow the lk x d keys in the same buffer.
                vs = Strided { ptr: unsafe { p.add(lk * d) }, rs: dv as isize, cs: 1 };
            } else {
                let kp = (kptr as *const T).wrapping_offset(off(1));
                let vp = (vptr as *const T).wrapping_offset(off(2));
                ks = Strided { ptr: kp, rs: k.strides[kr - 2], cs: k.strides[kr - 1] };
                vs = Strided { ptr: vp, rs: v.strides[vr - 2], cs: v.strides[vr - 1] };
            }
            let buf = T::scratch(s);
            let need = d * BLOCK_Q + scratch_len(dv);
            if buf.len() < need {
                buf.resize(need, T::ZERO);
            }
            let (qt, rest) = buf.split_at_mut(d * BLOCK_Q);
            qt.fill(T::ZERO);
            let qoff = off(0) + q0 as isize * q.strides[r - 2];
            let (qrs, qcs, scale) = (q.strides[r - 2], q.strides[r - 1], self.spec.scale);
            // `Q^T * scale`, the element type's match hoisted out of the loops.
            macro_rules! pack {
                ($get:expr) => {
                    for i in 0..rows {
                        for c in 0..d {
                            let o = qoff + i as isize * qrs + c as isize * qcs;
                            // SAFETY: query q0 + i, column c, inside the view.
                            qt[c * BLOCK_Q + i] = T::from_f64(unsafe { $get(o) } * scale);
                        }
                    }
                };
            }
            match q.dtype {
                DType::F32 => pack!(|o| *(q.ptr as *const f32).offset(o) as f64),
                DType::F64 => pack!(|o| *(q.ptr as *const f64).offset(o)),
                dt => pack!(|o| read(q.ptr, dt, o)),
            }
            let block = QueryBlock { qt, q0, rows, k: ks, v: vs, lk, d, dv, causal: self.spec.causal, lse: self.stats };
            let mask_fn = self.mask.map(|m| {
                let (sq, sk) = mask_strides(m);
                let base = off(3) + q0 as isize * sq;
                let (mp, mdt, boolean) = (SendPtr(m.ptr as *mut u8), m.dtype, self.spec.mask == AttnMask::Bool);
                move |st: &mut [T], j0: usize, bc: usize| {
                    let mp = &mp;
                    let at = MaskAt { ptr: mp.0, dtype: mdt, base: base + j0 as isize * sk, sq, sk };
                    // SAFETY: the mask view covers rows q0.. and keys j0.. of this head.
                    unsafe { mask_block(st, (rows, bc), (1, BLOCK_Q), &at, boolean, T::from_f64) };
                }
            });
            let m: Option<MaskFn<'_, T>> = mask_fn.as_ref().map(|f| f as MaskFn<'_, T>);
            let width = dv + usize::from(self.stats);
            let o = (bh * self.lq + q0) * width;
            // SAFETY: the unit's rows of the C-contiguous result; units write disjoint rows.
            unsafe { T::attend(&block, m, rest, (out.0 as *mut T).add(o), width as isize) };
        });
    }
}

/// `out = softmax(q @ k^T * scale + mask) @ v`; `out` is C-contiguous with the result's shape,
/// float32 for float32 and 16-bit operands, float64 for float64 ones. With `stats`, each
/// result row has one more column, the query's log-sum-exp of its scores
/// ([`pyasc_ir::library::AttentionStats`]).
///
/// # Safety
/// The operands must be live views of their dtypes and `out` must hold the result.
pub unsafe fn run_attention(ops: &[&InputView], out: *mut u8, spec: &AttnSpec, stats: bool) -> Result<()> {
    let (q, k, v, mask) = match ops {
        [q, k, v] => (*q, *k, *v, None),
        [q, k, v, m] => (*q, *k, *v, Some(*m)),
        _ => return Err(IrError::internal("attention takes three or four operands")),
    };
    let shape = |x: &InputView| Shape(x.shape.clone());
    let ms = mask.map(shape);
    let oshape = attention_shape(&shape(q), &shape(k), &shape(v), ms.as_ref())?;
    if k.dtype != q.dtype || v.dtype != q.dtype || !q.dtype.is_float() {
        return Err(IrError::internal("attention operands of different or non-float dtypes"));
    }
    let r = oshape.rank();
    let batch = oshape.0[..r - 2].to_vec();
    let (lq, dv) = (oshape.0[r - 2], oshape.0[r - 1]);
    let (lk, d) = (k.shape[k.shape.len() - 2], q.shape[q.shape.len() - 1]);
    let heads: usize = batch.iter().product();
    if heads == 0 || lq == 0 || dv == 0 {
        return Ok(());
    }
    let size = if q.dtype == DType::F64 { 8 } else { 4 };
    if lk == 0 {
        // No keys: the weights are an empty softmax and the product with no values is zero
        // (and the log of an empty sum is -inf).
        let width = dv + usize::from(stats);
        // SAFETY: the result holds heads * lq * width elements of `size` bytes.
        unsafe { std::ptr::write_bytes(out, 0, heads * lq * width * size) };
        if stats {
            for r in 0..heads * lq {
                let at = (r * width + dv) * size;
                // SAFETY: column dv of row r of the result.
                unsafe {
                    if size == 8 {
                        *(out.add(at) as *mut f64) = f64::NEG_INFINITY;
                    } else {
                        *(out.add(at) as *mut f32) = f32::NEG_INFINITY;
                    }
                }
            }
        }
        return Ok(());
    }
    let mstrides = mask.map_or_else(Vec::new, |m| batch_strides(m, &batch));
    let plan = Plan {
        q,
        k,
        v,
        mask,
        spec,
        strides: [batch_strides(q, &batch), batch_strides(k, &batch), batch_strides(v, &batch), mstrides],
        batch,
        lq,
        lk,
        d,
        dv,
        stats,
        call: CALLS.fetch_add(1, Ordering::Relaxed),
    };
    let blocks = lq.div_ceil(BLOCK_Q);
    let units = heads * blocks;
    let pout = SendPtr(out);
    let token = crate::interrupt::current();
    let threads = num_threads();
    let double = q.dtype == DType::F64;
    let plan = &plan;
    crate::pool::for_blocks(units, threads.saturating_sub(1), |t| {
        if let Some(tok) = &token {
            tok.check()?;
        }
        let pout = &pout;
        // SAFETY: per this function's contract; each unit writes its own rows.
        unsafe {
            if double {
                plan.unit::<f64>(t, blocks, pout);
            } else {
                plan.unit::<f32>(t, blocks, pout);
            }
        }
        Ok(())
    })
}

/// Fused attention as a library routine.
pub struct AttentionKernel;

impl crate::library::LibraryKernel for AttentionKernel {
    fn id(&self) -> LibId {
        LibId::ATTENTION
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match &call.attr {
            // SAFETY: per the trait's contract.
            Attr::Attention(spec) => unsafe { run_attention(operands, out, spec, false) },
            _ => Err(IrError::internal("attention needs an attention attribute")),
        }
    }
}

/// Fused attention that also writes its rows' log-sum-exp, as a library routine.
pub struct AttentionStatsKernel;

impl crate::library::LibraryKernel for AttentionStatsKernel {
    fn id(&self) -> LibId {
        LibId::ATTENTION_STATS
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match &call.attr {
            // SAFETY: per the trait's contract.
            Attr::Attention(spec) => unsafe { run_attention(operands, out, spec, true) },
            _ => Err(IrError::internal("attention_stats needs an attention attribute")),
        }
    }
}

#[cfg(test)]
#[path = "attention_tests.rs"]
mod tests;
