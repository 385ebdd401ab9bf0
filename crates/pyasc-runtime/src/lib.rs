//! pyasc-runtime: executes kernel plans. Its modules sit in five folders, one per part; each
//! module is also reachable at the crate's root (`pyasc_runtime::memory`, `pyasc_runtime::gemm`).
//!
//! * [`device`]: devices, memory and threads. The [`Device`] trait with the CPU device, the NPU
//!   twin and the null device ([`device`]), a test device whose memory the host cannot address
//!   ([`opaque`]), host-memory copies and fills (`hostmem`, the devices' defaults), device
//!   buffers and the ordering of asynchronous work on them ([`buffer`]), the caching pool for
//!   large buffers ([`memory`]), streams and events ([`stream`]) and holds on them ([`hold`]),
//!   the worker pool ([`pool`]) and the launch team ([`team`]), the fork handlers ([`fork`]),
//!   cancellation and the interrupt poll ([`interrupt`]), core utilization and temperature
//!   ([`monitor`]) and the machine's measured roofs ([`peaks`]).
//! * [`vm`]: the tile VM, which runs one kernel's flat tile program over blocks on all cores:
//!   [`instr`] (where an instruction's dtype picks a SIMD primitive), [`layout`] and
//!   [`column_gather`] (broadcast strides, collapsing, strided gathers), [`movement`] and
//!   [`view`] (views at launch, raw views of caller-owned memory), [`half_cast`], [`scan_map`],
//!   [`stack_columns`], [`kernel_facts`] (what the profiler reports per kernel), and debug
//!   runs' copies and checks ([`capture`], [`check`]).
//! * [`program`]: the interpreter of structured tile programs (loads, stores, loop nests), with
//!   its strip loop (`program_lanes`), lane compaction (`lanes`) and `copy_swap`.
//! * [`block`]: the kernel language's block VM: [`block_plan`] (strip plans), `block_strip`
//!   (strip execution) and [`block_launch`] (a kernel-language launch as a library routine).
//! * [`library`]: library routines, one per library op of [`pyasc_ir::library`], registered in
//!   [`library::KERNELS`]: [`gemm`], [`pad`] (pad, concatenate, take), [`scan`], [`sort`],
//!   [`scatter`] (and nonzero), [`conv`], [`pooling`], [`shuffle`], [`attention`], [`detection`]
//!   (box IoU, NMS, row selection and gather) and [`stencil`] (stencil sweeps).

pub mod block;
pub mod device;
pub mod library;
pub mod program;
#[cfg(test)]
mod test_kernel;
pub mod vm;

pub use block::{block_launch, block_plan};
pub(crate) use device::hostmem;
pub use device::{buffer, fork, hold, interrupt, memory, monitor, opaque, peaks, pool, stream, team};
pub use library::{
    attention, attention_backward, conv, detection, gemm, pad, pooling, scan, scatter, shuffle, sort, stencil,
};
pub(crate) use program::{copy_swap, lanes, program_lanes};
pub use vm::{
    capture, check, column_gather, half_cast, instr, kernel_facts, layout, movement, scan_map, stack_columns, view,
};

pub use device::{
    device_for, CpuDevice, Device, DeviceInfo, DeviceKind, NullDevice, PlanSource, StreamLaunch, DLPACK_CPU,
};
pub use opaque::OpaqueDevice;
pub use view::{InputView, OutputPtr};
pub use vm::{execute_plan, KernelRecord, RunOptions, RunStats};
