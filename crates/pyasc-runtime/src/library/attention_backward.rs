//! Attention's backward pass (FlashAttention-2's): for each (broadcast) batch entry, the
//! probabilities are recomputed one block of [`BLOCK_KEYS`] keys at a time against all the
//! queries, and each block gives its keys' and values' cotangents whole and adds its share to
//! the queries':
//!
//! ```text
//! L  = logsumexp_j(scale q_i . k_j)          kept by the forward, else one pass of blocks
//! D  = rowsum(dO * O)
//! per key block:  P = exp(scale Q K_b^T - L)   dV_b = P^T dO   dP = dO V_b^T
//!                 dS = P * (dP - D) * scale   dK_b = dS^T Q   dQ += dS K_b
//! ```
//!
//! A mask's addends (`0`/`-inf` of a boolean one, the values of an additive one) join each
//! block's scores as the forward adds them. The products run on the GEMM of `pyasc-kernels`
//! through the operands' strides (a broadcast cotangent is read with stride 0); causal
//! attention skips the queries before a block's first key, which see none of its keys. Peak
//! extra memory is two `Lq x BLOCK_KEYS` blocks (kept by each thread between calls) and a few
//! values per query: `O(Lq * (BLOCK_KEYS + D))`, never `Lq x Lk`. Entries run in parallel, one per worker, when there are at least as many as
//! workers; otherwise one after another with every worker in each product.

use crate::library::attention::{batch_strides_of, mask_block, mask_strides, MaskAt};
use crate::pool::num_threads;
use crate::view::{InputView, SendPtr};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::library::{attention_shape, AttnMask, AttnSpec, LibCall, LibId};
use pyasc_ir::tile::TileKernel;
use pyasc_ir::{Attr, DType, Shape};
use pyasc_kernels::attention::backward::{dscores, lse_finish, lse_update, probs, BackwardFloat};
use pyasc_kernels::gemm::{matmul_acc_f32, matmul_acc_f64, matmul_scaled_f32, matmul_scaled_f64, MatMut, MatRef};
use std::cell::RefCell;

/// Keys per block.
pub const BLOCK_KEYS: usize = 128;

/// The element types: float32 and float64, with their products and per-thread block buffers.
trait Elem: BackwardFloat {
    /// `dst = scale * (a @ b)`.
    ///
    /// # Safety
    /// As for [`pyasc_kernels::gemm::matmul_f32`].
    unsafe fn mm(dst: MatMut<Self>, a: MatRef<Self>, b: MatRef<Self>, scale: Self, threads: usize);
    /// `dst += a @ b`.
    ///
    /// # Safety
    /// As for [`pyasc_kernels::gemm::matmul_f32`].
    unsafe fn mm_acc(dst: MatMut<Self>, a: MatRef<Self>, b: MatRef<Self>, threads: usize);
    /// `f` with two buffers of `len` elements of this thread's, kept between calls up to
    /// [`KEEP_BYTES`] (so a call faults in no fresh pages); their contents are whatever the
    /// last user left.
    fn with_blocks<R>(len: usize, f: impl FnOnce(&mut [Self], &mut [Self]) -> R) -> R;
}

thread_local! {
    /// Each thread's block buffers, float32 and float64.
    static BLOCKS: RefCell<(Vec<f32>, Vec<f64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The most bytes of block buffers a thread keeps after a call (long sequences' buffers are
/// freed again).
const KEEP_BYTES: usize = 4 << 20;

/// `f` with two halves of `buf`, grown to `2 * len` elements first.
fn halves<T: Copy, R>(buf: &mut Vec<T>, len: usize, zero: T, f: impl FnOnce(&mut [T], &mut [T]) -> R) -> R {
    if buf.len() < 2 * len {
        buf.resize(2 * len, zero);
    }
    let (a, b) = buf[..2 * len].split_at_mut(len);
    let r = f(a, b);
    if std::mem::size_of_val(buf.as_slice()) > KEEP_BYTES {
        *buf = Vec::new();
    }
    r
}

impl Elem for f32 {
    unsafe fn mm(dst: MatMut<f32>, a: MatRef<f32>, b: MatRef<f32>, scale: f32, threads: usize) {
        // SAFETY: forwarded.
        unsafe { matmul_scaled_f32(dst, a, b, scale, threads) }
    }
    unsafe fn mm_acc(dst: MatMut<f32>, a: MatRef<f32>, b: MatRef<f32>, threads: usize) {
        // SAFETY: forwarded.
        unsafe { matmul_acc_f32(dst, a, b, threads) }
    }
    fn with_blocks<R>(len: usize, f: impl FnOnce(&mut [f32], &mut [f32]) -> R) -> R {
        BLOCKS.with(|b| halves(&mut b.borrow_mut().0, len, 0.0, f))
    }
}

impl Elem for f64 {
    unsafe fn mm(dst: MatMut<f64>, a: MatRef<f64>, b: MatRef<f64>, scale: f64, threads: usize) {
        // SAFETY: forwarded.
        unsafe { matmul_scaled_f64(dst, a, b, scale, threads) }
    }
    unsafe fn mm_acc(dst: MatMut<f64>, a: MatRef<f64>, b: MatRef<f64>, threads: usize) {
        // SAFETY: forwarded.
        unsafe { matmul_acc_f64(dst, a, b, threads) }
    }
    fn with_blocks<R>(len: usize, f: impl FnOnce(&mut [f64], &mut [f64]) -> R) -> R {
        BLOCKS.with(|b| halves(&mut b.borrow_mut().1, len, 0.0, f))
    }
}

/// `f(0), .., f(workers - 1)`: on this thread for one worker, else on the pool's threads (the
/// caller runs inside [`crate::pool::install`]).
fn each<R: Send>(workers: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    use rayon::prelude::*;
    if workers <= 1 {
        return vec![f(0)];
    }
    (0..workers).into_par_iter().map(f).collect()
}

/// A matrix operand of one batch entry.
fn mat<T>(ptr: *const T, rows: usize, cols: usize, rs: isize, cs: isize) -> MatRef<T> {
    MatRef { ptr, rows, cols, rs, cs }
}

/// One batch entry's operands (`q, k, v, o, do`: address, row stride, column stride), its
/// mask if any (its element at query 0, key 0 of this entry), the rows' log-sum-exp when the
/// forward kept them (address, stride), and sizes.
struct Entry<T> {
    m: [(*const T, isize, isize); 5],
    mask: Option<(MaskAt, bool)>,
    lse: Option<(*const T, isize)>,
    lq: usize,
    lk: usize,
    d: usize,
    dv: usize,
    scale: f64,
    causal: bool,
}

impl<T: Elem> Entry<T> {
    fn get(&self, i: usize, rows: usize, cols: usize) -> MatRef<T> {
        let (p, rs, cs) = self.m[i];
        mat(p, rows, cols, rs, cs)
    }

    /// The queries from `r0` on, of a matrix operand `i` (rows are queries).
    fn rows_from(&self, i: usize, r0: usize, cols: usize) -> MatRef<T> {
        let (p, rs, cs) = self.m[i];
        mat(p.wrapping_offset(r0 as isize * rs), self.lq - r0, cols, rs, cs)
    }

    /// Keys `j0..j0 + n` of operand `i` (rows are keys).
    fn keys(&self, i: usize, j0: usize, n: usize, cols: usize) -> MatRef<T> {
        let (p, rs, cs) = self.m[i];
        mat(p.wrapping_offset(j0 as isize * rs), n, cols, rs, cs)
    }

    /// Write `dq` (`lq x d`), `dk` (`lk x d`) and `dv` (`lk x dv`), packed from `out`, with
    /// `workers` threads of the pool taking every `workers`-th block of keys (each with its own
    /// share of `dq`, added up at the end).
    ///
    /// # Safety
    /// The operands must be readable through their strides and `out` must hold the packed
    /// cotangents of this entry.
    unsafe fn run(&self, out: *mut T, workers: usize, poll: &(dyn Fn() -> Result<()> + Sync)) -> Result<()> {
        let (lq, lk, d, dv) = (self.lq, self.lk, self.d, self.dv);
        let dq = out;
        // SAFETY: dq is the entry's first lq * d elements.
        unsafe { std::slice::from_raw_parts_mut(dq, lq * d) }.fill(T::ZERO);
        // D = rowsum(dO * O).
        let (o, g) = (self.get(3, lq, dv), self.get(4, lq, dv));
        // SAFETY: (i, c) lies inside the operand `m`.
        let at = |m: &MatRef<T>, i: usize, c: usize| unsafe { *m.ptr.offset(i as isize * m.rs + c as isize * m.cs) };
        let dsum: Vec<T> =
            (0..lq).map(|i| (0..dv).fold(T::ZERO, |a, c| a.add(at(&o, i, c).mul(at(&g, i, c))))).collect();
        let bk = BLOCK_KEYS.min(lk.max(1));
        let blocks = lk.div_ceil(bk);
        let workers = workers.clamp(1, blocks.max(1));
        let lse = match self.lse {
            // SAFETY: the forward's statistics hold one value per query at this stride.
            Some((p, rs)) => (0..lq).map(|i| unsafe { *p.offset(i as isize * rs) }).collect(),
            None => self.lse_pass(workers, poll)?,
        };
        // Pass 2: per block of keys, their cotangents and the queries' shares.
        let (dq_at, dk, dvv) =
            (dq as usize, out.wrapping_add(lq * d) as usize, out.wrapping_add(lq * d + lk * d) as usize);
        let shares: Vec<Result<Option<Vec<T>>>> = each(workers, |w| {
            let mut own = if w == 0 { None } else { Some(vec![T::ZERO; lq * d]) };
            let acc = match &mut own {
                Some(v) => v.as_mut_ptr(),
                None => dq_at as *mut T,
            };
            T::with_blocks(lq * bk, |s, dp| {
                for b in (w..blocks).step_by(workers) {
                    poll()?;
                    // SAFETY: the block's rows of dk and dv belong to this worker alone; `acc`
                    // is its own share of dq (worker 0 adds into dq itself).
                    unsafe { self.block(&lse, &dsum, (s, dp), b * bk, acc, dk as *mut T, dvv as *mut T) };
                }
                Ok(own)
            })
        });
        for share in shares {
            if let Some(v) = share? {
                // SAFETY: dq holds lq * d elements, written by no one else now.
                let dq = unsafe { std::slice::from_raw_parts_mut(dq, lq * d) };
                for (a, &b) in dq.iter_mut().zip(&v) {
                    *a = a.add(b);
                }
            }
        }
        Ok(())
    }

    /// The rows' log-sum-exp, found in one pass over the blocks of keys (each of `workers`
    /// takes every `workers`-th block; their running maxima and sums are merged).
    fn lse_pass(&self, workers: usize, poll: &(dyn Fn() -> Result<()> + Sync)) -> Result<Vec<T>> {
        let (lq, lk) = (self.lq, self.lk);
        let bk = BLOCK_KEYS.min(lk.max(1));
        let blocks = lk.div_ceil(bk);
        let parts: Vec<Result<(Vec<T>, Vec<T>)>> = each(workers, |w| {
            let (mut mx, mut sm) = (vec![T::NEG_INF; lq], vec![T::ZERO; lq]);
            T::with_blocks(lq * bk, |s, spare| {
                for b in (w..blocks).step_by(workers) {
                    poll()?;
                    let (j0, r0) = (b * bk, self.first_row(b * bk));
                    let n = bk.min(lk - j0);
                    if r0 < lq {
                        self.scores(s, spare, bk, r0, j0, n);
                        lse_update(s, bk, &mut mx[r0..], &mut sm[r0..], &self.valid(r0, j0, n));
                    }
                }
                Ok((mx, sm))
            })
        });
        let (mut mx, mut sm) = (vec![T::NEG_INF; lq], vec![T::ZERO; lq]);
        for part in parts {
            let (pm, ps) = part?;
            for i in 0..lq {
                let m = if pm[i] > mx[i] { pm[i] } else { mx[i] };
                if m != T::NEG_INF {
                    sm[i] = sm[i].mul(mx[i].sub(m).exp()).add(ps[i].mul(pm[i].sub(m).exp()));
                    mx[i] = m;
                }
            }
        }
        let mut lse = vec![T::ZERO; lq];
        lse_finish(&mx, &sm, &mut lse);
        Ok(lse)
    }

    /// The first query that sees key `j0` (causal attention: the earlier ones see none).
    fn first_row(&self, j0: usize) -> usize {
        if self.causal {
            j0.min(self.lq)
        } else {
            0
        }
    }

    /// Per query from `r0` on: how many of the `n` keys from `j0` it sees.
    fn valid(&self, r0: usize, j0: usize, n: usize) -> Vec<usize> {
        (r0..self.lq).map(|i| if self.causal { (i + 1).saturating_sub(j0).min(n) } else { n }).collect()
    }

    /// `s = scale Q[r0..] K[j0..j0 + n]^T (+ the mask's addends)`, rows of stride `ld`;
    /// `spare` (as large as `s`) holds the addends on the way.
    fn scores(&self, s: &mut [T], spare: &mut [T], ld: usize, r0: usize, j0: usize, n: usize) {
        let (rows, d) = (self.lq - r0, self.d);
        let dst = MatMut { ptr: s.as_mut_ptr(), rows, cols: n, rs: ld as isize, cs: 1 };
        let kb = self.keys(1, j0, n, d);
        let kt = mat(kb.ptr, d, n, kb.cs, kb.rs);
        // SAFETY: the block buffer holds rows x ld; the operands are readable.
        unsafe { T::mm(dst, self.rows_from(0, r0, d), kt, T::of(self.scale), 1) };
        if let Some((m, boolean)) = &self.mask {
            let at = MaskAt { base: m.base + r0 as isize * m.sq + j0 as isize * m.sk, ..*m };
            // SAFETY: the mask view covers queries r0.. and keys j0..j0 + n of this entry.
            unsafe { mask_block(spare, (rows, n), (ld, 1), &at, *boolean, T::of) };
            for r in 0..rows {
                let (row, add) = (&mut s[r * ld..r * ld + n], &spare[r * ld..r * ld + n]);
                for (x, a) in row.iter_mut().zip(add) {
                    *x = x.add(*a);
                }
            }
        }
    }

    /// One block of keys from `j0`: its rows of `dk` and `dv`, and its share added to `acc`
    /// (`lq x d`).
    ///
    /// # Safety
    /// `acc`, `dk` and `dv` must be writable (this block's rows of `dk` and `dv` by this
    /// caller alone).
    #[allow(clippy::too_many_arguments)]
    unsafe fn block(
        &self,
        lse: &[T],
        dsum: &[T],
        (s, dp): (&mut [T], &mut [T]),
        j0: usize,
        acc: *mut T,
        dk: *mut T,
        dvv: *mut T,
    ) {
        let (lq, lk, d, dv) = (self.lq, self.lk, self.d, self.dv);
        let bk = BLOCK_KEYS.min(lk.max(1));
        let n = bk.min(lk - j0);
        let r0 = self.first_row(j0);
        let rows = lq - r0;
        if rows > 0 {
            self.scores(s, dp, bk, r0, j0, n);
            probs(s, bk, n, &lse[r0..], &self.valid(r0, j0, n));
        }
        let p = mat(s.as_ptr(), rows, n, bk as isize, 1);
        let pt = mat(p.ptr, n, rows, 1, bk as isize);
        let g_rows = self.rows_from(4, r0, dv);
        let dst = |ptr: *mut T, rows: usize, cols: usize| MatMut { ptr, rows, cols, rs: cols as isize, cs: 1 };
        // SAFETY: the keys' rows of the packed dv; the operands are readable.
        unsafe { T::mm(dst(dvv.add(j0 * dv), n, dv), pt, g_rows, T::of(1.0), 1) };
        if rows > 0 {
            let vb = self.keys(2, j0, n, dv);
            let vt = mat(vb.ptr, dv, n, vb.cs, vb.rs);
            let into = MatMut { ptr: dp.as_mut_ptr(), rows, cols: n, rs: bk as isize, cs: 1 };
            // SAFETY: the block buffer holds rows x bk.
            unsafe { T::mm(into, g_rows, vt, T::of(1.0), 1) };
            dscores(s, dp, bk, n, &dsum[r0..], T::of(self.scale));
        }
        let ds = mat(dp.as_ptr(), rows, n, bk as isize, 1);
        let ds_t = mat(ds.ptr, n, rows, 1, bk as isize);
        // SAFETY: the keys' rows of the packed dk.
        unsafe { T::mm(dst(dk.add(j0 * d), n, d), ds_t, self.rows_from(0, r0, d), T::of(1.0), 1) };
        if rows > 0 {
            // SAFETY: the queries' rows of the caller's share of dq.
            unsafe { T::mm_acc(dst(acc.add(r0 * d), rows, d), ds, self.keys(1, j0, n, d), 1) };
        }
    }
}

// SAFETY: an entry holds addresses of operands that are only read while it is shared.
unsafe impl<T> Sync for Entry<T> {}

/// The packed cotangents of attention (the mask, if any, after the five operands; the rows'
/// log-sum-exp, if kept, last); `out` is C-contiguous with the packed
/// shape ([`pyasc_ir::library::attention_backward_shape`]) in the operands' dtype.
///
/// # Safety
/// The operands must be live views of their dtypes and `out` must hold the result.
pub unsafe fn run_attention_backward(ops: &[&InputView], out: *mut u8, spec: &AttnSpec) -> Result<()> {
    let fixed = 5 + usize::from(spec.mask != AttnMask::None);
    if ops.len() != fixed && ops.len() != fixed + 1 {
        return Err(IrError::internal("attention_backward: the operand count does not match the mask"));
    }
    let (q, k, v, o, g) = (ops[0], ops[1], ops[2], ops[3], ops[4]);
    let (mask, stats) = ((fixed == 6).then(|| ops[5]), ops.get(fixed).copied());
    let shape = |x: &InputView| Shape(x.shape.clone());
    let oshape = attention_shape(&shape(q), &shape(k), &shape(v), mask.map(shape).as_ref())?;
    let r = oshape.rank();
    let batch = oshape.0[..r - 2].to_vec();
    let (lq, dv) = (oshape.0[r - 2], oshape.0[r - 1]);
    let (lk, d) = (k.shape[k.shape.len() - 2], q.shape[q.shape.len() - 1]);
    let entries: usize = batch.iter().product();
    let per = lq * d + lk * d + lk * dv;
    if entries == 0 || per == 0 {
        return Ok(());
    }
    let views = [q, k, v, o, g];
    let strides: Vec<Vec<isize>> = views.iter().map(|x| batch_strides_of(x, &batch)).collect();
    // Each operand's address (as an integer, shared by the workers), row and column strides.
    let bases: [(usize, isize, isize); 5] = std::array::from_fn(|i| {
        let x = views[i];
        let n = x.shape.len();
        (x.ptr as usize, x.strides[n - 2], x.strides[n - 1])
    });
    // The statistics' and the mask's addresses (as integers, like the operands'), strides and
    // batch strides.
    let stats_at = stats.map(|l| (l.ptr as usize, l.strides[l.shape.len() - 2], batch_strides_of(l, &batch)));
    let mask_at = mask.map(|m| (m.ptr as usize, m.dtype, mask_strides(m), batch_strides_of(m, &batch)));
    let boolean = spec.mask == AttnMask::Bool;
    let dtype = q.dtype;
    let offset = |strides: &[isize], mut flat: usize| -> isize {
        let mut off = 0;
        for dim in (0..batch.len()).rev() {
            off += (flat % batch[dim]) as isize * strides[dim];
            flat /= batch[dim];
        }
        off
    };
    let threads = num_threads();
    let token = crate::interrupt::current();
    let poll = || match &token {
        Some(t) => t.check(),
        None => Ok(()),
    };
    let pout = SendPtr(out);
    let run = |e: usize, inner: usize| -> Result<()> {
        macro_rules! go {
            ($t:ty) => {{
                let m: [(*const $t, isize, isize); 5] = std::array::from_fn(|i| {
                    let (p, rs, cs) = bases[i];
                    ((p as *const $t).wrapping_offset(offset(&strides[i], e)), rs, cs)
                });
                let lse = stats_at.as_ref().map(|(p, rs, bs)| ((*p as *const $t).wrapping_offset(offset(bs, e)), *rs));
                let mask = mask_at.as_ref().map(|(p, dtype, (sq, sk), bs)| {
                    (MaskAt { ptr: *p as *const u8, dtype: *dtype, base: offset(bs, e), sq: *sq, sk: *sk }, boolean)
                });
                let entry = Entry { m, mask, lse, lq, lk, d, dv, scale: spec.scale, causal: spec.causal };
                let pout = &pout;
                // SAFETY: per this function's contract; each entry writes its own packed row.
                unsafe { entry.run((pout.0 as *mut $t).add(e * per), inner, &poll) }
            }};
        }
        match dtype {
            DType::F32 => go!(f32),
            DType::F64 => go!(f64),
            other => Err(IrError::internal(format!("attention_backward of {other}"))),
        }
    };
    if entries >= threads {
        crate::pool::for_blocks(entries, threads.saturating_sub(1), |e| run(e, 1))
    } else {
        // Few entries: each one's blocks of keys spread over the workers.
        crate::pool::install(|| (0..entries).try_for_each(|e| run(e, threads)))
    }
}

/// Attention's backward pass as a library routine.
pub struct AttentionBackwardKernel;

impl crate::library::LibraryKernel for AttentionBackwardKernel {
    fn id(&self) -> LibId {
        LibId::ATTENTION_BACKWARD
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        match &call.attr {
            // SAFETY: per the trait's contract.
            Attr::Attention(spec) => unsafe { run_attention_backward(operands, out, spec) },
            _ => Err(IrError::internal("attention_backward needs an attention attribute")),
        }
    }
}
