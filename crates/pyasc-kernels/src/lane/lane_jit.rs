//! Mask loops compiled to AVX-512 machine code.
//!
//! The strip loop ([`crate::lane_loop`]) runs each instruction of a loop body as its own
//! vector loop over a strip, loading its operands from and storing its result to the strip's
//! register buffers: two loads and a store for a few arithmetic operations, so a long body is
//! bound by the cache's ports rather than by the arithmetic. Here the body is assembled once
//! (per launch) into a function that keeps every register of the loop in a machine register
//! ([`crate::lane::lane_jit_plan`]): each group of lanes is loaded once, iterated until none of its
//! lanes runs, and stored once. The body is emitted for several vectors of lanes one after
//! the other, so the processor overlaps their dependency chains. Every operation rounds as
//! the strip loop's does (no fused multiply-add, each operation of a chain rounded alone,
//! the same comparison predicates), so results are bit for bit the same.
//!
//! Only CPUs with AVX-512 F/BW/DQ/VL and programs whose vectors all have one element width
//! compile; [`LaneJit::run`] declines (and the caller runs the strip loop) when the active ISA
//! is lower, which is how the other paths are tested on the same machine.

use crate::isa::{self, Isa};
use crate::lane::lane_jit_exec::Exec;
use crate::lane::lane_jit_plan::{plan, Class, Pattern, Plan, Slot};
use crate::lane_loop::{self, Arith, Cmp, LaneOp, LaneProgram, LaneReg, Ty, Un};
use iced_x86::code_asm::*;
use iced_x86::{IcedError, Register};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Loop iterations between two returns to the caller's poll.
const BUDGET: usize = 4096;

/// Programs assembled (or declined) by [`LaneJit::cached`], at most this many at a time.
const CACHED: usize = 256;

/// A program with the registers it treats as constants and as read after the loop (one byte
/// per register: bit 0 constant, bit 1 read after).
type Key = (LaneProgram, Vec<u8>);

static CACHE: Mutex<Option<HashMap<Key, Option<Arc<LaneJit>>>>> = Mutex::new(None);

/// The compiled function: `(bases, first lane, end lane, budget) -> lane reached`. It runs the
/// loop over groups of lanes from `first` to `end` (a whole number of groups), each group's
/// registers at `bases[r] + lane * width`, and returns `end`, or the first lane of the group it
/// paused in once `budget` iterations have run (that group's registers are then stored).
type Entry = unsafe extern "sysv64" fn(*const *mut u8, usize, usize, usize) -> usize;

/// A mask loop assembled for this CPU.
pub struct LaneJit {
    exec: Exec,
    plan: Plan,
}

impl std::fmt::Debug for LaneJit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LaneJit({} groups of {} lanes, {} bytes)", self.plan.groups, self.plan.lanes(), self.exec.len())
    }
}

impl LaneJit {
    /// Assembles `prog`, `is_const(r)` naming the registers that hold one value for every lane
    /// (read-only) and `live_out(r)` those read after the loop. `None` when the CPU lacks
    /// AVX-512, vectors of two widths meet or the registers do not fit.
    pub fn compile(
        prog: &LaneProgram,
        is_const: &dyn Fn(u16) -> bool,
        live_out: &dyn Fn(u16) -> bool,
    ) -> Option<LaneJit> {
        if isa::detected() != Isa::Avx512 {
            return None;
        }
        let plan = (1..=4).rev().find_map(|g| plan(prog, g, is_const, live_out))?;
        let code = assemble(prog, &plan).ok()?;
        Some(LaneJit { exec: Exec::new(&code)?, plan })
    }

    /// [`LaneJit::compile`] through a process-wide cache: assembling takes tens of
    /// microseconds, and a vectorized operator decodes its loops again on every launch.
    pub fn cached(
        prog: &LaneProgram,
        is_const: &dyn Fn(u16) -> bool,
        live_out: &dyn Fn(u16) -> bool,
    ) -> Option<Arc<LaneJit>> {
        let top = prog.ops.iter().map(crate::lane::lane_jit_plan::operands).flat_map(|(d, s)| s.into_iter().chain([d]));
        let n = top.chain([prog.cond]).max().unwrap_or(0) + 1;
        let flags = (0..n).map(|r| u8::from(is_const(r)) | (u8::from(live_out(r)) << 1)).collect();
        let key = (prog.clone(), flags);
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let map = cache.get_or_insert_with(HashMap::new);
        if let Some(hit) = map.get(&key) {
            return hit.clone();
        }
        let jit = LaneJit::compile(prog, is_const, live_out).map(Arc::new);
        if map.len() >= CACHED {
            map.clear();
        }
        map.insert(key, jit.clone());
        jit
    }

    /// Lanes per iteration of the compiled loop (its groups together).
    pub fn lanes_per_turn(&self) -> usize {
        self.plan.lanes() * self.plan.groups
    }

    /// Runs `prog`'s loop (the program this was compiled from) over `lanes` lanes as
    /// [`lane_loop::run`] does: whole turns here, the rest on the strip loop. `None`, having
    /// done nothing, when the active ISA is lower than AVX-512 or a register's layout differs
    /// from what the compilation assumed (a constant with a step or a lane register without).
    ///
    /// # Safety
    /// As for [`lane_loop::run`].
    pub unsafe fn run(
        &self,
        prog: &LaneProgram,
        regs: &[LaneReg],
        lanes: usize,
        poll: &mut dyn FnMut() -> bool,
    ) -> Option<bool> {
        if isa::active() != Isa::Avx512 {
            return None;
        }
        let mut bases = Vec::with_capacity(self.plan.slot.len());
        for (r, s) in self.plan.slot.iter().enumerate() {
            let reg = regs.get(r)?;
            let width = if self.plan.class[r] == Some(Class::Bool) { 1 } else { self.plan.width };
            match s {
                Slot::Const(_) if reg.step != 0 => return None,
                Slot::Live { .. } | Slot::Temp(_) if reg.step != width => return None,
                _ => {}
            }
            bases.push(reg.ptr);
        }
        let turn = self.lanes_per_turn();
        let end = lanes - lanes % turn;
        // SAFETY: the code was assembled from `self.plan`, whose layout the registers were just
        // checked against; they hold `lanes` lanes (the caller's contract).
        let entry: Entry = unsafe { std::mem::transmute(self.exec.ptr()) };
        let mut at = 0;
        while at < end {
            // SAFETY: as above.
            at = unsafe { entry(bases.as_ptr(), at, end, BUDGET) };
            if at < end && poll() {
                return Some(true);
            }
        }
        if end == lanes {
            return Some(false);
        }
        let rest: Vec<LaneReg> =
            regs.iter().map(|r| LaneReg { ptr: r.ptr.wrapping_add(end * r.step), step: r.step }).collect();
        // SAFETY: the registers from lane `end` on hold the remaining lanes.
        Some(unsafe { lane_loop::run(prog, &rest, lanes - end, poll) })
    }
}

fn zmm(p: u8) -> AsmRegisterZmm {
    registers::get_zmm(Register::ZMM0 + u32::from(p)).expect("zmm0..zmm31")
}

fn kreg(p: u8) -> AsmRegisterK {
    registers::get_k(Register::K0 + u32::from(p)).expect("k0..k7")
}

/// `z` written under mask `k` (1..7).
fn masked(z: AsmRegisterZmm, k: u8) -> AsmRegisterZmm {
    match k {
        1 => z.k1(),
        2 => z.k2(),
        3 => z.k3(),
        4 => z.k4(),
        5 => z.k5(),
        6 => z.k6(),
        _ => z.k7(),
    }
}

/// Scratch registers: `zmm0`, `k0` (operand only) and `k7` (a write mask).
const ZS: u8 = 0;
const K0: u8 = 0;
const K7: u8 = 7;

/// The code of `prog` under `plan`.
fn assemble(prog: &LaneProgram, plan: &Plan) -> Result<Vec<u8>, IcedError> {
    let mut a = CodeAssembler::new(64)?;
    let e = Emit { plan, prog };
    // Entry: patterns and constants.
    for &(p, r) in &plan.patterns {
        a.mov(rax, p.bits(plan.width))?;
        a.vpbroadcastq(zmm(r), rax)?;
    }
    for (r, s) in plan.slot.iter().enumerate() {
        let Slot::Const(p) = *s else { continue };
        a.mov(rax, qword_ptr(rdi + 8 * r as i32))?;
        match plan.class[r] {
            Some(Class::Bool) => {
                a.movzx(eax, byte_ptr(rax))?;
                a.neg(eax)?;
                a.kmovw(kreg(p), eax)?;
            }
            _ if plan.width == 8 => a.vpbroadcastq(zmm(p), qword_ptr(rax))?,
            _ => a.vpbroadcastd(zmm(p), dword_ptr(rax))?,
        }
    }
    let (mut group, mut body, mut next, mut pause, mut done) =
        (a.create_label(), a.create_label(), a.create_label(), a.create_label(), a.create_label());
    a.set_label(&mut group)?;
    a.cmp(rsi, rdx)?;
    a.jae(done)?;
    let tested = (!prog.once).then_some(prog.cond);
    if let Some(c) = tested {
        for g in 0..plan.groups {
            e.load(&mut a, c, g)?;
        }
        e.any(&mut a)?;
        a.jz(next)?;
    }
    for (r, s) in plan.slot.iter().enumerate() {
        if matches!(s, Slot::Live { loaded: true, .. }) && Some(r as u16) != tested {
            for g in 0..plan.groups {
                e.load(&mut a, r as u16, g)?;
            }
        }
    }
    a.set_label(&mut body)?;
    a.test(rcx, rcx)?;
    a.jz(pause)?;
    a.dec(rcx)?;
    for g in 0..plan.groups {
        for op in &prog.ops {
            e.op(&mut a, op, g)?;
        }
    }
    if !prog.once {
        e.any(&mut a)?;
        a.jnz(body)?;
    }
    e.store_all(&mut a)?;
    a.set_label(&mut next)?;
    a.add(rsi, (plan.lanes() * plan.groups) as i32)?;
    a.jmp(group)?;
    a.set_label(&mut pause)?;
    e.store_all(&mut a)?;
    a.set_label(&mut done)?;
    a.mov(rax, rsi)?;
    a.vzeroupper()?;
    a.ret()?;
    a.assemble(0)
}

struct Emit<'a> {
    plan: &'a Plan,
    prog: &'a LaneProgram,
}

impl Emit<'_> {
    /// Lanes per vector are 8 (mask ops on bytes) or 16 (on words).
    fn wide(&self) -> bool {
        self.plan.width == 4
    }

    /// `rax` = the base of register `r`; the operand of its group `g` in this lane group.
    fn addr(&self, a: &mut CodeAssembler, r: u16, g: usize) -> Result<AsmMemoryOperand, IcedError> {
        a.mov(rax, qword_ptr(rdi + 8 * i32::from(r)))?;
        Ok(match self.plan.class[r as usize] {
            Some(Class::Bool) => ptr(rax + rsi + (g * self.plan.lanes()) as i32),
            _ if self.plan.width == 8 => ptr(rax + rsi * 8 + 64 * g as i32),
            _ => ptr(rax + rsi * 4 + 64 * g as i32),
        })
    }

    fn load(&self, a: &mut CodeAssembler, r: u16, g: usize) -> Result<(), IcedError> {
        let m = self.addr(a, r, g)?;
        let p = self.plan.phys(r, g);
        if self.plan.class[r as usize] == Some(Class::Bool) {
            if self.wide() {
                a.vmovdqu(xmm0, xmmword_ptr(m))?;
            } else {
                a.vmovq(xmm0, qword_ptr(m))?;
            }
            a.vptestmb(kreg(p), xmm0, xmm0)
        } else {
            a.vmovdqu64(zmm(p), zmmword_ptr(m))
        }
    }

    fn store(&self, a: &mut CodeAssembler, r: u16, g: usize) -> Result<(), IcedError> {
        let m = self.addr(a, r, g)?;
        let p = self.plan.phys(r, g);
        if self.plan.class[r as usize] == Some(Class::Bool) {
            a.vpmovm2b(xmm0, kreg(p))?;
            a.vpabsb(xmm0, xmm0)?;
            if self.wide() {
                a.vmovdqu(xmmword_ptr(m), xmm0)
            } else {
                a.vmovq(qword_ptr(m), xmm0)
            }
        } else {
            a.vmovdqu64(zmmword_ptr(m), zmm(p))
        }
    }

    fn store_all(&self, a: &mut CodeAssembler) -> Result<(), IcedError> {
        for (r, s) in self.plan.slot.iter().enumerate() {
            if matches!(s, Slot::Live { written: true, .. }) {
                for g in 0..self.plan.groups {
                    self.store(a, r as u16, g)?;
                }
            }
        }
        Ok(())
    }

    /// Sets ZF when no lane of any group's condition is set.
    fn any(&self, a: &mut CodeAssembler) -> Result<(), IcedError> {
        let c = self.prog.cond;
        let mut acc = kreg(self.plan.phys(c, 0));
        for g in 1..self.plan.groups {
            let k = kreg(self.plan.phys(c, g));
            if self.wide() {
                a.korw(k0, acc, k)?;
            } else {
                a.korb(k0, acc, k)?;
            }
            acc = k0;
        }
        if self.wide() {
            a.kortestw(acc, acc)
        } else {
            a.kortestb(acc, acc)
        }
    }

    /// `d = x op y` over vectors of type `ty`.
    fn arith(
        &self,
        a: &mut CodeAssembler,
        ty: Ty,
        op: Arith,
        d: AsmRegisterZmm,
        x: AsmRegisterZmm,
        y: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        match (ty, op) {
            (Ty::F64, Arith::Add) => a.vaddpd(d, x, y),
            (Ty::F64, Arith::Sub) => a.vsubpd(d, x, y),
            (Ty::F64, Arith::Mul) => a.vmulpd(d, x, y),
            (Ty::F64, Arith::Div) => a.vdivpd(d, x, y),
            (Ty::F32, Arith::Add) => a.vaddps(d, x, y),
            (Ty::F32, Arith::Sub) => a.vsubps(d, x, y),
            (Ty::F32, Arith::Mul) => a.vmulps(d, x, y),
            (Ty::F32, Arith::Div) => a.vdivps(d, x, y),
            (Ty::I64, Arith::Add) => a.vpaddq(d, x, y),
            (Ty::I64, Arith::Sub) => a.vpsubq(d, x, y),
            (Ty::I64, _) => a.vpmullq(d, x, y),
            (Ty::I32, Arith::Add) => a.vpaddd(d, x, y),
            (Ty::I32, Arith::Sub) => a.vpsubd(d, x, y),
            _ => a.vpmulld(d, x, y),
        }
    }

    /// `k = cmp(x, y)` over vectors of type `ty` (NaN: false, except `Ne`).
    fn cmp(
        &self,
        a: &mut CodeAssembler,
        ty: Ty,
        op: Cmp,
        k: AsmRegisterK,
        x: AsmRegisterZmm,
        y: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        // Float predicates: ordered and quiet, `Ne` unordered (true on NaN).
        let fp = match op {
            Cmp::Lt => 0x11,
            Cmp::Le => 0x12,
            Cmp::Gt => 0x1E,
            Cmp::Ge => 0x1D,
            Cmp::Eq => 0x00,
            Cmp::Ne => 0x04,
        };
        // Signed integer predicates: lt, le, nlt, nle.
        let ip = match op {
            Cmp::Eq => 0,
            Cmp::Lt => 1,
            Cmp::Le => 2,
            Cmp::Ne => 4,
            Cmp::Ge => 5,
            Cmp::Gt => 6,
        };
        match ty {
            Ty::F64 => a.vcmppd(k, x, y, fp),
            Ty::F32 => a.vcmpps(k, x, y, fp),
            Ty::I64 => a.vpcmpq(k, x, y, ip),
            _ => a.vpcmpd(k, x, y, ip),
        }
    }

    /// `d = k ? t : f`, element-wise at the program's width.
    fn blend(
        &self,
        a: &mut CodeAssembler,
        k: u8,
        d: AsmRegisterZmm,
        t: AsmRegisterZmm,
        f: AsmRegisterZmm,
    ) -> Result<(), IcedError> {
        if self.wide() {
            a.vpblendmd(masked(d, k), f, t)
        } else {
            a.vpblendmq(masked(d, k), f, t)
        }
    }

    /// One instruction of group `g`.
    fn op(&self, a: &mut CodeAssembler, op: &LaneOp, g: usize) -> Result<(), IcedError> {
        let z = |r: u16| zmm(self.plan.phys(r, g));
        let k = |r: u16| kreg(self.plan.phys(r, g));
        let wide = self.wide();
        match *op {
            LaneOp::Arith { ty, op, d, a: x, b } => self.arith(a, ty, op, z(d), z(x), z(b)),
            LaneOp::Chain { ty, op1, op2, swap, d, a: x, b, c } => {
                self.arith(a, ty, op1, zmm(ZS), z(x), z(b))?;
                if swap {
                    self.arith(a, ty, op2, z(d), z(c), zmm(ZS))
                } else {
                    self.arith(a, ty, op2, z(d), zmm(ZS), z(c))
                }
            }
            LaneOp::Cmp { ty, op, d, a: x, b } => self.cmp(a, ty, op, k(d), z(x), z(b)),
            LaneOp::SelectCmp { ty, op, d, a: x, b, t, f } => {
                self.cmp(a, ty, op, kreg(K7), z(x), z(b))?;
                self.blend(a, K7, z(d), z(t), z(f))
            }
            LaneOp::Logic { op, d, a: x, b } => match (op, wide) {
                (pyasc_ir::op::BinaryOp::And, true) => a.kandw(k(d), k(x), k(b)),
                (pyasc_ir::op::BinaryOp::Or, true) => a.korw(k(d), k(x), k(b)),
                (_, true) => a.kxorw(k(d), k(x), k(b)),
                (pyasc_ir::op::BinaryOp::And, false) => a.kandb(k(d), k(x), k(b)),
                (pyasc_ir::op::BinaryOp::Or, false) => a.korb(k(d), k(x), k(b)),
                _ => a.kxorb(k(d), k(x), k(b)),
            },
            LaneOp::Unary { ty: Ty::Bool, d, a: x, .. } => {
                if wide {
                    a.knotw(k(d), k(x))
                } else {
                    a.knotb(k(d), k(x))
                }
            }
            LaneOp::Unary { ty, op, d, a: x } => {
                let pat = |p: Pattern| zmm(self.plan.pattern(p));
                match (ty, op) {
                    (Ty::I64, _) => a.vpsubq(z(d), pat(Pattern::Zero), z(x)),
                    (Ty::I32, _) => a.vpsubd(z(d), pat(Pattern::Zero), z(x)),
                    (_, Un::Neg) => a.vpxorq(z(d), z(x), pat(Pattern::Sign)),
                    (_, Un::Abs) => a.vpandq(z(d), z(x), pat(Pattern::Magnitude)),
                    (Ty::F64, Un::Square) => a.vmulpd(z(d), z(x), z(x)),
                    (_, Un::Square) => a.vmulps(z(d), z(x), z(x)),
                    (Ty::F64, _) => a.vsqrtpd(z(d), z(x)),
                    _ => a.vsqrtps(z(d), z(x)),
                }
            }
            LaneOp::Select { width: 1, d, c, a: x, b } => {
                if wide {
                    a.kandnw(k0, k(c), k(b))?;
                    a.kandw(kreg(K7), k(c), k(x))?;
                    a.korw(k(d), k0, kreg(K7))
                } else {
                    a.kandnb(k0, k(c), k(b))?;
                    a.kandb(kreg(K7), k(c), k(x))?;
                    a.korb(k(d), kreg(K0), kreg(K7))
                }
            }
            LaneOp::Select { d, c, a: x, b, .. } => {
                // The condition is a planned mask register (k1..k6), usable as a write mask.
                self.blend(a, self.plan.phys(c, g), z(d), z(x), z(b))
            }
            LaneOp::Copy { width: 1, d, a: x } => a.kmovw(k(d), k(x)),
            LaneOp::Copy { d, a: x, .. } => a.vmovdqa64(z(d), z(x)),
            LaneOp::Cast { from: Ty::Bool, to, d, a: x } => {
                let one = if matches!(to, Ty::F32 | Ty::F64) { Pattern::FloatOne } else { Pattern::IntOne };
                let (dst, src) = (masked(z(d), self.plan.phys(x, g)).z(), zmm(self.plan.pattern(one)));
                if wide {
                    a.vmovdqa32(dst, src)
                } else {
                    a.vmovdqa64(dst, src)
                }
            }
            LaneOp::Cast { from, d, a: x, .. } => match from {
                Ty::I64 => a.vcvtqq2pd(z(d), z(x)),
                _ => a.vcvtdq2ps(z(d), z(x)),
            },
        }
    }
}
