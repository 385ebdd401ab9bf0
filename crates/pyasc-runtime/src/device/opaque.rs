//! A test device whose memory the host cannot address: the host CPU's kernels behind a
//! private address space, so that tests exercise the paths a device with memory of its own
//! takes (copies instead of views, imports that copy, no DLPack export).
//!
//! Each buffer's bytes live in a private pool allocation; the buffer's address
//! ([`Device::device_ptr`]) is that allocation's address with bit 62 set, which is not a valid
//! host address (dereferencing it faults on x86-64), and [`Device::host_ptr`] is `None`. Only
//! this device turns device addresses back into storage: in its copies and fills, and in the
//! input views and output pointers of its launches. Launch arguments in host memory (Python
//! scalars, trace constants, the NumPy arrays of a call that runs now) are read where they are,
//! as a device reads kernel arguments passed by value or from pinned host memory.

use crate::buffer::DeviceBuffer;
use crate::device::{enqueue_launch, Device, DeviceInfo, DeviceKind, StreamLaunch};
use crate::hostmem;
use crate::stream::Stream;
use crate::view::{InputView, OutputPtr};
use crate::vm::{execute_plan, RunOptions, RunStats};
use pyasc_ir::error::Result;
use pyasc_ir::tile::KernelPlan;
use std::any::Any;
use std::sync::Arc;

/// The bit that marks a device address.
const DEVICE_BIT: usize = 1 << 62;

/// The device address of storage at host address `p`.
fn to_device(p: *mut u8) -> *mut u8 {
    (p as usize | DEVICE_BIT) as *mut u8
}

/// The storage behind a device address; a host address is returned as it is.
fn to_storage(p: *const u8) -> *mut u8 {
    (p as usize & !DEVICE_BIT) as *mut u8
}

/// The storage of one of this device's buffers.
fn storage(buf: &DeviceBuffer) -> *mut u8 {
    to_storage(buf.ptr())
}

/// Views and outputs with device addresses turned into storage addresses.
fn to_storage_views(inputs: &mut [InputView], outputs: &mut [OutputPtr]) {
    for v in inputs {
        v.ptr = to_storage(v.ptr);
    }
    for o in outputs {
        o.0 = to_storage(o.0);
    }
}

/// The host CPU behind memory the host cannot address (see the module documentation).
pub struct OpaqueDevice;

impl Device for OpaqueDevice {
    fn info(&self) -> DeviceInfo {
        let cpu = crate::device_for(DeviceKind::Cpu).info();
        DeviceInfo {
            kind: DeviceKind::OpaqueTest,
            name: format!("opaque test device ({} behind memory the host cannot address)", cpu.name),
            ..cpu
        }
    }
    fn execute(
        &self,
        plan: &KernelPlan,
        inputs: &[InputView],
        outputs: &[OutputPtr],
        opts: RunOptions,
    ) -> Result<RunStats> {
        let (mut inputs, mut outputs) = (inputs.to_vec(), outputs.to_vec());
        to_storage_views(&mut inputs, &mut outputs);
        execute_plan(plan, &inputs, &outputs, opts)
    }
    fn launch(&self, stream: &Stream, mut launch: StreamLaunch) -> Result<u64> {
        to_storage_views(&mut launch.inputs, &mut launch.outputs);
        Ok(enqueue_launch(stream, launch, execute_plan))
    }
    fn alloc(&self, bytes: usize, align: usize) -> Result<Arc<DeviceBuffer>> {
        let store = DeviceBuffer::alloc(bytes, align)?;
        let addr = to_device(store.ptr());
        Ok(DeviceBuffer::external(addr, bytes, Box::new(store), false))
    }
    fn host_ptr(&self, _: &DeviceBuffer) -> Option<*mut u8> {
        None
    }
    fn copy_in(&self, dst: &DeviceBuffer, offset: usize, src: &[u8]) -> Result<()> {
        hostmem::copy_in(storage, dst, offset, src)
    }
    fn copy_out(&self, src: &DeviceBuffer, offset: usize, dst: &mut [u8]) -> Result<()> {
        hostmem::copy_out(storage, src, offset, dst)
    }
    fn fill_zero(&self, dst: &DeviceBuffer, offset: usize, len: usize) -> Result<()> {
        hostmem::fill_zero(storage, dst, offset, len)
    }
    unsafe fn import_host(
        &self,
        ptr: *mut u8,
        bytes: usize,
        owner: Box<dyn Any + Send + Sync>,
        _readonly: bool,
    ) -> Result<Arc<DeviceBuffer>> {
        let buf = self.alloc(bytes, 64)?;
        if bytes > 0 {
            // SAFETY: the caller guarantees `ptr` addresses `bytes` readable bytes while `owner` lives.
            let src = unsafe { std::slice::from_raw_parts(ptr as *const u8, bytes) };
            self.copy_in(&buf, 0, src)?;
        }
        // The copy is the device's own: the source is no longer needed.
        drop(owner);
        Ok(buf)
    }
    fn dlpack_device(&self) -> Option<(i32, i32)> {
        None
    }
    fn copy_async(
        &self,
        stream: &Stream,
        dst: &Arc<DeviceBuffer>,
        dst_offset: usize,
        src: &Arc<DeviceBuffer>,
        src_offset: usize,
        bytes: usize,
    ) -> Result<u64> {
        hostmem::copy_async(storage, stream, dst, dst_offset, src, src_offset, bytes)
    }
}
