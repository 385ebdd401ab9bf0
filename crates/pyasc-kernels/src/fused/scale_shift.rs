//! The epilogue of a normalisation in one pass: `y = op1(a, b) * scale + shift` (op1 among
//! add, sub, mul), each operation rounded as if run alone, so the result is bit-identical to
//! three separate passes while the intermediates never leave a register. Layer norm's
//! `(x - mean) * rstd * w + b` and batch norm's `(x - mean) * scale + shift` end this way.
//! [`normalize`] is layer norm's whole epilogue from the values themselves,
//! `((x - mean) * rstd) * scale + shift`, so the centred values are never stored.

use crate::chain::ChainFloat;
use crate::dispatch::{dispatch, Kernel, Simd};
use crate::src::Src;
use pyasc_ir::op::BinaryOp;

/// The first operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum First {
    Add,
    Sub,
    Mul,
}

struct ScaleShiftK<'a, T> {
    first: First,
    a: Src<'a, T>,
    b: Src<'a, T>,
    scale: Src<'a, T>,
    shift: Src<'a, T>,
    y: &'a mut [T],
}

/// Bind `$get` to an element accessor of operand `$s` (a slice cut to `$n` elements, or the
/// broadcast value) and expand `$body` once per kind, so each combination is its own loop.
macro_rules! operand {
    ($s:expr, $n:expr, $get:ident => $body:expr) => {
        match $s {
            Src::Slice(v) => {
                let v = &v[..$n];
                let $get = |i: usize| v[i];
                $body
            }
            Src::Scalar(x) => {
                let $get = |_: usize| x;
                $body
            }
        }
    };
}

/// One loop per first operation and operand kinds (every match is outside the loop).
macro_rules! loops {
    ($self:ident, $($f:ident => $fx:expr),*) => {{
        let n = $self.y.len();
        let y = &mut $self.y[..n];
        match $self.first {
            $(First::$f => {
                let f = $fx;
                operand!($self.a, n, ga => operand!($self.b, n, gb => operand!($self.scale, n, gs =>
                    operand!($self.shift, n, gt => {
                        for (i, o) in y.iter_mut().enumerate() {
                            *o = f(ga(i), gb(i)) * gs(i) + gt(i);
                        }
                    }))))
            })*
        }
    }};
}

impl<T: ChainFloat> Kernel for ScaleShiftK<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        loops!(self, Add => |a: T, b: T| a + b, Sub => |a: T, b: T| a - b, Mul => |a: T, b: T| a * b);
    }
}

/// `y = op1(a, b) * scale + shift` elementwise, each operation rounded on its own; `op1` is
/// float add, sub or mul; operands may be broadcast scalars.
///
/// # Panics
/// If `op1` is another operation or a slice operand's length differs from `y`'s.
pub fn scale_shift<T: ChainFloat>(
    op1: BinaryOp,
    a: Src<'_, T>,
    b: Src<'_, T>,
    scale: Src<'_, T>,
    shift: Src<'_, T>,
    y: &mut [T],
) {
    let first = match op1 {
        BinaryOp::Add => First::Add,
        BinaryOp::Sub => First::Sub,
        BinaryOp::Mul => First::Mul,
        op => panic!("a scale-shift cannot start with {}", op.name()),
    };
    for s in [&a, &b, &scale, &shift] {
        if let Src::Slice(v) = s {
            assert_eq!(v.len(), y.len(), "operand length differs from output length");
        }
    }
    dispatch(ScaleShiftK { first, a, b, scale, shift, y });
}

struct NormalizeK<'a, T> {
    x: Src<'a, T>,
    mean: Src<'a, T>,
    rstd: Src<'a, T>,
    scale: Src<'a, T>,
    shift: Src<'a, T>,
    y: &'a mut [T],
}

impl<T: ChainFloat> Kernel for NormalizeK<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let n = self.y.len();
        let y = &mut self.y[..n];
        operand!(self.x, n, gx => operand!(self.mean, n, gm => operand!(self.rstd, n, gr =>
        operand!(self.scale, n, gs => operand!(self.shift, n, gt => {
            for (i, o) in y.iter_mut().enumerate() {
                *o = ((gx(i) - gm(i)) * gr(i)) * gs(i) + gt(i);
            }
        })))))
    }
}

/// `y = ((x - mean) * rstd) * scale + shift` elementwise, each operation rounded on its own
/// (the four separate passes' result to the bit); operands may be broadcast scalars.
///
/// # Panics
/// If a slice operand's length differs from `y`'s.
pub fn normalize<T: ChainFloat>(
    x: Src<'_, T>,
    mean: Src<'_, T>,
    rstd: Src<'_, T>,
    scale: Src<'_, T>,
    shift: Src<'_, T>,
    y: &mut [T],
) {
    for s in [&x, &mean, &rstd, &scale, &shift] {
        if let Src::Slice(v) = s {
            assert_eq!(v.len(), y.len(), "operand length differs from output length");
        }
    }
    dispatch(NormalizeK { x, mean, rstd, scale, shift, y });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(v: &[f64], s: bool) -> Src<'_, f64> {
        if s {
            Src::Scalar(v[2])
        } else {
            Src::Slice(v)
        }
    }

    #[test]
    fn matches_three_separate_operations_bit_for_bit() {
        let n = 53;
        let col = |k: f64| -> Vec<f64> { (0..n).map(|i| ((i as f64 + 1.0) * k).sin() * 1e3 + k).collect() };
        let (a, b, s, t) = (col(0.731), col(1.37), col(0.11), col(2.9));
        for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul] {
            for kinds in 0..16u32 {
                let bit = |k: u32| kinds & (1 << k) != 0;
                let mut y = vec![0.0f64; n];
                scale_shift(op, pick(&a, bit(0)), pick(&b, bit(1)), pick(&s, bit(2)), pick(&t, bit(3)), &mut y);
                for i in 0..n {
                    let at = |v: &[f64], k: u32| if bit(k) { v[2] } else { v[i] };
                    let first = match op {
                        BinaryOp::Add => at(&a, 0) + at(&b, 1),
                        BinaryOp::Sub => at(&a, 0) - at(&b, 1),
                        _ => at(&a, 0) * at(&b, 1),
                    };
                    let scaled = first * at(&s, 2);
                    let want = scaled + at(&t, 3);
                    assert_eq!(y[i].to_bits(), want.to_bits(), "{op:?} kinds {kinds:04b} at {i}");
                }
            }
        }
    }

    #[test]
    fn normalize_matches_four_separate_operations_bit_for_bit() {
        let n = 67;
        let col = |k: f32| -> Vec<f32> { (0..n).map(|i| ((i as f32 + 1.0) * k).sin() * 1e2 + k).collect() };
        let (x, m, r, s, t) = (col(0.731), col(1.37), col(0.11), col(2.9), col(0.5));
        for kinds in 0..32u32 {
            let bit = |k: u32| kinds & (1 << k) != 0;
            let pick = |v: &[f32], k: u32| -> Vec<f32> {
                if bit(k) {
                    vec![v[3]]
                } else {
                    v.to_vec()
                }
            };
            let vs = [pick(&x, 0), pick(&m, 1), pick(&r, 2), pick(&s, 3), pick(&t, 4)];
            fn src(v: &[f32]) -> Src<'_, f32> {
                if v.len() == 1 {
                    Src::Scalar(v[0])
                } else {
                    Src::Slice(v)
                }
            }
            let mut y = vec![0.0f32; n];
            normalize(src(&vs[0]), src(&vs[1]), src(&vs[2]), src(&vs[3]), src(&vs[4]), &mut y);
            for (i, got) in y.iter().enumerate() {
                let at = |k: usize| vs[k][if vs[k].len() == 1 { 0 } else { i }];
                let d = at(0) - at(1);
                let scaled = d * at(2);
                let weighted = scaled * at(3);
                let want = weighted + at(4);
                assert_eq!(got.to_bits(), want.to_bits(), "kinds {kinds:05b} at {i}");
            }
        }
    }

    #[test]
    fn float32_never_fuses_into_a_multiply_add() {
        // 1 + 2^-23 squared needs more than float32's 24 bits: a fused multiply-add keeps the
        // low bit that separate rounding drops.
        let x = 1.0f32 + f32::EPSILON;
        let mut y = vec![0.0f32; 40];
        let a = vec![x; 40];
        scale_shift(BinaryOp::Mul, Src::Slice(&a), Src::Scalar(1.0), Src::Slice(&a), Src::Scalar(-1.0), &mut y);
        let want = (x * x) + -1.0;
        assert!(y.iter().all(|v| v.to_bits() == want.to_bits()), "{y:?} vs {want}");
    }
}
