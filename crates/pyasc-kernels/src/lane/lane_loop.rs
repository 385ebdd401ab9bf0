//! Mask loops run strip by strip: a vectorized operator's `while` body (lane-wise
//! instructions only) repeated over [`STRIP`] lanes until none of them runs, then the next
//! strip.
//!
//! The tile VM runs such a loop one instruction at a time over the whole tile (512 lanes):
//! every instruction streams its operands through the L2 cache, and a tile keeps looping while
//! any of its lanes does. Here the body is decoded once into [`LaneOp`]s, the loop runs inside
//! one ISA-specific function ([`crate::dispatch`]), and each instruction works on [`STRIP`]
//! lanes whose registers stay in the L1 cache for all the strip's iterations; a strip stops as soon
//! as its own lanes are done. Every operation rounds as the tile kernels do (IEEE arithmetic,
//! each operation of a chain rounded alone, wrapping integers, NaN compares false except
//! `ne`), so results are bit for bit those of the tile VM. On CPUs with AVX-512 the same decoded
//! program is usually assembled instead ([`crate::lane_jit`]); this loop is the path for lower
//! ISAs and for programs the assembler declines.

use crate::dispatch::{dispatch, Kernel, Simd};
use pyasc_ir::op::{BinaryOp, UnaryOp};
use pyasc_ir::tile::{Instr, Reg};
use pyasc_ir::DType;

/// Lanes per strip. On a 2048 x 2048 float64 Mandelbrot grid (AVX-512, two cores) 128 lanes
/// ran 100-115 ms against 125-130 ms for 64 and 130 for 32; 256 lanes (the whole strip's
/// loops unrolled) ran 600 ms. Each helper reads [`W`] lanes at a time: 8 and 32 were 1.8x
/// and 3.5x slower than 16.
pub const STRIP: usize = 128;

/// Iterations of one strip between two calls of the caller's poll.
const POLL_TURNS: u32 = 64;

/// Element types the strip loop computes in.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// float32.
    F32,
    /// float64.
    F64,
    /// int32 (wrapping).
    I32,
    /// int64 (wrapping).
    I64,
    /// bool, one byte holding 0 or 1.
    Bool,
}

impl Ty {
    fn of(d: DType) -> Option<Ty> {
        Some(match d {
            DType::F32 => Ty::F32,
            DType::F64 => Ty::F64,
            DType::I32 => Ty::I32,
            DType::I64 => Ty::I64,
            DType::Bool => Ty::Bool,
            _ => return None,
        })
    }

    fn float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }
}

/// Two-operand arithmetic.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Arith {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b` (floats only).
    Div,
}

impl Arith {
    fn of(op: BinaryOp, ty: Ty) -> Option<Arith> {
        Some(match op {
            BinaryOp::Add => Arith::Add,
            BinaryOp::Sub => Arith::Sub,
            BinaryOp::Mul => Arith::Mul,
            BinaryOp::Div if ty.float() => Arith::Div,
            _ => return None,
        })
    }
}

/// Comparisons (NaN: false, except `Ne`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// `a < b`.
    Lt,
    /// `a <= b`.
    Le,
    /// `a > b`.
    Gt,
    /// `a >= b`.
    Ge,
    /// `a == b`.
    Eq,
    /// `a != b`.
    Ne,
}

impl Cmp {
    fn of(op: BinaryOp) -> Option<Cmp> {
        Some(match op {
            BinaryOp::Lt => Cmp::Lt,
            BinaryOp::Le => Cmp::Le,
            BinaryOp::Gt => Cmp::Gt,
            BinaryOp::Ge => Cmp::Ge,
            BinaryOp::Eq => Cmp::Eq,
            BinaryOp::Ne => Cmp::Ne,
            _ => return None,
        })
    }
}

/// One-operand functions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Un {
    /// `-x` (integers wrap).
    Neg,
    /// `|x|` (floats).
    Abs,
    /// `x * x` (floats).
    Square,
    /// Correctly rounded square root (floats).
    Sqrt,
    /// Logical not of a bool.
    Not,
}

/// One decoded instruction. Fields: `ty` the element type, `op` the operation, `d` the
/// destination register and `a`, `b`, `c`, `t`, `f` the operand registers (by number).
#[allow(missing_docs)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LaneOp {
    /// `d = a op b`, all of type `ty`.
    Arith { ty: Ty, op: Arith, d: u16, a: u16, b: u16 },
    /// `d = op1(a, b)` then `op2` with `c` (`c` on the left when `swap`), floats.
    Chain { ty: Ty, op1: Arith, op2: Arith, swap: bool, d: u16, a: u16, b: u16, c: u16 },
    /// `d = cmp(a, b)` into a bool.
    Cmp { ty: Ty, op: Cmp, d: u16, a: u16, b: u16 },
    /// `d = cmp(a, b) ? t : f`.
    SelectCmp { ty: Ty, op: Cmp, d: u16, a: u16, b: u16, t: u16, f: u16 },
    /// Bitwise `and`, `or` or `xor` of bools.
    Logic { op: BinaryOp, d: u16, a: u16, b: u16 },
    /// `d = op(a)`.
    Unary { ty: Ty, op: Un, d: u16, a: u16 },
    /// `d = c ? a : b` over elements of `width` bytes.
    Select { width: u8, d: u16, c: u16, a: u16, b: u16 },
    /// `d = a as to`.
    Cast { from: Ty, to: Ty, d: u16, a: u16 },
    /// `d = a` over elements of `width` bytes.
    Copy { width: u8, d: u16, a: u16 },
}

/// A mask loop's body decoded for the strip loop.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LaneProgram {
    /// The instructions, in order.
    pub ops: Vec<LaneOp>,
    /// The bool register the loop tests.
    pub cond: u16,
    /// The body runs exactly once on every lane and `cond` is not read: straight-line
    /// elementwise code, every register kept in a machine register from load to store.
    pub once: bool,
}

impl LaneProgram {
    /// Decodes `body` (the instructions of a mask loop testing `cond`), `dtype` giving each
    /// register's element type; `None` when an instruction has no strip form (the caller
    /// then runs the loop on the tile VM).
    pub fn compile(body: &[Instr], cond: Reg, dtype: impl Fn(Reg) -> DType) -> Option<LaneProgram> {
        let ops = decode(body, &dtype)?;
        (Ty::of(dtype(cond))? == Ty::Bool).then_some(LaneProgram { ops, cond: cond.0, once: false })
    }

    /// Decodes straight-line `body` to run once on every lane (see [`LaneProgram::once`]);
    /// `None` when an instruction has no strip form.
    pub fn straight(body: &[Instr], dtype: impl Fn(Reg) -> DType) -> Option<LaneProgram> {
        Some(LaneProgram { ops: decode(body, &dtype)?, cond: 0, once: true })
    }
}

/// The strip form of each instruction of `body`; `None` when one has none.
fn decode(body: &[Instr], dtype: &impl Fn(Reg) -> DType) -> Option<Vec<LaneOp>> {
    let ty = |r: Reg| Ty::of(dtype(r));
    let same = |rs: &[Reg]| -> Option<Ty> {
        let t = ty(rs[0])?;
        rs.iter().all(|&r| ty(r) == Some(t)).then_some(t)
    };
    let width = |t: Ty| match t {
        Ty::Bool => 1u8,
        Ty::F32 | Ty::I32 => 4,
        Ty::F64 | Ty::I64 => 8,
    };
    let mut ops = Vec::with_capacity(body.len());
    for ins in body {
        ops.push(match *ins {
            Instr::Binary { op, dst, a, b } => {
                let t = same(&[a, b])?;
                if let Some(c) = Cmp::of(op) {
                    (t != Ty::Bool && ty(dst)? == Ty::Bool).then_some(())?;
                    LaneOp::Cmp { ty: t, op: c, d: dst.0, a: a.0, b: b.0 }
                } else if matches!(op, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor) {
                    (t == Ty::Bool && ty(dst)? == Ty::Bool).then_some(())?;
                    LaneOp::Logic { op, d: dst.0, a: a.0, b: b.0 }
                } else {
                    (t != Ty::Bool && ty(dst)? == t).then_some(())?;
                    LaneOp::Arith { ty: t, op: Arith::of(op, t)?, d: dst.0, a: a.0, b: b.0 }
                }
            }
            Instr::Chain { op1, op2, swap, dst, a, b, c } => {
                let t = same(&[a, b, c, dst])?;
                t.float().then_some(())?;
                let (o1, o2) = (Arith::of(op1, t)?, Arith::of(op2, t)?);
                (o1 != Arith::Div && o2 != Arith::Div).then_some(())?;
                LaneOp::Chain { ty: t, op1: o1, op2: o2, swap, d: dst.0, a: a.0, b: b.0, c: c.0 }
            }
            Instr::SelectCmp { cmp, dst, a, b, t, f } => {
                let tv = same(&[a, b, t, f, dst])?;
                (tv != Ty::Bool).then_some(())?;
                LaneOp::SelectCmp { ty: tv, op: Cmp::of(cmp)?, d: dst.0, a: a.0, b: b.0, t: t.0, f: f.0 }
            }
            Instr::Unary { op, dst, src } => {
                let t = same(&[src, dst])?;
                let u = match (op, t) {
                    (UnaryOp::Not, Ty::Bool) => Un::Not,
                    (UnaryOp::Neg, Ty::F32 | Ty::F64 | Ty::I32 | Ty::I64) => Un::Neg,
                    (UnaryOp::Abs, Ty::F32 | Ty::F64) => Un::Abs,
                    (UnaryOp::Square, Ty::F32 | Ty::F64) => Un::Square,
                    (UnaryOp::Sqrt, Ty::F32 | Ty::F64) => Un::Sqrt,
                    _ => return None,
                };
                LaneOp::Unary { ty: t, op: u, d: dst.0, a: src.0 }
            }
            Instr::Select { dst, cond, a, b } => {
                let t = same(&[a, b, dst])?;
                (ty(cond)? == Ty::Bool).then_some(())?;
                LaneOp::Select { width: width(t), d: dst.0, c: cond.0, a: a.0, b: b.0 }
            }
            Instr::Copy { dst, src } => LaneOp::Copy { width: width(same(&[src, dst])?), d: dst.0, a: src.0 },
            Instr::Cast { dst, src } => {
                let (from, to) = (ty(src)?, ty(dst)?);
                let ok = matches!(
                    (from, to),
                    (Ty::I64 | Ty::I32 | Ty::F32 | Ty::Bool, Ty::F64)
                        | (Ty::I32 | Ty::Bool | Ty::F64, Ty::F32)
                        | (Ty::I32 | Ty::Bool, Ty::I64)
                        | (Ty::Bool, Ty::I32)
                );
                ok.then_some(())?;
                LaneOp::Cast { from, to, d: dst.0, a: src.0 }
            }
            _ => return None,
        });
    }
    Some(ops)
}

/// Where register `r` lives: its lane 0 and the bytes from one lane to the next (0 for a
/// value broadcast from one strip-long buffer).
#[derive(Copy, Clone, Debug)]
pub struct LaneReg {
    /// Address of lane 0.
    pub ptr: *mut u8,
    /// Bytes per lane; 0 when every strip reads the same buffer.
    pub step: usize,
}

/// Runs `prog`'s loop over `lanes` lanes: each strip of [`STRIP`] lanes repeats the body
/// while its condition holds on any of its lanes. `poll` runs every few dozen iterations
/// and stops the loop when it returns true (the result is then true).
///
/// # Safety
/// Every register the program names must be valid for reading and writing `lanes` lanes at
/// its step (a step-0 register: [`STRIP`] lanes), with the element type the program was
/// compiled for; registers must not overlap.
pub unsafe fn run(prog: &LaneProgram, regs: &[LaneReg], lanes: usize, poll: &mut dyn FnMut() -> bool) -> bool {
    dispatch(Strips { prog, regs, lanes, poll })
}

struct Strips<'a, 'p> {
    prog: &'a LaneProgram,
    regs: &'a [LaneReg],
    lanes: usize,
    poll: &'a mut (dyn FnMut() -> bool + 'p),
}

impl Kernel for Strips<'_, '_> {
    type Out = bool;
    #[inline(always)]
    fn run<S: Simd>(self) -> bool {
        let mut cur: Vec<*mut u8> = self.regs.iter().map(|r| r.ptr).collect();
        let cond = self.prog.cond as usize;
        let mut s0 = 0;
        while s0 < self.lanes {
            let n = (self.lanes - s0).min(STRIP);
            for (c, r) in cur.iter_mut().zip(self.regs) {
                *c = r.ptr.wrapping_add(s0 * r.step);
            }
            let mut turns = 0u32;
            // A run-once program takes the loop's single turn (one inlined copy of the body).
            // SAFETY: the condition register holds `n` bools from this strip's lane 0.
            while if self.prog.once { turns == 0 } else { unsafe { any(cur[cond], n) } } {
                // SAFETY: every register holds this strip's `n` lanes (the caller's contract).
                unsafe {
                    if n == STRIP {
                        body(&self.prog.ops, &cur, STRIP);
                    } else {
                        body(&self.prog.ops, &cur, n);
                    }
                }
                turns += 1;
                if turns.is_multiple_of(POLL_TURNS) && (self.poll)() {
                    return true;
                }
            }
            s0 += n;
        }
        false
    }
}

/// True when any of the `n` bools at `p` is set.
///
/// # Safety
/// `p` is valid for `n` bytes.
#[inline(always)]
unsafe fn any(p: *const u8, n: usize) -> bool {
    // SAFETY: per the contract above.
    unsafe { std::slice::from_raw_parts(p, n) }.iter().fold(0u8, |acc, &v| acc | v) != 0
}

/// Runs every instruction once over `n` lanes.
///
/// # Safety
/// As for [`run`], for the current strip.
#[inline(always)]
unsafe fn body(ops: &[LaneOp], cur: &[*mut u8], n: usize) {
    for op in ops {
        // SAFETY: per the contract above.
        unsafe { step(op, cur, n) };
    }
}

/// Lanes each helper reads into locals before it writes any: an instruction may write one of
/// its own operands (a register updated in place), and whole blocks read first keep its
/// loop free of the overlap checks that would otherwise send LLVM to scalar code.
const W: usize = 16;

/// `W` lanes of `T` from `p + i`.
///
/// # Safety
/// `p` is valid for reading lanes `i..i + W`.
#[inline(always)]
unsafe fn block<T: Copy>(p: *const T, i: usize) -> [T; W] {
    // SAFETY: per the contract above.
    unsafe { (p.add(i) as *const [T; W]).read_unaligned() }
}

/// Applies `f` lane by lane: `d[i] = f(a[i], b[i])` (the destination may be an operand).
///
/// # Safety
/// The three registers hold `n` lanes of their types.
#[inline(always)]
unsafe fn map2<A: Copy, D>(cur: &[*mut u8], d: u16, a: u16, b: u16, n: usize, f: impl Fn(A, A) -> D) {
    if a == b {
        // `x * x` and the like: one load a lane instead of two.
        // SAFETY: per the contract above.
        return unsafe { map1(cur, d, a, n, |x: A| f(x, x)) };
    }
    let (pa, pb, pd) = (cur[a as usize] as *const A, cur[b as usize] as *const A, cur[d as usize] as *mut D);
    let mut i = 0;
    // SAFETY: per the contract above; every block is read before it is written.
    unsafe {
        while i + W <= n {
            let (x, y) = (block(pa, i), block(pb, i));
            (pd.add(i) as *mut [D; W]).write_unaligned(std::array::from_fn(|k| f(x[k], y[k])));
            i += W;
        }
        for i in i..n {
            pd.add(i).write(f(pa.add(i).read(), pb.add(i).read()));
        }
    }
}

/// `d[i] = f(a[i])`.
///
/// # Safety
/// As for [`map2`].
#[inline(always)]
unsafe fn map1<A: Copy, D>(cur: &[*mut u8], d: u16, a: u16, n: usize, f: impl Fn(A) -> D) {
    let (pa, pd) = (cur[a as usize] as *const A, cur[d as usize] as *mut D);
    let mut i = 0;
    // SAFETY: as for `map2`.
    unsafe {
        while i + W <= n {
            let x = block(pa, i);
            (pd.add(i) as *mut [D; W]).write_unaligned(std::array::from_fn(|k| f(x[k])));
            i += W;
        }
        for i in i..n {
            pd.add(i).write(f(pa.add(i).read()));
        }
    }
}

/// `d[i] = f(a[i], b[i], c[i])`.
///
/// # Safety
/// As for [`map2`].
#[inline(always)]
unsafe fn map3<A: Copy, B: Copy, C: Copy, D>(
    cur: &[*mut u8],
    (d, a, b, c): (u16, u16, u16, u16),
    n: usize,
    f: impl Fn(A, B, C) -> D,
) {
    let (pa, pb, pc) = (cur[a as usize] as *const A, cur[b as usize] as *const B, cur[c as usize] as *const C);
    let pd = cur[d as usize] as *mut D;
    let mut i = 0;
    // SAFETY: as for `map2`.
    unsafe {
        while i + W <= n {
            let (x, y, z) = (block(pa, i), block(pb, i), block(pc, i));
            (pd.add(i) as *mut [D; W]).write_unaligned(std::array::from_fn(|k| f(x[k], y[k], z[k])));
            i += W;
        }
        for i in i..n {
            pd.add(i).write(f(pa.add(i).read(), pb.add(i).read(), pc.add(i).read()));
        }
    }
}

/// `d[i] = cmp(a[i], b[i]) ? t[i] : f[i]`.
///
/// # Safety
/// As for [`map2`], for five registers of `T`.
#[inline(always)]
unsafe fn select_cmp<T: Copy + PartialOrd, const C: u8>(cur: &[*mut u8], regs: (u16, u16, u16, u16, u16), n: usize) {
    let (d, a, b, t, f) = regs;
    let p = |r: u16| cur[r as usize] as *const T;
    let (pa, pb, pt, pf, pd) = (p(a), p(b), p(t), p(f), cur[d as usize] as *mut T);
    let pick = |x: T, y: T, u: T, v: T| if cmp::<T, C>(x, y) { u } else { v };
    let mut i = 0;
    // SAFETY: as for `map2`.
    unsafe {
        while i + W <= n {
            let (x, y, u, v) = (block(pa, i), block(pb, i), block(pt, i), block(pf, i));
            (pd.add(i) as *mut [T; W]).write_unaligned(std::array::from_fn(|k| pick(x[k], y[k], u[k], v[k])));
            i += W;
        }
        for i in i..n {
            pd.add(i).write(pick(pa.add(i).read(), pb.add(i).read(), pt.add(i).read(), pf.add(i).read()));
        }
    }
}

/// Arithmetic with the operation fixed at compile time (`O`: 0 add, 1 sub, 2 mul, 3 div), so
/// each instruction's lane loop is one straight vector loop.
trait Ar: Copy {
    fn ar<const O: u8>(self, b: Self) -> Self;
}

macro_rules! float_ar {
    ($($t:ty),*) => {$(
        impl Ar for $t {
            #[inline(always)]
            fn ar<const O: u8>(self, b: Self) -> Self {
                match O {
                    0 => self + b,
                    1 => self - b,
                    2 => self * b,
                    _ => self / b,
                }
            }
        }
    )*};
}
float_ar!(f32, f64);

macro_rules! int_ar {
    ($($t:ty),*) => {$(
        impl Ar for $t {
            #[inline(always)]
            fn ar<const O: u8>(self, b: Self) -> Self {
                match O {
                    0 => self.wrapping_add(b),
                    1 => self.wrapping_sub(b),
                    _ => self.wrapping_mul(b),
                }
            }
        }
    )*};
}
int_ar!(i32, i64);

/// Comparison with the operation fixed at compile time (`C`: 0 lt, 1 le, 2 gt, 3 ge, 4 eq,
/// 5 ne; NaN compares false except `ne`).
#[inline(always)]
fn cmp<T: PartialOrd, const C: u8>(a: T, b: T) -> bool {
    match C {
        0 => a < b,
        1 => a <= b,
        2 => a > b,
        3 => a >= b,
        4 => a == b,
        _ => a != b,
    }
}

/// Expands `$body` with `$o` a constant naming the arithmetic operation `$op`.
macro_rules! with_arith {
    ($op:expr, $o:ident => $body:expr) => {
        match $op {
            Arith::Add => {
                const $o: u8 = 0;
                $body
            }
            Arith::Sub => {
                const $o: u8 = 1;
                $body
            }
            Arith::Mul => {
                const $o: u8 = 2;
                $body
            }
            Arith::Div => {
                const $o: u8 = 3;
                $body
            }
        }
    };
}

/// Expands `$body` with `$c` a constant naming the comparison `$op`.
macro_rules! with_cmp {
    ($op:expr, $c:ident => $body:expr) => {
        match $op {
            Cmp::Lt => {
                const $c: u8 = 0;
                $body
            }
            Cmp::Le => {
                const $c: u8 = 1;
                $body
            }
            Cmp::Gt => {
                const $c: u8 = 2;
                $body
            }
            Cmp::Ge => {
                const $c: u8 = 3;
                $body
            }
            Cmp::Eq => {
                const $c: u8 = 4;
                $body
            }
            Cmp::Ne => {
                const $c: u8 = 5;
                $body
            }
        }
    };
}

macro_rules! with_ty {
    ($ty:expr, $t:ident => $body:expr, int $i:ident => $ibody:expr) => {
        match $ty {
            Ty::F32 => {
                type $t = f32;
                $body
            }
            Ty::F64 => {
                type $t = f64;
                $body
            }
            Ty::I32 => {
                type $i = i32;
                $ibody
            }
            Ty::I64 => {
                type $i = i64;
                $ibody
            }
            Ty::Bool => unreachable!("no bool arithmetic is decoded"),
        }
    };
}

/// Runs one instruction over `n` lanes.
///
/// # Safety
/// As for [`body`].
#[inline(always)]
unsafe fn step(op: &LaneOp, cur: &[*mut u8], n: usize) {
    // SAFETY: every register holds `n` lanes of the type the instruction was decoded for.
    unsafe {
        match *op {
            LaneOp::Arith { ty, op, d, a, b } => with_arith!(op, O => with_ty!(ty,
                T => map2(cur, d, a, b, n, |x: T, y: T| x.ar::<O>(y)),
                int I => map2(cur, d, a, b, n, |x: I, y: I| x.ar::<O>(y)))),
            LaneOp::Chain { ty, op1, op2, swap, d, a, b, c } => with_arith!(op1, O1 => with_arith!(op2, O2 =>
                with_ty!(ty,
                    T => if swap {
                        if a == b {
                            map2(cur, d, a, c, n, |x: T, z: T| z.ar::<O2>(x.ar::<O1>(x)))
                        } else {
                            map3(cur, (d, a, b, c), n, |x: T, y: T, z: T| z.ar::<O2>(x.ar::<O1>(y)))
                        }
                    } else if a == b {
                        map2(cur, d, a, c, n, |x: T, z: T| x.ar::<O1>(x).ar::<O2>(z))
                    } else {
                        map3(cur, (d, a, b, c), n, |x: T, y: T, z: T| x.ar::<O1>(y).ar::<O2>(z))
                    },
                    int _I => unreachable!("chains are float")))),
            LaneOp::Cmp { ty, op, d, a, b } => with_cmp!(op, C => with_ty!(ty,
                T => map2(cur, d, a, b, n, |x: T, y: T| u8::from(cmp::<T, C>(x, y))),
                int I => map2(cur, d, a, b, n, |x: I, y: I| u8::from(cmp::<I, C>(x, y))))),
            LaneOp::SelectCmp { ty, op, d, a, b, t, f } => with_cmp!(op, C => with_ty!(ty,
                T => select_cmp::<T, C>(cur, (d, a, b, t, f), n),
                int I => select_cmp::<I, C>(cur, (d, a, b, t, f), n))),
            LaneOp::Logic { op, d, a, b } => match op {
                BinaryOp::And => map2(cur, d, a, b, n, |x: u8, y: u8| x & y),
                BinaryOp::Or => map2(cur, d, a, b, n, |x: u8, y: u8| x | y),
                _ => map2(cur, d, a, b, n, |x: u8, y: u8| x ^ y),
            },
            LaneOp::Unary { ty, op, d, a } => match (ty, op) {
                (Ty::Bool, _) => map1(cur, d, a, n, |x: u8| x ^ 1),
                (Ty::I32, _) => map1(cur, d, a, n, |x: i32| x.wrapping_neg()),
                (Ty::I64, _) => map1(cur, d, a, n, |x: i64| x.wrapping_neg()),
                (Ty::F32, Un::Neg) => map1(cur, d, a, n, |x: f32| -x),
                (Ty::F32, Un::Abs) => map1(cur, d, a, n, |x: f32| x.abs()),
                (Ty::F32, Un::Square) => map1(cur, d, a, n, |x: f32| x * x),
                (Ty::F32, _) => map1(cur, d, a, n, |x: f32| x.sqrt()),
                (Ty::F64, Un::Neg) => map1(cur, d, a, n, |x: f64| -x),
                (Ty::F64, Un::Abs) => map1(cur, d, a, n, |x: f64| x.abs()),
                (Ty::F64, Un::Square) => map1(cur, d, a, n, |x: f64| x * x),
                (Ty::F64, _) => map1(cur, d, a, n, |x: f64| x.sqrt()),
            },
            LaneOp::Select { width, d, c, a, b } => match width {
                1 => map3(cur, (d, c, a, b), n, |k: u8, x: u8, y: u8| if k != 0 { x } else { y }),
                4 => map3(cur, (d, c, a, b), n, |k: u8, x: u32, y: u32| if k != 0 { x } else { y }),
                _ => map3(cur, (d, c, a, b), n, |k: u8, x: u64, y: u64| if k != 0 { x } else { y }),
            },
            LaneOp::Copy { width, d, a } => match width {
                1 => map1(cur, d, a, n, |x: u8| x),
                4 => map1(cur, d, a, n, |x: u32| x),
                _ => map1(cur, d, a, n, |x: u64| x),
            },
            LaneOp::Cast { from, to, d, a } => match (from, to) {
                (Ty::I64, Ty::F64) => map1(cur, d, a, n, |x: i64| x as f64),
                (Ty::I32, Ty::F64) => map1(cur, d, a, n, |x: i32| f64::from(x)),
                (Ty::F32, Ty::F64) => map1(cur, d, a, n, |x: f32| f64::from(x)),
                (Ty::Bool, Ty::F64) => map1(cur, d, a, n, |x: u8| f64::from(x)),
                (Ty::I32, Ty::F32) => map1(cur, d, a, n, |x: i32| x as f32),
                (Ty::Bool, Ty::F32) => map1(cur, d, a, n, |x: u8| f32::from(x)),
                (Ty::F64, Ty::F32) => map1(cur, d, a, n, |x: f64| x as f32),
                (Ty::I32, Ty::I64) => map1(cur, d, a, n, |x: i32| i64::from(x)),
                (Ty::Bool, Ty::I64) => map1(cur, d, a, n, |x: u8| i64::from(x)),
                _ => map1(cur, d, a, n, |x: u8| i32::from(x)),
            },
        }
    }
}
