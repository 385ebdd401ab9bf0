//! Fused kernels: two or more operations in one pass over a row or tile, each rounded as if run
//! alone, so the result is bit-identical to the separate passes while the intermediates never
//! leave registers (or an L1-sized stack block).
//!
//! * [`chain`]: `y = op2(op1(a, b), c)`, two float arithmetic operations.
//! * [`scale_shift`]: a normalisation's epilogue, `y = op1(a, b) * scale + shift`.
//! * [`select_cmp`]: a comparison and the select that reads it, `y = cmp(a, b) ? t : f`.
//! * [`reduce_map`]: `sum(map(a, b))` of one row without storing `map(a, b)`.
//! * [`scan_map`]: float32 running sums with scalar arithmetic before and after,
//!   `post(cumsum(pre(x)))`.
//! * [`scaled_extreme`]: the row maximum (or minimum) of float32 products and its first
//!   position, without writing the products.
//!
//! Each module is also reachable at the crate's root (`pyasc_kernels::chain`).

pub mod chain;
pub mod reduce_map;
pub mod scale_shift;
pub mod scaled_extreme;
pub mod scan_map;
pub mod select_cmp;
