//! The tile VM for structured programs ([`pyasc_ir::program`]): loads and stores through
//! index maps with 16-bit storage conversion, loops over chunks of the trailing axes with
//! carried registers, and loops while any lane of a mask is true.
//!
//! This is the general path, written for clarity: every load and store walks its elements
//! one by one through the map, and a register read at a level below the instruction's is
//! expanded over the chunk before the instruction runs. Vector instructions themselves run
//! on the same SIMD kernels as the flat path ([`exec`], [`exec_reduce`]). Tiles of the
//! outer space are dealt out to the workers as blocks, like flat kernels.

pub(crate) mod copy_swap;
pub(crate) mod lanes;
pub(crate) mod program_lanes;

use crate::copy_swap::swappable_copies;
use crate::instr::{exec, exec_reduce, Val};
use crate::lanes::{count_true, gather, scatter, true_lanes};
use crate::layout::broadcast_strides;
use crate::pool::num_threads;
use crate::view::{InputView, SendPtr};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::program::{space_at, IndexMap, Program, Stmt, WhileAny};
use pyasc_ir::tile::{Instr, RegKind, TileKernel};
use pyasc_ir::{DType, Shape};
use std::collections::{HashMap, HashSet};

/// How a load or store converts one element between storage and compute dtypes.
#[derive(Copy, Clone, Debug)]
enum Conv {
    /// Same dtype: copy this many bytes.
    Same(usize),
    F16F32,
    F16F64,
    Bf16F32,
    Bf16F64,
}

fn conv(storage: DType, compute: DType) -> Result<Conv> {
    Ok(match (storage, compute) {
        (s, c) if s == c => Conv::Same(s.size()),
        (DType::F16, DType::F32) => Conv::F16F32,
        (DType::F16, DType::F64) => Conv::F16F64,
        (DType::BF16, DType::F32) => Conv::Bf16F32,
        (DType::BF16, DType::F64) => Conv::Bf16F64,
        (s, c) => return Err(IrError::internal(format!("no conversion between {s} storage and {c} compute"))),
    })
}

/// Convert one stored element at `mem` into the register element at `reg`.
///
/// # Safety
/// Both pointers address one element of their dtype.
unsafe fn load_one(c: Conv, mem: *const u8, reg: *mut u8) {
    // SAFETY: per the contract; unaligned accesses where storage may be unaligned.
    unsafe {
        match c {
            Conv::Same(n) => copy_one(mem, reg, n),
            Conv::F16F32 => (reg as *mut f32).write_unaligned(half::f16::from_bits(read16(mem)).to_f32()),
            Conv::F16F64 => (reg as *mut f64).write_unaligned(half::f16::from_bits(read16(mem)).to_f64()),
            Conv::Bf16F32 => (reg as *mut f32).write_unaligned(half::bf16::from_bits(read16(mem)).to_f32()),
            Conv::Bf16F64 => (reg as *mut f64).write_unaligned(half::bf16::from_bits(read16(mem)).to_f64()),
        }
    }
}

/// Convert the register element at `reg` into the stored element at `mem` (to 16-bit
/// floats: round to nearest even).
///
/// # Safety
/// Both pointers address one element of their dtype.
unsafe fn store_one(c: Conv, reg: *const u8, mem: *mut u8) {
    // SAFETY: per the contract.
    unsafe {
        let bits = match c {
            Conv::Same(n) => return copy_one(reg, mem, n),
            Conv::F16F32 => half::f16::from_f32((reg as *const f32).read_unaligned()).to_bits(),
            Conv::F16F64 => half::f16::from_f64((reg as *const f64).read_unaligned()).to_bits(),
            Conv::Bf16F32 => half::bf16::from_f32((reg as *const f32).read_unaligned()).to_bits(),
            Conv::Bf16F64 => half::bf16::from_f64((reg as *const f64).read_unaligned()).to_bits(),
        };
        (mem as *mut u16).write_unaligned(bits);
    }
}

/// Copy one element of `n` bytes: a single move for the usual sizes (a `memcpy` call per
/// element otherwise, as for a length known only at run time).
///
/// # Safety
/// `src` is readable and `dst` writable for `n` bytes.
#[inline(always)]
unsafe fn copy_one(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: per the contract; unaligned moves.
    unsafe {
        match n {
            8 => (dst as *mut u64).write_unaligned((src as *const u64).read_unaligned()),
            4 => (dst as *mut u32).write_unaligned((src as *const u32).read_unaligned()),
            2 => (dst as *mut u16).write_unaligned((src as *const u16).read_unaligned()),
            1 => *dst = *src,
            _ => std::ptr::copy_nonoverlapping(src, dst, n),
        }
    }
}

/// # Safety
/// `p` addresses two readable bytes.
unsafe fn read16(p: *const u8) -> u16 {
    // SAFETY: per the contract.
    unsafe { (p as *const u16).read_unaligned() }
}

/// A load's or store's memory: base address (the map's offsets applied), element strides
/// per kernel axis, storage element size and conversion.
struct Access {
    base: SendPtr,
    strides: Vec<isize>,
    size: usize,
    conv: Conv,
    /// How consecutive positions of the outer space are laid out when no loop walks an axis.
    run: Run,
}

impl Access {
    /// Load the element at element offset `off` into the register element at `reg`
    /// (`load`), or store `reg` there.
    ///
    /// # Safety
    /// `off` addresses an element inside the buffer; `reg` one register element.
    unsafe fn move_one(&self, off: isize, reg: *mut u8, load: bool) {
        // SAFETY: per the contract.
        unsafe {
            let m = self.base.0.offset(off * self.size as isize);
            if load {
                load_one(self.conv, m, reg)
            } else {
                store_one(self.conv, reg, m)
            }
        }
    }
}

/// Layout of the outer positions in memory, for copying a whole tile at once.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Run {
    /// Consecutive positions are consecutive elements of the same dtype: one copy.
    Contiguous,
    /// Every position addresses the same element of the same dtype: one value repeated.
    Repeated,
    /// Anything else: element by element.
    Other,
}

fn c_strides(dims: &[usize]) -> Vec<isize> {
    InputView::contiguous(std::ptr::null(), DType::U8, dims.to_vec()).strides
}

fn access(view: &InputView, map: &IndexMap, space: &Shape, compute: DType) -> Result<Access> {
    let strides = match map {
        IndexMap::Identity if view.shape == space.0 => view.strides.clone(),
        IndexMap::Identity if view.strides == c_strides(&view.shape) => c_strides(&space.0),
        IndexMap::Identity => return Err(IrError::internal("an identity map over a strided buffer of another shape")),
        IndexMap::Broadcast => broadcast_strides(&view.shape, &view.strides, &space.0),
        IndexMap::Offset(_) => view.strides.clone(),
    };
    let shift: isize = match map {
        IndexMap::Offset(off) => off.iter().zip(&strides).map(|(o, s)| o * s).sum(),
        _ => 0,
    };
    let size = view.dtype.size();
    // SAFETY: the verifier proved every shifted position lies inside the buffer.
    let base = SendPtr(unsafe { view.ptr.offset(shift * size as isize) } as *mut u8);
    let conv = conv(view.dtype, compute)?;
    let same = matches!(conv, Conv::Same(_));
    let run = if same && strides == c_strides(&space.0) {
        Run::Contiguous
    } else if same && strides.iter().all(|&s| s == 0) {
        Run::Repeated
    } else {
        Run::Other
    };
    Ok(Access { base, strides, size, conv, run })
}

/// Memory accesses of every load and store, keyed by the statement's address.
fn accesses(
    k: &TileKernel,
    stmts: &[Stmt],
    depth: usize,
    loops: &[(usize, usize)],
    args: &[&InputView],
    outs: &[InputView],
    into: &mut HashMap<usize, Access>,
) -> Result<()> {
    for s in stmts {
        let key = s as *const Stmt as usize;
        let space = || space_at(&k.shape, loops, depth);
        match s {
            Stmt::Load { dst, arg, map } => {
                let v = args.get(*arg as usize).ok_or_else(|| IrError::internal("load of a missing argument"))?;
                into.insert(key, access(v, map, &space(), k.regs[dst.0 as usize].dtype)?);
            }
            Stmt::Store { src, out, map } => {
                let v = outs.get(*out as usize).ok_or_else(|| IrError::internal("store to a missing output"))?;
                into.insert(key, access(v, map, &space(), k.regs[src.0 as usize].dtype)?);
            }
            Stmt::Loop(l) => accesses(k, &l.body, depth + 1, loops, args, outs, into)?,
            Stmt::While(w) => accesses(k, &w.body, depth, loops, args, outs, into)?,
            Stmt::Op(_) => {}
        }
    }
    Ok(())
}

#[repr(C, align(64))]
#[derive(Copy, Clone)]
struct Line([u8; 64]);

fn lines(bytes: usize) -> Vec<Line> {
    vec![Line([0; 64]); bytes.div_ceil(64).max(1)]
}

/// One block's registers and position.
struct Block<'a> {
    k: &'a TileKernel,
    p: &'a Program,
    loops: &'a [(usize, usize)],
    outer: &'a [usize],
    acc: &'a HashMap<usize, Access>,
    /// Copies run as swaps of register buffers ([`swappable_copies`]), by statement address.
    swaps: &'a HashSet<usize>,
    /// Mask loops run strip by strip ([`crate::program_lanes`]), by statement address.
    lanes: &'a HashMap<usize, crate::program_lanes::Lanes>,
    mem: Vec<Vec<Line>>,
    vals: Vec<Val>,
    tmp: [Vec<Line>; 3],
    /// First outer position of the tile and positions in it.
    row0: usize,
    rows: usize,
    /// (start, length) of the current chunk of each enclosing loop.
    chunk: Vec<(usize, usize)>,
    /// The launch's cancellation token, checked between iterations of mask loops.
    token: Option<&'a crate::interrupt::Token>,
}

impl Block<'_> {
    fn extent(&self, level: usize) -> usize {
        self.rows * self.chunk[..level].iter().map(|c| c.1).product::<usize>()
    }

    fn level(&self, r: pyasc_ir::tile::Reg) -> usize {
        self.p.levels[r.0 as usize] as usize
    }

    /// Move the register `reg` (of the statement's depth) to or from memory.
    ///
    /// # Safety
    /// The access addresses memory covering the kernel's space as verified.
    unsafe fn transfer(&mut self, acc: &Access, reg: pyasc_ir::tile::Reg, load: bool) {
        let depth = self.chunk.len();
        let size = self.k.regs[reg.0 as usize].dtype.size();
        let Val::Ptr(rp) = self.vals[reg.0 as usize] else { unreachable!("loads and stores use tile registers") };
        let whole = acc.run == Run::Contiguous || (load && acc.run == Run::Repeated);
        if depth == 0 && self.loops.is_empty() && whole {
            // SAFETY: without loops the tile is outer positions row0..row0 + rows, inside the
            // buffer as verified; the register holds `rows` elements of `size` bytes.
            unsafe {
                let at = |p: usize| acc.base.0.add(p * size);
                match (acc.run, load) {
                    (Run::Contiguous, true) => std::ptr::copy_nonoverlapping(at(self.row0), rp, self.rows * size),
                    (Run::Contiguous, false) => std::ptr::copy_nonoverlapping(rp, at(self.row0), self.rows * size),
                    _ => {
                        for e in 0..self.rows {
                            std::ptr::copy_nonoverlapping(at(0), rp.add(e * size), size);
                        }
                    }
                }
            }
            return;
        }
        if depth == 0 && self.loops.is_empty() {
            // SAFETY: as above; positions row0..row0 + rows of the outer space, walked in order.
            unsafe { self.walk_outer(acc, rp, size, load) };
            return;
        }
        let lens: Vec<usize> = self.chunk.iter().map(|c| c.1).collect();
        let per_row: usize = lens.iter().product();
        let mut j = vec![0usize; depth];
        let mut e = 0usize;
        for r in 0..self.rows {
            let mut q = self.row0 + r;
            let mut row_off = 0isize;
            for i in (0..self.outer.len()).rev() {
                row_off += (q % self.outer[i]) as isize * acc.strides[i];
                q /= self.outer[i];
            }
            for _ in 0..per_row {
                let mut off = row_off;
                for (i, ji) in j.iter().enumerate() {
                    off += (self.chunk[i].0 + ji) as isize * acc.strides[self.loops[i].0];
                }
                // SAFETY: verified positions inside the buffer; `e` counts the register's
                // elements at this depth.
                unsafe { acc.move_one(off, rp.add(e * size), load) }
                e += 1;
                for i in (0..depth).rev() {
                    j[i] += 1;
                    if j[i] < lens[i] {
                        break;
                    }
                    j[i] = 0;
                }
            }
        }
    }

    /// Move the tile's positions one by one when no loop walks an axis, stepping the multi-index
    /// like an odometer (one division per tile, not one per element and axis).
    ///
    /// # Safety
    /// `rp` holds `rows` elements of `size` bytes; the access covers the outer space.
    unsafe fn walk_outer(&self, acc: &Access, rp: *mut u8, size: usize, load: bool) {
        let nd = self.outer.len();
        let mut idx = vec![0usize; nd];
        let mut q = self.row0;
        for i in (0..nd).rev() {
            idx[i] = q % self.outer[i].max(1);
            q /= self.outer[i].max(1);
        }
        let mut off: isize = idx.iter().zip(&acc.strides).map(|(i, s)| *i as isize * s).sum();
        // Runs along a last axis of consecutive same-dtype elements move with one copy each
        // (a square block of an image: one row of the block at a time).
        let runs = nd > 0 && acc.strides[nd - 1] == 1 && matches!(acc.conv, Conv::Same(_));
        let mut e = 0;
        while e < self.rows {
            let run = if runs { (self.outer[nd - 1] - idx[nd - 1]).min(self.rows - e) } else { 1 };
            // SAFETY: per the contract, positions `off..off + run` (consecutive elements when
            // `run > 1`) lie inside the buffer, and the register holds `rows` elements.
            unsafe {
                if run == 1 {
                    acc.move_one(off, rp.add(e * size), load)
                } else {
                    let m = acc.base.0.offset(off * size as isize);
                    let r = rp.add(e * size);
                    if load {
                        std::ptr::copy_nonoverlapping(m as *const u8, r, run * size)
                    } else {
                        std::ptr::copy_nonoverlapping(r as *const u8, m, run * size)
                    }
                }
            }
            e += run;
            // Advance `run` positions along the last axis, then carry into the others.
            let mut d = nd;
            let mut step = run;
            while d > 0 {
                d -= 1;
                idx[d] += step;
                off += acc.strides[d] * step as isize;
                if idx[d] < self.outer[d] {
                    break;
                }
                off -= acc.strides[d] * self.outer[d] as isize;
                idx[d] = 0;
                step = 1;
            }
        }
    }

    /// True when any of the first `n` elements of the bool register `r` is true.
    fn any(&self, r: pyasc_ir::tile::Reg, n: usize) -> bool {
        match self.vals[r.0 as usize] {
            Val::Scalar(v) => v.as_bool() && n > 0,
            Val::Ptr(p) => {
                // SAFETY: the register holds its extent, `n` bytes (bools are one byte each).
                let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
                // Eight lanes at a time (a byte loop with an early exit does not vectorise).
                let words = bytes.chunks_exact(8);
                let rest = words.remainder();
                words.fold(0u64, |acc, w| acc | u64::from_ne_bytes(w.try_into().expect("8 bytes"))) != 0
                    || rest.iter().any(|&b| b != 0)
            }
        }
    }

    /// Run one vector instruction.
    ///
    /// # Safety
    /// Register memory holds every register's extent at its level.
    unsafe fn op(&mut self, ins: &Instr, depth: usize) -> Result<()> {
        let k = self.k;
        if let Instr::Reduce { op, dst, src } = *ins {
            let (n, c) = (self.extent(depth - 1), self.chunk[depth - 1].1);
            let dtype = k.regs[src.0 as usize].dtype;
            // SAFETY: the source holds n rows of c elements, the destination n values.
            return unsafe { exec_reduce(op, dtype, self.vals[src.0 as usize], self.vals[dst.0 as usize], n, c) };
        }
        let ld = self.level(ins.dst());
        let n = self.extent(ld);
        let expand = ins.srcs().iter().any(|&r| self.level(r) < ld && matches!(self.vals[r.0 as usize], Val::Ptr(_)));
        if !expand {
            // SAFETY: every register value holds `n` elements (or is a scalar).
            return unsafe { exec(ins, &k.regs, &self.vals, n) };
        }
        let mut local = self.vals.clone();
        for (slot, &r) in ins.srcs().iter().enumerate() {
            let ls = self.level(r);
            let Val::Ptr(sp) = self.vals[r.0 as usize] else { continue };
            if ls >= ld {
                continue;
            }
            // A value of a lower level repeats over the inner chunks.
            let size = k.regs[r.0 as usize].dtype.size();
            let from = self.extent(ls);
            let rep = n / from.max(1);
            if self.tmp[slot].len() * 64 < n * size {
                self.tmp[slot] = lines(n * size);
            }
            let tp = self.tmp[slot].as_mut_ptr() as *mut u8;
            for e in 0..from {
                for t in 0..rep {
                    // SAFETY: `e < from` elements in the source, `n` in the expansion.
                    unsafe { std::ptr::copy_nonoverlapping(sp.add(e * size), tp.add((e * rep + t) * size), size) };
                }
            }
            local[r.0 as usize] = Val::Ptr(tp);
        }
        // SAFETY: every register value now holds `n` elements (or is a scalar).
        unsafe { exec(ins, &k.regs, &local, n) }
    }

    /// Poll cancellation every few iterations of a mask loop (a check reads the clock).
    fn poll(&self, turns: &mut u32) -> Result<()> {
        *turns = turns.wrapping_add(1);
        if let (Some(t), 0) = (self.token, *turns % 64) {
            t.check()?;
        }
        Ok(())
    }

    /// Run a mask loop of the tile's outer level whose body is lane-wise instructions only,
    /// packing the running lanes together whenever at most half of those in play still run.
    ///
    /// A lane whose condition is false is done: the body keeps the values the program reads
    /// after the loop unchanged on it, so it can leave the loop with them. Registers the body
    /// writes go back to the lanes' own positions when they leave; the registers it only
    /// reads are packed alongside and never written back.
    ///
    /// # Safety
    /// As for [`Block::run`], at depth 0.
    unsafe fn run_packing(&mut self, w: &WhileAny) -> Result<()> {
        let rows = self.rows;
        let mut m = rows;
        let cond = w.cond.0 as usize;
        let Val::Ptr(cp) = self.vals[cond] else { return Err(IrError::internal("a packed mask loop tests a scalar")) };
        // SAFETY: the condition register holds `rows` bools.
        let mut running = unsafe { count_true(cp, m) };
        let mut pack: Option<Packed> = None;
        let mut turns = 0u32;
        let mut result = Ok(());
        while running > 0 {
            if m >= PACK_MIN_LANES && running * 2 <= m {
                let p = pack.get_or_insert_with(|| Packed::new(self, &w.body, rows));
                // SAFETY: registers hold `m` lanes in play; `p` maps them home.
                unsafe { p.repack(self, m, cond) };
                m = running;
                self.rows = m;
            }
            if let Err(e) = self.poll(&mut turns) {
                result = Err(e);
                break;
            }
            // SAFETY: every register in play holds `m` lanes (`self.rows`).
            if let Err(e) = unsafe { self.run(&w.body) } {
                result = Err(e);
                break;
            }
            let Val::Ptr(cp) = self.vals[cond] else { break };
            // SAFETY: the condition holds `m` bools.
            running = unsafe { count_true(cp, m) };
        }
        if let Some(p) = pack {
            // SAFETY: the packed registers hold `m` lanes whose homes `p` records.
            unsafe { p.unpack(self, m) };
        }
        self.rows = rows;
        result
    }

    /// Run a mask loop on the whole tile: its body while any lane's condition holds.
    ///
    /// # Safety
    /// As for [`Block::run`].
    unsafe fn run_while(&mut self, w: &WhileAny) -> Result<()> {
        let n = self.extent(self.level(w.cond));
        let mut turns = 0u32;
        while self.any(w.cond, n) {
            self.poll(&mut turns)?;
            // SAFETY: per this function's contract.
            unsafe { self.run(&w.body)? };
        }
        Ok(())
    }

    /// # Safety
    /// As for [`Block::op`] and [`Block::transfer`].
    unsafe fn run(&mut self, stmts: &[Stmt]) -> Result<()> {
        let depth = self.chunk.len();
        for s in stmts {
            let key = s as *const Stmt as usize;
            match s {
                Stmt::Op(Instr::Copy { dst, src }) if self.swaps.contains(&key) => {
                    self.vals.swap(dst.0 as usize, src.0 as usize);
                }
                // SAFETY: per this function's contract.
                Stmt::Op(ins) => unsafe { self.op(ins, depth)? },
                Stmt::Load { dst, .. } => {
                    let acc = self.acc;
                    // SAFETY: as above.
                    unsafe { self.transfer(&acc[&key], *dst, true) }
                }
                Stmt::Store { src, .. } => {
                    let acc = self.acc;
                    // SAFETY: as above.
                    unsafe { self.transfer(&acc[&key], *src, false) }
                }
                Stmt::While(w) if depth == 0 && matches!(self.vals[w.cond.0 as usize], Val::Ptr(_)) => {
                    if let Some(lp) = self.lanes.get(&key) {
                        // SAFETY: the tile registers hold `rows` lanes (this function's contract).
                        unsafe { crate::program_lanes::run(self.k, &self.vals, self.rows, lp, self.token)? }
                    } else if packable(&w.body) {
                        // SAFETY: per this function's contract.
                        unsafe { self.run_packing(w)? }
                    } else {
                        // SAFETY: per this function's contract.
                        unsafe { self.run_while(w)? };
                    }
                }
                // SAFETY: per this function's contract.
                Stmt::While(w) => unsafe { self.run_while(w)? },

                Stmt::Loop(l) => {
                    let extent = self.k.shape.0[l.axis];
                    let mut o = 0;
                    while o < extent {
                        self.chunk.push((o, l.step.min(extent - o)));
                        // SAFETY: per this function's contract.
                        let r = unsafe { self.run(&l.body) };
                        self.chunk.pop();
                        r?;
                        o += l.step;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Fewest lanes worth packing: below this a body's instructions cost their dispatch more
/// than their lanes.
const PACK_MIN_LANES: usize = 64;

/// True for a mask-loop body that only runs lane-wise instructions (no loads, stores, loops,
/// nested mask loops or row reductions): its lanes can run in any arrangement.
fn packable(body: &[Stmt]) -> bool {
    body.iter().all(|s| matches!(s, Stmt::Op(i) if !i.per_row()))
}

/// The packed lanes of a mask loop: the registers its body touches, moved into buffers of
/// their own, and the home position of every packed lane.
///
/// Each register has two packed buffers, and each packing gathers into the set not in use:
/// the body may swap registers' buffers ([`swappable_copies`]), so a register's current
/// lanes can sit in another register's buffer, and gathering in place could overwrite them.
struct Packed {
    /// (register, its full-tile memory, its two packed buffers, written by the body).
    regs: Vec<(usize, *mut u8, [Vec<Line>; 2], bool)>,
    /// The buffer set the next packing gathers into.
    flip: usize,
    /// Home position in the tile of every packed lane.
    home: Vec<u32>,
    /// The lanes kept by the latest packing.
    sel: Vec<u32>,
    /// False until the first packing moves the lanes out of the full-tile registers.
    packed: bool,
}

impl Packed {
    fn new(b: &Block<'_>, body: &[Stmt], rows: usize) -> Packed {
        let mut regs: Vec<(usize, *mut u8, [Vec<Line>; 2], bool)> = Vec::new();
        let mut add = |r: usize, written: bool| {
            if let Some(e) = regs.iter_mut().find(|e| e.0 == r) {
                e.3 |= written;
            } else if let Val::Ptr(p) = b.vals[r] {
                let n = rows * b.k.regs[r].dtype.size();
                regs.push((r, p, [lines(n), lines(n)], written));
            }
        };
        for s in body {
            if let Stmt::Op(i) = s {
                i.srcs().iter().for_each(|r| add(r.0 as usize, false));
                add(i.dst().0 as usize, true);
            }
        }
        Packed { regs, flip: 0, home: Vec::new(), sel: Vec::new(), packed: false }
    }

    /// Keep the lanes among the `m` in play whose condition `cond` is true, packed in order;
    /// the others leave, their written registers' values going home.
    ///
    /// # Safety
    /// Every register in `regs` holds `m` lanes at its current value in `b`.
    unsafe fn repack(&mut self, b: &mut Block<'_>, m: usize, cond: usize) {
        let Val::Ptr(cp) = b.vals[cond] else { return };
        // SAFETY: the condition holds `m` bools.
        unsafe { true_lanes(cp, m, &mut self.sel) };
        // The lanes leaving, listed before any register (the condition among them) moves.
        let mut leave = Vec::new();
        if self.packed {
            let mut kept = self.sel.iter().peekable();
            for j in 0..m as u32 {
                if kept.next_if_eq(&&j).is_none() {
                    leave.push(j as usize);
                }
            }
        }
        for (r, full, bufs, written) in &mut self.regs {
            let size = b.k.regs[*r].dtype.size();
            let Val::Ptr(cur) = b.vals[*r] else { continue };
            let dst = bufs[self.flip].as_mut_ptr() as *mut u8;
            // SAFETY: `cur` holds `m` lanes; `dst` the tile's; `full` the tile's positions.
            unsafe {
                if *written {
                    scatter(size, cur, *full, &self.home, leave.iter().copied());
                }
                gather(size, cur, dst, &self.sel);
            }
            b.vals[*r] = Val::Ptr(dst);
        }
        self.flip ^= 1;
        if self.packed {
            let home = &mut self.home;
            for (k, &j) in self.sel.iter().enumerate() {
                home[k] = home[j as usize];
            }
            home.truncate(self.sel.len());
        } else {
            self.home.clone_from(&self.sel);
        }
        self.packed = true;
    }

    /// Send the `m` packed lanes' written values home and give the registers their memory back.
    ///
    /// # Safety
    /// Every register in `regs` holds `m` packed lanes in `b`.
    unsafe fn unpack(self, b: &mut Block<'_>, m: usize) {
        for (r, full, _bufs, written) in &self.regs {
            if self.packed && *written {
                if let Val::Ptr(cur) = b.vals[*r] {
                    // SAFETY: `cur` holds `m` packed lanes with homes in `full`.
                    unsafe { scatter(b.k.regs[*r].dtype.size(), cur, *full, &self.home, 0..m) };
                }
            }
            b.vals[*r] = Val::Ptr(*full);
        }
    }
}

/// Run a kernel's structured program; returns (tiles, blocks).
///
/// # Safety
/// `args` must be live views of the kernel's arguments (views applied) and `outs` views of
/// its output buffers; the plan must have passed verification.
pub unsafe fn run_program(
    k: &TileKernel,
    p: &Program,
    args: &[&InputView],
    outs: &[InputView],
) -> Result<(usize, usize)> {
    let rank = k.shape.rank();
    let loops = p.loops(rank)?;
    let outer: Vec<usize> = k.shape.0[..rank - loops.len()].to_vec();
    let outer_n: usize = outer.iter().product();
    if outer_n == 0 {
        return Ok((0, 0));
    }
    let mut acc = HashMap::new();
    accesses(k, &p.body, 0, &loops, args, outs, &mut acc)?;
    let swaps = swappable_copies(k, p);
    let lanes = crate::program_lanes::compile(k, p, &swaps);
    let rows = k.tile_elems.max(1);
    let tiles = outer_n.div_ceil(rows);
    let token = crate::interrupt::current();
    let run_range = |range: std::ops::Range<usize>| -> Result<()> {
        let began = std::time::Instant::now();
        let mut mem = Vec::with_capacity(k.regs.len());
        let mut vals = Vec::with_capacity(k.regs.len());
        for (i, r) in k.regs.iter().enumerate() {
            let level = p.levels[i] as usize;
            match r.kind {
                RegKind::Scalar(v) => {
                    mem.push(Vec::new());
                    vals.push(Val::Scalar(v));
                }
                _ => {
                    let cap = rows * loops[..level].iter().map(|l| l.1).product::<usize>();
                    let mut m = lines(cap * r.dtype.size());
                    vals.push(Val::Ptr(m.as_mut_ptr() as *mut u8));
                    mem.push(m);
                }
            }
        }
        let mut b = Block {
            k,
            p,
            loops: &loops,
            outer: &outer,
            acc: &acc,
            swaps: &swaps,
            lanes: &lanes,
            mem,
            vals,
            tmp: [Vec::new(), Vec::new(), Vec::new()],
            row0: 0,
            rows: 0,
            chunk: Vec::new(),
            token: token.as_deref(),
        };
        for t in range {
            if let Some(token) = &token {
                token.check()?;
            }
            b.row0 = t * rows;
            b.rows = rows.min(outer_n - b.row0);
            // SAFETY: registers are sized for a full tile; accesses were verified.
            unsafe { b.run(&p.body)? };
        }
        drop(b.mem);
        crate::monitor::record_busy(began, std::time::Instant::now());
        Ok(())
    };
    let threads = num_threads();
    if k.shape.numel() < crate::vm::PARALLEL_THRESHOLD || tiles == 1 || threads == 1 {
        run_range(0..tiles)?;
        return Ok((tiles, 1));
    }
    let blocks = tiles.min(threads * 4);
    crate::pool::for_blocks(blocks, threads - 1, |b| run_range(b * tiles / blocks..(b + 1) * tiles / blocks))?;
    Ok((tiles, blocks))
}
