//! float32 running sums with arithmetic fused on both sides, in registers: `out =
//! post(cumsum(pre(x)))` where each step is an add, sub, mul or div with a broadcast float32
//! scalar. Every step rounds in float32 as the elementwise kernel of the same operation does
//! (division by a scalar through a float64 multiply by its reciprocal, with the exact
//! division where the quotient is subnormal: both correctly rounded), and the running sums
//! are [`Sum<f32>`](crate::scan::Sum)'s own (float64, one rounding per output), so the result
//! is the unfused kernels' to the bit. Only the AVX-512 scan has the fused form; elsewhere
//! [`sum_map_f32`] answers `None` and the caller runs the steps as separate passes.

use pyasc_ir::op::BinaryOp;

/// Steps at most on the two sides together.
pub const MAX_STEPS: usize = 3;

/// One step: `v = op(v, arg)`, or `op(arg, v)` when `swap`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Step {
    /// Add, sub, mul or div.
    pub op: BinaryOp,
    /// `arg` is the left operand.
    pub swap: bool,
    /// The broadcast operand.
    pub arg: f32,
}

impl Step {
    /// True for the operations a step may have.
    pub fn supported(op: BinaryOp) -> bool {
        matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div)
    }

    /// The step on one element, rounded in float32.
    #[inline(always)]
    pub fn apply(&self, v: f32) -> f32 {
        let (a, b) = if self.swap { (self.arg, v) } else { (v, self.arg) };
        match self.op {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            _ => a / b,
        }
    }
}

/// `out[k] = post(r + pre(x[0]) + … + pre(x[k]))` (the sum in float64, rounded to float32
/// before `post`), returning the running value after the segment; `None` (and nothing
/// written) where this ISA has no fused scan. Panics if the lengths differ, there are more
/// than [`MAX_STEPS`] steps or a step's operation is not [`Step::supported`].
pub fn sum_map_f32(x: &[f32], out: &mut [f32], pre: &[Step], post: &[Step], r: f64) -> Option<f64> {
    assert_eq!(x.len(), out.len(), "a scan's output is as long as its input");
    assert!(pre.len() + post.len() <= MAX_STEPS, "at most {MAX_STEPS} fused steps");
    assert!(pre.iter().chain(post).all(|s| Step::supported(s.op)), "steps add, subtract, multiply or divide");
    crate::scan::simd::sum_map_f32(x, out, pre, post, r)
}
