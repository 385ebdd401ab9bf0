//! Matrix-product kernels: NumPy `matmul` over the GEMM micro-kernels of `pyasc-kernels`.
//!
//! Operands are read in place through their strides (a transposed view is just other
//! strides); 1-D operands are a row on the left and a column on the right; batch dimensions
//! broadcast. Many small products run in parallel, one per worker; a few large ones give the
//! GEMM all the workers.

use crate::pool::num_threads;
use crate::view::{InputView, SendPtr};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::DType;
use pyasc_kernels::gemm::{matmul_bf16, matmul_f16, matmul_f32, matmul_f64, MatMut, MatRef};
use rayon::prelude::*;

/// A matrix operand: batch extents and strides, then (rows, cols) with strides.
struct Operand {
    batch: Vec<usize>,
    batch_strides: Vec<isize>,
    rows: usize,
    cols: usize,
    rs: isize,
    cs: isize,
}

fn operand(v: &InputView, left: bool) -> Operand {
    let r = v.shape.len();
    if r == 1 {
        let (n, s) = (v.shape[0], v.strides[0]);
        return if left {
            Operand { batch: vec![], batch_strides: vec![], rows: 1, cols: n, rs: 0, cs: s }
        } else {
            Operand { batch: vec![], batch_strides: vec![], rows: n, cols: 1, rs: s, cs: 0 }
        };
    }
    Operand {
        batch: v.shape[..r - 2].to_vec(),
        batch_strides: v.strides[..r - 2].to_vec(),
        rows: v.shape[r - 2],
        cols: v.shape[r - 1],
        rs: v.strides[r - 2],
        cs: v.strides[r - 1],
    }
}

/// Element offset of batch index `idx` (over the broadcast batch `dims`) in an operand.
fn batch_offset(op: &Operand, dims: &[usize], mut flat: usize) -> isize {
    let mut off = 0isize;
    let lead = dims.len() - op.batch.len();
    for d in (0..dims.len()).rev() {
        let i = flat % dims[d];
        flat /= dims[d];
        if d >= lead && op.batch[d - lead] != 1 {
            off += i as isize * op.batch_strides[d - lead];
        }
    }
    off
}

/// `out = a @ b`; `out` is C-contiguous with the product's shape, in the operands' dtype, or
/// float32 for bfloat16 and float16 operands (float32 products and sums).
pub fn run_gemm(a: &InputView, b: &InputView, out: *mut u8) -> Result<()> {
    let (oa, ob) = (operand(a, true), operand(b, false));
    let rank = oa.batch.len().max(ob.batch.len());
    let mut dims = vec![1usize; rank];
    for (op, _) in [(&oa, 0), (&ob, 1)] {
        let lead = rank - op.batch.len();
        for (i, d) in op.batch.iter().enumerate() {
            if *d != 1 {
                dims[lead + i] = *d;
            }
        }
    }
    let batches: usize = dims.iter().product();
    let (n, k, m) = (oa.rows, oa.cols, ob.cols);
    if ob.rows != k {
        return Err(IrError::internal("matmul operands do not agree"));
    }
    if batches == 0 || n == 0 || m == 0 {
        return Ok(());
    }
    let dtype = a.dtype;
    if b.dtype != dtype || !matches!(dtype, DType::BF16 | DType::F16 | DType::F32 | DType::F64) {
        return Err(IrError::internal(format!("matmul of {} and {} operands has no kernel", dtype, b.dtype)));
    }
    let (pa, pb, pc) = (SendPtr(a.ptr as *mut u8), SendPtr(b.ptr as *mut u8), SendPtr(out));
    let threads = num_threads();
    // Rows `r0..r0+rows` and columns `c0..c0+cols` of product `bi`.
    let piece = |bi: usize, (r0, rows): (usize, usize), (c0, cols): (usize, usize), workers: usize| {
        // Capture the whole Send wrappers, not their raw-pointer fields.
        let (pa, pb, pc) = (&pa, &pb, &pc);
        let offa = batch_offset(&oa, &dims, bi) + r0 as isize * oa.rs;
        let offb = batch_offset(&ob, &dims, bi) + c0 as isize * ob.cs;
        let offc = (bi * n * m + r0 * m + c0) as isize;
        // SAFETY: offsets stay inside the operands (their views cover the broadcast batch and
        // the piece lies inside the product) and each piece writes its own block of the output.
        unsafe {
            match dtype {
                DType::BF16 => matmul_bf16(
                    MatMut { ptr: (pc.0 as *mut f32).offset(offc), rows, cols, rs: m as isize, cs: 1 },
                    MatRef { ptr: (pa.0 as *const half::bf16).offset(offa), rows, cols: k, rs: oa.rs, cs: oa.cs },
                    MatRef { ptr: (pb.0 as *const half::bf16).offset(offb), rows: k, cols, rs: ob.rs, cs: ob.cs },
                    workers,
                ),
                DType::F16 => matmul_f16(
                    MatMut { ptr: (pc.0 as *mut f32).offset(offc), rows, cols, rs: m as isize, cs: 1 },
                    MatRef { ptr: (pa.0 as *const half::f16).offset(offa), rows, cols: k, rs: oa.rs, cs: oa.cs },
                    MatRef { ptr: (pb.0 as *const half::f16).offset(offb), rows: k, cols, rs: ob.rs, cs: ob.cs },
                    workers,
                ),
                DType::F32 => matmul_f32(
                    MatMut { ptr: (pc.0 as *mut f32).offset(offc), rows, cols, rs: m as isize, cs: 1 },
                    MatRef { ptr: (pa.0 as *const f32).offset(offa), rows, cols: k, rs: oa.rs, cs: oa.cs },
                    MatRef { ptr: (pb.0 as *const f32).offset(offb), rows: k, cols, rs: ob.rs, cs: ob.cs },
                    workers,
                ),
                DType::F64 => matmul_f64(
                    MatMut { ptr: (pc.0 as *mut f64).offset(offc), rows, cols, rs: m as isize, cs: 1 },
                    MatRef { ptr: (pa.0 as *const f64).offset(offa), rows, cols: k, rs: oa.rs, cs: oa.cs },
                    MatRef { ptr: (pb.0 as *const f64).offset(offb), rows: k, cols, rs: ob.rs, cs: ob.cs },
                    workers,
                ),
                _ => unreachable!("checked above"),
            }
        }
    };
    let one = |bi: usize, workers: usize| piece(bi, (0, n), (0, m), workers);
    let flops = 2.0 * (batches * n * m * k) as f64;
    // Rayon's workers run a large product: the launch team's idle helpers would take their
    // cores while they spin.
    let _parked = (threads > 1 && flops >= PARK_FLOPS).then(crate::team::park);
    if threads > 1 && batches >= 2 * threads && flops > 1e6 {
        crate::pool::install(|| (0..batches).into_par_iter().for_each(|bi| one(bi, 1)));
    } else {
        let workers = if flops > 4e6 { threads } else { 1 };
        // A long batch of products stops between products once cancelled, and a large product
        // between pieces of it.
        let token = crate::interrupt::current();
        let (rows, cols) = match &token {
            Some(_) => piece_shape(n, m, k, workers),
            None => (n, m),
        };
        for bi in 0..batches {
            for r0 in (0..n).step_by(rows) {
                for c0 in (0..m).step_by(cols) {
                    if let Some(t) = &token {
                        t.check()?;
                    }
                    let (r, c) = ((r0, rows.min(n - r0)), (c0, cols.min(m - c0)));
                    if workers > 1 && tall_split(dtype, r.1, c.1, workers) {
                        // A tall product: one band of rows per worker, each on one thread
                        // (`gemm`'s own split often keeps such shapes on a single thread).
                        let band = r.1.div_ceil(workers).next_multiple_of(16);
                        crate::pool::install(|| {
                            (0..r.1.div_ceil(band)).into_par_iter().for_each(|i| {
                                let start = i * band;
                                piece(bi, (r.0 + start, band.min(r.1 - start)), c, 1)
                            })
                        });
                    } else if workers > 1 {
                        // `gemm` spreads the product over the pool it runs in.
                        crate::pool::install(|| piece(bi, r, c, workers));
                    } else {
                        piece(bi, r, c, 1);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Products of at least this many FLOPs (about 150 us at 200 GFLOP/s) send the launch team's
/// spinning helpers to sleep first; a smaller one ends before their spin would cost more than
/// waking them again for the next launch.
const PARK_FLOPS: f64 = 3e7;

/// Whether a `rows x cols` float32/float64 product runs as one band of rows per worker: when
/// it is tall (at least twice as many rows as columns, 128 rows per worker or more). Square
/// and wide products keep `gemm`'s own split, which shares its packed panels.
fn tall_split(dtype: DType, rows: usize, cols: usize, workers: usize) -> bool {
    matches!(dtype, DType::F32 | DType::F64) && rows >= 2 * cols && rows >= 128 * workers
}

/// Floating-point operations one worker does between two cancellation checks: about 50 ms
/// of one AVX-512 core's FMA throughput (on slower cores the pieces take longer).
const PIECE_FLOPS_PER_WORKER: f64 = 5e9;

/// Rows and columns of the pieces an `n x k @ k x m` product runs in, between which a
/// cancelled launch stops: the whole product when it is small, else near-square blocks of
/// about [`PIECE_FLOPS_PER_WORKER`] per worker. `gemm` packs operand panels per call either
/// way (its panels are smaller than such blocks), so the pieces cost no measurable time.
fn piece_shape(n: usize, m: usize, k: usize, workers: usize) -> (usize, usize) {
    let budget = PIECE_FLOPS_PER_WORKER * workers.max(1) as f64;
    if 2.0 * (n * m * k) as f64 <= 2.0 * budget {
        return (n, m);
    }
    // Output elements per piece, at least one 64 x 64 block.
    let elems = (budget / (2.0 * k.max(1) as f64)).max(4096.0);
    let round = |v: f64, unit: usize| ((v as usize) / unit).max(1) * unit;
    let cols = round(elems.sqrt() * 2.0, 64).min(m);
    let rows = round(elems / cols as f64, 16).min(n);
    (rows, cols)
}

/// `a @ b` as a library routine.
pub struct MatMulKernel;

impl crate::library::LibraryKernel for MatMulKernel {
    fn id(&self) -> pyasc_ir::LibId {
        pyasc_ir::LibId::MATMUL
    }
    unsafe fn run(
        &self,
        _call: &pyasc_ir::library::LibCall,
        operands: &[&InputView],
        out: *mut u8,
        _k: &pyasc_ir::tile::TileKernel,
    ) -> Result<()> {
        match operands {
            [a, b] => run_gemm(a, b, out),
            _ => Err(IrError::internal("matmul takes two operands")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::piece_shape;

    #[test]
    fn small_products_are_one_piece_and_large_ones_bounded_pieces() {
        assert_eq!(piece_shape(512, 512, 512, 2), (512, 512));
        let (r, c) = piece_shape(6000, 6000, 6000, 2);
        assert!(r < 6000 && c < 6000 && r % 16 == 0 && c % 64 == 0, "{r}x{c}");
        let flops = 2.0 * (r * c * 6000) as f64;
        assert!((5e9..=2.5e10).contains(&flops), "{flops}");
        // A very deep product still gets pieces of at least 4,096 output elements.
        assert_eq!(piece_shape(6000, 6000, 1 << 30, 2), (32, 128));
        // Thin products keep their extent.
        let (r, c) = piece_shape(100_000, 8, 100_000, 2);
        assert_eq!(c, 8);
        assert!(r < 100_000);
    }
}
