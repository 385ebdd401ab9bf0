//! Devices: what a plan runs on. Compile-time facts (local memory size, cores) are kept
//! apart from execution, and a null device runs the compiler's output without executing.
//!
//! A [`Device`] owns everything the layers above need from a backend: memory
//! ([`Device::alloc`]), copies between host and device ([`Device::copy_in`],
//! [`Device::copy_out`]), running a plan now ([`Device::execute`]) or queued on a stream
//! ([`Device::launch`]) and waiting for a stream ([`Device::synchronize`]), and whether and
//! where the host can address a buffer ([`Device::host_ptr`], [`Device::device_ptr`]).

pub mod buffer;
pub mod fork;
pub mod hold;
pub(crate) mod hostmem;
pub mod interrupt;
pub mod memory;
pub mod monitor;
pub mod opaque;
pub mod peaks;
pub mod pool;
pub mod stream;
pub mod team;

use crate::buffer::DeviceBuffer;
use crate::opaque::OpaqueDevice;
use crate::stream::Stream;
use crate::view::{InputView, OutputPtr};
use crate::vm::{execute_plan, RunOptions, RunStats};
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::tile::KernelPlan;
use std::any::Any;
use std::sync::Arc;

/// DLPack's `kDLCPU`: host memory.
pub const DLPACK_CPU: i32 = 1;

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
    /// The host CPU behind memory the host cannot address (tests of the paths a device with
    /// memory of its own takes). Not accepted by [`DeviceKind::parse`].
    OpaqueTest,
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
            DeviceKind::OpaqueTest => "opaque-test",
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
    /// The best SIMD instruction set the host CPU has (`isa` is lower under `PYASC_ISA`).
    pub detected_isa: &'static str,
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
/// memory (the CPU, the NPU twin and the null device): pool buffers the host addresses
/// directly, `memcpy` and `memset` after the buffers' pending work, zero-copy imports of
/// host memory, copies queued as stream tasks, and DLPack export as `kDLCPU`. A device with
/// memory of its own overrides them all (see `OpaqueDevice`, a test device whose memory the
/// host cannot address). The layers above reach a buffer's bytes only through these methods.
pub trait Device: Send + Sync {
    /// Static facts (also what the compiler sizes tiles for).
    fn info(&self) -> DeviceInfo;
    /// Run `plan` on the arguments now, writing the results. Views of this device's buffers
    /// hold [`Device::device_ptr`] addresses.
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
    /// The host address of `buf`'s first byte, or `None` when the host cannot address its
    /// memory; callers then copy through [`Device::copy_in`] and [`Device::copy_out`].
    fn host_ptr(&self, buf: &DeviceBuffer) -> Option<*mut u8> {
        Some(buf.ptr())
    }
    /// The address of `buf`'s first byte as this device's kernels see it: what input views
    /// and output pointers of its launches hold, and what DLPack exports. Byte `i` of the
    /// buffer is at this address plus `i`. For host memory it is the host address.
    fn device_ptr(&self, buf: &DeviceBuffer) -> *mut u8 {
        buf.ptr()
    }
    /// Copy host bytes into `dst` at byte `offset`, once work writing or reading it is done.
    fn copy_in(&self, dst: &DeviceBuffer, offset: usize, src: &[u8]) -> Result<()> {
        hostmem::copy_in(hostmem::own_address, dst, offset, src)
    }
    /// Copy bytes of `src` from byte `offset` to the host, once work writing it is done.
    fn copy_out(&self, src: &DeviceBuffer, offset: usize, dst: &mut [u8]) -> Result<()> {
        hostmem::copy_out(hostmem::own_address, src, offset, dst)
    }
    /// Set `len` bytes of `dst` from byte `offset` to zero, once work writing or reading it
    /// is done.
    fn fill_zero(&self, dst: &DeviceBuffer, offset: usize, len: usize) -> Result<()> {
        hostmem::fill_zero(hostmem::own_address, dst, offset, len)
    }
    /// A buffer holding `bytes` bytes of host memory that `owner` keeps alive (DLPack and
    /// NumPy imports). Host-memory devices share the memory without a copy (`readonly`: never
    /// write it); a device with memory of its own copies it into a new buffer and lets the
    /// owner go, or refuses with an error.
    ///
    /// # Safety
    /// `ptr` must address `bytes` readable bytes (writable too unless `readonly`) for as long
    /// as `owner` lives, and nothing else may write them while the returned buffer is used.
    unsafe fn import_host(
        &self,
        ptr: *mut u8,
        bytes: usize,
        owner: Box<dyn Any + Send + Sync>,
        readonly: bool,
    ) -> Result<Arc<DeviceBuffer>> {
        Ok(DeviceBuffer::external(ptr, bytes, owner, readonly))
    }
    /// DLPack's `(device_type, device_id)` for this device's buffers (at
    /// [`Device::device_ptr`]), or `None` when it cannot export them.
    fn dlpack_device(&self) -> Option<(i32, i32)> {
        Some((DLPACK_CPU, 0))
    }
    /// Queue a copy of `bytes` bytes from `src` (at byte `src_offset`) to `dst` (at byte
    /// `dst_offset`) on `stream`, after conflicting work on both; returns the task's number.
    /// Both buffers belong to this device.
    fn copy_async(
        &self,
        stream: &Stream,
        dst: &Arc<DeviceBuffer>,
        dst_offset: usize,
        src: &Arc<DeviceBuffer>,
        src_offset: usize,
        bytes: usize,
    ) -> Result<u64> {
        hostmem::copy_async(hostmem::own_address, stream, dst, dst_offset, src, src_offset, bytes)
    }
    /// Wait for all work queued on `stream`; returns its first error since the last wait.
    fn synchronize(&self, stream: &Stream) -> Result<()> {
        stream.synchronize()
    }
}

/// Queue `run` for `launch` on `stream`, ordered after conflicting work on its buffers.
pub(crate) fn enqueue_launch(
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
    let writes = launch.writes.clone();
    let seq = stream.enqueue_writing(
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
        writes,
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
        let cores = crate::pool::pool_threads();
        match self.kind {
            DeviceKind::NpuTwin => DeviceInfo {
                kind: self.kind,
                name: format!("NPU twin ({cores} AI cores simulated on host CPU, {isa})"),
                cores,
                isa,
                detected_isa: pyasc_kernels::isa::detected().name(),
                local_memory_bytes: 192 * 1024,
            },
            _ => DeviceInfo {
                kind: self.kind,
                name: format!("host CPU ({cores} cores, {isa})"),
                cores,
                isa,
                detected_isa: pyasc_kernels::isa::detected().name(),
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
            detected_isa: pyasc_kernels::isa::detected().name(),
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
static OPAQUE: OpaqueDevice = OpaqueDevice;

/// The device of a kind.
pub fn device_for(kind: DeviceKind) -> &'static dyn Device {
    match kind {
        DeviceKind::Cpu => &CPU,
        DeviceKind::NpuTwin => &NPU_TWIN,
        DeviceKind::Null => &NULL,
        DeviceKind::OpaqueTest => &OPAQUE,
    }
}
