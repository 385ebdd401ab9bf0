//! The tile VM: runs a kernel plan on the host cores.
//!
//! A kernel's iteration space (its output shape, collapsed to as few dims as the operand
//! layouts allow) is cut into tiles of `tile_elems` consecutive elements; tiles are dealt
//! out in contiguous ranges (blocks) to the launching thread and the worker pool, which
//! claim blocks until none is left. Per tile each register resolves to memory: arguments
//! in C order and outputs in place, strided arguments gathered into the block's scratch
//! (arguments of one layout, such as several columns of one array, in a single walk), scratch
//! tiles reused for every tile of the block and never cleared (each is written before it is
//! read). Then the body runs instruction by instruction, each a SIMD loop over the whole tile,
//! while the next tile's memory is prefetched. Very large outputs are computed in scratch and written with streaming stores.

use crate::instr::{exec, Val};
use crate::layout::{broadcast_strides, classify, collapse, gather_elems, Access};
use crate::pool::num_threads;
use crate::view::{read_scalar, InputView, OutputPtr, SendPtr};
use pyasc_events::event::{self, Event, EventKind};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::tile::{BufferKind, Instr, KernelPlan, RegKind, TileKernel};
use pyasc_ir::DType;
use std::borrow::Cow;
use std::time::Instant;

pub mod capture;
pub mod check;
pub mod column_gather;
mod column_outs;
mod column_phases;
mod columns;
mod exec_level;
mod extreme_pairs;
pub mod half_cast;
pub mod instr;
mod joint_gather;
pub mod kernel_facts;
pub mod layout;
mod long_rows;
pub mod movement;
mod row_args;
pub mod scan_map;
mod scratch;
pub mod stack_columns;
pub mod view;

use exec_level::exec_level;
use scratch::Scratch;

use crate::memory::{store_fence, stream_copy};
use crate::program_lanes;

/// Below this many elements a kernel runs on the calling thread.
pub const PARALLEL_THRESHOLD: usize = 1 << 15;
/// Blocks per worker, for load balance.
const BLOCKS_PER_THREAD: usize = 4;

/// One kernel launch as the log and the profiler see it: an event of kind
/// [`EventKind::Kernel`] with the counters `elements`, `tiles` and `blocks`.
pub type KernelRecord = Event;

/// What a plan execution did.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// One record per kernel, in order.
    pub kernels: Vec<KernelRecord>,
    /// With [`RunOptions::keep_outputs`]: a copy of every buffer each kernel wrote, in order.
    pub outputs: Vec<crate::capture::KernelOutput>,
    /// With [`RunOptions::keep_outputs`]: the error that stopped the run after the outputs
    /// so far were kept (a failed NaN/Inf check), to be raised by the caller.
    pub error: Option<IrError>,
}

/// How each kernel argument is read during a launch.
enum ArgMode {
    Contiguous(SendPtr),
    Broadcast(pyasc_ir::Scalar),
    Strided(SendPtr, Vec<usize>, Vec<isize>),
}

/// How to run a plan.
#[derive(Copy, Clone, Debug, Default)]
pub struct RunOptions {
    /// Return a [`KernelRecord`] per kernel in [`RunStats`] (they also go to the event stream
    /// while someone collects, whatever this says).
    pub record: bool,
    /// After each kernel, fail on the first NaN or infinity it wrote (`debug=True`).
    pub check_finite: bool,
    /// After each kernel, copy the buffers it wrote into [`RunStats::outputs`]; a failed
    /// check then ends the run with [`RunStats::error`] instead of an `Err`.
    pub keep_outputs: bool,
    /// The launch's event id ([`event::next_id`]; 0 when no one collects): kernel events carry
    /// it as the counter `launch`.
    pub launch: u64,
}

/// Execute a whole plan. `inputs` are the operator's arguments (in order), `outputs` one
/// C-contiguous buffer per entry of `plan.outputs` (repeated buffers may share memory).
pub fn execute_plan(
    plan: &KernelPlan,
    inputs: &[InputView],
    outputs: &[OutputPtr],
    opts: RunOptions,
) -> Result<RunStats> {
    if outputs.len() != plan.outputs.len() {
        return Err(IrError::internal("wrong number of output buffers"));
    }
    // Memory of every buffer: inputs as given (borrowed), outputs as given, the rest owned here.
    let mut owned: Vec<crate::memory::PoolBlock> = Vec::new();
    let mut views: Vec<Option<Cow<'_, InputView>>> = Vec::with_capacity(plan.buffers.len());
    views.resize_with(plan.buffers.len(), || None);
    for (b, decl) in plan.buffers.iter().enumerate() {
        if let BufferKind::Input(i) = decl.kind {
            let v = inputs.get(i as usize).ok_or_else(|| IrError::internal(format!("missing argument {i}")))?;
            if v.dtype != decl.dtype || v.shape != decl.shape.0 {
                return Err(IrError::internal(format!("argument {i} does not match the compiled signature")));
            }
            views[b] = Some(Cow::Borrowed(v));
        }
    }
    for (o, b) in outputs.iter().zip(&plan.outputs) {
        let decl = &plan.buffers[b.0 as usize];
        views[b.0 as usize] = Some(Cow::Owned(InputView::contiguous(o.0, decl.dtype, decl.shape.0.clone())));
    }
    let columns = column_outs::ColumnOuts::new(plan, &opts);
    for (b, decl) in plan.buffers.iter().enumerate() {
        if views[b].is_none() && columns.of[b].is_none() {
            let mem = crate::memory::allocate(decl.shape.numel() * decl.dtype.size())?;
            let v = InputView::contiguous(mem.as_ptr() as *const u8, decl.dtype, decl.shape.0.clone());
            views[b] = Some(Cow::Owned(v));
            owned.push(mem);
        }
    }
    for b in 0..plan.buffers.len() {
        if let Some((stack, _, _)) = columns.of[b] {
            let v = columns.view(b, views[stack].as_deref().expect("stacks have memory"));
            views[b] = v.map(Cow::Owned);
        }
    }
    let mut stats = RunStats::default();
    let token = crate::interrupt::current();
    for (ki, k) in plan.kernels.iter().enumerate() {
        if columns.skipped[ki] {
            // Its columns were written in place.
            continue;
        }
        if let Some(t) = &token {
            t.check()?;
        }
        let collect = event::enabled();
        let t = (opts.record || collect).then(Instant::now);
        // Blocks of this kernel, on every thread, carry its id while someone collects.
        let kid = if collect { event::next_id() } else { 0 };
        let scope = collect.then(|| event::KernelScope::enter(kid));
        let viewed: Vec<Cow<'_, InputView>> = k
            .args
            .iter()
            .zip(&k.arg_views)
            .map(|(b, specs)| {
                let v: &InputView = views[b.0 as usize].as_ref().expect("all buffers have memory");
                if specs.is_empty() {
                    Ok(Cow::Borrowed(v))
                } else {
                    crate::movement::apply_views(v, specs, &mut owned).map(Cow::Owned)
                }
            })
            .collect::<Result<_>>()?;
        let args: Vec<&InputView> = viewed.iter().map(|v| &**v).collect();
        let outs: Vec<*mut u8> = k
            .outs
            .iter()
            .map(|b| views[b.0 as usize].as_ref().expect("all buffers have memory").ptr as *mut u8)
            .collect();
        // Element stride of each output: the stack's row length for a column written in place.
        let steps: Vec<usize> = k.outs.iter().map(|b| columns.of[b.0 as usize].map_or(1, |(_, _, n)| n)).collect();
        let (tiles, blocks) = match (&k.program, &k.library) {
            (Some(p), _) => {
                let out_views: Vec<InputView> = k
                    .outs
                    .iter()
                    .map(|b| views[b.0 as usize].as_deref().expect("all buffers have memory").clone())
                    .collect();
                // SAFETY: arguments are live views, outputs the kernel's buffers, the plan verified.
                unsafe { crate::program::run_program(k, p, &args, &out_views)? }
            }
            (None, Some(call)) => {
                // SAFETY: arguments are live views and the first output buffer holds the
                // routine's result shape.
                unsafe { crate::library::run_call(call, k, &args, outs[0])? };
                if k.body.is_empty() {
                    (1, 1)
                } else {
                    // The epilogue, over the routine's result.
                    run_kernel(k, &args, &outs, &steps)?
                }
            }
            (None, None) => run_kernel(k, &args, &outs, &steps)?,
        };
        drop(scope);
        if opts.keep_outputs {
            let op = crate::capture::op_names(k);
            for (b, p) in k.outs.iter().zip(&outs) {
                let decl = &plan.buffers[b.0 as usize];
                let n = decl.shape.numel() * decl.dtype.size();
                // SAFETY: every buffer holds its declared shape of its dtype, written by now.
                let bytes = unsafe { std::slice::from_raw_parts(*p as *const u8, n) }.to_vec();
                stats.outputs.push(crate::capture::KernelOutput {
                    kernel: k.name.clone(),
                    op: op.clone(),
                    locs: k.locs.clone(),
                    dtype: decl.dtype,
                    shape: decl.shape.0.clone(),
                    bytes,
                });
            }
        }
        if opts.check_finite {
            let decls: Vec<_> = k
                .outs
                .iter()
                .map(|b| (plan.buffers[b.0 as usize].dtype, plan.buffers[b.0 as usize].shape.numel()))
                .collect();
            match crate::check::check_kernel(k, &args, &outs, &decls) {
                Err(e) if opts.keep_outputs => {
                    stats.error = Some(e);
                    return Ok(stats);
                }
                r => r?,
            }
        }
        if let Some(t) = t {
            let ev = Event::new(EventKind::Kernel, k.name.clone(), t, Instant::now())
                .with("elements", k.shape.numel() as u64)
                .with("tiles", tiles as u64)
                .with("blocks", blocks as u64);
            if collect {
                let ev =
                    crate::kernel_facts::annotate(ev.clone().with("id", kid), k, &plan.buffers, &args, opts.launch);
                event::record(ev);
            }
            if opts.record {
                stats.kernels.push(ev);
            }
        }
    }
    drop(owned);
    Ok(stats)
}

/// Run one kernel; returns (tiles, blocks). `steps` holds each output's element stride (1,
/// or a stack's row length for a per-row output written as a column of it).
fn run_kernel(k: &TileKernel, args: &[&InputView], outs: &[*mut u8], steps: &[usize]) -> Result<(usize, usize)> {
    let n = k.shape.numel();
    if n == 0 {
        return Ok((0, 0));
    }
    let strided_outs = steps.iter().any(|s| *s != 1);
    let dims = &k.shape.0;
    if let Some(done) = if strided_outs { None } else { run_tiny(k, args, outs, n) } {
        return done;
    }
    // Strides of every operand over the iteration space (arguments broadcast against the
    // logical shape, then put in iteration order); the output pattern goes last.
    let mut logical = vec![0usize; dims.len()];
    for (i, p) in k.perm.iter().enumerate() {
        logical[*p] = dims[i];
    }
    // Only arguments the tile program reads get a layout (a matmul kernel's GEMM operands
    // have other shapes).
    let used: Vec<bool> = (0..args.len()).map(|a| k.regs.iter().any(|r| r.kind == RegKind::Arg(a as u16))).collect();
    let mut strides: Vec<Vec<isize>> = args
        .iter()
        .zip(&used)
        .map(|(a, u)| {
            if !*u {
                return vec![0; dims.len()];
            }
            let st = broadcast_strides(&a.shape, &a.strides, &logical);
            k.perm.iter().map(|p| st[*p]).collect()
        })
        .collect();
    strides.push(InputView::contiguous(std::ptr::null(), DType::U8, dims.clone()).strides);
    let cdims = collapse(dims, &mut strides);
    let mut modes: Vec<ArgMode> = args
        .iter()
        .zip(&strides)
        .map(|(a, s)| match classify(&cdims, s) {
            // SAFETY: a broadcast operand has at least one element at its base address.
            Access::Broadcast => ArgMode::Broadcast(unsafe { read_scalar(a.ptr, a.dtype) }),
            Access::Contiguous => ArgMode::Contiguous(SendPtr(a.ptr as *mut u8)),
            Access::Strided(st) => ArgMode::Strided(SendPtr(a.ptr as *mut u8), cdims.clone(), st),
        })
        .collect();
    let gathered: Vec<bool> = modes.iter().map(|m| matches!(m, ArgMode::Strided(..))).collect();
    let outs: Vec<SendPtr> = outs.iter().map(|p| SendPtr(*p)).collect();
    // (The paths for column sums and long rows write their outputs contiguous.)
    if !strided_outs {
        if let Some(done) = columns::run(k, &modes, &outs) {
            return done;
        }
        if let Some(done) = column_phases::run(k, &modes, &outs) {
            return done;
        }
    }
    if long_rows::chunkable(k) && !strided_outs {
        return long_rows::run(k, &modes, &outs, &gathered);
    }
    let row_args = row_args::per_row(k, &mut modes);
    // An argument repeated along the outermost dim (a bias row `b` in `x - b`) has the same
    // tile for every tile when tiles cover whole periods: gather it once per block.
    // Arguments read one value per row are gathered per tile (their layout walks rows).
    let row_arg: Vec<bool> = (0..modes.len())
        .map(|a| k.regs.iter().zip(&row_args).any(|(r, on)| *on && r.kind == RegKind::Arg(a as u16)))
        .collect();
    let period = |(a, m): (usize, &ArgMode)| match m {
        ArgMode::Strided(_, dims, st) if dims.len() >= 2 && st[0] == 0 && !row_arg[a] => {
            Some(dims[1..].iter().product::<usize>())
        }
        _ => None,
    };
    // Row kernels keep their tile (whole rows): it must already hold whole periods (the
    // weight row of a layer norm, whose period is the row).
    let mut tile = k.tile_elems;
    let p = modes.iter().enumerate().filter_map(period).max().unwrap_or(0);
    let whole_periods = p > 0 && p <= tile && modes.iter().enumerate().filter_map(period).all(|q| p.is_multiple_of(q));
    let periodic: Vec<bool> = if whole_periods && (k.row_len == 0 || tile.is_multiple_of(p)) {
        tile = tile / p * p;
        modes.iter().enumerate().map(|am| period(am).is_some()).collect()
    } else {
        vec![false; modes.len()]
    };
    let tile = tile;
    let tiles = n.div_ceil(tile);
    // Large element outputs are computed into scratch and streamed to memory past the caches
    // (no read-for-ownership of lines about to be overwritten, no eviction of inputs).
    let streamed = cfg!(target_arch = "x86_64") && k.streams_outputs();
    // Memory streams walked in step with the tiles: contiguous arguments and element outputs.
    let streams: Vec<(usize, usize)> = k
        .regs
        .iter()
        .filter_map(|r| match r.kind {
            RegKind::Arg(a) => match &modes[a as usize] {
                ArgMode::Contiguous(p) => Some((p.0 as usize, r.dtype.size())),
                _ => None,
            },
            RegKind::Out(o) if !r.row && !streamed => Some((outs[o as usize].0 as usize, r.dtype.size())),
            _ => None,
        })
        .collect();
    // Kernels with transcendental math or 16-bit float conversions compute long enough per
    // tile to hide the next tile's loads behind them; for cheap kernels the hardware prefetcher
    // alone is faster. Only per-element instructions count (a row's sqrt is one value). (X - b)
    // * s over 2**25 float16 values: 6.2 -> 4.1 ms with the prefetch (bfloat16 7.0 -> 5.0 ms),
    // float32 unchanged, A/B in one process.
    let per_element = |i: &Instr| !k.regs[i.dst().0 as usize].row;
    let half = |r: pyasc_ir::tile::Reg| k.regs[r.0 as usize].dtype.is_half();
    let prefetch = k.body.iter().filter(|i| per_element(i)).any(|i| match *i {
        Instr::Unary { op, .. } => op.is_expensive(),
        Instr::Binary { op, .. } => op.is_expensive(),
        Instr::Cast { dst, src } => half(dst) || half(src),
        _ => false,
    });
    // So do row kernels that follow their reductions with two or more element passes (the
    // reduction reads the tile first, the rest computes from cache): layer_norm over 4096 x 1024
    // float32 1.70-1.74 -> 1.60-1.63 ms, x / sqrt(mean(x*x) + eps) 1.32 -> 1.19 ms, A/B in one
    // process; a lone row sum (0.19 -> 0.24 ms) and x - mean(x) (0.78 -> 0.90 ms) were slower
    // with it.
    let passes = k.body.iter().filter(|i| per_element(i)).count();
    // And those with a mapped row sum (a sum of squares) and an element pass after it: with the
    // deviations read where used, layer_norm 2.46-2.68 -> 1.41-1.86 ms and rms_norm 1.56-1.88 ->
    // 1.34-1.41 ms (launches alternating in one process); layer_norm without weights unchanged.
    let mapped_sum = k.body.iter().any(|i| matches!(i, Instr::ReduceMap { .. } | Instr::SumSquaredDev { .. }));
    // Elementwise kernels of two or more passes over the tile too (while they compute from
    // cache, the next tile's lines arrive): over 2**24 float32, max(x * 1.5 + 0.25, 0) 4.9 ->
    // 4.3 ms, the same minus 0.5 5.7 -> 3.9 ms, then squared plus 1 6.8 -> 4.5 ms, A/B in one
    // process; one-pass kernels keep the hardware prefetcher alone.
    let prefetch = prefetch || passes >= 2 || (mapped_sum && passes >= 1);
    let token = crate::interrupt::current();
    let value = |r: u16| match k.regs.get(r as usize).map(|d| d.kind) {
        Some(RegKind::Scalar(v)) => Some(v),
        Some(RegKind::Arg(a)) => match modes[a as usize] {
            ArgMode::Broadcast(v) => Some(v),
            _ => None,
        },
        _ => None,
    };
    let lanes = program_lanes::straight(k, &value);
    let pairs = extreme_pairs::pairs(k, &row_args);
    // Arguments a scaled pair reads in place take no tile of scratch.
    let direct = extreme_pairs::direct_rows(k, &pairs, &modes);
    let gathered: Vec<bool> = gathered.iter().zip(&direct).map(|(g, d)| *g && d.is_none()).collect();
    let run_range = |range: std::ops::Range<usize>| -> Result<()> {
        let end = range.end;
        let began = Instant::now();
        let mut scratch = Scratch::take(k, &gathered, streamed, steps)?;
        let mut first = true;
        for t in range {
            if let Some(token) = &token {
                if let Err(e) = token.check() {
                    scratch.release();
                    return Err(e);
                }
            }
            let start = t * tile;
            let len = tile.min(n - start);
            let next = (prefetch && t + 1 < end).then(|| (start + len, tile.min(n - start - len)));
            let lanes = lanes.as_deref();
            let at = TileAt {
                start,
                len,
                next,
                streams: &streams,
                streamed,
                lanes,
                pairs: &pairs,
                row_args: &row_args,
                steps,
                direct: &direct,
            };
            // SAFETY: modes, outputs and scratch describe memory valid for this tile.
            unsafe { run_tile(k, &modes, &outs, &mut scratch, at, if first { None } else { Some(&periodic) })? };
            first = false;
        }
        if streamed {
            // Streaming stores are weakly ordered: make them visible before the block ends.
            store_fence();
        }
        scratch.release();
        crate::monitor::record_busy(began, Instant::now());
        Ok(())
    };
    let threads = num_threads();
    if n < PARALLEL_THRESHOLD || tiles == 1 || threads == 1 {
        run_range(0..tiles)?;
        return Ok((tiles, 1));
    }
    let blocks = tiles.min(threads * BLOCKS_PER_THREAD);
    crate::pool::for_blocks(blocks, threads - 1, |b| run_range(b * tiles / blocks..(b + 1) * tiles / blocks))?;
    Ok((tiles, blocks))
}

/// A kernel of one tile whose arguments are each C-contiguous in the kernel's shape and order,
/// or a single element: each is read in place or broadcast, so the layout analysis (broadcast
/// strides, collapsing, periods, prefetch streams) has nothing to decide and is skipped. This
/// is the cached call on a small array. `None` when the kernel does not qualify.
fn run_tiny(k: &TileKernel, args: &[&InputView], outs: &[*mut u8], n: usize) -> Option<Result<(usize, usize)>> {
    let in_order = k.perm.iter().enumerate().all(|(i, p)| i == *p);
    if n < 2 || n > k.tile_elems || k.row_len != 0 || !in_order {
        return None;
    }
    let c_contiguous = |a: &InputView| {
        let mut step = 1isize;
        a.shape.iter().zip(&a.strides).rev().all(|(d, s)| {
            let ok = *d == 1 || *s == step;
            step *= *d as isize;
            ok
        })
    };
    let mut modes = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        if a.shape.iter().product::<usize>() == 1 {
            // SAFETY: the operand has one element at its base address.
            modes.push(ArgMode::Broadcast(unsafe { read_scalar(a.ptr, a.dtype) }));
        } else if a.shape == k.shape.0 && c_contiguous(a) {
            modes.push(ArgMode::Contiguous(SendPtr(a.ptr as *mut u8)));
        } else if k.regs.iter().any(|r| r.kind == RegKind::Arg(i as u16)) {
            return None;
        } else {
            // Not read by the tile program (a matmul kernel's GEMM operand).
            modes.push(ArgMode::Broadcast(pyasc_ir::Scalar::Int(0)));
        }
    }
    let outs: Vec<SendPtr> = outs.iter().map(|p| SendPtr(*p)).collect();
    let began = Instant::now();
    let mut scratch = match Scratch::take(k, &[], false, &[]) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    let at = TileAt {
        start: 0,
        len: n,
        next: None,
        streams: &[],
        streamed: false,
        lanes: None,
        pairs: &[],
        row_args: &[],
        steps: &[],
        direct: &[],
    };
    // SAFETY: arguments are contiguous over the kernel's `n` elements or single elements, and
    // outputs hold the kernel's shape.
    let r = unsafe { run_tile(k, &modes, &outs, &mut scratch, at, None) };
    scratch.release();
    crate::monitor::record_busy(began, Instant::now());
    Some(r.map(|()| (1, 1)))
}

/// Ask the caches (L2: the tile is read a little later, and L1 stays free for the tile now
/// computing) for the next tile of every contiguous argument and output while this one
/// computes, so reading memory (and reading output lines for ownership before they are
/// written) overlaps the tile's arithmetic. `streams` holds (base address, element size).
fn prefetch_next(streams: &[(usize, usize)], start: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for &(base, size) in streams {
        let (from, bytes) = (base + start * size, len * size);
        let mut line = from & !63;
        while line < from + bytes {
            // SAFETY: prefetching is a hint; it never faults, whatever the address.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(line as *const i8) };
            line += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (streams, start, len);
}

/// Where a tile lies in the iteration space.
#[derive(Copy, Clone)]
struct TileAt<'a> {
    /// First element.
    start: usize,
    /// Elements.
    len: usize,
    /// The block's next tile (start, len), to prefetch while this one computes.
    next: Option<(usize, usize)>,
    /// Memory streams to prefetch: (base address, element size).
    streams: &'a [(usize, usize)],
    /// Element outputs live in scratch and are streamed out after the body.
    streamed: bool,
    /// The body assembled as one pass ([`program_lanes::straight`]), run instead of the
    /// instructions one by one when the active ISA allows.
    lanes: Option<&'a program_lanes::Lanes>,
    /// Row extremes and their positions run as pairs ([`extreme_pairs::pairs`]); empty when
    /// none pair.
    pairs: &'a [extreme_pairs::Pair],
    /// Per register: an argument read as one value per row ([`row_args::per_row`]); empty
    /// when none is.
    row_args: &'a [bool],
    /// Per output: its element stride (see [`column_outs`]); empty when all are 1.
    steps: &'a [usize],
    /// Per argument: its row stride when a scaled pair reads it in place
    /// ([`extreme_pairs::direct_rows`]); empty when none is.
    direct: &'a [Option<usize>],
}

/// Resolve registers for the tile at `at` and run the body.
///
/// # Safety
/// Argument and output memory must cover the kernel's iteration space.
unsafe fn run_tile(
    k: &TileKernel,
    modes: &[ArgMode],
    outs: &[SendPtr],
    scratch: &mut Scratch,
    at: TileAt,
    reuse: Option<&[bool]>,
) -> Result<()> {
    let TileAt { start, len, next, streams, streamed, lanes, pairs, row_args, steps, direct } = at;
    let in_place = |a: u16| direct.get(a as usize).copied().flatten();
    let step = |o: u16| steps.get(o as usize).copied().unwrap_or(1);
    let base = scratch.mem.as_mut_ptr() as *mut u8;
    for (i, r) in k.regs.iter().enumerate() {
        let size = r.dtype.size();
        // SAFETY: offsets stay inside the scratch allocation or the caller's buffers.
        scratch.vals[i] = unsafe {
            match r.kind {
                RegKind::Tile => Val::Ptr(base.add(scratch.offsets[i].expect("tiles have scratch"))),
                RegKind::Scalar(v) => Val::Scalar(v),
                RegKind::Out(o) if r.row && step(o) != 1 => {
                    // A column of a stack: computed here, stored with its stride below.
                    Val::Ptr(base.add(scratch.offsets[i].expect("column outputs have scratch")))
                }
                RegKind::Out(o) if r.row => Val::Ptr(outs[o as usize].0.add(start / k.row_len * size)),
                RegKind::Out(_) if streamed => {
                    Val::Ptr(base.add(scratch.offsets[i].expect("streamed outputs have scratch")))
                }
                RegKind::Out(o) => Val::Ptr(outs[o as usize].0.add(start * size)),
                RegKind::Arg(a) => match &modes[a as usize] {
                    ArgMode::Broadcast(v) => Val::Scalar(*v),
                    ArgMode::Contiguous(p) => Val::Ptr(p.0.add(start * size)),
                    ArgMode::Strided(p, _, _) if in_place(a).is_some() => {
                        // Whole rows read in place by a scaled pair: the tile's first row.
                        let stride = in_place(a).expect("checked");
                        Val::Ptr(p.0.add(start / k.row_len * stride * size))
                    }
                    ArgMode::Strided(_, _, _) if reuse.is_some_and(|r| r[a as usize]) => {
                        // Same content as the block's first tile.
                        Val::Ptr(base.add(scratch.offsets[i].expect("gathered args have scratch")))
                    }
                    ArgMode::Strided(p, dims, st) => {
                        let dst = base.add(scratch.offsets[i].expect("gathered args have scratch"));
                        if row_args.get(i).copied().unwrap_or(false) {
                            // One value per row: the layout already walks the rows.
                            gather_elems(size, p.0, dims, st, start / k.row_len, dst, len / k.row_len);
                        } else if joint_gather::joint(st) {
                            // Gathered below, with the arguments of the same layout.
                            scratch.joint.push(i);
                        } else {
                            gather_elems(size, p.0, dims, st, start, dst, len);
                        }
                        Val::Ptr(dst)
                    }
                },
            }
        };
    }
    if !scratch.joint.is_empty() {
        let offsets = &scratch.offsets;
        let dst = |i: usize| {
            // SAFETY: gathered arguments have a tile inside the scratch allocation.
            unsafe { base.add(offsets[i].expect("gathered args have scratch")) }
        };
        // SAFETY: arguments cover the iteration space; each tile holds `len` elements.
        unsafe { joint_gather::gather(k, modes, &scratch.joint, dst, start, len, &mut scratch.columns) };
        scratch.joint.clear();
    }
    let one_pass = lanes.is_some() && pyasc_kernels::isa::active() == pyasc_kernels::isa::Isa::Avx512;
    if let (Some(lp), true) = (lanes, one_pass) {
        if let Some((ns, nl)) = next {
            prefetch_next(streams, ns, nl);
        }
        // SAFETY: every register value is valid for the tile's `len` lanes.
        unsafe { program_lanes::run(k, &scratch.vals, len, lp, None)? };
    }
    let parts = if one_pass { 0 } else { k.body.len() };
    // Whether the multiply feeding a scaled pair was left to the pair.
    let mut fed = false;
    for (j, ins) in k.body.iter().enumerate().take(parts) {
        if let Some((ns, nl)) = next {
            // Spread the next tile's prefetches over the body so they never queue up.
            let (a, b) = (nl * j / parts, nl * (j + 1) / parts);
            prefetch_next(streams, ns + a, b - a);
        }
        let d = ins.dst().0 as usize;
        if let Some(v) = scratch.uniform[j] {
            scratch.vals[d] = Val::Scalar(v);
            continue;
        }
        let on_tile = match *ins {
            Instr::Reduce { src, .. } => matches!(scratch.vals[src.0 as usize], Val::Ptr(_)),
            _ => false,
        };
        match pairs.get(j) {
            Some(&extreme_pairs::Pair::Feed { elem }) => {
                // The pair multiplies as it reduces when the element operand is a tile.
                fed = matches!(scratch.vals[elem.0 as usize], Val::Ptr(_));
                if fed {
                    continue;
                }
            }
            Some(extreme_pairs::Pair::Second) if on_tile => continue,
            Some(&extreme_pairs::Pair::First { max, other, scaled }) if on_tile => {
                for r in [d, other.0 as usize] {
                    if k.regs[r].kind == RegKind::Tile {
                        // SAFETY: the offset lies inside the scratch allocation.
                        scratch.vals[r] =
                            Val::Ptr(unsafe { base.add(scratch.offsets[r].expect("tiles have scratch")) });
                    }
                }
                let (rows, c) = (len / k.row_len, k.row_len);
                match scaled {
                    // SAFETY: the element operand holds the tile's rows, the per-row one a value per
                    // row (or a scalar); both results one slot per row.
                    Some(ops) if fed => {
                        let stride = match k.regs[ops.0 .0 as usize].kind {
                            RegKind::Arg(a) => in_place(a).unwrap_or(c),
                            _ => c,
                        };
                        // SAFETY: as above, the element operand's rows `stride` apart.
                        unsafe { extreme_pairs::run_scaled(ins, other, max, ops, &scratch.vals, rows, c, stride)? }
                    }
                    // SAFETY: the source holds the tile's rows; both results one slot per row.
                    _ => unsafe { extreme_pairs::run(ins, other, max, &scratch.vals, rows, c)? },
                }
                continue;
            }
            _ => {}
        }
        // A reduction of a uniform value is not uniform (a sum depends on the row length): it
        // runs row by row below.
        let uniform = k.regs[d].kind == RegKind::Tile
            && !ins.per_row()
            && ins.srcs().iter().all(|r| matches!(scratch.vals[r.0 as usize], Val::Scalar(_)));
        if uniform {
            // Every operand is one broadcast value (a constant or a broadcast argument):
            // compute one element and keep the result as a scalar register for this tile.
            let mut slot = [0u64; 1];
            scratch.vals[d] = Val::Ptr(slot.as_mut_ptr() as *mut u8);
            // SAFETY: scalar operands need no memory; the slot holds one element of any dtype.
            unsafe {
                exec(ins, &k.regs, &scratch.vals, 1)?;
                let v = read_scalar(slot.as_ptr() as *const u8, k.regs[d].dtype);
                scratch.vals[d] = Val::Scalar(v);
                // Its operands are the same for every tile: later tiles reuse the value.
                scratch.uniform[j] = Some(v);
            }
        } else {
            if k.regs[d].kind == RegKind::Tile {
                // The register may hold a scalar from an earlier use: give it its tile back.
                // SAFETY: the offset lies inside the scratch allocation.
                scratch.vals[d] = Val::Ptr(unsafe { base.add(scratch.offsets[d].expect("tiles have scratch")) });
            }
            // SAFETY: every register value is valid for the tile; dst differs from srcs.
            unsafe { exec_level(k, ins, &scratch.vals, &mut scratch.row_vals, len, row_args)? };
        }
    }
    for (i, r) in k.regs.iter().enumerate() {
        if let (RegKind::Out(o), true) = (r.kind, r.row) {
            let s = step(o);
            if s != 1 {
                let (rows, size) = (len / k.row_len, r.dtype.size());
                let at = scratch.offsets[i].expect("column outputs have scratch");
                // SAFETY: the scratch holds the tile's rows; the column covers every row.
                unsafe {
                    let dst = outs[o as usize].0.add(start / k.row_len * s * size);
                    column_outs::scatter(dst, base.add(at), rows, s, size)
                };
            }
        }
    }
    if streamed {
        for (i, r) in k.regs.iter().enumerate() {
            if let (RegKind::Out(o), false) = (r.kind, r.row) {
                let size = r.dtype.size();
                // SAFETY: the scratch tile holds `len` elements; the output covers the tile.
                unsafe {
                    stream_copy(
                        outs[o as usize].0.add(start * size),
                        base.add(scratch.offsets[i].expect("streamed outputs have scratch")),
                        len * size,
                    )
                };
            }
        }
    }
    Ok(())
}
