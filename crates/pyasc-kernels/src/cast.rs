//! Whole-tile data movement: [`cast`](crate::cast), [`select`](crate::select) and
//! [`fill`](crate::fill).

use crate::dispatch::{dispatch, Kernel, Simd};
use crate::element::sealed::Sealed;
use crate::element::Element;
use crate::src::{map1, map3, Src};

struct CastK<'a, S, D> {
    x: &'a [S],
    y: &'a mut [D],
}

impl<Sr: Element, D: Element> Kernel for CastK<'_, Sr, D> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        map1(self.x, self.y, Sealed::cast_into::<D>);
    }
}

/// Converts a tile with NumPy `astype` semantics: float -> int truncates toward zero
/// (saturating; NaN -> 0), anything -> bool is `x != 0` (NaN -> true), bool -> number is 0/1,
/// int -> float and f64 -> f32 round to nearest.
pub fn cast<S: Element, D: Element>(x: &[S], y: &mut [D]) {
    assert_eq!(x.len(), y.len(), "input length differs from output length");
    dispatch(CastK { x, y });
}

struct SelectK<'a, T> {
    c: Src<'a, u8>,
    a: Src<'a, T>,
    b: Src<'a, T>,
    y: &'a mut [T],
}

impl<T: Element> Kernel for SelectK<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        map3(self.c, self.a, self.b, self.y, |c, a, b| if c != 0 { a } else { b });
    }
}

/// `y = if cond != 0 { a } else { b }` elementwise.
pub fn select<T: Element>(cond: Src<'_, u8>, a: Src<'_, T>, b: Src<'_, T>, y: &mut [T]) {
    dispatch(SelectK { c: cond, a, b, y });
}

struct FillK<'a, T> {
    v: T,
    y: &'a mut [T],
}

impl<T: Element> Kernel for FillK<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        self.y.fill(self.v);
    }
}

/// Sets every element of `y` to `v`, with the widest stores of the active ISA (a broadcast
/// operand spread over a tile is stored once per tile).
pub fn fill<T: Element>(v: T, y: &mut [T]) {
    dispatch(FillK { v, y });
}
