//! Tests of the 16-bit matrix products against float64 products of the exact operand values,
//! on every path this CPU has, for odd sizes, transposed and strided operands, and `k = 0`.

use crate::gemm::lowp::{matmul_bf16, matmul_f16, via_f32, Path};
use crate::gemm::{MatMut, MatRef};
use half::{bf16, f16};

/// A deterministic stream of values in [-2, 2).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
    }
}

/// How an operand is laid out in its buffer.
#[derive(Clone, Copy, Debug)]
enum Layout {
    RowMajor,
    ColMajor,
    /// Every other row of a row-major buffer, the last row first.
    EveryOtherRowReversed,
}

/// A `rows x cols` operand over a fresh buffer: (buffer, offset of element (0, 0), rs, cs).
fn layout<T: Copy>(vals: &[T], rows: usize, cols: usize, l: Layout, pad: T) -> (Vec<T>, isize, isize, isize) {
    match l {
        Layout::RowMajor => (vals.to_vec(), 0, cols as isize, 1),
        Layout::ColMajor => {
            let mut buf = vec![pad; rows * cols];
            for i in 0..rows {
                for j in 0..cols {
                    buf[j * rows + i] = vals[i * cols + j];
                }
            }
            (buf, 0, 1, rows as isize)
        }
        Layout::EveryOtherRowReversed => {
            let mut buf = vec![pad; 2 * rows * cols];
            for i in 0..rows {
                let r = 2 * (rows - 1 - i);
                buf[r * cols..r * cols + cols].copy_from_slice(&vals[i * cols..i * cols + cols]);
            }
            let first = 2 * (rows.max(1) - 1) * cols;
            (buf, first as isize, -2 * cols as isize, 1)
        }
    }
}

/// Checks one product: `run(dst, a, b)` against the float64 product of `av`, `bv` (values of
/// the operands), with the float32 summation bound `2 k u sum|a b|`.
#[allow(clippy::too_many_arguments)]
fn check<T: Copy>(
    what: &str,
    (m, n, k): (usize, usize, usize),
    a: &[T],
    b: &[T],
    to_f64: fn(T) -> f64,
    (la, lb, col_major_dst): (Layout, Layout, bool),
    pad: T,
    run: &dyn Fn(MatMut<f32>, MatRef<T>, MatRef<T>),
) {
    let (abuf, aoff, ars, acs) = layout(a, m, k, la, pad);
    let (bbuf, boff, brs, bcs) = layout(b, k, n, lb, pad);
    let mut d = vec![f32::NAN; m * n];
    let (drs, dcs) = if col_major_dst { (1, m as isize) } else { (n as isize, 1) };
    // SAFETY: offsets and strides address elements inside the buffers (by construction above).
    let (ar, br) = unsafe {
        (
            MatRef { ptr: abuf.as_ptr().offset(aoff), rows: m, cols: k, rs: ars, cs: acs },
            MatRef { ptr: bbuf.as_ptr().offset(boff), rows: k, cols: n, rs: brs, cs: bcs },
        )
    };
    run(MatMut { ptr: d.as_mut_ptr(), rows: m, cols: n, rs: drs, cs: dcs }, ar, br);
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut mag) = (0f64, 0f64);
            for p in 0..k {
                let t = to_f64(a[i * k + p]) * to_f64(b[p * n + j]);
                exact += t;
                mag += t.abs();
            }
            let got = d[(i as isize * drs + j as isize * dcs) as usize] as f64;
            let tol = 2.0 * k as f64 * f32::EPSILON as f64 * 0.5 * mag + 1e-30;
            assert!(
                (got - exact).abs() <= tol,
                "{what} {m}x{k}@{k}x{n} {la:?} {lb:?}: ({i},{j}) = {got}, expected {exact} (tol {tol})"
            );
        }
    }
}

const SIZES: [(usize, usize, usize); 12] = [
    (1, 1, 1),
    (1, 7, 33),
    (7, 1, 33),
    (7, 33, 1),
    (33, 7, 100),
    (100, 33, 7),
    (14, 32, 256),
    (15, 33, 257),
    (29, 65, 600),
    (100, 100, 100),
    (257, 70, 33),
    (33, 300, 513),
];

const LAYOUTS: [(Layout, Layout, bool); 4] = [
    (Layout::RowMajor, Layout::RowMajor, false),
    (Layout::ColMajor, Layout::ColMajor, true),
    (Layout::EveryOtherRowReversed, Layout::ColMajor, false),
    (Layout::ColMajor, Layout::EveryOtherRowReversed, true),
];

fn values_bf16(len: usize, seed: u64) -> Vec<bf16> {
    let mut r = Rng(seed);
    (0..len).map(|_| bf16::from_f32(r.next())).collect()
}

fn values_f16(len: usize, seed: u64) -> Vec<f16> {
    let mut r = Rng(seed);
    (0..len).map(|_| f16::from_f32(r.next())).collect()
}

fn bf16_f64(x: bf16) -> f64 {
    x.to_f64()
}

fn f16_f64(x: f16) -> f64 {
    x.to_f64()
}

fn conv_bf16(s: &[bf16], d: &mut [f32]) {
    d.iter_mut().zip(s).for_each(|(d, s)| *d = s.to_f32());
}

/// A bfloat16 product: (dst, a, b, threads).
type Bf16Path = Box<dyn Fn(MatMut<f32>, MatRef<bf16>, MatRef<bf16>, usize)>;

/// Every bfloat16 path this CPU has, by name. Callers pass valid, disjoint operands (`check`
/// builds them), and the internal paths get `k > 0`.
fn bf16_paths() -> Vec<(&'static str, Bf16Path)> {
    let mut paths: Vec<(&'static str, Bf16Path)> = vec![
        (
            "public",
            Box::new(|d, a, b, t| {
                // SAFETY: valid, disjoint operands (this function's callers).
                unsafe { matmul_bf16(d, a, b, t) }
            }),
        ),
        (
            "f32",
            Box::new(|d, a, b, t| {
                // SAFETY: as above.
                unsafe { via_f32(d, a, b, t, conv_bf16) }
            }),
        ),
    ];
    #[cfg(target_arch = "x86_64")]
    if crate::gemm::bf16_dot::available() {
        paths.push((
            "dot",
            Box::new(|d, a, b, t| {
                // SAFETY: as above, on a CPU with the instructions.
                unsafe { crate::gemm::bf16_dot::matmul(d, a, b, t) }
            }),
        ));
    }
    paths
}

#[test]
fn bf16_products_match_float64_on_every_path() {
    for (name, path) in bf16_paths() {
        for (s, &(m, n, k)) in SIZES.iter().enumerate() {
            let (a, b) = (values_bf16(m * k, 1 + s as u64), values_bf16(k * n, 100 + s as u64));
            for (l, &lay) in LAYOUTS.iter().enumerate() {
                let threads = 1 + (s + l) % 2;
                let run = |d, a, b| path(d, a, b, threads);
                check(name, (m, n, k), &a, &b, bf16_f64, lay, bf16::NAN, &run);
            }
        }
    }
}

#[test]
fn f16_products_match_float64() {
    for (s, &(m, n, k)) in SIZES.iter().enumerate() {
        let (a, b) = (values_f16(m * k, 7 + s as u64), values_f16(k * n, 300 + s as u64));
        for (l, &lay) in LAYOUTS.iter().enumerate() {
            let threads = 1 + (s + l) % 2;
            // SAFETY: the operands come from `check`, valid and disjoint.
            let run = |d, a, b| unsafe { matmul_f16(d, a, b, threads) };
            check("f16", (m, n, k), &a, &b, f16_f64, lay, f16::NAN, &run);
        }
    }
}

#[test]
fn large_bf16_product_splits_over_threads_and_blocks() {
    // More row panels than one task packs; several depth blocks (sums added to `dst`); several
    // column blocks; each with an odd remainder; few rows (streamed `b`, many column blocks).
    for (s, (m, n, k)) in
        [(400, 130, 700), (13, 67, 4201), (7, 2100, 40), (1, 40, 2), (3, 4500, 300)].into_iter().enumerate()
    {
        let (a, b) = (values_bf16(m * k, 11 + s as u64), values_bf16(k * n, 12 + s as u64));
        for (name, path) in bf16_paths() {
            let run = |d, a, b| path(d, a, b, 2);
            check(name, (m, n, k), &a, &b, bf16_f64, LAYOUTS[s % 2], bf16::NAN, &run);
        }
    }
}

#[test]
fn empty_depth_gives_zeros_and_empty_results_are_left_alone() {
    // The path functions require k > 0: the public entry point handles the empty cases.
    for (name, path) in bf16_paths().into_iter().take(1) {
        let mut d = vec![f32::NAN; 6];
        let a = MatRef { ptr: std::ptr::NonNull::<bf16>::dangling().as_ptr(), rows: 2, cols: 0, rs: 0, cs: 1 };
        let b = MatRef { ptr: std::ptr::NonNull::<bf16>::dangling().as_ptr(), rows: 0, cols: 3, rs: 3, cs: 1 };
        path(MatMut { ptr: d.as_mut_ptr(), rows: 2, cols: 3, rs: 3, cs: 1 }, a, b, 1);
        assert!(d.iter().all(|&x| x == 0.0), "{name}: {d:?}");
    }
    let mut d = vec![f32::NAN; 6];
    let a = MatRef { ptr: std::ptr::NonNull::<f16>::dangling().as_ptr(), rows: 2, cols: 0, rs: 0, cs: 1 };
    let b = MatRef { ptr: std::ptr::NonNull::<f16>::dangling().as_ptr(), rows: 0, cols: 3, rs: 3, cs: 1 };
    // SAFETY: nothing is read; dst is a valid 2x3 buffer.
    unsafe { matmul_f16(MatMut { ptr: d.as_mut_ptr(), rows: 2, cols: 3, rs: 3, cs: 1 }, a, b, 1) };
    assert!(d.iter().all(|&x| x == 0.0), "f16: {d:?}");
    let mut d = [7f32];
    let a = MatRef { ptr: std::ptr::NonNull::<f16>::dangling().as_ptr(), rows: 0, cols: 4, rs: 4, cs: 1 };
    let b = MatRef { ptr: std::ptr::NonNull::<f16>::dangling().as_ptr(), rows: 4, cols: 0, rs: 0, cs: 1 };
    // SAFETY: nothing is read or written.
    unsafe { matmul_f16(MatMut { ptr: d.as_mut_ptr(), rows: 0, cols: 0, rs: 0, cs: 1 }, a, b, 1) };
    assert_eq!(d, [7.0]);
}

#[test]
fn the_dot_path_is_chosen_only_at_avx512() {
    let best = Path::choose();
    #[cfg(target_arch = "x86_64")]
    assert_eq!(
        best == Path::Bf16Dot,
        crate::isa::active() == crate::isa::Isa::Avx512 && crate::gemm::bf16_dot::available()
    );
    #[cfg(not(target_arch = "x86_64"))]
    assert_eq!(best, Path::F32);
}

#[test]
#[should_panic(expected = "shapes do not match")]
fn mismatched_shapes_panic() {
    let (a, b, mut d) = (vec![bf16::ONE; 6], vec![bf16::ONE; 6], vec![0f32; 4]);
    // SAFETY: the shapes are rejected before anything is read.
    unsafe {
        matmul_bf16(
            MatMut { ptr: d.as_mut_ptr(), rows: 2, cols: 2, rs: 2, cs: 1 },
            MatRef { ptr: a.as_ptr(), rows: 2, cols: 3, rs: 3, cs: 1 },
            MatRef { ptr: b.as_ptr(), rows: 2, cols: 3, rs: 3, cs: 1 },
            1,
        )
    };
}
