//! Devices: what a plan runs on. Compile-time facts (local memory size, cores) are kept
//! apart from execution, and a null device runs the compiler's output without executing.

use crate::view::{InputView, OutputPtr};
use crate::vm::{execute_plan, RunOptions, RunStats};
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::tile::KernelPlan;

/// Bytes of tile registers per block on the CPU: small enough that a kernel's tiles stay in
/// the L1 data cache between its instructions (measured best for fused elementwise chains).
pub const CPU_TILE_BUDGET: usize = 32 * 1024;

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

/// A backend that runs kernel plans.
pub trait Device: Send + Sync {
    /// Static facts (also what the compiler sizes tiles for).
    fn info(&self) -> DeviceInfo;
    /// Run `plan` on the arguments, writing the results.
    fn execute(
        &self,
        plan: &KernelPlan,
        inputs: &[InputView],
        outputs: &[OutputPtr],
        opts: RunOptions,
    ) -> Result<RunStats>;
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
                local_memory_bytes: std::env::var("PYASC_TILE_BUDGET")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(CPU_TILE_BUDGET),
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
            local_memory_bytes: CPU_TILE_BUDGET,
        }
    }
    fn execute(&self, plan: &KernelPlan, _: &[InputView], _: &[OutputPtr], _: RunOptions) -> Result<RunStats> {
        plan.verify()?;
        Ok(RunStats::default())
    }
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
