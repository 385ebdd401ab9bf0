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
use pyasc_kernels::gemm::{matmul_f32, matmul_f64, MatMut, MatRef};
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

/// `out = a @ b`; `out` is C-contiguous with the product's shape.
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
    let (pa, pb, pc) = (SendPtr(a.ptr as *mut u8), SendPtr(b.ptr as *mut u8), SendPtr(out));
    let threads = num_threads();
    let one = |bi: usize, workers: usize| {
        // Capture the whole Send wrappers, not their raw-pointer fields.
        let (pa, pb, pc) = (&pa, &pb, &pc);
        let (offa, offb) = (batch_offset(&oa, &dims, bi), batch_offset(&ob, &dims, bi));
        let offc = (bi * n * m) as isize;
        // SAFETY: offsets stay inside the operands (their views cover the broadcast batch) and
        // each batch writes its own block of the output.
        unsafe {
            match dtype {
                DType::F32 => matmul_f32(
                    MatMut { ptr: (pc.0 as *mut f32).offset(offc), rows: n, cols: m, rs: m as isize, cs: 1 },
                    MatRef { ptr: (pa.0 as *const f32).offset(offa), rows: n, cols: k, rs: oa.rs, cs: oa.cs },
                    MatRef { ptr: (pb.0 as *const f32).offset(offb), rows: k, cols: m, rs: ob.rs, cs: ob.cs },
                    workers,
                ),
                _ => matmul_f64(
                    MatMut { ptr: (pc.0 as *mut f64).offset(offc), rows: n, cols: m, rs: m as isize, cs: 1 },
                    MatRef { ptr: (pa.0 as *const f64).offset(offa), rows: n, cols: k, rs: oa.rs, cs: oa.cs },
                    MatRef { ptr: (pb.0 as *const f64).offset(offb), rows: k, cols: m, rs: ob.rs, cs: ob.cs },
                    workers,
                ),
            }
        }
    };
    let flops = 2.0 * (batches * n * m * k) as f64;
    if batches >= 2 * threads && flops > 1e6 {
        crate::pool::install(|| (0..batches).into_par_iter().for_each(|bi| one(bi, 1)));
    } else {
        let workers = if flops > 4e6 { threads } else { 1 };
        // A long batch of products stops between products once cancelled.
        let token = crate::interrupt::current();
        for bi in 0..batches {
            if let Some(t) = &token {
                t.check()?;
            }
            if workers > 1 {
                // `gemm` spreads the product over the pool it runs in.
                crate::pool::install(|| one(bi, workers));
            } else {
                one(bi, 1);
            }
        }
    }
    Ok(())
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
