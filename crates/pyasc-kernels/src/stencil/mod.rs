//! Stencil bodies as small register programs, evaluated over runs of contiguous cells.
//!
//! A [`Program`] is the traced body of a stencil: instructions over operands that read a field
//! at a constant linear offset from the cell being computed, a temporary register, or a
//! constant. [`eval_range`] evaluates it over a linear range of cells in chunks of [`CHUNK`]
//! elements: each instruction is one tight loop over a chunk, reading the fields in place (a
//! read at offset `d` is the source slice shifted by `d`, no copy) and keeping temporaries in
//! a chunk-sized scratch that stays in L1. Every operation rounds in the element type exactly as
//! NumPy's elementwise ufuncs do (no contraction into fused multiply-adds), so a cell's value
//! never depends on how the range was split.
//!
//! The loops are compiled once per ISA (AVX-512, AVX2, portable) and chosen at run time by
//! [`crate::isa::active`].

use crate::isa::{self, Isa};
use std::ops::{Add, Div, Mul, Neg, Sub};

#[cfg(target_arch = "x86_64")]
mod simd;
#[cfg(all(test, target_arch = "x86_64"))]
mod simd_tests;
pub mod sweep;
#[cfg(test)]
mod tests;
mod wave;

pub use pyasc_ir::library::stencil::{BinOp, Instr, Operand, Program, UnOp, MAX_SUM};

/// Cells per chunk: the temporaries of a chunk stay in L1.
pub const CHUNK: usize = 2048;

/// The element types a stencil program computes in.
pub trait StencilFloat:
    Copy
    + 'static
    + Send
    + Sync
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// The nearest value of this type (round to nearest even, as NumPy casts a Python float).
    fn from_f64(v: f64) -> Self;
    /// Square root, correctly rounded.
    fn sqrt(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Whether the value is NaN.
    fn is_nan(self) -> bool;
    /// The sum of [`Instr::Sum`] on AVX-512 (`crate::stencil::simd`); the portable loop where
    /// the type has no such kernel.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; every operand holds at least `out.len()` cells.
    #[inline(always)]
    unsafe fn sum_wide(s: &[&[Self]], neg: &[bool], post: Option<(BinOp, Self)>, out: &mut [Self]) {
        sum_loop(s, neg, post, out)
    }
}

macro_rules! stencil_float {
    ($t:ty) => {
        impl StencilFloat for $t {
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[cfg(target_arch = "x86_64")]
            #[inline(always)]
            unsafe fn sum_wide(s: &[&[Self]], neg: &[bool], post: Option<(BinOp, Self)>, out: &mut [Self]) {
                // SAFETY: the caller holds this function's contract.
                unsafe { crate::stencil::simd::sum::<$t>(s, neg, post, out) }
            }
        }
    };
}
stencil_float!(f32);
stencil_float!(f64);

/// A field as a kernel reads it: `data[i - base]` is the value of global cell `i`.
#[derive(Copy, Clone)]
pub struct Src<'a, T> {
    /// The cells held.
    pub data: &'a [T],
    /// Global linear index of `data[0]`.
    pub base: usize,
}

enum Val<'a, T> {
    Slice(&'a [T]),
    Scalar(T),
}

#[inline(always)]
fn min_nan<T: StencilFloat>(a: T, b: T) -> T {
    if a.is_nan() || a <= b {
        a
    } else if b.is_nan() || b < a {
        b
    } else {
        a
    }
}

#[inline(always)]
fn max_nan<T: StencilFloat>(a: T, b: T) -> T {
    if a.is_nan() || a >= b {
        a
    } else if b.is_nan() || b > a {
        b
    } else {
        a
    }
}

#[inline(always)]
fn apply_bin<T: StencilFloat>(op: BinOp, x: T, y: T) -> T {
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Min => min_nan(x, y),
        BinOp::Max => max_nan(x, y),
    }
}

#[inline(always)]
fn bin_loop<T: StencilFloat>(op: BinOp, a: &Val<T>, b: &Val<T>, out: &mut [T]) {
    macro_rules! each {
        ($f:expr) => {
            match (a, b) {
                (Val::Slice(x), Val::Slice(y)) => {
                    for ((o, &x), &y) in out.iter_mut().zip(x.iter()).zip(y.iter()) {
                        *o = $f(x, y);
                    }
                }
                (Val::Slice(x), Val::Scalar(y)) => {
                    for (o, &x) in out.iter_mut().zip(x.iter()) {
                        *o = $f(x, *y);
                    }
                }
                (Val::Scalar(x), Val::Slice(y)) => {
                    for (o, &y) in out.iter_mut().zip(y.iter()) {
                        *o = $f(*x, y);
                    }
                }
                (Val::Scalar(x), Val::Scalar(y)) => out.fill($f(*x, *y)),
            }
        };
    }
    match op {
        BinOp::Add => each!(|x: T, y: T| x + y),
        BinOp::Sub => each!(|x: T, y: T| x - y),
        BinOp::Mul => each!(|x: T, y: T| x * y),
        BinOp::Div => each!(|x: T, y: T| x / y),
        BinOp::Min => each!(|x: T, y: T| apply_bin(BinOp::Min, x, y)),
        BinOp::Max => each!(|x: T, y: T| apply_bin(BinOp::Max, x, y)),
    }
}

#[inline(always)]
fn un_loop<T: StencilFloat>(op: UnOp, a: &Val<T>, out: &mut [T]) {
    let f = |x: T| match op {
        UnOp::Neg => -x,
        UnOp::Abs => x.abs(),
        UnOp::Sqrt => x.sqrt(),
        UnOp::Copy => x,
    };
    match a {
        Val::Slice(x) => match op {
            UnOp::Neg => out.iter_mut().zip(x.iter()).for_each(|(o, &x)| *o = -x),
            UnOp::Abs => out.iter_mut().zip(x.iter()).for_each(|(o, &x)| *o = x.abs()),
            UnOp::Sqrt => out.iter_mut().zip(x.iter()).for_each(|(o, &x)| *o = x.sqrt()),
            UnOp::Copy => out.copy_from_slice(&x[..out.len()]),
        },
        Val::Scalar(x) => out.fill(f(*x)),
    }
}

/// `out = ((s0 ± s1) ± ...)`, then the post operation: one pass with the operand count fixed at
/// compile time so the sum stays in vector registers.
#[inline(always)]
fn sum_n<T: StencilFloat, const N: usize>(
    s: &[&[T]],
    sign: &[T; N],
    signed: bool,
    post: Option<(BinOp, T)>,
    out: &mut [T],
) {
    let len = out.len();
    let s: [&[T]; N] = std::array::from_fn(|j| &s[j][..len]);
    // Whole blocks of `BLOCK` cells with the trip count fixed at compile time, so each compiles
    // to straight vector code; the cells after the last whole block are computed by one more
    // block ending at `len` (cells computed twice get the same value: `out` is not an operand).
    // A loop over a run-time length instead leaves a scalar remainder of up to 64 cells, which
    // LLVM runs for whole multiples too: a third of a 256-cell row's time.
    const BLOCK: usize = 64;
    macro_rules! run {
        ($term:expr, $fin:expr) => {{
            let block = |at: usize, out: &mut [T]| {
                let o: &mut [T; BLOCK] = (&mut out[at..at + BLOCK]).try_into().expect("a whole block");
                let src: [&[T; BLOCK]; N] =
                    std::array::from_fn(|j| (&s[j][at..at + BLOCK]).try_into().expect("a whole block"));
                for k in 0..BLOCK {
                    let mut acc = src[0][k];
                    for j in 1..N {
                        acc = acc + $term(src[j][k], sign[j]);
                    }
                    o[k] = $fin(acc);
                }
            };
            if len < BLOCK {
                for k in 0..len {
                    let mut acc = s[0][k];
                    for j in 1..N {
                        acc = acc + $term(s[j][k], sign[j]);
                    }
                    out[k] = $fin(acc);
                }
            } else {
                let mut at = 0;
                while at + BLOCK <= len {
                    block(at, out);
                    at += BLOCK;
                }
                if at < len {
                    block(len - BLOCK, out);
                }
            }
        }};
    }
    let plain = |x: T, _: T| x;
    let times = |x: T, g: T| x * g;
    match (signed, post) {
        (false, None) => run!(plain, |a: T| a),
        (false, Some((BinOp::Div, c))) => run!(plain, |a: T| a / c),
        (false, Some((_, c))) => run!(plain, |a: T| a * c),
        (true, None) => run!(times, |a: T| a),
        (true, Some((BinOp::Div, c))) => run!(times, |a: T| a / c),
        (true, Some((_, c))) => run!(times, |a: T| a * c),
    }
}

/// One [`Instr::Sum`] over whole operands on the fastest kernel this CPU has: the path of a
/// program that is a single sum, without the instruction loop of [`eval_range`].
pub(crate) fn sum_run<T: StencilFloat>(s: &[&[T]], neg: &[bool], post: Option<(BinOp, T)>, out: &mut [T]) {
    match isa::active() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `active` only reports ISAs this CPU supports; each operand holds `out.len()`
        // cells (slices are checked by the caller's indexing).
        Isa::Avx512 => unsafe { T::sum_wide(s, neg, post, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2Fma => unsafe { sum_avx2(s, neg, post, out) },
        _ => sum_loop(s, neg, post, out),
    }
}

/// [`sum_loop`] compiled for AVX2, as [`eval_range`] runs it on such CPUs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_avx2<T: StencilFloat>(s: &[&[T]], neg: &[bool], post: Option<(BinOp, T)>, out: &mut [T]) {
    sum_loop(s, neg, post, out)
}

#[inline(always)]
pub(crate) fn sum_loop<T: StencilFloat>(s: &[&[T]], neg: &[bool], post: Option<(BinOp, T)>, out: &mut [T]) {
    let one = T::from_f64(1.0);
    let mut sign = [one; MAX_SUM];
    for (g, &n) in sign[1..].iter_mut().zip(neg) {
        if n {
            *g = -one;
        }
    }
    let signed = neg.iter().any(|&n| n);
    macro_rules! arity {
        ($($n:literal),*) => {
            match s.len() {
                $($n => {
                    let sg: [T; $n] = std::array::from_fn(|j| sign[j]);
                    sum_n::<T, $n>(s, &sg, signed, post, out)
                })*
                n => unreachable!("a sum of {n} operands"),
            }
        };
    }
    arity!(2, 3, 4, 5, 6, 7, 8);
}

/// Per-thread temporaries of [`eval_range`]: `tmps` registers of [`CHUNK`] cells.
pub struct Scratch<T> {
    regs: Vec<Vec<T>>,
}

impl<T: StencilFloat> Scratch<T> {
    /// Registers for `prog`.
    pub fn new(prog: &Program) -> Self {
        Scratch { regs: (0..prog.tmps).map(|_| vec![T::from_f64(0.0); CHUNK]).collect() }
    }
}

/// `WIDE`: sums run on [`StencilFloat::sum_wide`] (the caller has checked for AVX-512).
#[inline(always)]
fn eval_impl<T: StencilFloat, const WIDE: bool>(
    prog: &Program,
    srcs: &[Src<T>],
    dst: &mut [T],
    dst_base: usize,
    start: usize,
    end: usize,
    scratch: &mut Scratch<T>,
) {
    let mut c = start;
    while c < end {
        let len = CHUNK.min(end - c);
        for ins in &prog.instrs {
            let dest = match ins {
                Instr::Bin { dest, .. } | Instr::Un { dest, .. } | Instr::Sum { dest, .. } => *dest,
            };
            let mut out_reg = dest.map(|t| std::mem::take(&mut scratch.regs[t]));
            {
                let regs = &scratch.regs;
                let val = |op: Operand| -> Val<T> {
                    match op {
                        Operand::Read { field, offset } => {
                            let s = &srcs[field];
                            let i = (c as isize + offset) as usize - s.base;
                            Val::Slice(&s.data[i..i + len])
                        }
                        Operand::Tmp(t) => Val::Slice(&regs[t][..len]),
                        Operand::Const(v) => Val::Scalar(T::from_f64(v)),
                    }
                };
                let out: &mut [T] = match out_reg.as_mut() {
                    Some(r) => &mut r[..len],
                    None => &mut dst[c - dst_base..c - dst_base + len],
                };
                match ins {
                    Instr::Bin { op, a, b, .. } => bin_loop(*op, &val(*a), &val(*b), out),
                    Instr::Un { op, a, .. } => un_loop(*op, &val(*a), out),
                    Instr::Sum { ops, neg, post, .. } => {
                        let mut slices: [&[T]; MAX_SUM] = [&[]; MAX_SUM];
                        for (s, o) in slices.iter_mut().zip(ops) {
                            if let Val::Slice(x) = val(*o) {
                                *s = x;
                            }
                        }
                        let post = post.map(|(op, v)| (op, T::from_f64(v)));
                        if WIDE {
                            // SAFETY: WIDE is only set on AVX-512; each slice holds `len` cells.
                            unsafe { T::sum_wide(&slices[..ops.len()], neg, post, out) }
                        } else {
                            sum_loop(&slices[..ops.len()], neg, post, out);
                        }
                    }
                }
            }
            if let (Some(t), Some(r)) = (dest, out_reg) {
                scratch.regs[t] = r;
            }
        }
        c += len;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx2")]
unsafe fn eval_avx512<T: StencilFloat>(
    prog: &Program,
    srcs: &[Src<T>],
    dst: &mut [T],
    dst_base: usize,
    start: usize,
    end: usize,
    scratch: &mut Scratch<T>,
) {
    eval_impl::<T, true>(prog, srcs, dst, dst_base, start, end, scratch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn eval_avx2<T: StencilFloat>(
    prog: &Program,
    srcs: &[Src<T>],
    dst: &mut [T],
    dst_base: usize,
    start: usize,
    end: usize,
    scratch: &mut Scratch<T>,
) {
    eval_impl::<T, false>(prog, srcs, dst, dst_base, start, end, scratch)
}

/// Evaluates `prog` for global cells `start..end`, writing `dst[i - dst_base]`.
///
/// Panics if a read falls outside its source's slice (the caller sizes sources by the
/// program's [`Program::offset_range`]).
pub fn eval_range<T: StencilFloat>(
    prog: &Program,
    srcs: &[Src<T>],
    dst: &mut [T],
    dst_base: usize,
    start: usize,
    end: usize,
    scratch: &mut Scratch<T>,
) {
    match isa::active() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `active` only reports ISAs this CPU supports.
        Isa::Avx512 => unsafe { eval_avx512(prog, srcs, dst, dst_base, start, end, scratch) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2Fma => unsafe { eval_avx2(prog, srcs, dst, dst_base, start, end, scratch) },
        _ => eval_impl::<T, false>(prog, srcs, dst, dst_base, start, end, scratch),
    }
}
