//! `matmul_f32` / `matmul_f64` against a naive float64 triple loop: square and non-square
//! sizes, row-major, transposed (column-major), every-other-row and reversed-row operands and
//! destinations, `k = 0`, empty outputs, several thread counts. `dst` starts as NaN, so a read
//! of `dst` would show; gaps between strided `dst` rows must keep their sentinel.
//!
//! Tolerance: |got - ref| <= tol * sum_k |a_ik * b_kj| (the standard dot-product error bound,
//! relative to the magnitudes that meet in each element), tol = 1e-5 for f32, 1e-12 for f64.

mod common;

use common::Rng;
use pyasc_kernels::gemm::{matmul_f32, matmul_f64, MatMut, MatRef};
use std::time::Instant;

/// How a matrix is laid out in its backing buffer.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// rs = cols, cs = 1.
    RowMajor,
    /// rs = 1, cs = rows: the transpose of a row-major matrix.
    ColMajor,
    /// Row-major rows at every other row of a buffer twice as tall: rs = 2*cols.
    EveryOtherRow,
    /// Row-major with the last row first: rs = -cols.
    ReversedRows,
}

const LAYOUTS: [Layout; 4] = [Layout::RowMajor, Layout::ColMajor, Layout::EveryOtherRow, Layout::ReversedRows];

/// A backing buffer plus the offset of element (0, 0) and the strides of the view.
struct Strided<T> {
    buf: Vec<T>,
    origin: usize,
    rs: isize,
    cs: isize,
    rows: usize,
    cols: usize,
}

impl<T: Copy> Strided<T> {
    /// A rows×cols matrix in `layout`, every buffer slot set to `fill`.
    fn new(rows: usize, cols: usize, layout: Layout, fill: T) -> Self {
        let (len, origin, rs, cs) = match layout {
            Layout::RowMajor => (rows * cols, 0, cols as isize, 1),
            Layout::ColMajor => (rows * cols, 0, 1, rows as isize),
            Layout::EveryOtherRow => (2 * rows * cols, 0, 2 * cols as isize, 1),
            Layout::ReversedRows => (rows * cols, rows.saturating_sub(1) * cols, -(cols as isize), 1),
        };
        Strided { buf: vec![fill; len.max(1)], origin, rs, cs, rows, cols }
    }

    fn index(&self, i: usize, j: usize) -> usize {
        (self.origin as isize + i as isize * self.rs + j as isize * self.cs) as usize
    }

    fn get(&self, i: usize, j: usize) -> T {
        self.buf[self.index(i, j)]
    }

    fn set(&mut self, i: usize, j: usize, v: T) {
        let at = self.index(i, j);
        self.buf[at] = v;
    }

    fn view(&self) -> MatRef<T> {
        // SAFETY: origin is inside buf (or buf has one slot and the matrix is empty).
        let ptr = unsafe { self.buf.as_ptr().add(self.origin) };
        MatRef { ptr, rows: self.rows, cols: self.cols, rs: self.rs, cs: self.cs }
    }

    fn view_mut(&mut self) -> MatMut<T> {
        // SAFETY: as in `view`.
        let ptr = unsafe { self.buf.as_mut_ptr().add(self.origin) };
        MatMut { ptr, rows: self.rows, cols: self.cols, rs: self.rs, cs: self.cs }
    }
}

/// The float type under test: how to convert, multiply, and the tolerance.
trait Real: Copy + PartialEq + std::fmt::Debug {
    const TOL: f64;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn nan() -> Self;
    /// # Safety
    /// As for `matmul_f32`.
    unsafe fn matmul(dst: MatMut<Self>, a: MatRef<Self>, b: MatRef<Self>, threads: usize);
}

impl Real for f32 {
    const TOL: f64 = 1e-5;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn nan() -> Self {
        f32::NAN
    }
    unsafe fn matmul(dst: MatMut<Self>, a: MatRef<Self>, b: MatRef<Self>, threads: usize) {
        // SAFETY: forwarded from this function's caller.
        unsafe { matmul_f32(dst, a, b, threads) }
    }
}

impl Real for f64 {
    const TOL: f64 = 1e-12;
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn nan() -> Self {
        f64::NAN
    }
    unsafe fn matmul(dst: MatMut<Self>, a: MatRef<Self>, b: MatRef<Self>, threads: usize) {
        // SAFETY: forwarded from this function's caller.
        unsafe { matmul_f64(dst, a, b, threads) }
    }
}

/// A random rows×cols matrix in `layout`, values uniform in [-1, 1) (with a few larger ones).
fn random<T: Real>(rng: &mut Rng, rows: usize, cols: usize, layout: Layout) -> Strided<T> {
    let mut m = Strided::new(rows, cols, layout, T::nan());
    for i in 0..rows {
        for j in 0..cols {
            let scale = if rng.next_u32().is_multiple_of(16) { 100.0 } else { 1.0 };
            m.set(i, j, T::from_f64(rng.uniform(-1.0, 1.0) * scale));
        }
    }
    m
}

/// Run one case and compare with the float64 triple loop; returns the worst error / bound.
fn check<T: Real>(rng: &mut Rng, (m, k, n): (usize, usize, usize), layouts: [Layout; 3], threads: usize) -> f64 {
    let a = random::<T>(rng, m, k, layouts[0]);
    let b = random::<T>(rng, k, n, layouts[1]);
    let sentinel = T::from_f64(-7.25);
    let mut dst = Strided::new(m, n, layouts[2], sentinel);
    for i in 0..m {
        for j in 0..n {
            dst.set(i, j, T::nan());
        }
    }
    // SAFETY: every view addresses its own live buffer; dst does not overlap a or b.
    unsafe { T::matmul(dst.view_mut(), a.view(), b.view(), threads) };
    let mut worst = 0.0f64;
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut mag) = (0.0f64, 0.0f64);
            for p in 0..k {
                let t = a.get(i, p).to_f64() * b.get(p, j).to_f64();
                exact += t;
                mag += t.abs();
            }
            let got = dst.get(i, j).to_f64();
            let err = (got - exact).abs();
            let bound = T::TOL * mag + f64::MIN_POSITIVE;
            assert!(
                err <= bound,
                "({m}x{k}) @ ({k}x{n}) {layouts:?} threads={threads}: [{i},{j}] = {got}, expected {exact} (err {err:e}, bound {bound:e})"
            );
            worst = worst.max(err / bound);
        }
    }
    // Every layout puts the m*n elements at distinct slots; all other slots keep the sentinel.
    let written = m * n;
    let untouched = dst.buf.iter().filter(|v| **v == sentinel).count();
    assert_eq!(untouched, dst.buf.len() - written, "matmul wrote outside dst ({layouts:?})");
    worst
}

/// The fixed sizes of the brief: 1, 7, 33, 129, 257, square and not.
const SIZES: [(usize, usize, usize); 12] = [
    (1, 1, 1),
    (7, 7, 7),
    (33, 33, 33),
    (129, 129, 129),
    (257, 257, 257),
    (1, 257, 1),
    (257, 1, 257),
    (7, 129, 33),
    (129, 7, 257),
    (33, 257, 1),
    (1, 33, 129),
    (257, 33, 7),
];

fn every_layout_and_size<T: Real>(seed: u64) {
    let mut rng = Rng::new(seed);
    for size in SIZES {
        for la in LAYOUTS {
            for lb in LAYOUTS {
                // Every dst layout for a row-major product, row-major dst for the rest.
                let dsts: &[Layout] = if matches!((la, lb), (Layout::RowMajor, Layout::RowMajor)) {
                    &LAYOUTS
                } else {
                    &[Layout::RowMajor]
                };
                for &ld in dsts {
                    for threads in [1, 2] {
                        check::<T>(&mut rng, size, [la, lb, ld], threads);
                    }
                }
            }
        }
    }
}

#[test]
fn f32_sizes_and_layouts() {
    every_layout_and_size::<f32>(1);
}

#[test]
fn f64_sizes_and_layouts() {
    every_layout_and_size::<f64>(2);
}

#[test]
fn random_sizes() {
    let mut rng = Rng::new(3);
    for _ in 0..40 {
        let mut dim = || 1 + (rng.next_u32() % 200) as usize;
        let size = (dim(), dim(), dim());
        let pick = |r: &mut Rng| LAYOUTS[(r.next_u32() % 4) as usize];
        let layouts = [pick(&mut rng), pick(&mut rng), pick(&mut rng)];
        let threads = 1 + (rng.next_u32() % 3) as usize;
        check::<f32>(&mut rng, size, layouts, threads);
        check::<f64>(&mut rng, size, layouts, threads);
    }
}

#[test]
fn inner_dimension_zero_gives_zeros() {
    let mut rng = Rng::new(4);
    for (m, n) in [(1, 1), (7, 33), (129, 5)] {
        for ld in LAYOUTS {
            for threads in [1, 2] {
                // check() also verifies the NaN-filled dst became exactly the empty sum, 0.
                check::<f32>(&mut rng, (m, 0, n), [Layout::RowMajor, Layout::RowMajor, ld], threads);
                check::<f64>(&mut rng, (m, 0, n), [Layout::ColMajor, Layout::RowMajor, ld], threads);
            }
        }
    }
    let a = Strided::<f32>::new(3, 0, Layout::RowMajor, 1.0);
    let b = Strided::<f32>::new(0, 4, Layout::RowMajor, 1.0);
    let mut dst = Strided::<f32>::new(3, 4, Layout::RowMajor, f32::NAN);
    // SAFETY: all views address live buffers; a and b address no element at all.
    unsafe { matmul_f32(dst.view_mut(), a.view(), b.view(), 1) };
    assert!(dst.buf.iter().all(|v| *v == 0.0 && v.is_sign_positive()));
}

#[test]
fn empty_outputs_write_nothing() {
    let mut rng = Rng::new(5);
    for size in [(0, 5, 3), (4, 5, 0), (0, 0, 0)] {
        check::<f32>(&mut rng, size, [Layout::RowMajor; 3], 2);
        check::<f64>(&mut rng, size, [Layout::ColMajor; 3], 1);
    }
}

#[test]
fn exact_small_product() {
    // [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[19, 22], [43, 50]], with b read transposed.
    let a = [1.0f64, 2.0, 3.0, 4.0];
    let bt = [5.0f64, 7.0, 6.0, 8.0];
    let mut out = [f64::NAN; 4];
    let av = MatRef { ptr: a.as_ptr(), rows: 2, cols: 2, rs: 2, cs: 1 };
    let bv = MatRef { ptr: bt.as_ptr(), rows: 2, cols: 2, rs: 1, cs: 2 };
    let dv = MatMut { ptr: out.as_mut_ptr(), rows: 2, cols: 2, rs: 2, cs: 1 };
    // SAFETY: 2x2 views of 4-element arrays.
    unsafe { matmul_f64(dv, av, bv, 1) };
    assert_eq!(out, [19.0, 22.0, 43.0, 50.0]);
}

#[test]
#[should_panic(expected = "matmul shapes do not match")]
fn mismatched_shapes_panic() {
    let a = [0.0f32; 6];
    let mut out = [0.0f32; 4];
    let av = MatRef { ptr: a.as_ptr(), rows: 2, cols: 3, rs: 3, cs: 1 };
    let bv = MatRef { ptr: a.as_ptr(), rows: 2, cols: 3, rs: 3, cs: 1 };
    let dv = MatMut { ptr: out.as_mut_ptr(), rows: 2, cols: 2, rs: 2, cs: 1 };
    // SAFETY: never reaches memory: the shape check fails first.
    unsafe { matmul_f32(dv, av, bv, 1) };
}

/// GFLOP/s of 2048² f32 (ignored by default: `cargo test -p pyasc-kernels --release --test
/// gemm -- --ignored --nocapture`).
#[test]
#[ignore]
fn speed_2048_f32() {
    let n = 2048;
    let mut rng = Rng::new(6);
    let a = random::<f32>(&mut rng, n, n, Layout::RowMajor);
    let b = random::<f32>(&mut rng, n, n, Layout::RowMajor);
    let mut dst = Strided::<f32>::new(n, n, Layout::RowMajor, 0.0);
    for threads in [1, 2] {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = Instant::now();
            // SAFETY: n×n views of live n×n buffers; dst is separate.
            unsafe { matmul_f32(dst.view_mut(), a.view(), b.view(), threads) };
            best = best.min(t.elapsed().as_secs_f64());
        }
        let gflops = 2.0 * (n as f64).powi(3) / best / 1e9;
        println!("matmul f32 {n}x{n}x{n} threads={threads}: {:.2} ms, {gflops:.1} GFLOP/s", best * 1e3);
    }
    // Spot-check one element against float64 so the timing is of a correct product.
    let exact: f64 = (0..n).map(|p| a.get(5, p) as f64 * b.get(p, 9) as f64).sum();
    let mag: f64 = (0..n).map(|p| (a.get(5, p) as f64 * b.get(p, 9) as f64).abs()).sum();
    assert!((dst.get(5, 9) as f64 - exact).abs() <= 1e-5 * mag);
}
