//! Tests of the attention routine against a direct float64 computation.

use super::*;

/// A deterministic pseudo-random sequence in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// Direct float64 attention of one head: q (lq x d), k (lk x d), v (lk x dv), `bias[i][j]`
/// added to the scores (`-inf` masks).
fn head(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    d: usize,
    dv: usize,
    scale: f64,
    bias: impl Fn(usize, usize) -> f64,
) -> Vec<f64> {
    let (lq, lk) = (q.len() / d, k.len() / d);
    let mut out = vec![0.0; lq * dv];
    for i in 0..lq {
        let s: Vec<f64> =
            (0..lk).map(|j| (0..d).map(|t| q[i * d + t] * k[j * d + t]).sum::<f64>() * scale + bias(i, j)).collect();
        let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
        let sum: f64 = e.iter().sum();
        for c in 0..dv {
            out[i * dv + c] = (0..lk).map(|j| e[j] * v[j * dv + c]).sum::<f64>() / sum;
        }
    }
    out
}

fn view<T>(data: &[T], dtype: DType, shape: &[usize]) -> InputView {
    InputView::contiguous(data.as_ptr() as *const u8, dtype, shape.to_vec())
}

#[test]
fn broadcast_heads_and_an_additive_mask_match_the_definition() {
    // q (2, 3, 50, 8), k and v shared by the batch (3, 70, 8) / (3, 70, 5), mask (50, 70).
    let (b, h, lq, lk, d, dv) = (2, 3, 50, 70, 8, 5);
    let q = values(b * h * lq * d, 1);
    let k = values(h * lk * d, 2);
    let v = values(h * lk * dv, 3);
    let mask = values(lq * lk, 4);
    let f = |x: &[f64]| x.iter().map(|&y| y as f32).collect::<Vec<f32>>();
    let (qf, kf, vf, mf) = (f(&q), f(&k), f(&v), f(&mask));
    let spec = AttnSpec { scale: 0.4, causal: true, mask: AttnMask::Additive };
    let mut out = vec![0.0f32; b * h * lq * dv];
    let ops = [
        &view(&qf, DType::F32, &[b, h, lq, d]),
        &view(&kf, DType::F32, &[h, lk, d]),
        &view(&vf, DType::F32, &[h, lk, dv]),
        &view(&mf, DType::F32, &[lq, lk]),
    ];
    // SAFETY: the views address the vectors above and `out` holds the result.
    unsafe { run_attention(&ops, out.as_mut_ptr() as *mut u8, &spec, false).unwrap() };
    for bi in 0..b {
        for hi in 0..h {
            let qh = &q[(bi * h + hi) * lq * d..][..lq * d];
            let (kh, vh) = (&k[hi * lk * d..][..lk * d], &v[hi * lk * dv..][..lk * dv]);
            let want = head(qh, kh, vh, d, dv, 0.4, |i, j| if j > i { f64::NEG_INFINITY } else { mask[i * lk + j] });
            let got = &out[(bi * h + hi) * lq * dv..][..lq * dv];
            for (g, w) in got.iter().zip(&want) {
                assert!((*g as f64 - w).abs() < 2e-5, "{g} vs {w}");
            }
        }
    }
}

#[test]
fn half_and_double_operands_compute_like_float64() {
    let (lq, lk, d, dv) = (60, 33, 16, 16);
    let (q, k, v) = (values(lq * d, 5), values(lk * d, 6), values(lk * dv, 7));
    let keep: Vec<u8> = (0..lq * lk).map(|x| u8::from(x % 5 != 0)).collect();
    let want = head(&q, &k, &v, d, dv, 0.25, |i, j| if keep[i * lk + j] == 0 { f64::NEG_INFINITY } else { 0.0 });
    let spec = AttnSpec { scale: 0.25, causal: false, mask: AttnMask::Bool };
    let mview = view(&keep, DType::Bool, &[lq, lk]);
    // float64: tight.
    let mut out = vec![0.0f64; lq * dv];
    let ops =
        [&view(&q, DType::F64, &[lq, d]), &view(&k, DType::F64, &[lk, d]), &view(&v, DType::F64, &[lk, dv]), &mview];
    // SAFETY: as above.
    unsafe { run_attention(&ops, out.as_mut_ptr() as *mut u8, &spec, false).unwrap() };
    for (g, w) in out.iter().zip(&want) {
        assert!((g - w).abs() < 1e-12, "{g} vs {w}");
    }
    // bfloat16 operands (exactly representable inputs), float32 result.
    let h = |x: &[f64]| x.iter().map(|&y| half::bf16::from_f64(y)).collect::<Vec<_>>();
    let (qh, kh, vh) = (h(&q), h(&k), h(&v));
    let back = |x: &[half::bf16]| x.iter().map(|y| y.to_f64()).collect::<Vec<_>>();
    let want = head(&back(&qh), &back(&kh), &back(&vh), d, dv, 0.25, |i, j| {
        if keep[i * lk + j] == 0 {
            f64::NEG_INFINITY
        } else {
            0.0
        }
    });
    let mut out = vec![0.0f32; lq * dv];
    let ops = [
        &view(&qh, DType::BF16, &[lq, d]),
        &view(&kh, DType::BF16, &[lk, d]),
        &view(&vh, DType::BF16, &[lk, dv]),
        &mview,
    ];
    // SAFETY: as above.
    unsafe { run_attention(&ops, out.as_mut_ptr() as *mut u8, &spec, false).unwrap() };
    for (g, w) in out.iter().zip(&want) {
        assert!((*g as f64 - w).abs() < 2e-5, "{g} vs {w}");
    }
}

#[test]
fn no_keys_give_zeros() {
    let spec = AttnSpec { scale: 1.0, causal: false, mask: AttnMask::None };
    let q = vec![1.0f32; 8];
    let mut out = vec![f32::NAN; 6];
    let e: Vec<f32> = Vec::new();
    let ops = [&view(&q, DType::F32, &[2, 4]), &view(&e, DType::F32, &[0, 4]), &view(&e, DType::F32, &[0, 3])];
    // SAFETY: as above.
    unsafe { run_attention(&ops, out.as_mut_ptr() as *mut u8, &spec, false).unwrap() };
    assert_eq!(out, vec![0.0; 6]);
}
