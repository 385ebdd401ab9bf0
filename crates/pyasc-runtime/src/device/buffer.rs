//! Device buffers: memory (from the pool, borrowed from another framework through DLPack, or
//! a device's own) plus the bookkeeping that orders asynchronous work on it.
//!
//! Each buffer remembers the last task that writes it and the last task per stream that
//! reads it. Work queued on a stream first waits for conflicting work queued on other
//! streams (read after write, write after read or write), and host access waits for the
//! same, so results are exact whichever streams the user picks.

use crate::memory::{allocate_aligned, PoolBlock};
use crate::stream::{Stream, StreamCore};
use pyasc_ir::error::{IrError, Result};
use std::any::Any;
use std::sync::{Arc, Mutex};

/// Where a buffer's bytes live.
pub enum Memory {
    /// A block of the caching pool.
    Pool(PoolBlock),
    /// Memory owned by someone else, kept alive by `owner`.
    External {
        /// Start of the memory.
        ptr: *mut u8,
        /// Keeps the memory alive.
        owner: Box<dyn Any + Send + Sync>,
    },
}

#[derive(Default)]
struct Deps {
    write: Option<(Arc<StreamCore>, u64)>,
    reads: Vec<(Arc<StreamCore>, u64)>,
}

/// A block of device memory shared by every array viewing it.
pub struct DeviceBuffer {
    mem: Memory,
    bytes: usize,
    deps: Mutex<Deps>,
    /// Imported from a read-only source: nothing may write it.
    readonly: bool,
    /// The error of the failed work that should have written it: every later read raises it.
    poison: Mutex<Option<IrError>>,
}

// SAFETY: the raw pointer is only dereferenced by tasks ordered through `deps`.
unsafe impl Send for DeviceBuffer {}
// SAFETY: as above.
unsafe impl Sync for DeviceBuffer {}

impl DeviceBuffer {
    /// A new pool buffer of `bytes` bytes aligned to `align`.
    pub fn alloc(bytes: usize, align: usize) -> Result<Arc<DeviceBuffer>> {
        let block = allocate_aligned(bytes.max(1), align)?;
        Ok(Arc::new(DeviceBuffer {
            mem: Memory::Pool(block),
            bytes,
            deps: Mutex::default(),
            readonly: false,
            poison: Mutex::default(),
        }))
    }

    /// A buffer over memory someone else owns (zero-copy import); `readonly` when the owner
    /// does not allow writes (a read-only NumPy array, an immutable JAX array).
    pub fn external(
        ptr: *mut u8,
        bytes: usize,
        owner: Box<dyn Any + Send + Sync>,
        readonly: bool,
    ) -> Arc<DeviceBuffer> {
        Arc::new(DeviceBuffer {
            mem: Memory::External { ptr, owner },
            bytes,
            deps: Mutex::default(),
            readonly,
            poison: Mutex::default(),
        })
    }

    /// True when the memory must never be written.
    pub fn is_readonly(&self) -> bool {
        self.readonly
    }

    /// Mark the contents invalid: the work that should have written them failed with `e`.
    pub fn poison(&self, e: &IrError) {
        *pyasc_events::forksafe::lock(&self.poison) = Some(e.clone());
    }

    /// The error that left the contents invalid, if any.
    pub fn poisoned(&self) -> Option<IrError> {
        pyasc_events::forksafe::lock(&self.poison).clone()
    }

    /// The contents are valid again (the whole buffer was overwritten).
    pub fn heal(&self) {
        *pyasc_events::forksafe::lock(&self.poison) = None;
    }

    /// Start of the memory in the address space of the device that made the buffer (a host
    /// address for host-memory devices). Only that device interprets it; everyone else asks
    /// the device ([`crate::Device::host_ptr`], [`crate::Device::device_ptr`]).
    pub fn ptr(&self) -> *mut u8 {
        match &self.mem {
            Memory::Pool(b) => b.as_ptr(),
            Memory::External { ptr, .. } => *ptr,
        }
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// True for a zero-byte buffer.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Before queueing work on `stream` that reads (or, if `write`, writes) this buffer, make
    /// the stream wait for conflicting work queued on other streams.
    pub fn order_on(&self, stream: &Stream, write: bool) {
        let deps = pyasc_events::forksafe::lock(&self.deps);
        if let Some((s, seq)) = &deps.write {
            stream.wait_stream(s, *seq);
        }
        if write {
            for (s, seq) in &deps.reads {
                stream.wait_stream(s, *seq);
            }
        }
    }

    /// After queueing task `seq` on `stream` that uses this buffer, remember it.
    pub fn record_use(&self, stream: &Stream, seq: u64, write: bool) {
        let mut deps = pyasc_events::forksafe::lock(&self.deps);
        let core = stream.core().clone();
        if write {
            deps.write = Some((core, seq));
            deps.reads.clear();
        } else if let Some(r) = deps.reads.iter_mut().find(|(s, _)| Arc::ptr_eq(s, &core)) {
            r.1 = seq;
        } else {
            deps.reads.push((core, seq));
        }
    }

    /// Wait until the host may read (or, if `write`, write) the memory.
    pub fn wait_host(&self, write: bool) {
        let (w, reads) = {
            let deps = pyasc_events::forksafe::lock(&self.deps);
            (deps.write.clone(), if write { deps.reads.clone() } else { Vec::new() })
        };
        if let Some((s, seq)) = w {
            s.wait_for(seq);
        }
        for (s, seq) in reads {
            s.wait_for(seq);
        }
    }

    /// The stream and task that last wrote the buffer, if any.
    pub fn last_writer(&self) -> Option<(Arc<StreamCore>, u64)> {
        pyasc_events::forksafe::lock(&self.deps).write.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    #[test]
    fn work_on_another_stream_waits_for_the_writer() {
        let a = Stream::new();
        let b = Stream::new();
        let buf = DeviceBuffer::alloc(8, 128).unwrap();
        let p = buf.ptr() as usize;
        buf.order_on(&a, true);
        let seq = a.enqueue(Box::new(move || {
            std::thread::sleep(Duration::from_millis(20));
            // SAFETY: the buffer holds 8 bytes and outlives the task (the test waits).
            unsafe { *(p as *mut u64) = 42 };
            Ok(())
        }));
        buf.record_use(&a, seq, true);
        let seen = Arc::new(AtomicU64::new(0));
        buf.order_on(&b, false);
        let s2 = seen.clone();
        let seq = b.enqueue(Box::new(move || {
            // SAFETY: as above.
            s2.store(unsafe { *(p as *const u64) }, Ordering::SeqCst);
            Ok(())
        }));
        buf.record_use(&b, seq, false);
        buf.wait_host(true);
        assert_eq!(seen.load(Ordering::SeqCst), 42);
        b.synchronize().unwrap();
    }
}
