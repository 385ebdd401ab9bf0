//! Elementwise binary operations on tiles: arithmetic, comparison, bitwise logic.
//!
//! Each operand is a [`Src`]: a tile or a broadcast scalar. Semantics follow NumPy (see
//! [`arith`] for the integer and float rules).

use crate::dispatch::{dispatch, Kernel, Simd};
use crate::element::Element;
use crate::src::{map2, Src};
use pyasc_ir::op::{BinaryClass, BinaryOp};

mod ops;
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
        let (a, b, y) = (self.a, self.b, self.y);
        match self.f {
            BinaryOp::Eq => map2(a, b, y, |a: T, b: T| (a == b) as u8),
            BinaryOp::Ne => map2(a, b, y, |a: T, b: T| (a != b) as u8),
            BinaryOp::Lt => map2(a, b, y, |a: T, b: T| (a < b) as u8),
            BinaryOp::Le => map2(a, b, y, |a: T, b: T| (a <= b) as u8),
            BinaryOp::Gt => map2(a, b, y, |a: T, b: T| (a > b) as u8),
            BinaryOp::Ge => map2(a, b, y, |a: T, b: T| (a >= b) as u8),
            op => unreachable!("{} is not a comparison", op.name()),
        }
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
