//! Two float arithmetic operations in one pass: `y = op2(op1(a, b), c)` (or `c - op1(a, b)`),
//! each rounded as if run alone, so the result is bit-identical to two separate passes while
//! the intermediate never leaves a register.

use crate::dispatch::{dispatch, Kernel, Simd};
use crate::src::{map3, Src};

/// The first operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum First {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
}

/// The second operation, applied to the first's result `t` and `c`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Second {
    /// `t + c`.
    Add,
    /// `t - c`.
    Sub,
    /// `c - t`.
    SubFrom,
    /// `t * c`.
    Mul,
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

/// `y = second(first(a, b), c)` elementwise; operands may be broadcast scalars.
pub fn chain<T: ChainFloat>(first: First, second: Second, a: Src<'_, T>, b: Src<'_, T>, c: Src<'_, T>, y: &mut [T]) {
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
        for first in [First::Add, First::Sub, First::Mul] {
            for second in [Second::Add, Second::Sub, Second::SubFrom, Second::Mul] {
                let f = |x: f32, y: f32| match first {
                    First::Add => x + y,
                    First::Sub => x - y,
                    First::Mul => x * y,
                };
                let g = |t: f32, z: f32| match second {
                    Second::Add => t + z,
                    Second::Sub => t - z,
                    Second::SubFrom => z - t,
                    Second::Mul => t * z,
                };
                for (sa, sb, sc) in
                    [(false, false, false), (true, false, false), (false, true, true), (true, true, false)]
                {
                    let mut y = vec![0.0f32; 37];
                    chain(first, second, pick(&a, sa), pick(&b, sb), pick(&c, sc), &mut y);
                    for i in 0..37 {
                        let at = |v: &[f32], s: bool| if s { v[3] } else { v[i] };
                        let want = g(f(at(&a, sa), at(&b, sb)), at(&c, sc));
                        assert_eq!(y[i].to_bits(), want.to_bits(), "{first:?} {second:?} at {i}");
                    }
                }
            }
        }
    }
}
