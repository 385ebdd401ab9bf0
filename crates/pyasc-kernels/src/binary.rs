//! Elementwise binary operations on tiles: arithmetic, comparison, bitwise logic.
//!
//! Each operand is a [`Src`]: a tile or a broadcast scalar. Semantics follow NumPy (see
//! [`arith`] for the integer and float rules).

use crate::dispatch::{dispatch, Kernel, Simd};
use crate::element::Element;
use crate::src::{map2, Src};
use pyasc_ir::op::{BinaryClass, BinaryOp};

mod ops;
#[cfg(target_arch = "x86_64")]
mod rows_avx512;
mod table;

/// Element types with arithmetic: `i32`, `i64`, `u64`, `f32`, `f64` (narrower integers
/// compute in `i32` or `i64` and are wrapped back by a cast).
pub trait Arith: Element + ops::ArithOps {}
impl Arith for i32 {}
impl Arith for i64 {}
impl Arith for u64 {}
impl Arith for f32 {}
impl Arith for f64 {}

/// Element types with bitwise operations: `u8` (bool), `i32`, `i64`, `u64`.
pub trait Bits: Element + ops::BitOps {}
impl Bits for u8 {}
impl Bits for i32 {}
impl Bits for i64 {}
impl Bits for u64 {}

struct ArithK<'a, T> {
    f: BinaryOp,
    a: Src<'a, T>,
    b: Src<'a, T>,
    y: &'a mut [T],
}

impl<T: Arith> Kernel for ArithK<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        T::arith::<S>(self.f, self.a, self.b, self.y);
    }
}

/// `y = f(a, b)` elementwise for an arithmetic, float or integer op (semantics follow NumPy:
/// integers wrap; integer `/`, `//` and `%` by zero give 0; integer `**` with a negative
/// exponent gives 0; `minimum`/`maximum` propagate NaN); ops without a hand-written loop
/// run their op-table body.
pub fn arith<T: Arith>(f: BinaryOp, a: Src<'_, T>, b: Src<'_, T>, y: &mut [T]) {
    assert!(!matches!(f.class(), BinaryClass::Compare | BinaryClass::Bitwise), "{} is not arithmetic", f.name());
    dispatch(ArithK { f, a, b, y });
}

/// An operand of [`arith_rows`]: whole rows, one value per row, or one value for all.
#[derive(Copy, Clone, Debug)]
pub enum RowSrc<'a, T> {
    /// `rows x c` elements, row after row.
    Rows(&'a [T]),
    /// One value per row, broadcast over its row.
    PerRow(&'a [T]),
    /// One value broadcast over every row.
    Scalar(T),
}

impl<'a, T: Copy> RowSrc<'a, T> {
    #[inline(always)]
    fn row(self, r: usize, c: usize) -> Src<'a, T> {
        match self {
            RowSrc::Rows(x) => Src::Slice(&x[r * c..(r + 1) * c]),
            RowSrc::PerRow(v) => Src::Scalar(v[r]),
            RowSrc::Scalar(v) => Src::Scalar(v),
        }
    }
}

struct ArithRowsK<'a, T> {
    f: BinaryOp,
    a: RowSrc<'a, T>,
    b: RowSrc<'a, T>,
    y: &'a mut [T],
    c: usize,
}

impl<T: Arith> Kernel for ArithRowsK<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let (f, a, b, c) = (self.f, self.a, self.b, self.c);
        if T::rows_wide::<S>(f, a, b, self.y, c) {
            return;
        }
        for (r, y) in self.y.chunks_exact_mut(c).enumerate() {
            T::arith::<S>(f, a.row(r, c), b.row(r, c), y);
        }
    }
}

/// [`arith`] over rows of `c` elements (`y` holds whole rows) whose operands may hold one
/// value per row: one dispatch for all the rows, where a call per row would pay it per row.
pub fn arith_rows<T: Arith>(f: BinaryOp, a: RowSrc<'_, T>, b: RowSrc<'_, T>, y: &mut [T], c: usize) {
    assert!(!matches!(f.class(), BinaryClass::Compare | BinaryClass::Bitwise), "{} is not arithmetic", f.name());
    assert!(c > 0 && y.len().is_multiple_of(c), "rows of {c} elements");
    let rows = y.len() / c;
    for s in [a, b] {
        match s {
            RowSrc::Rows(x) => assert_eq!(x.len(), y.len(), "operand rows differ from output rows"),
            RowSrc::PerRow(v) => assert_eq!(v.len(), rows, "one value per row"),
            RowSrc::Scalar(_) => {}
        }
    }
    dispatch(ArithRowsK { f, a, b, y, c });
}

struct CompareK<'a, T> {
    f: BinaryOp,
    a: Src<'a, T>,
    b: Src<'a, T>,
    y: &'a mut [u8],
}

impl<T: Element> Kernel for CompareK<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        compare_loop(self.f, self.a, self.b, self.y);
    }
}

/// The loop of a comparison, as 0/1 bytes; inlined into each ISA's kernel copy.
#[inline(always)]
pub(crate) fn compare_loop<T: Element>(f: BinaryOp, a: Src<'_, T>, b: Src<'_, T>, y: &mut [u8]) {
    match f {
        BinaryOp::Eq => map2(a, b, y, |a: T, b: T| (a == b) as u8),
        BinaryOp::Ne => map2(a, b, y, |a: T, b: T| (a != b) as u8),
        BinaryOp::Lt => map2(a, b, y, |a: T, b: T| (a < b) as u8),
        BinaryOp::Le => map2(a, b, y, |a: T, b: T| (a <= b) as u8),
        BinaryOp::Gt => map2(a, b, y, |a: T, b: T| (a > b) as u8),
        BinaryOp::Ge => map2(a, b, y, |a: T, b: T| (a >= b) as u8),
        op => unreachable!("{} is not a comparison", op.name()),
    }
}

/// `y = f(a, b)` elementwise for a comparison, as 0/1 bytes (IEEE on floats: NaN compares
/// unequal).
pub fn compare<T: Element>(f: BinaryOp, a: Src<'_, T>, b: Src<'_, T>, y: &mut [u8]) {
    assert_eq!(f.class(), BinaryClass::Compare, "{} is not a comparison", f.name());
    dispatch(CompareK { f, a, b, y });
}

struct BitwiseK<'a, T> {
    f: BinaryOp,
    a: Src<'a, T>,
    b: Src<'a, T>,
    y: &'a mut [T],
}

impl<T: Bits> Kernel for BitwiseK<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let (a, b, y) = (self.a, self.b, self.y);
        match self.f {
            BinaryOp::And => map2(a, b, y, T::and),
            BinaryOp::Or => map2(a, b, y, T::or),
            BinaryOp::Xor => map2(a, b, y, T::xor),
            op => unreachable!("{} is not bitwise", op.name()),
        }
    }
}

/// `y = f(a, b)` elementwise for a bitwise op (logical on bools).
pub fn bitwise<T: Bits>(f: BinaryOp, a: Src<'_, T>, b: Src<'_, T>, y: &mut [T]) {
    assert_eq!(f.class(), BinaryClass::Bitwise, "{} is not bitwise", f.name());
    dispatch(BitwiseK { f, a, b, y });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows against [`arith`] on each row, bit for bit: rows of 1 to 80 elements (whole
    /// vectors and masked tails), the per-row or one-for-all operand on either side, and
    /// values with NaN, infinities and signed zeros.
    fn rows_match_row_by_row<T: Arith + Into<f64>>(of: impl Fn(f64) -> T) {
        let special = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0];
        for c in [1usize, 5, 8, 15, 16, 17, 37, 80] {
            let rows = 7usize;
            let x: Vec<T> = (0..rows * c)
                .map(|i| if i % 11 == 3 { of(special[i % special.len()]) } else { of((i as f64 * 0.37).sin() * 5.0) })
                .collect();
            let v: Vec<T> = (0..rows).map(|r| if r == 5 { of(f64::NAN) } else { of(r as f64 * 1.3 - 2.0) }).collect();
            for f in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Max] {
                for per_row in [true, false] {
                    let s = |r: usize| if per_row { v[r] } else { v[1] };
                    let src = if per_row { RowSrc::PerRow(&v) } else { RowSrc::Scalar(v[1]) };
                    let (mut y, mut z) = (vec![of(0.0); rows * c], vec![of(0.0); rows * c]);
                    arith_rows(f, RowSrc::Rows(&x), src, &mut y, c);
                    arith_rows(f, src, RowSrc::Rows(&x), &mut z, c);
                    for r in 0..rows {
                        let row = &x[r * c..(r + 1) * c];
                        let (mut want_y, mut want_z) = (vec![of(0.0); c], vec![of(0.0); c]);
                        arith(f, Src::Slice(row), Src::Scalar(s(r)), &mut want_y);
                        arith(f, Src::Scalar(s(r)), Src::Slice(row), &mut want_z);
                        // NaN payloads aside (the compiler may swap a commutative op's
                        // operands), every value is the same bit pattern.
                        let bits = |s: &[T]| {
                            s.iter()
                                .map(|a| {
                                    let a: f64 = (*a).into();
                                    if a.is_nan() {
                                        u64::MAX
                                    } else {
                                        a.to_bits()
                                    }
                                })
                                .collect::<Vec<_>>()
                        };
                        let what = format!("{} c {c} row {r} per_row {per_row}", f.name());
                        assert_eq!(bits(&y[r * c..(r + 1) * c]), bits(&want_y), "{what}");
                        assert_eq!(bits(&z[r * c..(r + 1) * c]), bits(&want_z), "{what}, operands swapped");
                    }
                }
            }
        }
    }

    #[test]
    fn arith_rows_matches_arith_row_by_row() {
        rows_match_row_by_row::<f32>(|v| v as f32);
        rows_match_row_by_row::<f64>(|v| v);
        let mut y = vec![0f64; 6];
        arith_rows(BinaryOp::Mul, RowSrc::Rows(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), RowSrc::Scalar(2.0), &mut y, 3);
        assert_eq!(y, [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    }
}
