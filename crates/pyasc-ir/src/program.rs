//! Structured tile programs: explicit loads and stores, loop nests with carried registers.
//!
//! The flat form of a [`TileKernel`] (a straight-line `body` whose `Arg`/`Out` registers
//! are implicitly memory) stays the fast path for elementwise and row kernels. A kernel
//! whose [`TileKernel::program`] is set runs a [`Program`] instead, in which memory is only
//! touched by [`Stmt::Load`] and [`Stmt::Store`] and loops may walk an axis in chunks while
//! registers carry values across iterations (a running max and sum: online softmax).
//!
//! The iteration space is the kernel's `shape` (logical order, `perm` the identity). Loops at
//! depth `d` (1 for a loop at the top level) all walk the same axis `a_d` in chunks of the
//! same `step`; the walked axes are the trailing ones, outermost loop first. The other,
//! leading axes form the *outer space*: the program runs once per tile of `tile_elems`
//! consecutive positions of it (C order).
//!
//! Every register has a *level* ([`Program::levels`]): a level-`l` register holds one value
//! per position of the tile's outer positions times the current chunks of the loops at
//! depths `1..=l`. An instruction at depth `d` writes a register of level `<= d` and reads
//! registers of levels `<=` its result's (a lower level broadcasts over the chunk);
//! `Reduce` at depth `d` turns a level-`d` register into a level-`d - 1` one (over the
//! current chunk). Loads and stores at depth `d` move level-`d` registers and address the
//! *space at depth `d`*: the kernel's shape with the axes of deeper loops set to 1.
//!
//! Scoping: a register first written inside a loop lives in that loop's body and may not be
//! read after it, unless the loop *carries* it: a carried register is written before the
//! loop (its initial value), may be updated by the body, and holds the last iteration's
//! value after the loop.
//!
//! A [`WhileAny`] repeats its body while any element of a bool register is true: the lanes
//! of the tile run in lock step, and lanes whose work is finished are kept unchanged by
//! masks (selects) the body computes itself. It walks no axis, so it changes no levels: its
//! body sits at the depth of the statement, but scopes registers like a loop (a register
//! written before it and updated inside must be carried; the condition always is).

use crate::dtype::DType;
use crate::error::{IrError, Result};
use crate::shape::Shape;
use crate::tile::{dtypes_ok, BufferDecl, Instr, Reg, RegKind, TileKernel};
use crate::view::ViewSpec;
use std::fmt::Write;

/// How a load or store addresses its buffer from a position of the space at its depth.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IndexMap {
    /// The buffer holds the space's elements in C order (same number of elements).
    Identity,
    /// The buffer broadcasts to the space (NumPy's rules): loads only.
    Broadcast,
    /// Position `p` addresses `p + offsets` (one constant per axis of the kernel): stencil
    /// neighbours. Every addressed position lies inside the buffer.
    Offset(Vec<isize>),
}

/// A loop over one axis of the kernel, in chunks.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// The kernel axis walked.
    pub axis: usize,
    /// Elements of the axis per iteration (the last chunk may be shorter).
    pub step: usize,
    /// Registers of the enclosing level the body updates and later code reads.
    pub carried: Vec<Reg>,
    /// The loop body.
    pub body: Vec<Stmt>,
}

/// A loop run while any element of `cond` is true (the body recomputes `cond`).
#[derive(Clone, Debug, PartialEq)]
pub struct WhileAny {
    /// Bool register of the enclosing depth's level, tested before every iteration.
    pub cond: Reg,
    /// Registers written before the loop that the body updates (`cond` among them).
    pub carried: Vec<Reg>,
    /// The loop body.
    pub body: Vec<Stmt>,
}

/// One statement of a structured program.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// A vector instruction over the registers' current extents.
    Op(Instr),
    /// `dst = convert(args[arg][map(position)])`: the buffer's dtype is the storage dtype,
    /// `dst`'s the compute dtype (16-bit floats widen to 32 or 64 bits).
    Load {
        /// Destination register.
        dst: Reg,
        /// Argument index.
        arg: u16,
        /// Addressing.
        map: IndexMap,
    },
    /// `outs[out][map(position)] = convert(src)` (to a 16-bit float rounds to nearest even).
    Store {
        /// Source register.
        src: Reg,
        /// Output index.
        out: u16,
        /// Addressing.
        map: IndexMap,
    },
    /// A loop with carried registers.
    Loop(Loop),
    /// A loop while any lane of a mask is true.
    While(WhileAny),
}

/// A structured tile program.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    /// Level of each register of the kernel.
    pub levels: Vec<u8>,
    /// Statements run once per tile of the outer space.
    pub body: Vec<Stmt>,
}

/// True when values stored as `storage` may be computed on as `compute` (and back).
pub fn converts(storage: DType, compute: DType) -> bool {
    storage == compute || (matches!(storage, DType::F16 | DType::BF16) && matches!(compute, DType::F32 | DType::F64))
}

impl Program {
    /// The loop axes and steps by depth (`[0]` is depth 1), checked consistent: siblings
    /// agree, axes increase with depth and are the trailing axes of a rank-`rank` space.
    pub fn loops(&self, rank: usize) -> Result<Vec<(usize, usize)>> {
        fn walk(stmts: &[Stmt], depth: usize, out: &mut Vec<(usize, usize)>) -> Result<()> {
            for s in stmts {
                if let Stmt::Loop(l) = s {
                    if l.step == 0 {
                        return Err(IrError::internal(format!("a loop over axis {} has step 0", l.axis)));
                    }
                    match out.get(depth) {
                        Some(&(a, st)) if (a, st) != (l.axis, l.step) => {
                            return Err(IrError::internal(format!(
                                "loops at depth {} walk axis {a} by {st} and axis {} by {}",
                                depth + 1,
                                l.axis,
                                l.step
                            )))
                        }
                        Some(_) => {}
                        None => out.push((l.axis, l.step)),
                    }
                    walk(&l.body, depth + 1, out)?;
                }
                if let Stmt::While(w) = s {
                    walk(&w.body, depth, out)?;
                }
            }
            Ok(())
        }
        let mut out = Vec::new();
        walk(&self.body, 0, &mut out)?;
        let first = rank.checked_sub(out.len()).ok_or_else(|| IrError::internal("more loops than axes"))?;
        for (d, &(a, _)) in out.iter().enumerate() {
            if a != first + d {
                return Err(IrError::internal(format!(
                    "the loop at depth {} walks axis {a}; loops walk the trailing axes in order",
                    d + 1
                )));
            }
        }
        Ok(out)
    }
}

/// The space a load or store at `depth` addresses: `shape` with the axes of deeper loops
/// set to 1.
pub fn space_at(shape: &Shape, loops: &[(usize, usize)], depth: usize) -> Shape {
    let mut dims = shape.0.clone();
    for &(a, _) in &loops[depth..] {
        dims[a] = 1;
    }
    Shape(dims)
}

/// Check a map against the buffer (through its views) it addresses in `space`.
fn check_map(map: &IndexMap, buf: &Shape, space: &Shape, load: bool) -> std::result::Result<(), String> {
    match map {
        IndexMap::Identity if buf.numel() == space.numel() => Ok(()),
        IndexMap::Identity => Err(format!("identity map of {buf} over {space}")),
        IndexMap::Broadcast if load && buf.broadcasts_to(space) => Ok(()),
        IndexMap::Broadcast => Err(format!("broadcast map of {buf} over {space}")),
        IndexMap::Offset(off) => {
            if off.len() != space.rank() || buf.rank() != space.rank() {
                return Err(format!("offsets {off:?} for {buf} over {space}"));
            }
            for ((o, s), b) in off.iter().zip(&space.0).zip(&buf.0) {
                // Positions 0..s shifted by o stay inside 0..b (an empty space reads nothing).
                if *s > 0 && (*o < 0 || (*s as isize + *o) > *b as isize) {
                    return Err(format!("offsets {off:?} reach outside {buf} from {space}"));
                }
            }
            Ok(())
        }
    }
}

struct Checker<'a> {
    k: &'a TileKernel,
    p: &'a Program,
    buffers: &'a [BufferDecl],
    loops: Vec<(usize, usize)>,
    /// Nesting (of loops of either kind) of the scope each register was first written in.
    scope: Vec<Option<usize>>,
    /// Loops of either kind around the current statement.
    nest: usize,
    /// Registers carried by the enclosing loops.
    carried: Vec<Vec<Reg>>,
}

impl Checker<'_> {
    fn err<T>(&self, m: String) -> Result<T> {
        Err(IrError::internal(format!("kernel {}: {m}", self.k.name)))
    }

    fn level(&self, r: Reg) -> Result<usize> {
        match (self.k.regs.get(r.0 as usize), self.p.levels.get(r.0 as usize)) {
            (Some(_), Some(l)) => Ok(*l as usize),
            _ => self.err(format!("{r} is not a register")),
        }
    }

    fn dtype(&self, r: Reg) -> DType {
        self.k.regs[r.0 as usize].dtype
    }

    fn read(&self, r: Reg, _depth: usize) -> Result<usize> {
        let l = self.level(r)?;
        match self.k.regs[r.0 as usize].kind {
            RegKind::Scalar(_) => return Ok(0),
            RegKind::Tile => {}
            _ => return self.err(format!("{r} is memory; programs touch memory by loads and stores")),
        }
        if self.scope[r.0 as usize].is_none_or(|s| s > self.nest) {
            return self.err(format!("{r} is read before it is written (or after its loop)"));
        }
        Ok(l)
    }

    fn write(&mut self, r: Reg, depth: usize) -> Result<usize> {
        let l = self.level(r)?;
        if self.k.regs[r.0 as usize].kind != RegKind::Tile {
            return self.err(format!("{r} is not a scratch register"));
        }
        if l > depth {
            return self.err(format!("{r} of level {l} is written at depth {depth}"));
        }
        match self.scope[r.0 as usize] {
            None => self.scope[r.0 as usize] = Some(self.nest),
            Some(s) if s == self.nest => {}
            Some(_) if self.carried.iter().any(|c| c.contains(&r)) => {}
            Some(_) => return self.err(format!("{r} is written in a loop that does not carry it")),
        }
        Ok(l)
    }

    /// The shape of argument `arg` (or output, when `!load`) as the program sees it.
    fn buffer(&self, i: u16, load: bool) -> Result<(Shape, DType)> {
        let b = if load { self.k.args.get(i as usize) } else { self.k.outs.get(i as usize) };
        let Some(d) = b.and_then(|b| self.buffers.get(b.0 as usize)) else {
            return self.err(format!("{} {i} is no buffer", if load { "argument" } else { "output" }));
        };
        let mut shape = d.shape.clone();
        if load {
            let views: &[ViewSpec] = self.k.arg_views.get(i as usize).map_or(&[], |v| v);
            for v in views {
                shape = v.out_shape(&shape)?;
            }
        }
        Ok((shape, d.dtype))
    }

    fn stmts(&mut self, stmts: &[Stmt], depth: usize) -> Result<()> {
        for s in stmts {
            match s {
                Stmt::Op(ins) => {
                    let mut levels = Vec::new();
                    let mut dtypes = Vec::new();
                    for &r in ins.srcs().iter() {
                        if r == ins.dst() {
                            return self.err(format!("{ins:?} reads its own destination"));
                        }
                        levels.push(self.read(r, depth)?);
                        dtypes.push(self.dtype(r));
                    }
                    let dst = self.write(ins.dst(), depth)?;
                    let top = levels.iter().copied().max().unwrap_or(0);
                    let ok = match ins {
                        Instr::Reduce { .. } => depth >= 1 && levels[0] == depth && dst + 1 == depth,
                        // Row scans run in flat row kernels only.
                        Instr::Scan { .. } | Instr::ScanMap { .. } => false,
                        _ => dst >= top,
                    };
                    if !ok {
                        return self.err(format!("{ins:?} at depth {depth} mixes levels {levels:?} -> {dst}"));
                    }
                    if !dtypes_ok(ins, self.dtype(ins.dst()), &dtypes) {
                        return self.err(format!("{ins:?} has operands of the wrong dtype"));
                    }
                }
                Stmt::Load { dst, arg, map } => {
                    let (shape, storage) = self.buffer(*arg, true)?;
                    if self.write(*dst, depth)? != depth {
                        return self.err(format!("load into {dst} of another level than depth {depth}"));
                    }
                    let space = space_at(&self.k.shape, &self.loops, depth);
                    check_map(map, &shape, &space, true).or_else(|m| self.err(m))?;
                    if !converts(storage, self.dtype(*dst)) {
                        return self.err(format!("load of {storage} into {}", self.dtype(*dst)));
                    }
                }
                Stmt::Store { src, out, map } => {
                    let (shape, storage) = self.buffer(*out, false)?;
                    if self.k.regs.get(src.0 as usize).is_some_and(|r| r.kind != RegKind::Tile) {
                        return self.err(format!("store of {src}, which is not a scratch register"));
                    }
                    if self.read(*src, depth)? != depth {
                        return self.err(format!("store of {src} of another level than depth {depth}"));
                    }
                    let space = space_at(&self.k.shape, &self.loops, depth);
                    check_map(map, &shape, &space, false).or_else(|m| self.err(m))?;
                    if !converts(storage, self.dtype(*src)) {
                        return self.err(format!("store of {} into {storage}", self.dtype(*src)));
                    }
                }
                Stmt::Loop(l) => self.nested(&l.carried, &l.body, depth, depth + 1)?,
                Stmt::While(w) => {
                    if self.dtype(w.cond) != DType::Bool || !w.carried.contains(&w.cond) {
                        return self.err(format!("while condition {} is not a carried bool register", w.cond));
                    }
                    self.nested(&w.carried, &w.body, depth, depth)?;
                }
            }
        }
        Ok(())
    }
}

impl Checker<'_> {
    /// Check a loop body run at `inner` depth with `carried` registers of depth `depth`.
    fn nested(&mut self, carried: &[Reg], body: &[Stmt], depth: usize, inner: usize) -> Result<()> {
        for &r in carried {
            if self.read(r, depth)? != depth || self.scope[r.0 as usize] != Some(self.nest) {
                return self.err(format!("carried {r} is not a value of depth {depth} set before the loop"));
            }
        }
        self.carried.push(carried.to_vec());
        self.nest += 1;
        let r = self.stmts(body, inner);
        self.nest -= 1;
        self.carried.pop();
        r?;
        // The body's own registers end with it.
        let nest = self.nest;
        for s in self.scope.iter_mut() {
            if s.is_some_and(|s| s > nest) {
                *s = None;
            }
        }
        Ok(())
    }
}

/// Check a kernel's structured program (see the module documentation for the rules).
pub fn verify_program(k: &TileKernel, p: &Program, buffers: &[BufferDecl], ready: &[bool]) -> Result<()> {
    let err = |m: String| Err(IrError::internal(format!("kernel {}: {m}", k.name)));
    if !k.body.is_empty() || k.library.is_some() || k.row_len != 0 {
        return err("a structured program is the kernel's only code".into());
    }
    if k.perm.iter().enumerate().any(|(i, p)| i != *p) || k.perm.len() != k.shape.rank() {
        return err("a structured program iterates in logical order".into());
    }
    if p.levels.len() != k.regs.len() {
        return err("one level per register".into());
    }
    if k.arg_views.len() != k.args.len() {
        return err("one view list per argument".into());
    }
    if k.tile_elems == 0 {
        return err("tile_elems is 0".into());
    }
    for b in &k.args {
        if !ready.get(b.0 as usize).copied().unwrap_or(false) {
            return err(format!("reads b{} before it is written", b.0));
        }
    }
    for (i, r) in k.regs.iter().enumerate() {
        if matches!(r.kind, RegKind::Arg(_) | RegKind::Out(_)) || r.row {
            return err(format!("register r{i} is memory or a row register; programs use loads and stores"));
        }
    }
    let loops = p.loops(k.shape.rank())?;
    let mut c = Checker { k, p, buffers, loops, scope: vec![None; k.regs.len()], nest: 0, carried: Vec::new() };
    for (i, r) in k.regs.iter().enumerate() {
        if let RegKind::Scalar(_) = r.kind {
            c.scope[i] = Some(0);
        }
    }
    c.stmts(&p.body, 0)
}

fn map_str(m: &IndexMap) -> String {
    match m {
        IndexMap::Identity => String::new(),
        IndexMap::Broadcast => " broadcast".into(),
        IndexMap::Offset(o) => format!(" offset{o:?}"),
    }
}

/// Print a structured program, one statement a line, loop bodies indented.
pub fn program_to_string(k: &TileKernel, p: &Program, out: &mut String) {
    fn stmts(k: &TileKernel, list: &[Stmt], indent: usize, s: &mut String) {
        let pad = "  ".repeat(indent);
        for st in list {
            match st {
                Stmt::Op(ins) => {
                    let _ = writeln!(s, "{pad}{}", crate::print::instr_to_string(k, ins));
                }
                Stmt::Load { dst, arg, map } => {
                    let b = k.args.get(*arg as usize).map_or(u32::MAX, |b| b.0);
                    let _ = writeln!(s, "{pad}{dst} = load b{b}{}", map_str(map));
                }
                Stmt::Store { src, out, map } => {
                    let b = k.outs.get(*out as usize).map_or(u32::MAX, |b| b.0);
                    let _ = writeln!(s, "{pad}store b{b}{} = {src}", map_str(map));
                }
                Stmt::Loop(l) => {
                    let carried: Vec<String> = l.carried.iter().map(|r| r.to_string()).collect();
                    let _ = writeln!(s, "{pad}loop axis {} step {} carry [{}] {{", l.axis, l.step, carried.join(", "));
                    stmts(k, &l.body, indent + 1, s);
                    let _ = writeln!(s, "{pad}}}");
                }
                Stmt::While(w) => {
                    let carried: Vec<String> = w.carried.iter().map(|r| r.to_string()).collect();
                    let _ = writeln!(s, "{pad}while any {} carry [{}] {{", w.cond, carried.join(", "));
                    stmts(k, &w.body, indent + 1, s);
                    let _ = writeln!(s, "{pad}}}");
                }
            }
        }
    }
    stmts(k, &p.body, 1, out);
}
