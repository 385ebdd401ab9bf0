//! Python int arithmetic on the host: each elementwise op of an [`crate::int_bounds::IntExpr`]
//! applied to exact 128-bit values as Python applies it to its unbounded ints (floor
//! division and modulo round toward negative infinity, shifts and powers never wrap).
//! Where Python would raise or return a float (division by zero, a negative shift or
//! exponent) the value is NumPy's for an int64 array, as the kernels compute it.

use crate::fold;
use crate::int_bounds::TooLarge;
use pyasc_ir::op::{BinaryOp, Op, UnaryOp};
use pyasc_ir::{DType, Scalar};

/// `op` applied to `x` exactly; `Err(TooLarge)` when the result leaves 128 bits.
pub fn apply(op: &Op, x: &[i128]) -> Result<i128, TooLarge> {
    let exact = match (op, x) {
        (Op::Unary(u), [a]) => unary(*u, *a),
        (Op::Binary(b), [a, c]) => binary(*b, *a, *c),
        _ => None,
    };
    match exact {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(e),
        None => as_int64(op, x),
    }
}

/// A unary op Python defines on ints; `None` for the rest.
fn unary(u: UnaryOp, a: i128) -> Option<Result<i128, TooLarge>> {
    let v = match u {
        UnaryOp::Neg => a.checked_neg(),
        UnaryOp::Abs => a.checked_abs(),
        UnaryOp::Square => a.checked_mul(a),
        UnaryOp::Sign => Some(a.signum()),
        UnaryOp::Positive | UnaryOp::Conjugate => Some(a),
        UnaryOp::Not => Some(!a),
        _ => return None,
    };
    Some(v.ok_or(TooLarge))
}

/// A binary op Python defines on ints; `None` for the rest (and where Python raises).
fn binary(b: BinaryOp, a: i128, c: i128) -> Option<Result<i128, TooLarge>> {
    let v = match b {
        BinaryOp::Add => a.checked_add(c),
        BinaryOp::Sub => a.checked_sub(c),
        BinaryOp::Mul => a.checked_mul(c),
        BinaryOp::FloorDiv if c != 0 => floor_div(a, c),
        BinaryOp::Mod if c != 0 => a.checked_rem(c).map(|r| if r != 0 && (r < 0) != (c < 0) { r + c } else { r }),
        BinaryOp::Fmod if c != 0 => a.checked_rem(c),
        BinaryOp::Pow if c >= 0 => pow(a, c),
        BinaryOp::Min | BinaryOp::Fmin => Some(a.min(c)),
        BinaryOp::Max | BinaryOp::Fmax => Some(a.max(c)),
        BinaryOp::And => Some(a & c),
        BinaryOp::Or => Some(a | c),
        BinaryOp::Xor => Some(a ^ c),
        BinaryOp::LeftShift if c >= 0 => shl(a, c),
        BinaryOp::RightShift if c >= 0 => Some(a >> c.min(127)),
        BinaryOp::Gcd => gcd(a, c),
        BinaryOp::Lcm => gcd(a, c).and_then(|g| if g == 0 { Some(0) } else { (a / g).checked_mul(c).map(i128::abs) }),
        _ => return None,
    };
    Some(v.ok_or(TooLarge))
}

fn floor_div(a: i128, c: i128) -> Option<i128> {
    let q = a.checked_div(c)?;
    Some(if a % c != 0 && (a < 0) != (c < 0) { q - 1 } else { q })
}

fn pow(a: i128, c: i128) -> Option<i128> {
    match a {
        0 => Some(i128::from(c == 0)),
        1 => Some(1),
        -1 => Some(if c % 2 == 0 { 1 } else { -1 }),
        _ => a.checked_pow(u32::try_from(c).ok()?),
    }
}

fn shl(a: i128, c: i128) -> Option<i128> {
    if a == 0 {
        return Some(0);
    }
    let c = u32::try_from(c).ok().filter(|c| *c < 127)?;
    let v = a << c;
    (v >> c == a).then_some(v)
}

fn gcd(a: i128, c: i128) -> Option<i128> {
    let (mut x, mut y) = (a.checked_abs()?, c.checked_abs()?);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    Some(x)
}

/// An op with no Python meaning on ints, or one where Python raises: computed on int64
/// values as the kernels compute it.
fn as_int64(op: &Op, x: &[i128]) -> Result<i128, TooLarge> {
    let ins: Option<Vec<Scalar>> = x.iter().map(|v| i64::try_from(*v).ok().map(Scalar::Int)).collect();
    let ins = ins.ok_or(TooLarge)?;
    fold::eval(op, &ins, DType::I64, DType::I64).map(|s| i128::from(s.as_i64())).ok_or(TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(b: BinaryOp, a: i128, c: i128) -> i128 {
        apply(&Op::Binary(b), &[a, c]).unwrap()
    }

    #[test]
    fn floor_division_and_modulo_round_as_python() {
        // Python: -7 // 2 == -4, -7 % 2 == 1, 7 // -2 == -4, 7 % -2 == -1.
        assert_eq!(bin(BinaryOp::FloorDiv, -7, 2), -4);
        assert_eq!(bin(BinaryOp::Mod, -7, 2), 1);
        assert_eq!(bin(BinaryOp::FloorDiv, 7, -2), -4);
        assert_eq!(bin(BinaryOp::Mod, 7, -2), -1);
        assert_eq!(bin(BinaryOp::Fmod, -7, 2), -1);
        assert_eq!(bin(BinaryOp::FloorDiv, 1 << 63, 2), 1 << 62);
    }

    #[test]
    fn beyond_int64_is_exact_and_beyond_128_bits_is_an_error() {
        assert_eq!(bin(BinaryOp::Mul, 1 << 40, 1 << 40), 1 << 80);
        assert_eq!(bin(BinaryOp::Pow, 3, 40), 3i128.pow(40));
        assert_eq!(bin(BinaryOp::LeftShift, -3, 100), -3 << 100);
        assert_eq!(bin(BinaryOp::RightShift, -5, 1000), -1);
        assert_eq!(bin(BinaryOp::Lcm, -4, 6), 12);
        assert_eq!(bin(BinaryOp::Gcd, -4, 6), 2);
        assert_eq!(apply(&Op::Binary(BinaryOp::Mul), &[1 << 100, 1 << 40]), Err(TooLarge));
        assert_eq!(apply(&Op::Binary(BinaryOp::LeftShift), &[1, 127]), Err(TooLarge));
        assert_eq!(apply(&Op::Unary(UnaryOp::Not), &[1 << 70]).unwrap(), -(1 << 70) - 1);
    }

    #[test]
    fn where_python_raises_the_value_is_numpys() {
        // NumPy's int64 arrays give 0 for division and modulo by zero.
        assert_eq!(bin(BinaryOp::FloorDiv, 5, 0), 0);
        assert_eq!(bin(BinaryOp::Mod, 5, 0), 0);
    }
}
