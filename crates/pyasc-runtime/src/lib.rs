//! pyasc-runtime: executes kernel plans.
//!
//! * [`buffer`]: device buffers and the ordering of asynchronous work on them.
//! * [`capture`]: copies of debug operators' intermediate results.
//! * [`check`]: the NaN/Inf checks of debug operators.
//! * [`gemm`]: matrix-product kernels.
//! * [`pad`]: `np.pad`, concatenate and take kernels.
//! * [`library`]: the registry of library kernels (matmul, pad, concatenate, take).
//! * [`program`]: the interpreter of structured tile programs (loads, stores, loop nests).
//! * [`team`]: the launch team of helper threads.
//! * [`device`]: the [`Device`] trait, the CPU device, the NPU twin and the null device.
//! * [`opaque`]: a test device whose memory the host cannot address.
//! * `hostmem`: copies and fills of memory the host can reach (the devices' defaults).
//! * [`vm`]: the tile VM, which runs one kernel's tile program over blocks on all cores.
//! * [`instr`]: the single place where an instruction's dtype picks a SIMD primitive.
//! * [`layout`]: broadcasting strides, dimension collapsing and strided gathers.
//! * [`movement`]: movement ops (views) applied to arguments at launch.
//! * [`view`]: raw views of caller-owned memory handed to the executor.
//! * [`memory`]: the caching pool for large buffers.
//! * [`pool`]: the worker pool.
//! * [`fork`]: the fork handlers that keep pyasc usable in a forked child.
//! * [`interrupt`]: cancellation tokens and the interrupt poll of long launches and waits.
//! * [`monitor`]: utilization of the executor's cores and the machine's temperature.
//! * [`stream`]: streams and events, the asynchronous work queues.

pub mod attention;
pub mod block;
pub mod block_plan;
pub mod buffer;
pub mod capture;
pub mod check;
pub mod column_gather;
pub mod conv;
mod copy_swap;
pub mod device;
pub mod fork;
pub mod gemm;
pub mod half_cast;
mod hostmem;
pub mod instr;
pub mod interrupt;
pub mod kernel_facts;
mod lanes;
pub mod layout;
pub mod library;
pub mod memory;
pub mod monitor;
pub mod movement;
pub mod opaque;
pub mod pad;
pub mod peaks;
pub mod pool;
pub mod pooling;
pub mod program;
mod program_lanes;
pub mod scan;
pub mod scan_map;
pub mod scatter;
pub mod shuffle;
pub mod sort;
pub mod stack_columns;
pub mod stream;
pub mod team;
#[cfg(test)]
mod test_kernel;
pub mod view;
pub mod vm;

pub use device::{
    device_for, CpuDevice, Device, DeviceInfo, DeviceKind, NullDevice, PlanSource, StreamLaunch, DLPACK_CPU,
};
pub use opaque::OpaqueDevice;
pub use view::{InputView, OutputPtr};
pub use vm::{execute_plan, KernelRecord, RunOptions, RunStats};
