//! Devices: what a plan runs on. Compile-time facts (local memory size, cores) are kept
//! apart from execution, and a null device runs the compiler's output without executing.
//!
//! A [`Device`] owns everything the layers above need from a backend: memory
//! ([`Device::alloc`]), copies between host and device ([`Device::copy_in`],
//! [`Device::copy_out`]), running a plan now ([`Device::execute`]) or queued on a stream
//! ([`Device::launch`]) and waiting for a stream ([`Device::synchronize`]).

use crate::buffer::DeviceBuffer;
use crate::stream::Stream;
use crate::view::{InputView, OutputPtr};
use crate::vm::{execute_plan, RunOptions, RunStats};
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::tile::KernelPlan;
use std::any::Any;
use std::sync::Arc;

/// Bytes of tile registers per block on the CPU: [`pyasc_ir::tile::DEFAULT_TILE_BUDGET`], or
/// `PYASC_TILE_BUDGET` when set to a positive whole number (read once).
pub fn cpu_tile_budget() -> usize {
    static BUDGET: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BUDGET.get_or_init(|| {
        std::env::var("PYASC_TILE_BUDGET")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|b| *b > 0)
            .unwrap_or(pyasc_ir::tile::DEFAULT_TILE_BUDGET)
    })
}

/// The kind of a device.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The host CPU cores.
    Cpu,
    /// Host cores with the NPU's programming model: tiles sized for the 192 KiB Unified
    /// Buffer of an AI Core.
    NpuTwin,
    /// Compiles but executes nothing.
    Null,
}

impl DeviceKind {
    /// Parse `device_type` ("cpu", "npu", "auto"; any case). `auto` is the CPU here.
    pub fn parse(s: &str) -> Result<DeviceKind> {
        match s.to_ascii_lowercase().as_str() {
            "cpu" | "auto" => Ok(DeviceKind::Cpu),
            "npu" => Ok(DeviceKind::NpuTwin),
            "null" => Ok(DeviceKind::Null),
            other => Err(IrError::new(
                ErrorKind::InvalidArgument,
                format!("device_type must be 'cpu', 'npu' or 'auto', not {other:?}"),
            )),
        }
    }
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::NpuTwin => "npu-twin",
            DeviceKind::Null => "null",
        }
    }
}

/// Static facts about a device.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// Kind.
    pub kind: DeviceKind,
    /// Human-readable name.
    pub name: String,
    /// Parallel cores kernels spread over.
    pub cores: usize,
    /// The SIMD instruction set the kernels use.
    pub isa: &'static str,
    /// Local memory per block that tiles are sized for, in bytes.
    pub local_memory_bytes: usize,
}

/// A compiled plan kept alive while a launch of it is queued.
pub trait PlanSource: Send + Sync {
    /// The plan.
    fn plan(&self) -> &KernelPlan;
    /// The operator's name (errors of queued work name it).
    fn name(&self) -> &str;
}

/// Called with a queued launch's statistics once it has run.
pub type OnDone = Box<dyn FnOnce(&RunStats) + Send>;

/// A plan launch queued on a stream: what the task needs, and what it keeps alive.
pub struct StreamLaunch {
    /// The plan (and its owner).
    pub plan: Arc<dyn PlanSource>,
    /// Arguments, in the plan's order.
    pub inputs: Vec<InputView>,
    /// One output per entry of the plan's outputs.
    pub outputs: Vec<OutputPtr>,
    /// Buffers the launch reads: it waits for their writers on other streams.
    pub reads: Vec<Arc<DeviceBuffer>>,
    /// Buffers the launch writes: it waits for their readers and writers on other streams.
    pub writes: Vec<Arc<DeviceBuffer>>,
    /// Anything else the views point into (scalar storage), dropped after the launch.
    pub keep: Option<Box<dyn Any + Send>>,
    /// How to run.
    pub opts: RunOptions,
    /// Receives the statistics (`opts.record`) after the launch ran without error.
    pub on_done: Option<OnDone>,
}

// SAFETY: the pointers in `inputs` and `outputs` address memory owned by `reads`, `writes`,
// `keep` or the plan, all moved along with them; the stream ordering recorded on the buffers
// guarantees no other work writes that memory while the task runs.
unsafe impl Send for StreamLaunch {}

/// A backend: memory, copies, and running plans now or in stream order.
///
/// The memory operations have default implementations for devices whose memory is host
/// memory (the CPU, the NPU twin and the null device): pool buffers, `memcpy` after the
/// buffers' pending work, and copies queued as stream tasks. A device with memory of its own
/// overrides them.
pub trait Device: Send + Sync {
    /// Static facts (also what the compiler sizes tiles for).
    fn info(&self) -> DeviceInfo;
    /// Run `plan` on the arguments now, writing the results.
    fn execute(
        &self,
        plan: &KernelPlan,
        inputs: &[InputView],
        outputs: &[OutputPtr],
        opts: RunOptions,
    ) -> Result<RunStats>;
    /// Queue `launch` on `stream` after conflicting work on its buffers; returns the task's
    /// sequence number at once.
    fn launch(&self, stream: &Stream, launch: StreamLaunch) -> Result<u64>;
    /// A new buffer of `bytes` bytes aligned to `align` (a power of two).
    fn alloc(&self, bytes: usize, align: usize) -> Result<Arc<DeviceBuffer>> {
        DeviceBuffer::alloc(bytes, align)
    }
    /// Copy host bytes into `dst` at byte `offset`, once work writing or reading it is done.
    fn copy_in(&self, dst: &DeviceBuffer, offset: usize, src: &[u8]) -> Result<()> {
        host_copy_in(dst, offset, src)
    }
    /// Copy bytes of `src` from byte `offset` to the host, once work writing it is done.
    fn copy_out(&self, src: &DeviceBuffer, offset: usize, dst: &mut [u8]) -> Result<()> {
        host_copy_out(src, offset, dst)
    }
    /// Queue a copy of `bytes` bytes from `src` (at byte `src_offset`) to `dst` (at byte
    /// `dst_offset`) on `stream`, after conflicting work on both; returns the task's number.
    fn copy_async(
        &self,
        stream: &Stream,
        dst: &Arc<DeviceBuffer>,
        dst_offset: usize,
        src: &Arc<DeviceBuffer>,
        src_offset: usize,
        bytes: usize,
    ) -> Result<u64> {
        host_copy_async(stream, dst, dst_offset, src, src_offset, bytes)
    }
    /// Wait for all work queued on `stream`; returns its first error since the last wait.
    fn synchronize(&self, stream: &Stream) -> Result<()> {
        stream.synchronize()
    }
}

/// Refuse to write a buffer imported from read-only memory.
fn check_writable(buf: &DeviceBuffer) -> Result<()> {
    if buf.is_readonly() {
        return Err(IrError::new(ErrorKind::InvalidArgument, "cannot write a buffer over read-only memory"));
    }
    Ok(())
}

fn check_range(buf: &DeviceBuffer, offset: usize, len: usize) -> Result<()> {
    if offset.checked_add(len).is_none_or(|end| end > buf.len()) {
        return Err(IrError::new(
            ErrorKind::InvalidArgument,
            format!("copy of {len} bytes at offset {offset} exceeds a buffer of {} bytes", buf.len()),
        ));
    }
    Ok(())
}

/// Copy into a host-memory buffer (the CPU and null devices).
fn host_copy_in(dst: &DeviceBuffer, offset: usize, src: &[u8]) -> Result<()> {
    check_writable(dst)?;
    check_range(dst, offset, src.len())?;
    dst.wait_host(true);
    // SAFETY: the range lies inside the buffer (checked) and no queued work uses it (waited).
    unsafe { crate::memory::copy_bytes(dst.ptr().add(offset), src.as_ptr(), src.len()) };
    if offset == 0 && src.len() == dst.len() {
        dst.heal();
    }
    Ok(())
}

/// Copy out of a host-memory buffer (the CPU and null devices).
fn host_copy_out(src: &DeviceBuffer, offset: usize, dst: &mut [u8]) -> Result<()> {
    check_range(src, offset, dst.len())?;
    src.wait_host(false);
    // SAFETY: as above; `dst` is an exclusive host slice of the same length.
    unsafe { crate::memory::copy_bytes(dst.as_mut_ptr(), src.ptr().add(offset), dst.len()) };
    Ok(())
}

/// Queue a copy between host-memory buffers (the CPU and null devices).
fn host_copy_async(
    stream: &Stream,
    dst: &Arc<DeviceBuffer>,
    dst_offset: usize,
    src: &Arc<DeviceBuffer>,
    src_offset: usize,
    bytes: usize,
) -> Result<u64> {
    check_writable(dst)?;
    check_range(dst, dst_offset, bytes)?;
    check_range(src, src_offset, bytes)?;
    src.order_on(stream, false);
    dst.order_on(stream, true);
    let (d, s) = (dst.clone(), src.clone());
    let seq = stream.enqueue_named(
        "copy",
        Box::new(move || {
            if let Some(e) = s.poisoned() {
                // Copying invalid contents passes the failure on.
                d.poison(&e);
                return Err(e);
            }
            // SAFETY: both ranges lie inside their buffers (checked), which the task keeps
            // alive; the recorded stream order keeps other work off them meanwhile.
            unsafe { crate::memory::copy_bytes(d.ptr().add(dst_offset), s.ptr().add(src_offset), bytes) };
            if dst_offset == 0 && bytes == d.len() {
                d.heal();
            }
            Ok(())
        }),
    );
    src.record_use(stream, seq, false);
    dst.record_use(stream, seq, true);
    Ok(seq)
}

/// Queue `run` for `launch` on `stream`, ordered after conflicting work on its buffers.
fn enqueue_launch(
    stream: &Stream,
    launch: StreamLaunch,
    run: fn(&KernelPlan, &[InputView], &[OutputPtr], RunOptions) -> Result<RunStats>,
) -> u64 {
    for b in &launch.reads {
        b.order_on(stream, false);
    }
    for b in &launch.writes {
        b.order_on(stream, true);
    }
    // The buffers' uses are recorded once the task has its number (the task may already
    // have run and dropped its own references by then).
    let used: Vec<(Arc<DeviceBuffer>, bool)> = launch
        .reads
        .iter()
        .map(|b| (b.clone(), false))
        .chain(launch.writes.iter().map(|b| (b.clone(), true)))
        .collect();
    let name = launch.plan.name().to_string();
    let seq = stream.enqueue_named(
        name,
        Box::new(move || {
            // Move the whole launch into the task (not its non-Send fields one by one).
            let launch = launch;
            if let Some(e) = launch.reads.iter().find_map(|b| b.poisoned()) {
                // An input left invalid by failed work: the outputs are invalid too.
                for w in &launch.writes {
                    w.poison(&e);
                }
                return Err(e);
            }
            let result = run(launch.plan.plan(), &launch.inputs, &launch.outputs, launch.opts);
            match result {
                Ok(stats) => {
                    if let Some(done) = launch.on_done {
                        done(&stats);
                    }
                    Ok(())
                }
                Err(mut e) => {
                    e.message = format!("in operator {}: {}", launch.plan.name(), e.message);
                    for w in &launch.writes {
                        w.poison(&e);
                    }
                    Err(e)
                }
            }
        }),
    );
    for (b, write) in &used {
        b.record_use(stream, seq, *write);
    }
    seq
}

/// The host CPU.
pub struct CpuDevice {
    kind: DeviceKind,
}

impl Device for CpuDevice {
    fn info(&self) -> DeviceInfo {
        let isa = pyasc_kernels::isa::active().name();
        let cores = crate::pool::num_threads();
        match self.kind {
            DeviceKind::NpuTwin => DeviceInfo {
                kind: self.kind,
                name: format!("NPU twin ({cores} AI cores simulated on host CPU, {isa})"),
                cores,
                isa,
                local_memory_bytes: 192 * 1024,
            },
            _ => DeviceInfo {
                kind: self.kind,
                name: format!("host CPU ({cores} cores, {isa})"),
                cores,
                isa,
                local_memory_bytes: cpu_tile_budget(),
            },
        }
    }
    fn execute(
        &self,
        plan: &KernelPlan,
        inputs: &[InputView],
        outputs: &[OutputPtr],
        opts: RunOptions,
    ) -> Result<RunStats> {
        execute_plan(plan, inputs, outputs, opts)
    }
    fn launch(&self, stream: &Stream, launch: StreamLaunch) -> Result<u64> {
        Ok(enqueue_launch(stream, launch, execute_plan))
    }
}

/// Runs nothing: for compiler tests and dry runs.
pub struct NullDevice;

impl Device for NullDevice {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            kind: DeviceKind::Null,
            name: "null device".into(),
            cores: 1,
            isa: "none",
            local_memory_bytes: pyasc_ir::tile::DEFAULT_TILE_BUDGET,
        }
    }
    fn execute(&self, plan: &KernelPlan, _: &[InputView], _: &[OutputPtr], _: RunOptions) -> Result<RunStats> {
        null_run(plan, &[], &[], RunOptions::default())
    }
    fn launch(&self, stream: &Stream, launch: StreamLaunch) -> Result<u64> {
        Ok(enqueue_launch(stream, launch, null_run))
    }
}

/// What the null device does with a plan: verify it, run nothing.
fn null_run(plan: &KernelPlan, _: &[InputView], _: &[OutputPtr], _: RunOptions) -> Result<RunStats> {
    plan.verify()?;
    Ok(RunStats::default())
}

static CPU: CpuDevice = CpuDevice { kind: DeviceKind::Cpu };
static NPU_TWIN: CpuDevice = CpuDevice { kind: DeviceKind::NpuTwin };
static NULL: NullDevice = NullDevice;

/// The device of a kind.
pub fn device_for(kind: DeviceKind) -> &'static dyn Device {
    match kind {
        DeviceKind::Cpu => &CPU,
        DeviceKind::NpuTwin => &NPU_TWIN,
        DeviceKind::Null => &NULL,
    }
}
