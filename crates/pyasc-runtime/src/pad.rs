//! `np.pad` kernels: each output element reads the element its per-axis index map names, or
//! the constant (modes constant, edge, reflect, wrap).

use crate::view::InputView;
use pyasc_ir::error::Result;
use pyasc_ir::view::PadSpec;
use pyasc_ir::{DType, Scalar};

/// Write `np.pad(x, spec)` into the C-contiguous `out`.
pub fn run_pad(x: &InputView, out: *mut u8, spec: &PadSpec) -> Result<()> {
    let rank = x.shape.len();
    let out_shape: Vec<usize> = spec.widths.iter().zip(&x.shape).map(|((b, a), d)| b + d + a).collect();
    let n: usize = out_shape.iter().product();
    if n == 0 {
        return Ok(());
    }
    // Per axis: the source offset (in elements) of each output index, or None for the constant.
    let tables: Vec<Vec<Option<isize>>> = (0..rank)
        .map(|d| {
            (0..out_shape[d])
                .map(|i| spec.source(i, x.shape[d], spec.widths[d].0).map(|j| j as isize * x.strides[d]))
                .collect()
        })
        .collect();
    macro_rules! fill {
        ($t:ty, $c:expr) => {{
            let dst = out as *mut $t;
            let src = x.ptr as *const $t;
            let c: $t = $c;
            let mut idx = vec![0usize; rank];
            for p in 0..n {
                let mut off = Some(0isize);
                for d in 0..rank {
                    off = match (off, tables[d][idx[d]]) {
                        (Some(o), Some(t)) => Some(o + t),
                        _ => None,
                    };
                }
                // SAFETY: `p` < n elements of the output; offsets come from valid indices.
                unsafe { *dst.add(p) = off.map_or(c, |o| *src.offset(o)) };
                for d in (0..rank).rev() {
                    idx[d] += 1;
                    if idx[d] < out_shape[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        }};
    }
    let cv = spec.cval;
    match x.dtype {
        DType::Bool => fill!(u8, cv.as_bool() as u8),
        DType::I32 => fill!(i32, cv.as_i64() as i32),
        DType::I64 => fill!(i64, cv.as_i64()),
        DType::F32 => fill!(f32, cv.as_f64() as f32),
        _ => fill!(
            f64,
            match cv {
                Scalar::Float(f) => f,
                other => other.as_f64(),
            }
        ),
    }
    Ok(())
}
