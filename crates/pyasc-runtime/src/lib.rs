//! pyasc-runtime: executes kernel plans.
//!
//! Devices and memory:
//! * [`device`]: the [`Device`] trait, the CPU device, the NPU twin and the null device.
//! * [`opaque`]: a test device whose memory the host cannot address.
//! * `hostmem`: copies and fills of memory the host can reach (the devices' defaults).
//! * [`buffer`]: device buffers and the ordering of asynchronous work on them.
//! * [`memory`]: the caching pool for large buffers.
//! * [`stream`]: streams and events, the asynchronous work queues; [`hold`]: holding a stream.
//! * [`pool`]: the worker pool; [`team`]: the launch team of helper threads.
//! * [`fork`]: the fork handlers that keep pyasc usable in a forked child.
//! * [`interrupt`]: cancellation tokens and the interrupt poll of long launches and waits.
//! * [`monitor`]: utilization of the executor's cores and the machine's temperature;
//!   [`peaks`]: the machine's measured roofs.
//!
//! The tile VM (flat tile programs and structured programs):
//! * [`vm`]: runs one kernel's tile program over blocks on all cores.
//! * [`instr`]: the single place where an instruction's dtype picks a SIMD primitive.
//! * [`program`]: the interpreter of structured tile programs (loads, stores, loop nests), with
//!   `program_lanes` (its strip loop), `lanes` (lane compaction) and `copy_swap`.
//! * [`layout`], [`column_gather`]: broadcasting strides, dimension collapsing, strided gathers.
//! * [`movement`]: movement ops (views) applied to arguments at launch; [`view`]: raw views of
//!   caller-owned memory handed to the executor.
//! * [`half_cast`], [`scan_map`], [`stack_columns`], [`kernel_facts`]: 16-bit conversions, the
//!   fused row scan, stacks written in place, and what the profiler reports per kernel.
//! * [`capture`], [`check`]: copies of debug operators' intermediate results, NaN/Inf checks.
//!
//! The kernel language's block VM: [`block`], [`block_plan`], `block_strip`.
//!
//! Library routines, one per library op of [`pyasc_ir::library`], registered in [`library`]:
//! [`gemm`], [`pad`] (pad, concatenate, take), [`scan`], [`sort`], [`scatter`] (and nonzero),
//! [`conv`], [`pooling`], [`shuffle`], [`attention`], [`detection`] (box IoU, NMS, row
//! selection and gather), [`stencil`] (stencil sweeps), [`block_launch`] (kernel-language
//! launches).

pub mod attention;
pub mod block;
pub mod block_launch;
pub mod block_plan;
pub mod buffer;
pub mod capture;
pub mod check;
pub mod column_gather;
pub mod conv;
mod copy_swap;
pub mod detection;
pub mod device;
pub mod fork;
pub mod gemm;
pub mod half_cast;
pub mod hold;
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
pub mod stencil;
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
