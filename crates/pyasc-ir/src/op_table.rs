//! The elementwise op table: every unary and binary op is one row here, and nothing else in
//! pyasc spells an op's identity or its NumPy meaning.
//!
//! The tables are "X-macros": [`unary_op_table!`] and [`binary_op_table!`] hand their rows to
//! a generator macro named by the caller. This crate generates the `UnaryOp`/`BinaryOp` enums
//! with their names, dtype kinds, NumPy ufunc names and constant-folding semantics from them
//! ([`crate::op`]); the kernels crate generates its float64 kernels (and the float32 ones of
//! ops without a hand-vectorised body) from the same float semantics, so a folded constant and
//! the value computed at run time agree.
//!
//! A unary row: `Variant "name" Kind ["ufunc", ...] api|hidden, float64 body, integer body,
//! gradient;`
//! * `Kind`: a [`crate::op::UnaryKind`] (how the op treats dtypes);
//! * the ufunc names are the NumPy ufuncs that map onto the op inside an operator;
//! * `api`: exported as `pyasc.<name>`; `hidden`: reached through ufuncs or methods only;
//! * the float64 body is the op's meaning on floats (classifications return 1.0 or 0.0);
//! * the integer body (`Some(fn(i64) -> i64)` or `None`) folds integer operands of
//!   dtype-keeping ops, wrapping like the kernels;
//! * the gradient: `d(rule)` builds `dy/dx` from `x` and `y` ([`crate::grad::UnaryGrad`]),
//!   `ZERO` for piecewise constant ops, `NONE` where the result carries no gradient.
//!
//! A binary row: `Variant "name" Class ["ufunc", ...] commutative|ordered, float body, integer
//! body, gradient;` where `Class` is a [`crate::op::BinaryClass`], the float body takes and returns f64
//! (`None`: not foldable; comparisons return 1.0 or 0.0) and the integer body returns
//! `None` when folding is not exact (integer `/` is computed in floats); the last column is the
//! gradient: `p(rule)` gives the partial for each operand from `a`, `b` and `y`
//! ([`crate::grad::Partial`]), `ZERO` or `NONE` as for unary rows.

/// Calls `$m! { rows }` with every unary op's row (see the module docs for the columns).
#[macro_export]
macro_rules! unary_op_table {
    ($m:ident) => {
        $m! {
            /// `-x`.
            Neg "neg" Numeric ["negative"] hidden, |x: f64| -x, Some(|i: i64| i.wrapping_neg()), d(|b, _, _| Ok(b.c(-1.0)));
            /// `|x|`.
            Abs "abs" Numeric ["absolute"] api, |x: f64| x.abs(), Some(|i: i64| i.wrapping_abs()), d(|b, x, _| { let z = b.c(0.0); let up = b.bin(B::Ge, x, z)?; let (p, m) = (b.c(1.0), b.c(-1.0)); b.select(up, p, m) });
            /// `x * x`.
            Square "square" Numeric ["square"] api, |x: f64| x * x, Some(|i: i64| i.wrapping_mul(i)), d(|b, x, _| b.scale(2.0, x));
            /// -1, 0 or 1 (NaN stays NaN).
            Sign "sign" Numeric ["sign"] api, $crate::op_table::sign, Some(|i: i64| i.signum()), ZERO;
            /// `+x`: a copy.
            Positive "positive" Numeric ["positive"] hidden, |x: f64| x, Some(|i: i64| i), d(|b, _, _| Ok(b.c(1.0)));
            /// Complex conjugate: a copy for real numbers.
            Conjugate "conjugate" Numeric ["conjugate"] hidden, |x: f64| x, Some(|i: i64| i), d(|b, _, _| Ok(b.c(1.0)));
            /// Bitwise not (logical on bool).
            Not "not" Bitwise ["invert"] hidden, |_x: f64| f64::NAN, Some(|i: i64| !i), NONE;
            /// `e^x`.
            Exp "exp" Float ["exp"] api, f64::exp, None, d(|_, _, y| Ok(y));
            /// `2^x`.
            Exp2 "exp2" Float ["exp2"] api, f64::exp2, None, d(|b, _, y| b.scale(std::f64::consts::LN_2, y));
            /// Natural logarithm.
            Log "log" Float ["log"] api, f64::ln, None, d(|b, x, _| b.recip(x));
            /// Base-2 logarithm.
            Log2 "log2" Float ["log2"] api, f64::log2, None, d(|b, x, _| { let s = b.scale(std::f64::consts::LN_2, x)?; b.recip(s) });
            /// Base-10 logarithm.
            Log10 "log10" Float ["log10"] api, f64::log10, None, d(|b, x, _| { let s = b.scale(std::f64::consts::LN_10, x)?; b.recip(s) });
            /// `log(1 + x)`.
            Log1p "log1p" Float ["log1p"] api, f64::ln_1p, None, d(|b, x, _| { let s = b.plus(x, 1.0)?; b.recip(s) });
            /// `e^x - 1`.
            Expm1 "expm1" Float ["expm1"] api, f64::exp_m1, None, d(|b, _, y| b.plus(y, 1.0));
            /// Square root.
            Sqrt "sqrt" Float ["sqrt"] api, f64::sqrt, None, d(|b, _, y| { let r = b.recip(y)?; b.scale(0.5, r) });
            /// Cube root (negative for negative x).
            Cbrt "cbrt" Float ["cbrt"] api, f64::cbrt, None, d(|b, _, y| { let s = b.sq(y)?; let t = b.scale(3.0, s)?; b.recip(t) });
            /// `1 / sqrt(x)`.
            Rsqrt "rsqrt" Float [] api, |x: f64| 1.0 / x.sqrt(), None, d(|b, x, y| { let q = b.div(y, x)?; b.scale(-0.5, q) });
            /// `1 / x`; for integers NumPy's truncated quotient (1, -1 or 0; 0 for `1 / 0`).
            Reciprocal "reciprocal" Numeric ["reciprocal"] api, |x: f64| 1.0 / x, Some(|i: i64| if i == 0 { 0 } else { 1 / i }), d(|b, _, y| { let s = b.sq(y)?; b.un(U::Neg, s) });
            /// Sine.
            Sin "sin" Float ["sin"] api, f64::sin, None, d(|b, x, _| b.un(U::Cos, x));
            /// Cosine.
            Cos "cos" Float ["cos"] api, f64::cos, None, d(|b, x, _| { let s = b.un(U::Sin, x)?; b.un(U::Neg, s) });
            /// Tangent.
            Tan "tan" Float ["tan"] api, f64::tan, None, d(|b, _, y| { let s = b.sq(y)?; b.plus(s, 1.0) });
            /// Inverse sine.
            Arcsin "arcsin" Float ["arcsin"] api, f64::asin, None, d(|b, x, _| { let s = b.sq(x)?; let t = b.rsub(1.0, s)?; b.un(U::Rsqrt, t) });
            /// Inverse cosine.
            Arccos "arccos" Float ["arccos"] api, f64::acos, None, d(|b, x, _| { let s = b.sq(x)?; let t = b.rsub(1.0, s)?; let r = b.un(U::Rsqrt, t)?; b.un(U::Neg, r) });
            /// Inverse tangent.
            Arctan "arctan" Float ["arctan"] api, f64::atan, None, d(|b, x, _| { let s = b.sq(x)?; let t = b.plus(s, 1.0)?; b.recip(t) });
            /// Hyperbolic sine.
            Sinh "sinh" Float ["sinh"] api, f64::sinh, None, d(|b, x, _| b.un(U::Cosh, x));
            /// Hyperbolic cosine.
            Cosh "cosh" Float ["cosh"] api, f64::cosh, None, d(|b, x, _| b.un(U::Sinh, x));
            /// Hyperbolic tangent.
            Tanh "tanh" Float ["tanh"] api, f64::tanh, None, d(|b, _, y| { let s = b.sq(y)?; b.rsub(1.0, s) });
            /// Inverse hyperbolic sine.
            Arcsinh "arcsinh" Float ["arcsinh"] api, libm::asinh, None, d(|b, x, _| { let s = b.sq(x)?; let t = b.plus(s, 1.0)?; b.un(U::Rsqrt, t) });
            /// Inverse hyperbolic cosine.
            Arccosh "arccosh" Float ["arccosh"] api, $crate::op_table::acosh, None, d(|b, x, _| { let s = b.sq(x)?; let t = b.plus(s, -1.0)?; b.un(U::Rsqrt, t) });
            /// Inverse hyperbolic tangent.
            Arctanh "arctanh" Float ["arctanh"] api, libm::atanh, None, d(|b, x, _| { let s = b.sq(x)?; let t = b.rsub(1.0, s)?; b.recip(t) });
            /// Degrees to radians.
            Deg2Rad "deg2rad" Float ["deg2rad", "radians"] api, |x: f64| x * (std::f64::consts::PI / 180.0), None, d(|b, _, _| Ok(b.c(std::f64::consts::PI / 180.0)));
            /// Radians to degrees.
            Rad2Deg "rad2deg" Float ["rad2deg", "degrees"] api, |x: f64| x * (180.0 / std::f64::consts::PI), None, d(|b, _, _| Ok(b.c(180.0 / std::f64::consts::PI)));
            /// The distance to the next float away from zero, signed like x (in x's dtype).
            Spacing "spacing" Float ["spacing"] api, $crate::op_table::spacing, None, ZERO;
            /// `1 / (1 + e^-x)`.
            Sigmoid "sigmoid" Float [] api, $crate::op_table::sigmoid, None, d(|b, _, y| { let t = b.rsub(1.0, y)?; b.mul(y, t) });
            /// Error function.
            Erf "erf" Float [] api, libm::erf, None, d(|b, x, _| erf(b, x, 1.0));
            /// Complementary error function.
            Erfc "erfc" Float [] api, libm::erfc, None, d(|b, x, _| erf(b, x, -1.0));
            /// `max(x, 0)`, NaN propagating.
            Relu "relu" Numeric [] api, |x: f64| if x > 0.0 || x.is_nan() { x } else { 0.0 }, Some(|i: i64| i.max(0)), d(|b, x, _| { let z = b.c(0.0); b.bin(B::Gt, x, z) });
            /// `x/2 (1 + erf(x / sqrt 2))`.
            Gelu "gelu" Float [] api, $crate::op_table::gelu, None, d(gelu);
            /// Ascend FastGelu: `x / (1 + e^(-1.702|x|)) e^(0.851 (x - |x|))`.
            FastGelu "fast_gelu" Float [] api, $crate::op_table::fast_gelu, None, d(|b, x, _| x_sigmoid(b, x, 1.702));
            /// FastGelu to the accuracy of a float16 result: chosen by the compiler where the
            /// float32 value is rounded to 16 bits at once.
            FastGeluHalf "fast_gelu_half" Float [] hidden, $crate::op_table::fast_gelu, None, d(|b, x, _| x_sigmoid(b, x, 1.702));
            /// `x sigmoid(x)`.
            Silu "silu" Float [] api, |x: f64| x * $crate::op_table::sigmoid(x), None, d(|b, x, _| x_sigmoid(b, x, 1.0));
            /// `max(x, 0) + log1p(e^-|x|)`.
            Softplus "softplus" Float [] api, $crate::op_table::softplus, None, d(|b, x, _| b.un(U::Sigmoid, x));
            /// Round toward -inf (identity on integers).
            Floor "floor" Rounding ["floor"] api, f64::floor, None, ZERO;
            /// Round toward +inf (identity on integers).
            Ceil "ceil" Rounding ["ceil"] api, f64::ceil, None, ZERO;
            /// Round toward zero (identity on integers).
            Trunc "trunc" Rounding ["trunc"] api, f64::trunc, None, ZERO;
            /// Round half to even (identity on integers: `np.round`).
            Round "round" Rounding [] hidden, f64::round_ties_even, None, ZERO;
            /// Round half to even in floats (integers become float64: `np.rint`).
            Rint "rint" Float ["rint"] hidden, f64::round_ties_even, None, ZERO;
            /// NaN test.
            IsNan "isnan" Classify ["isnan"] api, |x: f64| x.is_nan() as u8 as f64, None, NONE;
            /// Infinity test.
            IsInf "isinf" Classify ["isinf"] api, |x: f64| x.is_infinite() as u8 as f64, None, NONE;
            /// Neither NaN nor infinite.
            IsFinite "isfinite" Classify ["isfinite"] api, |x: f64| x.is_finite() as u8 as f64, None, NONE;
            /// The sign bit is set (true for -0.0 and negative NaN).
            SignBit "signbit" Classify ["signbit"] api, |x: f64| x.is_sign_negative() as u8 as f64, None, NONE;
        }
    };
}

/// Calls `$m! { rows }` with every binary op's row (see the module docs for the columns).
#[macro_export]
macro_rules! binary_op_table {
    ($m:ident) => {
        $m! {
            /// `a + b` (wrapping on integers).
            Add "add" Arith ["add"] commutative, |p: f64, q: f64| Some(p + q), |p: i64, q: i64| Some(p.wrapping_add(q)), p(|_, _, _, _| Ok((One, One)));
            /// `a - b` (wrapping on integers).
            Sub "sub" Arith ["subtract"] ordered, |p: f64, q: f64| Some(p - q), |p: i64, q: i64| Some(p.wrapping_sub(q)), p(|_, _, _, _| Ok((One, MinusOne)));
            /// `a * b` (wrapping on integers).
            Mul "mul" Arith ["multiply"] commutative, |p: f64, q: f64| Some(p * q), |p: i64, q: i64| Some(p.wrapping_mul(q)), p(|_, a, z, _| Ok((Node(z), Node(a))));
            /// True division (integers are cast to float first).
            Div "div" Arith ["divide", "true_divide"] ordered, |p: f64, q: f64| Some(p / q), |_p: i64, _q: i64| None, p(|b, _, z, y| { let one = b.c(1.0); let r = b.div(one, z)?; let q = b.div(y, z)?; Ok((Node(r), Node(b.un(U::Neg, q)?))) });
            /// `np.floor_divide` (integers: 0 when dividing by zero).
            FloorDiv "floordiv" Arith ["floor_divide"] ordered, |p: f64, q: f64| Some($crate::op_table::py_floordiv(p, q)), $crate::op_table::int_floordiv, ZERO;
            /// `np.remainder`: the sign follows the divisor (integers: 0 when dividing by zero).
            Mod "mod" Arith ["remainder"] ordered, |p: f64, q: f64| Some($crate::op_table::py_mod(p, q)), $crate::op_table::int_mod, p(|b, a, z, _| { let q = b.div(a, z)?; let f = b.un(U::Floor, q)?; Ok((One, Node(b.un(U::Neg, f)?))) });
            /// `np.power` (integers: wrapping; a negative exponent is not folded).
            Pow "pow" Arith ["power"] ordered, |p: f64, q: f64| Some(p.powf(q)), |p: i64, q: i64| (q >= 0).then(|| p.wrapping_pow(q.min(u32::MAX as i64) as u32)), p(pow);
            /// `np.minimum` (NaN propagating).
            Min "minimum" Arith ["minimum"] commutative, |p: f64, q: f64| Some(if p.is_nan() || q.is_nan() { f64::NAN } else { p.min(q) }), |p: i64, q: i64| Some(p.min(q)), p(|b, a, z, y| Ok((Node(chooser(b, a, z, y)?), Node(chooser(b, z, a, y)?))));
            /// `np.maximum` (NaN propagating).
            Max "maximum" Arith ["maximum"] commutative, |p: f64, q: f64| Some(if p.is_nan() || q.is_nan() { f64::NAN } else { p.max(q) }), |p: i64, q: i64| Some(p.max(q)), p(|b, a, z, y| Ok((Node(chooser(b, a, z, y)?), Node(chooser(b, z, a, y)?))));
            /// `np.fmod`: C remainder, the sign follows the dividend (integers: 0 when dividing by zero).
            Fmod "fmod" Arith ["fmod"] ordered, |p: f64, q: f64| Some(p % q), |p: i64, q: i64| Some(if q == 0 { 0 } else { p.wrapping_rem(q) }), p(|b, a, z, _| { let q = b.div(a, z)?; let f = b.un(U::Trunc, q)?; Ok((One, Node(b.un(U::Neg, f)?))) });
            /// `np.fmax`: the larger, ignoring NaN unless both are NaN.
            Fmax "fmax" Arith ["fmax"] commutative, |p: f64, q: f64| Some(if p > q || q.is_nan() { p } else { q }), |p: i64, q: i64| Some(p.max(q)), p(|b, a, z, y| Ok((Node(chooser(b, a, z, y)?), Node(chooser(b, z, a, y)?))));
            /// `np.fmin`: the smaller, ignoring NaN unless both are NaN.
            Fmin "fmin" Arith ["fmin"] commutative, |p: f64, q: f64| Some(if p < q || q.is_nan() { p } else { q }), |p: i64, q: i64| Some(p.min(q)), p(|b, a, z, y| Ok((Node(chooser(b, a, z, y)?), Node(chooser(b, z, a, y)?))));
            /// `sqrt(a^2 + b^2)` without undue overflow.
            Hypot "hypot" Float ["hypot"] commutative, |p: f64, q: f64| Some(p.hypot(q)), |_p: i64, _q: i64| None, p(|b, a, z, y| Ok((Node(b.div(a, y)?), Node(b.div(z, y)?))));
            /// The angle of the point (b, a): `atan(a / b)` in the right quadrant.
            Arctan2 "arctan2" Float ["arctan2"] ordered, |p: f64, q: f64| Some(p.atan2(q)), |_p: i64, _q: i64| None, p(arctan2);
            /// `|a|` with the sign of b.
            CopySign "copysign" Float ["copysign"] ordered, |p: f64, q: f64| Some(p.copysign(q)), |_p: i64, _q: i64| None, p(|b, a, z, _| { let one = b.c(1.0); let s = b.bin(B::CopySign, one, z)?; let sa = b.un(U::Sign, a)?; Ok((Node(b.mul(sa, s)?), Zero)) });
            /// The next float after a toward b (in the operands' dtype).
            NextAfter "nextafter" Float ["nextafter"] ordered, |p: f64, q: f64| Some($crate::op_table::nextafter(p, q)), |_p: i64, _q: i64| None, ZERO;
            /// `log(e^a + e^b)` without overflow.
            LogAddExp "logaddexp" Float ["logaddexp"] commutative, |p: f64, q: f64| Some($crate::op_table::logaddexp(p, q)), |_p: i64, _q: i64| None, p(|b, a, z, y| { let da = b.sub(a, y)?; let dz = b.sub(z, y)?; Ok((Node(b.un(U::Exp, da)?), Node(b.un(U::Exp, dz)?))) });
            /// `log2(2^a + 2^b)` without overflow.
            LogAddExp2 "logaddexp2" Float ["logaddexp2"] commutative, |p: f64, q: f64| Some($crate::op_table::logaddexp2(p, q)), |_p: i64, _q: i64| None, p(|b, a, z, y| { let da = b.sub(a, y)?; let dz = b.sub(z, y)?; Ok((Node(b.un(U::Exp2, da)?), Node(b.un(U::Exp2, dz)?))) });
            /// Step function: 0 below zero, b at zero, 1 above (NaN stays NaN).
            Heaviside "heaviside" Float ["heaviside"] ordered, |p: f64, q: f64| Some($crate::op_table::heaviside(p, q)), |_p: i64, _q: i64| None, ZERO;
            /// `a * 2^b`.
            Ldexp "ldexp" Float ["ldexp"] ordered, |p: f64, q: f64| Some($crate::op_table::ldexp(p, q)), |_p: i64, _q: i64| None, p(|b, _, z, _| Ok((Node(b.un(U::Exp2, z)?), Zero)));
            /// `a == b` (NaN compares unequal).
            Eq "eq" Compare ["equal"] commutative, |p: f64, q: f64| Some((p == q) as u8 as f64), |p: i64, q: i64| Some((p == q) as i64), NONE;
            /// `a != b`.
            Ne "ne" Compare ["not_equal"] commutative, |p: f64, q: f64| Some((p != q) as u8 as f64), |p: i64, q: i64| Some((p != q) as i64), NONE;
            /// `a < b`.
            Lt "lt" Compare ["less"] ordered, |p: f64, q: f64| Some((p < q) as u8 as f64), |p: i64, q: i64| Some((p < q) as i64), NONE;
            /// `a <= b`.
            Le "le" Compare ["less_equal"] ordered, |p: f64, q: f64| Some((p <= q) as u8 as f64), |p: i64, q: i64| Some((p <= q) as i64), NONE;
            /// `a > b`.
            Gt "gt" Compare ["greater"] ordered, |p: f64, q: f64| Some((p > q) as u8 as f64), |p: i64, q: i64| Some((p > q) as i64), NONE;
            /// `a >= b`.
            Ge "ge" Compare ["greater_equal"] ordered, |p: f64, q: f64| Some((p >= q) as u8 as f64), |p: i64, q: i64| Some((p >= q) as i64), NONE;
            /// `a & b` (logical on bool).
            And "and" Bitwise ["bitwise_and"] commutative, |_p: f64, _q: f64| None, |p: i64, q: i64| Some(p & q), NONE;
            /// `a | b` (logical on bool).
            Or "or" Bitwise ["bitwise_or"] commutative, |_p: f64, _q: f64| None, |p: i64, q: i64| Some(p | q), NONE;
            /// `a ^ b` (logical on bool).
            Xor "xor" Bitwise ["bitwise_xor"] commutative, |_p: f64, _q: f64| None, |p: i64, q: i64| Some(p ^ q), NONE;
            /// `a << b` (0 once b reaches the bit width or is negative).
            LeftShift "left_shift" Integer ["left_shift"] ordered, |_p: f64, _q: f64| None, |p: i64, q: i64| Some(if (0..64).contains(&q) { p << q } else { 0 }), NONE;
            /// `a >> b`, arithmetic (sign-filled once b reaches the bit width or is negative).
            RightShift "right_shift" Integer ["right_shift"] ordered, |_p: f64, _q: f64| None, |p: i64, q: i64| Some(p >> if (0..64).contains(&q) { q } else { 63 }), NONE;
            /// Greatest common divisor (non-negative).
            Gcd "gcd" Integer ["gcd"] commutative, |_p: f64, _q: f64| None, |p: i64, q: i64| Some($crate::op_table::gcd(p, q)), NONE;
            /// Least common multiple (non-negative).
            Lcm "lcm" Integer ["lcm"] commutative, |_p: f64, _q: f64| None, |p: i64, q: i64| Some($crate::op_table::lcm(p, q)), NONE;
        }
    };
}

/// Calls `$m! { rows }` with every reduction's row:
/// `Variant "name" Result identity;` where `Result` is a [`crate::op::ReduceResult`] (the
/// result dtype rule) and `identity` the value of an empty reduction (`None`: an error).
#[macro_export]
macro_rules! reduce_op_table {
    ($m:ident) => {
        $m! {
            /// Sum (bools and signed integers accumulate in int64, unsigned ones in uint64).
            Sum "sum" Widen Some(0);
            /// Product (bools and signed integers accumulate in int64, unsigned ones in uint64).
            Prod "prod" Widen Some(1);
            /// Largest value (NaN propagating).
            Max "max" Keep None;
            /// Smallest value (NaN propagating).
            Min "min" Keep None;
            /// Index of the first largest value.
            ArgMax "argmax" Index None;
            /// Index of the first smallest value.
            ArgMin "argmin" Index None;
            /// Any element true.
            Any "any" Bool Some(0);
            /// Every element true.
            All "all" Bool Some(1);
        }
    };
}

/// -1, 0 or 1; NaN stays NaN.
#[inline(always)]
pub fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x == 0.0 {
        0.0
    } else {
        x
    }
}

/// `acosh(x)`, NaN below 1 (where `libm::acosh` does not check the sign).
#[inline(always)]
pub fn acosh(x: f64) -> f64 {
    if x >= 1.0 {
        libm::acosh(x)
    } else {
        f64::NAN
    }
}

/// `1 / (1 + e^-x)`.
#[inline(always)]
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `x/2 erfc(-x / sqrt 2)`, correcting for the rounding of `x / sqrt 2`, which `erfc` would
/// otherwise amplify by `2 z^2` for large negative x.
#[inline(always)]
pub fn gelu(x: f64) -> f64 {
    if x == f64::INFINITY {
        return x;
    }
    const R_HI: f64 = std::f64::consts::FRAC_1_SQRT_2;
    // 1/sqrt 2 - R_HI.
    const R_LO: f64 = -4.833_646_656_726_457e-17;
    const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;
    let z = -x * R_HI;
    // Exact -x/sqrt 2 = z + dz.
    let dz = (-x).mul_add(R_HI, -z) + (-x) * R_LO;
    // erfc(z + dz) = erfc(z) - 2/sqrt(pi) e^(-z^2) dz + O(dz^2).
    let e = libm::erfc(z) - TWO_OVER_SQRT_PI * (-z * z).exp() * dz;
    0.5 * x * e
}

/// Ascend FastGelu in its cancellation-free form.
#[inline(always)]
pub fn fast_gelu(x: f64) -> f64 {
    let d = if x < 0.0 { 2.0 * x } else { 0.0 };
    x * (0.851 * d).exp() / (1.0 + (-1.702 * x.abs()).exp())
}

/// `max(x, 0) + log1p(e^-|x|)`, NaN propagating.
#[inline(always)]
pub fn softplus(x: f64) -> f64 {
    let m = if x > 0.0 || x.is_nan() { x } else { 0.0 };
    m + (-x.abs()).exp().ln_1p()
}

/// The distance from x to the next float64 away from zero, negative for negative x
/// (`np.spacing`).
pub fn spacing(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return f64::NAN;
    }
    let a = x.abs();
    let next = f64::from_bits(a.to_bits() + 1);
    // Zeros of either sign step up: NumPy's spacing(-0.0) is the smallest positive float.
    if x < 0.0 {
        a - next
    } else {
        next - a
    }
}

/// The next float64 after `a` in the direction of `b` (C `nextafter`).
pub fn nextafter(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return a + b;
    }
    if a == b {
        return b;
    }
    if a == 0.0 {
        return f64::from_bits(1).copysign(b);
    }
    let bits = a.to_bits();
    let up = (b > a) == (a > 0.0);
    f64::from_bits(if up { bits + 1 } else { bits - 1 })
}

/// `log(e^a + e^b)`, as NumPy computes it.
pub fn logaddexp(a: f64, b: f64) -> f64 {
    if a == b {
        return a + std::f64::consts::LN_2;
    }
    let d = a - b;
    if d > 0.0 {
        a + (-d).exp().ln_1p()
    } else if d <= 0.0 {
        b + d.exp().ln_1p()
    } else {
        d
    }
}

/// `log2(2^a + 2^b)`, as NumPy computes it.
pub fn logaddexp2(a: f64, b: f64) -> f64 {
    if a == b {
        return a + 1.0;
    }
    let d = a - b;
    let log2_1p = |v: f64| v.ln_1p() * std::f64::consts::LOG2_E;
    if d > 0.0 {
        a + log2_1p((-d).exp2())
    } else if d <= 0.0 {
        b + log2_1p(d.exp2())
    } else {
        d
    }
}

/// NumPy's `heaviside(x, h0)`.
pub fn heaviside(x: f64, h0: f64) -> f64 {
    if x < 0.0 {
        0.0
    } else if x > 0.0 {
        1.0
    } else if x == 0.0 {
        h0
    } else {
        x
    }
}

/// `x * 2^e` for an integral `e`, rounding once.
pub fn ldexp(x: f64, e: f64) -> f64 {
    libm::ldexp(x, e.clamp(-10_000.0, 10_000.0) as i32)
}

/// Greatest common divisor, non-negative (wrapping at `i64::MIN` like NumPy).
pub fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a as i64
}

/// Greatest common divisor of two uint64 values.
pub fn gcd_u64(a: u64, b: u64) -> u64 {
    let (mut a, mut b) = (a, b);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Least common multiple of two uint64 values (0 if either is 0; wrapping on overflow).
pub fn lcm_u64(a: u64, b: u64) -> u64 {
    a.checked_div(gcd_u64(a, b)).map_or(0, |q| q.wrapping_mul(b))
}

/// Least common multiple: `|a| / gcd * |b|` wrapping on overflow as NumPy computes it (0 if
/// either is 0).
pub fn lcm(a: i64, b: i64) -> i64 {
    let g = gcd(a, b);
    if g == 0 {
        0
    } else {
        a.wrapping_abs().wrapping_div(g).wrapping_mul(b.wrapping_abs())
    }
}

/// Python's float floor division (NumPy `floor_divide`).
pub fn py_floordiv(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f64.copysign(a / b)
    }
}

/// Python's float modulo (NumPy `remainder`): the sign follows the divisor.
pub fn py_mod(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        return f64::NAN;
    }
    let m = a % b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m + b
        } else {
            m
        }
    } else {
        0.0f64.copysign(b)
    }
}

/// Integer floor division, 0 when dividing by zero, wrapping at `MIN / -1`.
pub fn int_floordiv(p: i64, q: i64) -> Option<i64> {
    Some(if q == 0 { 0 } else { p.wrapping_div(q) - ((p.wrapping_rem(q) != 0 && (p < 0) != (q < 0)) as i64) })
}

/// Integer remainder with the divisor's sign, 0 when dividing by zero.
pub fn int_mod(p: i64, q: i64) -> Option<i64> {
    Some(match p.checked_rem(q) {
        None | Some(0) => 0,
        Some(r) if (r < 0) != (q < 0) => r + q,
        Some(r) => r,
    })
}
