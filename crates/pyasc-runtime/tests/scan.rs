//! The scan routine over whole views: long lines split into blocks give the same bits as
//! lines scanned whole, under every ISA; strided, reversed and broadcast operands, column
//! scans, integer wrapping and NaN against sequential references.

use pyasc_ir::library::ScanKind;
use pyasc_ir::DType;
use pyasc_kernels::isa;
use pyasc_runtime::scan::{run_scan_with, Split, BLOCK};
use pyasc_runtime::view::InputView;
use std::sync::Mutex;

/// `isa::force` is process-wide: tests that switch ISA hold this lock.
static ISA_LOCK: Mutex<()> = Mutex::new(());

fn each_isa(mut f: impl FnMut(isa::Isa)) {
    let _guard = ISA_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    for i in isa::available() {
        isa::force(Some(i));
        f(i);
    }
    isa::force(None);
}

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            ((s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32) / (1u64 << 24) as f32 - 0.3
        })
        .collect()
}

fn view<T>(data: &[T], dtype: DType, shape: Vec<usize>, strides: Vec<isize>) -> InputView {
    InputView { ptr: data.as_ptr().cast(), dtype, shape, strides }
}

fn scan<T: Copy + Default>(x: &InputView, kind: ScanKind, axis: usize, split: Split) -> Vec<T> {
    let mut out = vec![T::default(); x.shape.iter().product()];
    // SAFETY: `x` views live data of its dtype and `out` holds its elements.
    unsafe { run_scan_with(x, out.as_mut_ptr().cast(), kind, axis, split).expect("scan runs") };
    out
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn blocked_long_lines_equal_whole_lines_on_every_isa() {
    let n = 3 * BLOCK + 123;
    let data = values(2 * n, 1);
    each_isa(|i| {
        for (shape, strides, axis) in [
            (vec![2, n], vec![n as isize, 1], 1),
            // The same data as columns of a transposed view (strided lines).
            (vec![n, 2], vec![1, n as isize], 0),
        ] {
            let x = view(&data, DType::F32, shape, strides);
            for kind in [ScanKind::Sum, ScanKind::Prod, ScanKind::Max, ScanKind::LogSumExp] {
                let a: Vec<f32> = scan(&x, kind, axis, Split::Lines);
                let b: Vec<f32> = scan(&x, kind, axis, Split::Blocks);
                assert_eq!(bits(&a), bits(&b), "{i:?} {kind:?} axis {axis}");
            }
            let s: Vec<f32> = scan(&x, ScanKind::Sum, axis, Split::Auto);
            // Against a float64 sequential sum: every output is the exact prefix rounded once,
            // up to float64 rounding.
            for line in 0..2 {
                let mut acc = 0f64;
                for k in 0..n {
                    let (src, dst) =
                        if axis == 1 { (line * n + k, line * n + k) } else { (line * n + k, k * 2 + line) };
                    acc += data[src] as f64;
                    let got = s[dst] as f64;
                    assert!(
                        (got - acc).abs() <= 1e-6 * (1.0 + acc.abs()) + 1e-9 * k as f64,
                        "{i:?} line {line} k {k}: {got} vs {acc}"
                    );
                }
            }
        }
    });
}

#[test]
fn float64_lines_split_into_blocks_agree_too() {
    let n = 2 * BLOCK + 5;
    let data: Vec<f64> = values(n, 2).iter().map(|v| *v as f64).collect();
    each_isa(|i| {
        let x = view(&data, DType::F64, vec![n], vec![1]);
        let a: Vec<f64> = scan(&x, ScanKind::Sum, 0, Split::Lines);
        let b: Vec<f64> = scan(&x, ScanKind::Sum, 0, Split::Blocks);
        assert!(a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()), "{i:?}");
    });
}

#[test]
fn reversed_broadcast_and_column_scans_match_references() {
    let (r, c) = (300, 40);
    let data = values(r * c, 3);
    // Column scans (axis 0 of a C-contiguous matrix) against per-column loops.
    let x = view(&data, DType::F32, vec![r, c], vec![c as isize, 1]);
    let got: Vec<f32> = scan(&x, ScanKind::Max, 0, Split::Auto);
    for j in 0..c {
        let mut m = f32::NEG_INFINITY;
        for k in 0..r {
            m = m.max(data[k * c + j]);
            assert_eq!(got[k * c + j], m);
        }
    }
    // A reversed line (negative stride).
    let x =
        InputView { ptr: data[r * c - 1..].as_ptr().cast(), dtype: DType::F32, shape: vec![r * c], strides: vec![-1] };
    let got: Vec<f32> = scan(&x, ScanKind::Min, 0, Split::Auto);
    let mut m = f32::INFINITY;
    for k in 0..r * c {
        m = m.min(data[r * c - 1 - k]);
        assert_eq!(got[k], m);
    }
    // A broadcast row (zero stride along the scanned axis): k * v.
    let x = view(&data, DType::F32, vec![3, 100_000], vec![1, 0]);
    let got: Vec<f32> = scan(&x, ScanKind::Sum, 1, Split::Auto);
    for line in 0..3 {
        for k in [0usize, 1, 77, 99_999] {
            let want = ((k + 1) as f64 * data[line] as f64) as f32;
            assert_eq!(got[line * 100_000 + k], want);
        }
    }
}

#[test]
fn integers_wrap_and_nan_propagates() {
    let data: Vec<i8> = (0..200).map(|i| (i * 37 % 256) as i8).collect();
    let x = view(&data, DType::I8, vec![200], vec![1]);
    let got: Vec<i8> = scan(&x, ScanKind::Sum, 0, Split::Auto);
    let mut acc = 0i8;
    for k in 0..200 {
        acc = acc.wrapping_add(data[k]);
        assert_eq!(got[k], acc);
    }
    let got: Vec<i8> = scan(&x, ScanKind::Prod, 0, Split::Auto);
    let mut acc = 1i8;
    for k in 0..200 {
        acc = acc.wrapping_mul(data[k]);
        assert_eq!(got[k], acc);
    }
    let mut f = values(50, 4);
    f[10] = f32::NAN;
    let x = view(&f, DType::F32, vec![50], vec![1]);
    for kind in [ScanKind::Max, ScanKind::Min, ScanKind::Sum, ScanKind::Prod, ScanKind::LogSumExp] {
        let got: Vec<f32> = scan(&x, kind, 0, Split::Auto);
        assert!(got[..10].iter().all(|v| !v.is_nan()) && got[10..].iter().all(|v| v.is_nan()), "{kind:?}");
    }
    let b: Vec<u8> = vec![0, 0, 1, 0, 1];
    let x = view(&b, DType::Bool, vec![5], vec![1]);
    assert_eq!(scan::<u8>(&x, ScanKind::Max, 0, Split::Auto), vec![0, 0, 1, 1, 1]);
    assert_eq!(scan::<u8>(&x, ScanKind::Min, 0, Split::Auto), vec![0, 0, 0, 0, 0]);
}
