//! Elementwise binary operations on tiles: arithmetic, comparison, bitwise logic.
//!
//! Each operand is a [`Src`]: a tile or a broadcast scalar. Semantics follow NumPy (see
//! [`arith`] for the integer and float rules).

use crate::dispatch::{dispatch, Kernel, Simd};
use crate::element::Element;
use crate::src::{map2, Src};

mod ops;

/// Arithmetic operations.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArithFn {
    /// `a + b` (wrapping on integers).
    Add,
    /// `a - b` (wrapping on integers).
    Sub,
    /// `a * b` (wrapping on integers).
    Mul,
    /// `a / b` (integers: truncating, 0 when dividing by zero; the compiler casts to float).
    Div,
    /// `np.floor_divide` (integers: floor, 0 when dividing by zero).
    FloorDiv,
    /// `np.remainder`: the result has the divisor's sign (integers: 0 when dividing by zero).
    Mod,
    /// `np.power` (integers: repeated squaring, wrapping; negative exponent gives 0).
    Pow,
    /// `np.minimum` (NaN propagating).
    Min,
    /// `np.maximum` (NaN propagating).
    Max,
}

/// Comparisons, producing bools (0/1 bytes). IEEE on floats: NaN compares unequal.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CmpFn {
    /// `a == b`.
    Eq,
    /// `a != b`.
    Ne,
    /// `a < b`.
    Lt,
    /// `a <= b`.
    Le,
    /// `a > b`.
    Gt,
    /// `a >= b`.
    Ge,
}

/// Bitwise operations (logical on bools).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BitFn {
    /// `a & b`.
    And,
    /// `a | b`.
    Or,
    /// `a ^ b`.
    Xor,
}

/// Element types with arithmetic: `i32`, `i64`, `f32`, `f64`.
pub trait Arith: Element + ops::ArithOps {}
impl Arith for i32 {}
impl Arith for i64 {}
impl Arith for f32 {}
impl Arith for f64 {}

/// Element types with bitwise operations: `u8` (bool), `i32`, `i64`.
pub trait Bits: Element + ops::BitOps {}
impl Bits for u8 {}
impl Bits for i32 {}
impl Bits for i64 {}

struct ArithK<'a, T> {
    f: ArithFn,
    a: Src<'a, T>,
    b: Src<'a, T>,
    y: &'a mut [T],
}

impl<T: Arith> Kernel for ArithK<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        T::arith(self.f, self.a, self.b, self.y, S::DIV_BY_MUL);
    }
}

/// `y = f(a, b)` elementwise.
pub fn arith<T: Arith>(f: ArithFn, a: Src<'_, T>, b: Src<'_, T>, y: &mut [T]) {
    dispatch(ArithK { f, a, b, y });
}

struct CompareK<'a, T> {
    f: CmpFn,
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
            CmpFn::Eq => map2(a, b, y, |a: T, b: T| (a == b) as u8),
            CmpFn::Ne => map2(a, b, y, |a: T, b: T| (a != b) as u8),
            CmpFn::Lt => map2(a, b, y, |a: T, b: T| (a < b) as u8),
            CmpFn::Le => map2(a, b, y, |a: T, b: T| (a <= b) as u8),
            CmpFn::Gt => map2(a, b, y, |a: T, b: T| (a > b) as u8),
            CmpFn::Ge => map2(a, b, y, |a: T, b: T| (a >= b) as u8),
        }
    }
}

/// `y = f(a, b)` elementwise, as 0/1 bytes.
pub fn compare<T: Element>(f: CmpFn, a: Src<'_, T>, b: Src<'_, T>, y: &mut [u8]) {
    dispatch(CompareK { f, a, b, y });
}

struct BitwiseK<'a, T> {
    f: BitFn,
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
            BitFn::And => map2(a, b, y, T::and),
            BitFn::Or => map2(a, b, y, T::or),
            BitFn::Xor => map2(a, b, y, T::xor),
        }
    }
}

/// `y = f(a, b)` elementwise.
pub fn bitwise<T: Bits>(f: BitFn, a: Src<'_, T>, b: Src<'_, T>, y: &mut [T]) {
    dispatch(BitwiseK { f, a, b, y });
}
