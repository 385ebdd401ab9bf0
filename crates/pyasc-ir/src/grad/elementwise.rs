//! Gradients of elementwise ops: the types of the op table's gradient column and the
//! function that applies a row's rule.
//!
//! A unary row gives `dy/dx` as nodes built from `x` and `y` ([`UnaryGrad::Of`]), or says the
//! op is piecewise constant ([`UnaryGrad::Zero`], JAX's convention for `floor`, `sign`, ...)
//! or has no float result ([`UnaryGrad::None`]). A binary row gives the partial derivative
//! for each operand ([`Partial`]); the cotangent is the output's times the partial, summed
//! back over broadcast axes by the driver.

use super::Builder;
use crate::error::Result;
use crate::graph::NodeId;
use crate::op::{BinaryOp, UnaryOp};

/// `dy/dx` of a unary op from `(x, y)`.
pub type UnaryRule = fn(&mut Builder<'_>, NodeId, NodeId) -> Result<NodeId>;

/// The partials of a binary op from `(a, b, y)`.
pub type BinaryRule = fn(&mut Builder<'_>, NodeId, NodeId, NodeId) -> Result<(Partial, Partial)>;

/// The gradient column of a unary row.
#[derive(Copy, Clone)]
pub enum UnaryGrad {
    /// `dy/dx` built by the rule.
    Of(UnaryRule),
    /// Zero wherever defined (piecewise constant ops).
    Zero,
    /// No gradient: the result is not a float of the operand (classifications, bit ops).
    None,
}

/// The gradient column of a binary row.
#[derive(Copy, Clone)]
pub enum BinaryGrad {
    /// The partials built by the rule.
    Of(BinaryRule),
    /// Zero for both operands (piecewise constant ops).
    Zero,
    /// No gradient: comparisons and bit ops.
    None,
}

/// The partial derivative of a binary op's result with respect to one operand.
#[derive(Copy, Clone, Debug)]
pub enum Partial {
    /// 1: the cotangent passes unchanged.
    One,
    /// -1: the cotangent passes negated.
    MinusOne,
    /// 0: no cotangent reaches the operand.
    Zero,
    /// The node holding the partial, elementwise.
    Node(NodeId),
}

/// The cotangent of a unary op's operand, `None` where it carries none.
pub fn unary(b: &mut Builder<'_>, op: UnaryOp, x: NodeId, y: NodeId, g: NodeId) -> Result<Option<NodeId>> {
    if !b.dtype(x).is_float() {
        return Ok(None);
    }
    match op.grad() {
        UnaryGrad::Of(rule) => {
            let d = rule(b, x, y)?;
            b.mul(g, d).map(Some)
        }
        UnaryGrad::Zero => Ok(None),
        UnaryGrad::None => Ok(None),
    }
}

/// The cotangents of a binary op's operands (before summing over broadcast axes).
pub fn binary(
    b: &mut Builder<'_>,
    op: BinaryOp,
    x: NodeId,
    z: NodeId,
    y: NodeId,
    g: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let (px, pz) = match op.grad() {
        BinaryGrad::Of(rule) => rule(b, x, z, y)?,
        BinaryGrad::Zero | BinaryGrad::None => return Ok(vec![None, None]),
    };
    let mut out = Vec::with_capacity(2);
    for (operand, p) in [(x, px), (z, pz)] {
        out.push(if b.dtype(operand).is_float() { apply(b, p, g)? } else { None });
    }
    Ok(out)
}

fn apply(b: &mut Builder<'_>, p: Partial, g: NodeId) -> Result<Option<NodeId>> {
    Ok(match p {
        Partial::One => Some(g),
        Partial::MinusOne => Some(b.un(UnaryOp::Neg, g)?),
        Partial::Zero => None,
        Partial::Node(d) => Some(b.mul(g, d)?),
    })
}

/// `d/dx` of the exact (erf) GELU: `Phi(x) + x phi(x)`.
pub fn gelu(b: &mut Builder<'_>, x: NodeId, _y: NodeId) -> Result<NodeId> {
    let s = b.scale(std::f64::consts::FRAC_1_SQRT_2, x)?;
    let erf = b.un(UnaryOp::Erf, s)?;
    let cdf0 = b.scale(0.5, erf)?;
    let half = b.c(0.5);
    let cdf = b.add(cdf0, half)?;
    let x2 = b.sq(x)?;
    let e0 = b.scale(-0.5, x2)?;
    let e = b.un(UnaryOp::Exp, e0)?;
    let pdf = b.scale(0.5 * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2, e)?;
    let xp = b.mul(x, pdf)?;
    b.add(cdf, xp)
}

/// `d/dx` of `x sigmoid(k x)`: `s + k x s (1 - s)` with `s = sigmoid(k x)` (SiLU: `k = 1`;
/// the Ascend FastGelu equals `x sigmoid(1.702 x)`).
pub fn x_sigmoid(b: &mut Builder<'_>, x: NodeId, k: f64) -> Result<NodeId> {
    let kx = if k == 1.0 { x } else { b.scale(k, x)? };
    let s = b.un(UnaryOp::Sigmoid, kx)?;
    let one_minus = b.rsub(1.0, s)?;
    let t = b.mul(s, one_minus)?;
    let t = b.mul(kx, t)?;
    b.add(s, t)
}

/// `d/dx` of `erf`: `2/sqrt(pi) e^(-x^2)`, times `sign` (`erfc`: -1).
pub fn erf(b: &mut Builder<'_>, x: NodeId, sign: f64) -> Result<NodeId> {
    let x2 = b.sq(x)?;
    let n = b.un(UnaryOp::Neg, x2)?;
    let e = b.un(UnaryOp::Exp, n)?;
    b.scale(sign * std::f64::consts::FRAC_2_SQRT_PI, e)
}

/// JAX's partial of `max`/`min` with respect to `a`: 1 where `a` is the result and `b` is
/// not, 0.5 where both are (ties split evenly), 0 elsewhere.
pub fn chooser(b: &mut Builder<'_>, a: NodeId, other: NodeId, y: NodeId) -> Result<NodeId> {
    let is_a = b.bin(BinaryOp::Eq, a, y)?;
    let is_b = b.bin(BinaryOp::Eq, other, y)?;
    let half = b.c(0.5);
    let one = b.c(1.0);
    let zero = b.c(0.0);
    let tie = b.select(is_b, half, one)?;
    b.select(is_a, tie, zero)
}

/// `d/da` and `d/db` of `a ** b` as JAX defines them: 0 where `b == 0`, and `log(a)` read as 0
/// where `a == 0`.
pub fn pow(b: &mut Builder<'_>, a: NodeId, z: NodeId, y: NodeId) -> Result<(Partial, Partial)> {
    let zm1 = b.plus(z, -1.0)?;
    let pw = b.bin(BinaryOp::Pow, a, zm1)?;
    let da = b.mul(z, pw)?;
    let zero = b.c(0.0);
    let z_is_0 = b.bin(BinaryOp::Eq, z, zero)?;
    let da = b.select(z_is_0, zero, da)?;
    let a_is_0 = b.bin(BinaryOp::Eq, a, zero)?;
    let one = b.c(1.0);
    let safe = b.select(a_is_0, one, a)?;
    let log = b.un(UnaryOp::Log, safe)?;
    let dz = b.mul(y, log)?;
    Ok((Partial::Node(da), Partial::Node(dz)))
}

/// `d/da` and `d/db` of `arctan2(a, b)`: `b / (a^2 + b^2)` and `-a / (a^2 + b^2)`.
pub fn arctan2(b: &mut Builder<'_>, a: NodeId, z: NodeId, _y: NodeId) -> Result<(Partial, Partial)> {
    let a2 = b.sq(a)?;
    let z2 = b.sq(z)?;
    let r2 = b.add(a2, z2)?;
    let da = b.div(z, r2)?;
    let q = b.div(a, r2)?;
    let dz = b.un(UnaryOp::Neg, q)?;
    Ok((Partial::Node(da), Partial::Node(dz)))
}

/// The names the op table's gradient column is written with.
pub mod rows {
    pub use super::Partial::{MinusOne, Node, One, Zero};
    pub use super::{arctan2, chooser, erf, gelu, pow, x_sigmoid};
    use super::{BinaryGrad, BinaryRule, UnaryGrad, UnaryRule};
    pub use crate::op::{BinaryOp as B, UnaryOp as U};

    /// A unary op's `dy/dx`.
    pub fn d(rule: UnaryRule) -> UnaryGrad {
        UnaryGrad::Of(rule)
    }

    /// A binary op's partials.
    pub fn p(rule: BinaryRule) -> BinaryGrad {
        BinaryGrad::Of(rule)
    }

    /// Marks a piecewise constant op (zero gradient).
    pub struct Constant;
    /// Marks an op whose result carries no gradient.
    pub struct NoGradient;

    /// A piecewise constant op.
    pub const ZERO: Constant = Constant;
    /// An op whose result carries no gradient.
    pub const NONE: NoGradient = NoGradient;

    impl From<Constant> for UnaryGrad {
        fn from(_: Constant) -> Self {
            UnaryGrad::Zero
        }
    }
    impl From<Constant> for BinaryGrad {
        fn from(_: Constant) -> Self {
            BinaryGrad::Zero
        }
    }
    impl From<NoGradient> for UnaryGrad {
        fn from(_: NoGradient) -> Self {
            UnaryGrad::None
        }
    }
    impl From<NoGradient> for BinaryGrad {
        fn from(_: NoGradient) -> Self {
            BinaryGrad::None
        }
    }
}
