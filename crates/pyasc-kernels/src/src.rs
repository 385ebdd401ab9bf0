//! Operands ([`Src`]) and the loop helpers that apply a per-element function over them.
//!
//! The helpers are `#[inline(always)]` so each call site becomes one straight loop inside the
//! ISA-specific kernel copy, which LLVM vectorises. Two scalar operands fill the output.

/// An operand: a whole tile or one value broadcast over it.
#[derive(Copy, Clone, Debug)]
pub enum Src<'a, T> {
    /// One value per output element.
    Slice(&'a [T]),
    /// One value broadcast over the whole output.
    Scalar(T),
}

#[inline(always)]
fn check<T>(s: &Src<'_, T>, n: usize) {
    if let Src::Slice(s) = s {
        assert_eq!(s.len(), n, "operand length differs from output length");
    }
}

/// `y[i] = f(x[i])`.
#[inline(always)]
pub(crate) fn map1<A: Copy, O>(x: &[A], y: &mut [O], f: impl Fn(A) -> O) {
    assert_eq!(x.len(), y.len(), "input length differs from output length");
    for (o, &a) in y.iter_mut().zip(x) {
        *o = f(a);
    }
}

/// `y[i] = f(a[i], b[i])` with either operand possibly broadcast.
#[inline(always)]
pub(crate) fn map2<A: Copy, B: Copy, O: Copy>(a: Src<'_, A>, b: Src<'_, B>, y: &mut [O], f: impl Fn(A, B) -> O) {
    check(&a, y.len());
    check(&b, y.len());
    match (a, b) {
        (Src::Slice(a), Src::Slice(b)) => {
            for ((o, &a), &b) in y.iter_mut().zip(a).zip(b) {
                *o = f(a, b);
            }
        }
        (Src::Slice(a), Src::Scalar(b)) => {
            for (o, &a) in y.iter_mut().zip(a) {
                *o = f(a, b);
            }
        }
        (Src::Scalar(a), Src::Slice(b)) => {
            for (o, &b) in y.iter_mut().zip(b) {
                *o = f(a, b);
            }
        }
        (Src::Scalar(a), Src::Scalar(b)) => y.fill(f(a, b)),
    }
}

/// `y[i] = f(c[i], a[i], b[i])` with any operand possibly broadcast.
#[inline(always)]
pub(crate) fn map3<C: Copy, A: Copy, B: Copy, O: Copy>(
    c: Src<'_, C>,
    a: Src<'_, A>,
    b: Src<'_, B>,
    y: &mut [O],
    f: impl Fn(C, A, B) -> O,
) {
    match c {
        Src::Scalar(c) => map2(a, b, y, |a, b| f(c, a, b)),
        Src::Slice(c) => {
            check(&a, y.len());
            check(&b, y.len());
            assert_eq!(c.len(), y.len(), "operand length differs from output length");
            match (a, b) {
                (Src::Slice(a), Src::Slice(b)) => {
                    for (((o, &c), &a), &b) in y.iter_mut().zip(c).zip(a).zip(b) {
                        *o = f(c, a, b);
                    }
                }
                (Src::Slice(a), Src::Scalar(b)) => {
                    for ((o, &c), &a) in y.iter_mut().zip(c).zip(a) {
                        *o = f(c, a, b);
                    }
                }
                (Src::Scalar(a), Src::Slice(b)) => {
                    for ((o, &c), &b) in y.iter_mut().zip(c).zip(b) {
                        *o = f(c, a, b);
                    }
                }
                (Src::Scalar(a), Src::Scalar(b)) => {
                    for (o, &c) in y.iter_mut().zip(c) {
                        *o = f(c, a, b);
                    }
                }
            }
        }
    }
}
