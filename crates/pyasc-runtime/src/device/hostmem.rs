//! Copies and fills of buffers whose bytes the host can reach: the default memory operations
//! of [`crate::Device`] (the CPU, NPU-twin and null devices) and the private storage of the
//! opaque test device.
//!
//! Each function takes a [`Resolve`], the function that turns a buffer into the host address
//! of its bytes (`DeviceBuffer::ptr` for host memory), and waits for or orders after the
//! buffer's pending work before touching it.

use crate::buffer::DeviceBuffer;
use crate::stream::Stream;
use pyasc_ir::error::{ErrorKind, IrError, Result};
use std::sync::Arc;

/// The host address of a buffer's bytes.
pub(crate) type Resolve = fn(&DeviceBuffer) -> *mut u8;

/// The host address of a host-memory buffer: the buffer's own address.
pub(crate) fn own_address(buf: &DeviceBuffer) -> *mut u8 {
    buf.ptr()
}

/// Refuse to write a buffer imported from read-only memory.
pub(crate) fn check_writable(buf: &DeviceBuffer) -> Result<()> {
    if buf.is_readonly() {
        return Err(IrError::new(ErrorKind::InvalidArgument, "cannot write a buffer over read-only memory"));
    }
    Ok(())
}

/// Refuse a range of `len` bytes at `offset` that does not lie inside `buf`.
pub(crate) fn check_range(buf: &DeviceBuffer, offset: usize, len: usize) -> Result<()> {
    if offset.checked_add(len).is_none_or(|end| end > buf.len()) {
        return Err(IrError::new(
            ErrorKind::InvalidArgument,
            format!("copy of {len} bytes at offset {offset} exceeds a buffer of {} bytes", buf.len()),
        ));
    }
    Ok(())
}

/// When a copy starts, while someone collects events.
fn copy_began() -> Option<std::time::Instant> {
    pyasc_events::event::enabled().then(std::time::Instant::now)
}

/// Record a copy event of `bytes` bytes begun at `t`.
fn copy_done(t: Option<std::time::Instant>, name: &'static str, bytes: usize) {
    if let Some(t) = t {
        use pyasc_events::event::{record, Event, EventKind};
        record(Event::new(EventKind::Copy, name, t, std::time::Instant::now()).with("bytes", bytes as u64));
    }
}

/// Copy `src` into `dst` at byte `offset`, once work writing or reading it is done.
pub(crate) fn copy_in(at: Resolve, dst: &DeviceBuffer, offset: usize, src: &[u8]) -> Result<()> {
    check_writable(dst)?;
    check_range(dst, offset, src.len())?;
    dst.wait_host(true);
    let t = copy_began();
    // SAFETY: the range lies inside the buffer (checked) and no queued work uses it (waited).
    unsafe { crate::memory::copy_bytes(at(dst).add(offset), src.as_ptr(), src.len()) };
    copy_done(t, "copy host to device", src.len());
    if offset == 0 && src.len() == dst.len() {
        dst.heal();
    }
    Ok(())
}

/// Copy bytes of `src` from byte `offset` into `dst`, once work writing it is done.
pub(crate) fn copy_out(at: Resolve, src: &DeviceBuffer, offset: usize, dst: &mut [u8]) -> Result<()> {
    check_range(src, offset, dst.len())?;
    src.wait_host(false);
    let t = copy_began();
    // SAFETY: as above; `dst` is an exclusive host slice of the same length.
    unsafe { crate::memory::copy_bytes(dst.as_mut_ptr(), at(src).add(offset), dst.len()) };
    copy_done(t, "copy device to host", dst.len());
    Ok(())
}

/// Set `len` bytes of `dst` from byte `offset` to zero, once work writing or reading it is done.
pub(crate) fn fill_zero(at: Resolve, dst: &DeviceBuffer, offset: usize, len: usize) -> Result<()> {
    check_writable(dst)?;
    check_range(dst, offset, len)?;
    dst.wait_host(true);
    // SAFETY: the range lies inside the buffer (checked) and no queued work uses it (waited).
    unsafe { crate::memory::zero_bytes(at(dst).add(offset), len) };
    if offset == 0 && len == dst.len() {
        dst.heal();
    }
    Ok(())
}

/// Queue a copy of `bytes` bytes between two buffers on `stream`, after conflicting work.
pub(crate) fn copy_async(
    at: Resolve,
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
    let seq = stream.enqueue_writing(
        "copy",
        Box::new(move || {
            if let Some(e) = s.poisoned() {
                // Copying invalid contents passes the failure on.
                d.poison(&e);
                return Err(e);
            }
            let t = copy_began();
            // SAFETY: both ranges lie inside their buffers (checked), which the task keeps
            // alive; the recorded stream order keeps other work off them meanwhile.
            unsafe { crate::memory::copy_bytes(at(&d).add(dst_offset), at(&s).add(src_offset), bytes) };
            copy_done(t, "copy device to device", bytes);
            if dst_offset == 0 && bytes == d.len() {
                d.heal();
            }
            Ok(())
        }),
        vec![dst.clone()],
    );
    src.record_use(stream, seq, false);
    dst.record_use(stream, seq, true);
    Ok(seq)
}
