//! The [`Pass`] trait, the pipeline list and the compile driver that times each pass.

use crate::fuse::Fusion;
use pyasc_events::event::{self, Event, EventKind};
use pyasc_ir::error::Result;
use pyasc_ir::tile::KernelPlan;
use pyasc_ir::verify::verify;
use pyasc_ir::{DType, Graph};
use std::time::Instant;

/// Options that steer compilation.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// 0: every op its own kernel; 1: elementwise fusion; 2 and 3: also across broadcasts.
    pub op_break_level: u8,
    /// Base name of the kernels.
    pub kernel_name: String,
    /// Bytes of local memory a block's tile registers may use (L2 share on a CPU,
    /// the 192 KiB Unified Buffer on the NPU twin).
    pub tile_budget_bytes: usize,
    /// The budget is a hard limit (the NPU twin's Unified Buffer): tiles never exceed it, and
    /// a kernel whose smallest tile (one row) does not fit is an error.
    pub tile_budget_hard: bool,
    /// Run the verifier after every pass.
    pub verify_each_pass: bool,
    /// The precision policy (`precision_mode`).
    pub precision: pyasc_ir::precision::PrecisionMode,
    /// The plan must be one kernel (`@pyasc.fused_operator`); more is a `FusionError`.
    pub single_kernel: bool,
}

impl CompileOptions {
    /// The tile budget the lowering sizes tiles for.
    pub fn budget(&self) -> crate::lower::TileBudget {
        crate::lower::TileBudget { bytes: self.tile_budget_bytes, hard: self.tile_budget_hard }
    }
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            op_break_level: 3,
            kernel_name: "op".to_string(),
            tile_budget_bytes: pyasc_ir::tile::DEFAULT_TILE_BUDGET,
            tile_budget_hard: false,
            verify_each_pass: cfg!(debug_assertions),
            precision: pyasc_ir::precision::PrecisionMode::Fp32,
            single_kernel: false,
        }
    }
}

/// Everything a pass may read or change.
#[derive(Debug)]
pub struct CompileState {
    /// The graph being optimised.
    pub graph: Graph,
    /// The options.
    pub options: CompileOptions,
    /// Set by the fusion pass.
    pub fusion: Option<Fusion>,
    /// Set by the lowering pass.
    pub plan: Option<KernelPlan>,
    /// Messages of the running pass (decisions worth a log line).
    pub notes: Vec<String>,
    /// Python int arguments and the integer dtype each must fit in (set by promotion).
    pub int_bounds: Vec<(crate::int_bounds::IntExpr, DType, Option<pyasc_ir::error::SourceLoc>)>,
    /// Hidden inputs computed on the host at each call (set by `host_ints`).
    pub host_ints: Vec<crate::host_ints::HostInt>,
}

impl CompileState {
    /// The state before the first pass.
    pub fn new(graph: Graph, options: CompileOptions) -> Self {
        CompileState {
            graph,
            options,
            fusion: None,
            plan: None,
            notes: Vec::new(),
            int_bounds: Vec::new(),
            host_ints: Vec::new(),
        }
    }
}

/// One step of the pipeline.
pub trait Pass {
    /// Name shown in logs.
    fn name(&self) -> &'static str;
    /// Transform the state.
    fn run(&self, st: &mut CompileState) -> Result<()>;
}

/// What one pass did: an event of kind [`EventKind::Pass`] with the counters `nodes_before`
/// and `nodes_after` and the pass's decisions as notes (also recorded in the event stream
/// while someone collects).
pub type PassReport = Event;

/// The result of compilation.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The optimised graph.
    pub graph: Graph,
    /// The kernels.
    pub plan: KernelPlan,
    /// One report per pass, in order.
    pub reports: Vec<PassReport>,
    /// Python int arguments and the integer dtype each must fit in: a value outside is an
    /// `Overflow` error at the call (NumPy 2's `OverflowError`).
    pub int_bounds: Vec<(crate::int_bounds::IntExpr, DType, Option<pyasc_ir::error::SourceLoc>)>,
    /// Inputs the launch computes from the arguments and passes after all others, in order.
    pub host_ints: Vec<crate::host_ints::HostInt>,
}

impl Compiled {
    /// Check the Python ints of [`Compiled::int_bounds`]; `value(i)` reads argument `i`'s
    /// Python int value.
    pub fn check_int_bounds(&self, value: impl Fn(usize) -> Option<i128>) -> Result<()> {
        for (e, dt, loc) in &self.int_bounds {
            let overflow = |v: String| {
                Err(pyasc_ir::IrError::new(
                    pyasc_ir::error::ErrorKind::Overflow,
                    format!("Python integer {v} ({e}) out of bounds for {dt}"),
                )
                .at(loc.as_ref()))
            };
            match e.eval(&value) {
                Err(crate::int_bounds::TooLarge) => return overflow("beyond 128 bits".into()),
                // Beside floats the value is converted as Python converts it: no bound.
                Ok(Some(v)) if dt.is_int() => {
                    let (lo, hi) = dt.int_range().unwrap_or((i64::MIN.into(), i64::MAX.into()));
                    if v < lo || v > hi {
                        return overflow(v.to_string());
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The bits of each of [`Compiled::host_ints`] for this call (one element each);
    /// `value(i)` reads argument `i`'s Python int value.
    pub fn host_values(&self, value: impl Fn(usize) -> Option<i128>) -> Result<Vec<u64>> {
        self.host_ints
            .iter()
            .map(|h| {
                h.bits(&value)?.ok_or_else(|| pyasc_ir::IrError::internal("a Python int argument could not be read"))
            })
            .collect()
    }
}

/// The passes in order.
pub fn pipeline() -> Vec<Box<dyn Pass>> {
    vec![
        Box::new(crate::precision::PrecisionPass),
        Box::new(crate::attention::AttentionPass),
        Box::new(crate::promote::PromotePass),
        Box::new(crate::host_ints::HostIntsPass),
        Box::new(crate::fold::FoldPass),
        Box::new(crate::implicit_broadcast::ImplicitBroadcastPass),
        Box::new(crate::cse::CsePass),
        Box::new(crate::attention_stats::AttentionStatsPass),
        Box::new(crate::dce::DcePass),
        Box::new(crate::fuse::FusePass),
        Box::new(crate::lower::LowerPass),
        Box::new(crate::chain::ChainPass),
        Box::new(crate::select_cmp::SelectCmpPass),
        Box::new(crate::scale_shift::ScaleShiftPass),
        Box::new(crate::reduce_map::ReduceMapPass),
        Box::new(crate::deviation::DeviationPass),
        Box::new(crate::scan_map::ScanMapPass),
        Box::new(crate::half_math::HalfMathPass),
        Box::new(crate::stack_columns::StackColumnsPass),
    ]
}

/// Run the whole pipeline on a traced graph.
pub fn compile(graph: Graph, options: &CompileOptions) -> Result<Compiled> {
    verify(&graph)?;
    let mut st = CompileState::new(graph, options.clone());
    let mut reports = Vec::new();
    for pass in pipeline() {
        let before = st.graph.len();
        let t = Instant::now();
        pass.run(&mut st)?;
        let end = Instant::now();
        if st.options.verify_each_pass {
            verify(&st.graph)?;
            if let Some(plan) = &st.plan {
                plan.verify()?;
            }
        }
        let mut report = Event::new(EventKind::Pass, pass.name(), t, end)
            .with("nodes_before", before as u64)
            .with("nodes_after", st.graph.len() as u64);
        report.notes = std::mem::take(&mut st.notes);
        if event::enabled() {
            event::record(report.clone());
        }
        reports.push(report);
    }
    let plan = st.plan.take().ok_or_else(|| pyasc_ir::IrError::internal("lowering produced no plan"))?;
    if options.tile_budget_hard {
        crate::lower::check_tiles_fit(&plan, options.budget())?;
    }
    if options.single_kernel {
        crate::single::check_one_kernel(&plan, &options.kernel_name)?;
    }
    Ok(Compiled { graph: st.graph, plan, reports, int_bounds: st.int_bounds, host_ints: st.host_ints })
}
