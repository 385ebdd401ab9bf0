//! Register plan of a compiled mask loop ([`crate::lane_jit`]): which program registers are
//! vectors or masks, which live in a machine register for the whole loop and which only
//! between their definition and last use, and the physical register each one gets.
//!
//! Vector registers (every non-bool register of the program, all one element width) map to
//! `zmm1..zmm31` (`zmm0` is scratch), bool registers to the mask registers `k1..k6` (`k0`
//! and `k7` are scratch). The body is emitted `groups` times, once per group of lanes, one
//! copy after the other: a register that lives across iterations (read before it is
//! written, the loop's condition, or read after the loop) takes one machine register per
//! group; a constant takes one for all; a temporary takes one from a pool for the span from
//! its definition to its last use, shared by the groups.

use crate::lane_loop::{LaneOp, LaneProgram, Ty, Un};

/// What a program register holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// Elements of the program's width, in a `zmm` register.
    Vec,
    /// Bools, in a mask register.
    Bool,
}

/// Where a program register lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Not named by the program.
    Unused,
    /// A constant broadcast into one machine register on entry.
    Const(u8),
    /// Loaded at the start of each group and, when `written`, stored at its end; one machine
    /// register per group.
    Live { phys: [u8; 4], loaded: bool, written: bool },
    /// Defined before it is read in every iteration and not read after the loop.
    Temp(u8),
}

/// Bit patterns broadcast into vector registers on entry for the instructions that need them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Pattern {
    /// The sign bit of each element.
    Sign,
    /// Every bit but the sign bit.
    Magnitude,
    /// Zero.
    Zero,
    /// Float 1.0.
    FloatOne,
    /// Integer 1.
    IntOne,
}

impl Pattern {
    /// The pattern over 64 bits for elements of `width` bytes.
    pub(crate) fn bits(self, width: usize) -> u64 {
        let lane: u64 = match (self, width) {
            (Pattern::Sign, 8) => 1 << 63,
            (Pattern::Sign, _) => 1 << 31,
            (Pattern::Magnitude, 8) => !(1 << 63),
            (Pattern::Magnitude, _) => !(1u64 << 31) & 0xFFFF_FFFF,
            (Pattern::Zero, _) => 0,
            (Pattern::FloatOne, 8) => 1f64.to_bits(),
            (Pattern::FloatOne, _) => u64::from(1f32.to_bits()),
            (Pattern::IntOne, _) => 1,
        };
        if width == 8 {
            lane
        } else {
            lane | (lane << 32)
        }
    }
}

/// The register plan of one program.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Bytes per vector element: 4 or 8.
    pub width: usize,
    /// Copies of the body per iteration, each over its own vector of lanes.
    pub groups: usize,
    /// Each program register's class (by number; `None` when unnamed).
    pub class: Vec<Option<Class>>,
    /// Each program register's slot.
    pub slot: Vec<Slot>,
    /// The patterns the program needs and their machine registers.
    pub patterns: Vec<(Pattern, u8)>,
}

impl Plan {
    /// Lanes of one vector.
    pub(crate) fn lanes(&self) -> usize {
        64 / self.width
    }

    /// The machine register of program register `r` in group `g`.
    pub(crate) fn phys(&self, r: u16, g: usize) -> u8 {
        match self.slot[r as usize] {
            Slot::Const(p) | Slot::Temp(p) => p,
            Slot::Live { phys, .. } => phys[g],
            Slot::Unused => unreachable!("register {r} is not named by the program"),
        }
    }

    /// The machine register holding `p`.
    pub(crate) fn pattern(&self, p: Pattern) -> u8 {
        self.patterns.iter().find(|(q, _)| *q == p).map(|&(_, r)| r).expect("pattern planned")
    }
}

/// The destination and the operands of `op`.
pub(crate) fn operands(op: &LaneOp) -> (u16, Vec<u16>) {
    match *op {
        LaneOp::Arith { d, a, b, .. } | LaneOp::Cmp { d, a, b, .. } | LaneOp::Logic { d, a, b, .. } => (d, vec![a, b]),
        LaneOp::Chain { d, a, b, c, .. } => (d, vec![a, b, c]),
        LaneOp::SelectCmp { d, a, b, t, f, .. } => (d, vec![a, b, t, f]),
        LaneOp::Unary { d, a, .. } | LaneOp::Cast { d, a, .. } | LaneOp::Copy { d, a, .. } => (d, vec![a]),
        LaneOp::Select { d, c, a, b, .. } => (d, vec![c, a, b]),
    }
}

fn width_of(t: Ty) -> Option<usize> {
    match t {
        Ty::F32 | Ty::I32 => Some(4),
        Ty::F64 | Ty::I64 => Some(8),
        Ty::Bool => None,
    }
}

/// Classes and the common element width of `prog`'s registers; `None` when vectors of
/// different widths meet (a cast between widths) or a register is used as both kinds.
fn classify(prog: &LaneProgram) -> Option<(Vec<Option<Class>>, usize)> {
    let top = prog.ops.iter().flat_map(|op| {
        let (d, s) = operands(op);
        std::iter::once(d).chain(s)
    });
    let n = top.chain([prog.cond]).max().unwrap_or(0) as usize + 1;
    let mut class = vec![None; n];
    let mut width = None;
    let mut put = |r: u16, c: Class, w: Option<usize>| -> Option<()> {
        if class[r as usize].is_some_and(|k| k != c) {
            return None;
        }
        class[r as usize] = Some(c);
        if let Some(w) = w {
            (*width.get_or_insert(w) == w).then_some(())?;
        }
        Some(())
    };
    let vec_of = |t: Ty| (Class::Vec, width_of(t));
    for op in &prog.ops {
        let (d, srcs) = operands(op);
        let (dc, dw, sc, sw) = match *op {
            LaneOp::Cmp { ty, .. } => {
                let (c, w) = vec_of(ty);
                (Class::Bool, None, c, w)
            }
            LaneOp::Logic { .. } | LaneOp::Unary { ty: Ty::Bool, .. } => (Class::Bool, None, Class::Bool, None),
            LaneOp::Select { width, c, .. } | LaneOp::Copy { width, a: c, .. } if width == 1 => {
                put(c, Class::Bool, None)?;
                (Class::Bool, None, Class::Bool, None)
            }
            LaneOp::Select { width, c, .. } => {
                put(c, Class::Bool, None)?;
                let w = Some(usize::from(width));
                (Class::Vec, w, Class::Vec, w)
            }
            LaneOp::Copy { width, .. } => (Class::Vec, Some(usize::from(width)), Class::Vec, Some(usize::from(width))),
            LaneOp::Cast { from, to, a, .. } => {
                let (c, w) = if from == Ty::Bool { (Class::Bool, None) } else { vec_of(from) };
                put(a, c, w)?;
                let (tc, tw) = vec_of(to);
                (tc, tw, c, w)
            }
            LaneOp::Arith { ty, .. }
            | LaneOp::Chain { ty, .. }
            | LaneOp::SelectCmp { ty, .. }
            | LaneOp::Unary { ty, .. } => {
                let (c, w) = vec_of(ty);
                (c, w, c, w)
            }
        };
        put(d, dc, dw)?;
        let skip = match *op {
            LaneOp::Select { .. } => 1,
            _ => 0,
        };
        for &s in &srcs[skip..] {
            put(s, sc, sw)?;
        }
    }
    if !prog.once {
        put(prog.cond, Class::Bool, None)?;
    }
    Some((class, width.unwrap_or(4)))
}

/// The patterns `prog`'s instructions read.
fn patterns(prog: &LaneProgram) -> Vec<Pattern> {
    let mut out = Vec::new();
    for op in &prog.ops {
        let p = match *op {
            LaneOp::Unary { ty: Ty::F32 | Ty::F64, op: Un::Neg, .. } => Pattern::Sign,
            LaneOp::Unary { ty: Ty::I32 | Ty::I64, .. } => Pattern::Zero,
            LaneOp::Unary { op: Un::Abs, .. } => Pattern::Magnitude,
            LaneOp::Cast { from: Ty::Bool, to: Ty::F32 | Ty::F64, .. } => Pattern::FloatOne,
            LaneOp::Cast { from: Ty::Bool, .. } => Pattern::IntOne,
            _ => continue,
        };
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// A stack of free machine registers.
struct Pool(Vec<u8>);

impl Pool {
    fn take(&mut self) -> Option<u8> {
        self.0.pop()
    }
}

/// Plans `prog` with `groups` copies of the body; `None` when its registers do not fit.
/// `is_const(r)`: `r` is the same value on every lane (read-only); `live_out(r)`: `r` is read
/// after the loop.
pub(crate) fn plan(
    prog: &LaneProgram,
    groups: usize,
    is_const: &dyn Fn(u16) -> bool,
    live_out: &dyn Fn(u16) -> bool,
) -> Option<Plan> {
    let (class, width) = classify(prog)?;
    let n = class.len();
    let tests = |r: u16| !prog.once && r == prog.cond;
    // First access (read before write?) and last read of each register.
    let mut read_first = vec![false; n];
    let mut seen = vec![false; n];
    let mut written = vec![false; n];
    let mut defs = vec![0usize; n];
    let mut last_read = vec![None::<usize>; n];
    for (i, op) in prog.ops.iter().enumerate() {
        let (d, srcs) = operands(op);
        for s in srcs {
            if !seen[s as usize] {
                read_first[s as usize] = true;
            }
            seen[s as usize] = true;
            last_read[s as usize] = Some(i);
        }
        seen[d as usize] = true;
        written[d as usize] = true;
        defs[d as usize] += 1;
    }
    let mut zmm = Pool((1..32).rev().collect());
    let mut kmask = Pool((1..7).rev().collect());
    let pool = |c: Class, zmm: &mut Pool, kmask: &mut Pool| match c {
        Class::Vec => zmm.take(),
        Class::Bool => kmask.take(),
    };
    let mut pats = Vec::new();
    for p in patterns(prog) {
        pats.push((p, zmm.take()?));
    }
    let mut slot = vec![Slot::Unused; n];
    let mut temps = Vec::new();
    for r in 0..n {
        let Some(c) = class[r] else { continue };
        let r16 = r as u16;
        slot[r] = if is_const(r16) {
            if written[r] {
                return None;
            }
            Slot::Const(pool(c, &mut zmm, &mut kmask)?)
        } else if read_first[r] || tests(r16) || live_out(r16) || defs[r] > 1 {
            let mut phys = [0u8; 4];
            for p in phys.iter_mut().take(groups) {
                *p = pool(c, &mut zmm, &mut kmask)?;
            }
            Slot::Live { phys, loaded: read_first[r] || tests(r16), written: written[r] }
        } else {
            temps.push(r);
            Slot::Unused
        };
    }
    // Temporaries: linear scan over the body, freeing each after its last read.
    for (i, op) in prog.ops.iter().enumerate() {
        let (d, srcs) = operands(op);
        for s in srcs {
            if let Slot::Temp(p) = slot[s as usize] {
                if last_read[s as usize] == Some(i) && temps.contains(&(s as usize)) {
                    free(class[s as usize], p, &mut zmm, &mut kmask);
                    temps.retain(|&t| t != s as usize);
                }
            }
        }
        let d = d as usize;
        if temps.contains(&d) && slot[d] == Slot::Unused {
            let p = pool(class[d]?, &mut zmm, &mut kmask)?;
            slot[d] = Slot::Temp(p);
            if last_read[d].is_none_or(|l| l <= i) {
                // Never read after this definition.
                free(class[d], p, &mut zmm, &mut kmask);
                temps.retain(|&t| t != d);
            }
        }
    }
    Some(Plan { width, groups, class, slot, patterns: pats })
}

fn free(c: Option<Class>, p: u8, zmm: &mut Pool, kmask: &mut Pool) {
    match c {
        Some(Class::Vec) => zmm.0.push(p),
        Some(Class::Bool) => kmask.0.push(p),
        None => {}
    }
}
