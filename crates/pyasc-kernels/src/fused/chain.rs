//! Two float arithmetic operations in one pass: `y = op2(op1(a, b), c)` (or `c - op1(a, b)`),
//! each rounded as if run alone, so the result is bit-identical to two separate passes while
//! the intermediate never leaves a register.

use crate::dispatch::{dispatch, Kernel, Simd};
use crate::src::{map3, Src};
use pyasc_ir::op::BinaryOp;

/// The first operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum First {
    Add,
    Sub,
    Mul,
}

/// The second operation, applied to the first's result `t` and `c`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Second {
    Add,
    Sub,
    /// `c - t`.
    SubFrom,
    Mul,
}

/// True when `op` can be a link of a chain (float add, sub and mul).
pub fn chains(op: BinaryOp) -> bool {
    matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul)
}

/// Float element types the chains run on.
pub trait ChainFloat:
    Copy + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self>
{
}
impl ChainFloat for f32 {}
impl ChainFloat for f64 {}

struct ChainK<'a, T> {
    first: First,
    second: Second,
    a: Src<'a, T>,
    b: Src<'a, T>,
    c: Src<'a, T>,
    y: &'a mut [T],
}

/// One loop per pair of operations (the match is outside the loop).
macro_rules! pairs {
    ($self:ident, $($f:ident => $fx:expr),*) => {
        match $self.first {
            $(First::$f => {
                let f = $fx;
                match $self.second {
                    Second::Add => map3($self.c, $self.a, $self.b, $self.y, |c, a, b| f(a, b) + c),
                    Second::Sub => map3($self.c, $self.a, $self.b, $self.y, |c, a, b| f(a, b) - c),
                    Second::SubFrom => map3($self.c, $self.a, $self.b, $self.y, |c, a, b| c - f(a, b)),
                    Second::Mul => map3($self.c, $self.a, $self.b, $self.y, |c, a, b| f(a, b) * c),
                }
            })*
        }
    };
}

impl<T: ChainFloat> Kernel for ChainK<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        pairs!(self, Add => |a: T, b: T| a + b, Sub => |a: T, b: T| a - b, Mul => |a: T, b: T| a * b);
    }
}

/// `y = op2(op1(a, b), c)` elementwise (`op2(c, op1(a, b))` if `swap`); `op1` and `op2` are
/// float add, sub or mul (see [`chains`]); operands may be broadcast scalars.
pub fn chain<T: ChainFloat>(
    op1: BinaryOp,
    op2: BinaryOp,
    swap: bool,
    a: Src<'_, T>,
    b: Src<'_, T>,
    c: Src<'_, T>,
    y: &mut [T],
) {
    let first = match op1 {
        BinaryOp::Add => First::Add,
        BinaryOp::Sub => First::Sub,
        BinaryOp::Mul => First::Mul,
        op => panic!("a chain cannot start with {}", op.name()),
    };
    let second = match (op2, swap) {
        (BinaryOp::Add, _) => Second::Add,
        (BinaryOp::Mul, _) => Second::Mul,
        (BinaryOp::Sub, false) => Second::Sub,
        (BinaryOp::Sub, true) => Second::SubFrom,
        (op, _) => panic!("a chain cannot end with {}", op.name()),
    };
    dispatch(ChainK { first, second, a, b, c, y });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(v: &[f32], s: bool) -> Src<'_, f32> {
        if s {
            Src::Scalar(v[3])
        } else {
            Src::Slice(v)
        }
    }

    #[test]
    fn matches_two_separate_operations_bit_for_bit() {
        let a: Vec<f32> = (0..37).map(|i| (i as f32 * 0.731).sin() * 1e3).collect();
        let b: Vec<f32> = (0..37).map(|i| (i as f32 * 1.37).cos() * 1e-2).collect();
        let c: Vec<f32> = (0..37).map(|i| (i as f32 * 0.11).tan()).collect();
        let ops = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul];
        let apply = |op: BinaryOp, x: f32, y: f32| match op {
            BinaryOp::Add => x + y,
            BinaryOp::Sub => x - y,
            _ => x * y,
        };
        for first in ops {
            for (second, swap) in ops.iter().flat_map(|&o| [(o, false), (o, true)]) {
                let f = |x: f32, y: f32| apply(first, x, y);
                let g = |t: f32, z: f32| if swap { apply(second, z, t) } else { apply(second, t, z) };
                for (sa, sb, sc) in
                    [(false, false, false), (true, false, false), (false, true, true), (true, true, false)]
                {
                    let mut y = vec![0.0f32; 37];
                    chain(first, second, swap, pick(&a, sa), pick(&b, sb), pick(&c, sc), &mut y);
                    for i in 0..37 {
                        let at = |v: &[f32], s: bool| if s { v[3] } else { v[i] };
                        let want = g(f(at(&a, sa), at(&b, sb)), at(&c, sc));
                        assert_eq!(y[i].to_bits(), want.to_bits(), "{first:?} {second:?} {swap} at {i}");
                    }
                }
            }
        }
    }
}
