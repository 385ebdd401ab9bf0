//! Tests of the convolution routine against a direct float64 loop nest.

use super::*;
use pyasc_ir::library::ConvSpec;

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

fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    InputView::contiguous(std::ptr::null(), DType::F64, shape.to_vec()).strides
}

/// Direct definition: out[n,o,q] = sum_{c,k} x[n, g*cg+c, q*s + k*d - pad] * w[o,c,k].
fn reference(x: &[f64], xshape: &[usize], w: &[f64], wshape: &[usize], spec: &ConvSpec) -> (Vec<f64>, Vec<usize>) {
    let out = spec.out_shape(&pyasc_ir::Shape(xshape.to_vec()), &pyasc_ir::Shape(wshape.to_vec())).unwrap().0;
    let sd = spec.spatial();
    let (xs, ws) = (contiguous_strides(xshape), contiguous_strides(wshape));
    let (cg, og) = (xshape[1] / spec.groups, wshape[0] / spec.groups);
    let numel: usize = out.iter().product();
    let os = contiguous_strides(&out);
    let kn: usize = wshape[2..].iter().product();
    let mut res = vec![0.0; numel];
    for (flat, r) in res.iter_mut().enumerate() {
        let idx: Vec<usize> = (0..out.len()).map(|d| (flat / os[d] as usize) % out[d]).collect();
        let (n, o) = (idx[0], idx[1]);
        let g = o / og;
        let mut acc = 0.0;
        for c in 0..cg {
            'taps: for kf in 0..kn {
                let mut xoff = n as isize * xs[0] + (g * cg + c) as isize * xs[1];
                let mut woff = o as isize * ws[0] + c as isize * ws[1];
                let mut rem = kf;
                for d in (0..sd).rev() {
                    let kd = rem % wshape[2 + d];
                    rem /= wshape[2 + d];
                    let i = (idx[2 + d] * spec.stride[d] + kd * spec.dilation[d]) as isize - spec.pad[d].0 as isize;
                    if i < 0 || i >= xshape[2 + d] as isize {
                        continue 'taps;
                    }
                    xoff += i * xs[2 + d];
                    woff += kd as isize * ws[2 + d];
                }
                acc += x[xoff as usize] * w[woff as usize];
            }
        }
        *r = acc;
    }
    (res, out)
}

fn spec(sd: usize, stride: usize, pad: (usize, usize), dilation: usize, groups: usize) -> ConvSpec {
    ConvSpec { stride: vec![stride; sd], pad: vec![pad; sd], dilation: vec![dilation; sd], groups }
}

/// Run the routine in f64 and f32 and compare with the reference; with `strided` the input and
/// the weights are read through views taking every other element of buffers twice as large.
fn check(xshape: &[usize], wshape: &[usize], spec: &ConvSpec, strided: bool) {
    let xn: usize = xshape.iter().product();
    let x = values(xn, 1);
    let w = values(wshape.iter().product(), 2);
    let (want, out) = reference(&x, xshape, &w, wshape, spec);
    // The input through a view: contiguous, or every other element of a buffer twice as wide.
    let (xbuf, xstrides) = if strided {
        let mut buf = vec![9.0; 2 * xn];
        for (i, v) in x.iter().enumerate() {
            buf[2 * i] = *v;
        }
        (buf, contiguous_strides(xshape).iter().map(|s| 2 * s).collect())
    } else {
        (x.clone(), contiguous_strides(xshape))
    };
    let (wbuf, wstrides) = if strided {
        let mut buf = vec![9.0; 2 * w.len()];
        for (i, v) in w.iter().enumerate() {
            buf[2 * i] = *v;
        }
        (buf, contiguous_strides(wshape).iter().map(|s| 2 * s).collect::<Vec<_>>())
    } else {
        (w.clone(), contiguous_strides(wshape))
    };
    let mut got = vec![f64::NAN; want.len()];
    let xv = InputView {
        ptr: xbuf.as_ptr() as *const u8,
        dtype: DType::F64,
        shape: xshape.to_vec(),
        strides: xstrides.clone(),
    };
    let wv = InputView {
        ptr: wbuf.as_ptr() as *const u8,
        dtype: DType::F64,
        shape: wshape.to_vec(),
        strides: wstrides.clone(),
    };
    // SAFETY: the views address the buffers above, which outlive the call.
    unsafe { run_conv(&xv, &wv, got.as_mut_ptr() as *mut u8, spec) }.unwrap();
    for (g, r) in got.iter().zip(&want) {
        assert!((g - r).abs() <= 1e-12 * (1.0 + r.abs()), "f64 {xshape:?} {wshape:?} {spec:?}: {g} vs {r}");
    }
    let (x32, w32): (Vec<f32>, Vec<f32>) =
        (xbuf.iter().map(|v| *v as f32).collect(), wbuf.iter().map(|v| *v as f32).collect());
    let mut got32 = vec![f32::NAN; want.len()];
    let xv = InputView { ptr: x32.as_ptr() as *const u8, dtype: DType::F32, shape: xshape.to_vec(), strides: xstrides };
    let wv = InputView { ptr: w32.as_ptr() as *const u8, dtype: DType::F32, shape: wshape.to_vec(), strides: wstrides };
    // SAFETY: as above.
    unsafe { run_conv(&xv, &wv, got32.as_mut_ptr() as *mut u8, spec) }.unwrap();
    let k = (wshape[1] * wshape[2..].iter().product::<usize>()) as f64;
    for (g, r) in got32.iter().zip(&want) {
        assert!((*g as f64 - r).abs() <= 1e-6 * k.sqrt() * 4.0, "f32 {out:?}: {g} vs {r}");
    }
}

#[test]
fn conv2d_matches_the_direct_definition() {
    check(&[2, 3, 9, 11], &[4, 3, 3, 3], &spec(2, 1, (1, 1), 1, 1), false);
    check(&[1, 4, 10, 7], &[6, 2, 3, 2], &spec(2, 2, (0, 2), 1, 2), false);
    check(&[1, 2, 12, 12], &[2, 2, 3, 3], &spec(2, 1, (2, 2), 2, 1), true);
    check(&[3, 5, 6, 8], &[5, 1, 3, 3], &spec(2, 1, (1, 1), 1, 5), true);
    check(&[1, 1, 5, 5], &[1, 1, 5, 5], &spec(2, 3, (2, 2), 1, 1), false);
}

#[test]
fn conv1d_and_conv3d_match_the_direct_definition() {
    check(&[2, 3, 17], &[5, 3, 4], &spec(1, 3, (2, 1), 2, 1), false);
    check(&[1, 4, 30], &[4, 1, 3], &spec(1, 1, (1, 1), 1, 4), true);
    check(&[2, 2, 5, 6, 7], &[3, 2, 3, 2, 3], &spec(3, 1, (1, 0), 1, 1), false);
    check(&[1, 4, 6, 5, 4], &[4, 2, 2, 2, 2], &spec(3, 2, (1, 1), 1, 2), true);
}

#[test]
fn one_by_one_convolutions_read_the_input_as_columns() {
    let s = spec(2, 1, (0, 0), 1, 1);
    check(&[2, 6, 9, 13], &[5, 6, 1, 1], &s, false);
    check(&[2, 6, 9, 13], &[5, 6, 1, 1], &s, true);
    check(&[1, 8, 40, 40], &[6, 4, 1, 1], &spec(2, 1, (0, 0), 1, 2), false);
}

#[test]
fn small_images_with_large_weights_split_each_gemm_over_the_workers() {
    // 3 x 3 positions, K = 64 * 9: one block, fewer units of work than workers.
    check(&[1, 64, 3, 3], &[48, 64, 3, 3], &spec(2, 1, (1, 1), 1, 1), false);
    check(&[1, 64, 3, 3], &[48, 64, 3, 3], &spec(2, 1, (1, 1), 1, 1), true);
    // Channels that do not split evenly over the workers gathering them, a stride, and
    // output channels not a multiple of the kernels' eight rows.
    check(&[1, 5, 7, 6], &[21, 5, 3, 3], &spec(2, 2, (1, 1), 1, 1), true);
    check(&[1, 7, 9, 9], &[35, 7, 1, 1], &spec(2, 2, (0, 0), 1, 1), false);
    // No input channels: zeros.
    check(&[1, 0, 5, 5], &[32, 0, 3, 3], &spec(2, 1, (1, 1), 1, 1), false);
}

#[test]
fn large_images_run_in_many_blocks() {
    // K = 3 * 9 = 27 rows; 70 x 90 = 6,300 positions spread over several blocks.
    check(&[1, 3, 70, 90], &[8, 3, 3, 3], &spec(2, 1, (1, 1), 1, 1), false);
    let geo = Geometry {
        n: 1,
        groups: 1,
        cg: 64,
        og: 64,
        input: [1, 256, 256],
        kernel: [1, 3, 3],
        out: [1, 256, 256],
        stride: [1; 3],
        pad: [0, 1, 1],
        dilation: [1; 3],
        xs: [0; 5],
    };
    let len = block_len(&geo, 4, 2, false);
    assert!(len * geo.k() * 4 <= 2 * BLOCK_BYTES && len < geo.positions(), "{len}");
    let len = block_len(&geo, 4, 2, true);
    assert!(len * geo.k() * 4 <= ROWS_BLOCK_BYTES + 16 * geo.k() * 4 && len.is_multiple_of(16), "{len}");
    // A small image is one block (its output channels are cut instead).
    let small = Geometry { input: [1, 7, 7], out: [1, 7, 7], cg: 512, og: 512, ..geo };
    assert_eq!(block_len(&small, 4, 2, true), 49);
}

#[test]
fn stride_one_convolutions_read_shifted_rows_of_the_padded_input() {
    // Groups, a strided view, and more than one block of grid positions.
    check(&[2, 6, 20, 20], &[12, 3, 3, 3], &spec(2, 1, (1, 1), 1, 2), true);
    check(&[1, 3, 60, 70], &[10, 3, 3, 3], &spec(2, 1, (1, 1), 1, 1), false);
    // Few positions, many channels: the output channels are cut into slices (44: not a
    // multiple of the kernel's eight rows).
    check(&[1, 16, 14, 14], &[44, 16, 3, 3], &spec(2, 1, (1, 1), 1, 1), false);
    // One dimension; padding only after; padding wider than the kernel; a 1x1 kernel with
    // padding; dilation.
    check(&[1, 3, 200], &[5, 3, 5], &spec(1, 1, (2, 2), 1, 1), true);
    check(&[1, 2, 9, 30], &[3, 2, 2, 4], &spec(2, 1, (0, 2), 1, 1), false);
    check(&[1, 2, 10, 10], &[4, 2, 3, 3], &spec(2, 1, (3, 3), 1, 1), false);
    check(&[1, 4, 10, 10], &[3, 4, 1, 1], &spec(2, 1, (1, 1), 1, 1), true);
    check(&[1, 2, 16, 16], &[3, 2, 3, 3], &spec(2, 1, (2, 2), 2, 1), false);
}

#[test]
fn strided_convolutions_read_shifted_rows_of_the_input_phases() {
    // Stride 2 with a 3x3 and a 7x7 kernel (every phase read), a 1x1 kernel (one phase), a
    // stride not dividing the padded extent, dilation with stride, and three dimensions.
    check(&[1, 3, 33, 35], &[8, 3, 3, 3], &spec(2, 2, (1, 1), 1, 1), true);
    check(&[1, 3, 40, 40], &[9, 3, 7, 7], &spec(2, 2, (3, 3), 1, 1), false);
    check(&[1, 6, 30, 30], &[10, 6, 1, 1], &spec(2, 2, (0, 0), 1, 1), false);
    check(&[2, 4, 31, 29], &[6, 2, 3, 3], &spec(2, 3, (2, 1), 1, 2), true);
    check(&[1, 2, 40, 40], &[3, 2, 3, 3], &spec(2, 2, (2, 2), 2, 1), false);
    check(&[1, 2, 9, 12, 14], &[3, 2, 3, 3, 3], &spec(3, 2, (1, 1), 1, 1), false);
}

#[test]
fn shifted_blocks_and_slices_give_the_workers_equal_units() {
    use super::shifted::schedule;
    // (output channels, grid span, images x groups) on two workers.
    for &(og, span, units) in
        &[(64, 3246, 1), (128, 838, 1), (1024, 196, 1), (256, 222, 1), (64, 12877, 1), (8, 100, 1)]
    {
        let (blocks, slices) = schedule(og, span, units, 2);
        let n = units * blocks * slices;
        assert!(n >= 4 || og < 64, "{og} {span}: {blocks} blocks x {slices} slices");
        assert!(blocks <= span.div_ceil(48) && slices <= (og / 32).max(1), "{og} {span}");
        // Equal work: the panels split evenly over the blocks, or many units.
        let panels = span.div_ceil(48);
        assert!(n >= 16 || panels.is_multiple_of(blocks) || panels / blocks >= 8, "{og} {span}: {blocks}");
        // A block's results stay within the cache budget unless the channels cannot be cut.
        let rows = og.div_ceil(slices);
        assert!(rows * span.div_ceil(blocks) * 4 <= ROWS_BLOCK_BYTES + 48 * rows * 4 || slices == (og / 32).max(1));
    }
    // One worker: no slices.
    assert_eq!(schedule(512, 1000, 1, 1).1, 1);
}
