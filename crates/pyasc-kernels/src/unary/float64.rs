//! float64 kernels of the unary ops, generated from the op table: each op's float64 body in
//! [`pyasc_ir::unary_op_table!`] is the kernel (Rust std and `libm` per element), so constant
//! folding and run time agree bit for bit. The same bodies give float32 kernels of ops that
//! have no vectorised float32 code: computed in float64, rounded once.

use crate::src::map1;
use pyasc_ir::op::UnaryOp;

/// Generates [`apply`] and [`via_f64`] from the op table.
macro_rules! float64_kernels {
    ($($(#[$doc:meta])* $v:ident $name:literal $kind:ident [$($uf:literal),*] $api:ident, $f:expr, $int:expr, $grad:expr;)*) => {
        /// `y = f(x)` on float64 through the op's table body.
        pub(super) fn apply(f: UnaryOp, x: &[f64], y: &mut [f64]) {
            match f {
                $(UnaryOp::$v => map1(x, y, $f),)*
            }
        }

        /// `y = f(x)` on float32, computed in float64 through the op's table body.
        pub(super) fn via_f64(f: UnaryOp, x: &[f32], y: &mut [f32]) {
            match f {
                $(UnaryOp::$v => map1(x, y, |v: f32| ($f)(v as f64) as f32),)*
            }
        }
    };
}

pyasc_ir::unary_op_table!(float64_kernels);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_the_table_semantics() {
        let xs: Vec<f64> = (-400..400).map(|i| i as f64 * 0.173).chain([0.0, -0.0, f64::NAN, f64::INFINITY]).collect();
        let xs32: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
        let (mut y, mut y32) = (vec![0.0; xs.len()], vec![0.0f32; xs.len()]);
        for &op in UnaryOp::ALL {
            apply(op, &xs, &mut y);
            via_f64(op, &xs32, &mut y32);
            for i in 0..xs.len() {
                let want = op.eval_f64(xs[i]);
                assert!(y[i].to_bits() == want.to_bits() || (want.is_nan() && y[i].is_nan()), "{op:?}({})", xs[i]);
                let want32 = op.eval_f64(xs32[i] as f64) as f32;
                assert!(y32[i].to_bits() == want32.to_bits() || (want32.is_nan() && y32[i].is_nan()), "{op:?}");
            }
        }
    }
}
