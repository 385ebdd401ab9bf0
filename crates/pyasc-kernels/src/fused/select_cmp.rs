//! A comparison and the select that reads it in one pass: `y = cmp(a, b) ? t : f`.
//!
//! The condition is computed for a block of [`BLOCK`] elements into a stack buffer that stays
//! in L1, then the select runs over the block; the condition never makes a trip through a tile
//! register, and each half is the same vector loop as the unfused compare and select, so the
//! result is theirs exactly (NaN compares unequal, as IEEE 754 and NumPy have it).

use crate::dispatch::{dispatch, Kernel, Simd};
use crate::element::Element;
use crate::src::{map3, Src};
use pyasc_ir::op::BinaryOp;

/// Elements per block: the condition bytes of one block.
const BLOCK: usize = 512;

struct SelectCmpK<'a, T> {
    cmp: BinaryOp,
    a: Src<'a, T>,
    b: Src<'a, T>,
    t: Src<'a, T>,
    f: Src<'a, T>,
    y: &'a mut [T],
}

/// The part `at..at + len` of an operand.
#[inline(always)]
fn part<T: Copy>(s: Src<'_, T>, at: usize, len: usize) -> Src<'_, T> {
    match s {
        Src::Slice(x) => Src::Slice(&x[at..at + len]),
        scalar => scalar,
    }
}

impl<T: Element> Kernel for SelectCmpK<'_, T> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let mut cond = [0u8; BLOCK];
        let n = self.y.len();
        let mut at = 0;
        while at < n {
            let len = BLOCK.min(n - at);
            let (a, b) = (part(self.a, at, len), part(self.b, at, len));
            let c = &mut cond[..len];
            crate::binary::compare_loop(self.cmp, a, b, c);
            let (t, f) = (part(self.t, at, len), part(self.f, at, len));
            map3(Src::Slice(&cond[..len]), t, f, &mut self.y[at..at + len], |c, t, f| if c != 0 { t } else { f });
            at += len;
        }
    }
}

/// `y = if cmp(a, b) { t } else { f }` elementwise; `cmp` is a comparison (eq, ne, lt, le,
/// gt, ge). Any operand may be a broadcast scalar.
pub fn select_cmp<T: Element>(cmp: BinaryOp, a: Src<'_, T>, b: Src<'_, T>, t: Src<'_, T>, f: Src<'_, T>, y: &mut [T]) {
    assert!(cmp.is_compare(), "{} is not a comparison", cmp.name());
    dispatch(SelectCmpK { cmp, a, b, t, f, y });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa;

    /// The unfused compare and select.
    fn unfused(
        cmp: BinaryOp,
        a: Src<'_, f32>,
        b: Src<'_, f32>,
        t: Src<'_, f32>,
        f: Src<'_, f32>,
        n: usize,
    ) -> Vec<f32> {
        let mut c = vec![0u8; n];
        crate::binary::compare(cmp, a, b, &mut c);
        let mut y = vec![0.0f32; n];
        crate::select(Src::Slice(&c), t, f, &mut y);
        y
    }

    #[test]
    fn fused_compare_select_equals_the_two_passes_on_every_isa() {
        // Lengths around the block size; NaN, infinities and signed zeros among the values.
        let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1.0, -1.0];
        for n in [0, 1, 7, 511, 512, 513, 1500] {
            let a: Vec<f32> =
                (0..n).map(|i| if i % 11 == 3 { special[i % 7] } else { (i as f32 * 0.37).sin() }).collect();
            let b: Vec<f32> =
                (0..n).map(|i| if i % 13 == 5 { special[i % 7] } else { (i as f32 * 0.11).cos() }).collect();
            let t: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let f: Vec<f32> = (0..n).map(|i| -(i as f32) - 0.5).collect();
            isa::each_isa(|isa| {
                for cmp in [BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge] {
                    for (sa, sb, st, sf) in [
                        (Src::Slice(&a[..]), Src::Slice(&b[..]), Src::Slice(&t[..]), Src::Slice(&f[..])),
                        (Src::Slice(&a[..]), Src::Scalar(0.25), Src::Slice(&t[..]), Src::Scalar(9.0)),
                        (Src::Scalar(0.0), Src::Slice(&b[..]), Src::Scalar(f32::NAN), Src::Slice(&f[..])),
                    ] {
                        let mut y = vec![0.0f32; n];
                        select_cmp(cmp, sa, sb, st, sf, &mut y);
                        let want = unfused(cmp, sa, sb, st, sf, n);
                        assert!(y.iter().zip(&want).all(|(p, q)| p.to_bits() == q.to_bits()), "{cmp:?} {isa:?} n={n}");
                        // And against a plain reference.
                        for i in 0..n {
                            let get = |s: Src<'_, f32>| match s {
                                Src::Slice(x) => x[i],
                                Src::Scalar(v) => v,
                            };
                            let (x, z) = (get(sa), get(sb));
                            let c = match cmp {
                                BinaryOp::Eq => x == z,
                                BinaryOp::Ne => x != z,
                                BinaryOp::Lt => x < z,
                                BinaryOp::Le => x <= z,
                                BinaryOp::Gt => x > z,
                                _ => x >= z,
                            };
                            let r = if c { get(st) } else { get(sf) };
                            assert_eq!(y[i].to_bits(), r.to_bits());
                        }
                    }
                }
            });
        }
    }
}
