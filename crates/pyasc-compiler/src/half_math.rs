//! Half-accuracy math: a float32 op whose value is rounded to 16 bits at once needs only the
//! accuracy of the 16-bit result.
//!
//! Needs: a lowered [`pyasc_ir::tile::KernelPlan`]. Guarantees: the same plan where each
//! `t = fast_gelu(x)` on float32 whose only reader is `y = cast<float16 or bfloat16>(t)` (and
//! `t` a scratch tile read by nothing else) computes `fast_gelu_half` instead: within one
//! float16 ulp of the exact value after the cast (equal to its correct rounding except within
//! 2^-17 of a rounding boundary), without the float32-exact exponential and division. This is
//! what `precision_mode="force_fp16"` (the article's `precision="fp16"` fast_gelu layer)
//! produces.

use crate::pass::{CompileState, Pass};
use pyasc_ir::dtype::DType;
use pyasc_ir::error::Result;
use pyasc_ir::op::UnaryOp;
use pyasc_ir::tile::{Instr, Reg, RegKind, TileKernel};

/// Switches eligible float32 ops to their 16-bit-accuracy forms in every kernel.
pub struct HalfMathPass;

impl Pass for HalfMathPass {
    fn name(&self) -> &'static str {
        "half_math"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        if let Some(plan) = st.plan.as_mut() {
            for k in plan.kernels.iter_mut() {
                let n = use_half_math(k);
                if n > 0 {
                    st.notes.push(format!("{}: {n} op(s) computed to 16-bit accuracy", k.name));
                }
            }
        }
        Ok(())
    }
}

/// The 16-bit-accuracy form of `op`, if it has one.
fn half_form(op: UnaryOp) -> Option<UnaryOp> {
    match op {
        UnaryOp::FastGelu => Some(UnaryOp::FastGeluHalf),
        _ => None,
    }
}

/// Does the value of `t` written at `at` reach only a cast to float16 or bfloat16?
fn only_rounded_to_16_bits(k: &TileKernel, at: usize, t: Reg) -> bool {
    let decl = |r: Reg| k.regs[r.0 as usize];
    if decl(t).kind != RegKind::Tile || decl(t).row || decl(t).dtype != DType::F32 {
        return false;
    }
    let mut readers = 0;
    for ins in &k.body[at + 1..] {
        if ins.srcs().contains(&t) {
            match *ins {
                Instr::Cast { dst, src } if src == t && matches!(decl(dst).dtype, DType::F16 | DType::BF16) => {
                    readers += 1
                }
                _ => return false,
            }
        }
        if ins.dst() == t {
            break;
        }
    }
    readers > 0
}

/// Switches every eligible op of `k`'s body; returns how many.
pub fn use_half_math(k: &mut TileKernel) -> usize {
    if k.program.is_some() {
        return 0;
    }
    let mut count = 0;
    for at in 0..k.body.len() {
        if let Instr::Unary { op, dst, src } = k.body[at] {
            if let Some(half) = half_form(op) {
                if only_rounded_to_16_bits(k, at, dst) {
                    k.body[at] = Instr::Unary { op: half, dst, src };
                    count += 1;
                }
            }
        }
    }
    count
}
