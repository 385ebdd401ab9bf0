//! The caching memory pool for large buffers (outputs and intermediates).
//!
//! Fresh large allocations come from the OS as untouched pages, and touching them costs a
//! page fault per 4 KiB: for a 64 MiB output that is more than the kernel itself. The pool
//! keeps freed blocks by size class (four classes per power of two, so at most 25% slack)
//! and hands them out again, warm. Blocks are aligned to 128 bytes or more. The bytes it keeps
//! cached are capped (`PYASC_POOL_CACHE_BYTES`, default 2 GiB); `empty_cache` returns them all.
//! `PYASC_MEMORY_LIMIT` (bytes, or with a K/M/G suffix) caps the bytes in use: an allocation
//! past it is an `OutOfMemory` error, never an abort.

use pyasc_ir::error::{ErrorKind, IrError, Result};
use std::alloc::{alloc, dealloc, Layout};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Alignment of every pool block, in bytes.
pub const ALIGN: usize = 128;

/// Free blocks by (size class, alignment), as addresses.
type FreeLists = HashMap<(usize, usize), Vec<usize>>;

static CACHE: Mutex<Option<FreeLists>> = Mutex::new(None);
static IN_USE: AtomicUsize = AtomicUsize::new(0);
static CACHED: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static REUSES: AtomicUsize = AtomicUsize::new(0);

/// Parse a byte count with an optional K, M or G suffix (powers of 1024).
pub fn parse_bytes(text: &str) -> Option<usize> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()?.to_ascii_uppercase() {
        'K' => (&t[..t.len() - 1], 1usize << 10),
        'M' => (&t[..t.len() - 1], 1 << 20),
        'G' => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mult)
}

/// The cap on bytes in use from `PYASC_MEMORY_LIMIT`, if set and valid.
pub fn memory_limit() -> Option<usize> {
    static LIMIT: OnceLock<Option<usize>> = OnceLock::new();
    *LIMIT.get_or_init(|| std::env::var("PYASC_MEMORY_LIMIT").ok().and_then(|v| parse_bytes(&v)))
}

fn cache_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| std::env::var("PYASC_POOL_CACHE_BYTES").ok().and_then(|v| v.parse().ok()).unwrap_or(2 << 30))
}

/// The size class of a request: rounded up to a quarter of its power of two.
pub fn size_class(bytes: usize) -> usize {
    let bytes = bytes.max(ALIGN);
    let top = usize::BITS - 1 - bytes.leading_zeros();
    let step = (1usize << top) / 4;
    let step = step.max(ALIGN);
    // Past the largest class the request is kept as it is (and fails to allocate).
    bytes.div_ceil(step).checked_mul(step).unwrap_or(bytes)
}

/// A block of pool memory; returned to the pool when dropped.
#[derive(Debug)]
pub struct PoolBlock {
    ptr: NonNull<u8>,
    class: usize,
    align: usize,
}

// SAFETY: a block is plain memory owned by exactly one PoolBlock.
unsafe impl Send for PoolBlock {}
// SAFETY: as above; shared access hands out only the raw address.
unsafe impl Sync for PoolBlock {}

impl PoolBlock {
    /// Start of the block.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    /// Usable bytes.
    pub fn capacity(&self) -> usize {
        self.class
    }
    /// Alignment of the start, in bytes.
    pub fn alignment(&self) -> usize {
        self.align
    }
}

/// A block of at least `bytes` bytes aligned to [`ALIGN`], reused from the cache when one of
/// its class is free.
pub fn allocate(bytes: usize) -> Result<PoolBlock> {
    allocate_aligned(bytes, ALIGN)
}

/// A block of at least `bytes` bytes aligned to `align` (a power of two, at least [`ALIGN`]
/// is used).
pub fn allocate_aligned(bytes: usize, align: usize) -> Result<PoolBlock> {
    if !align.is_power_of_two() {
        return Err(IrError::new(ErrorKind::Alignment, format!("alignment must be a power of two, not {align}")));
    }
    let class = size_class(bytes);
    // Large blocks start on a huge-page boundary so the kernel can back them with huge pages.
    let align = if class >= HUGE_MIN_BYTES { align.max(HUGE_PAGE).max(ALIGN) } else { align.max(ALIGN) };
    if let Some(limit) = memory_limit() {
        let in_use = IN_USE.load(Ordering::Relaxed);
        if in_use + class > limit {
            return Err(IrError::new(
                ErrorKind::OutOfMemory,
                format!(
                    "out of device memory: {bytes} bytes requested, {in_use} of the {limit} bytes allowed by \
                     PYASC_MEMORY_LIMIT in use"
                ),
            ));
        }
        if in_use + CACHED.load(Ordering::Relaxed) + class > limit {
            empty_cache();
        }
    }
    let began = pyasc_events::event::enabled().then(std::time::Instant::now);
    let reused = pyasc_events::forksafe::lock(&CACHE).as_mut().and_then(|m| m.get_mut(&(class, align))?.pop());
    let ptr = match reused {
        Some(p) => {
            CACHED.fetch_sub(class, Ordering::Relaxed);
            REUSES.fetch_add(1, Ordering::Relaxed);
            p as *mut u8
        }
        None => {
            let layout = Layout::from_size_align(class, align).map_err(|_| oom(bytes))?;
            // SAFETY: the layout has a non-zero size.
            let p = unsafe { alloc(layout) };
            let p = if p.is_null() {
                // Give the cache back to the system and try once more.
                empty_cache();
                // SAFETY: as above.
                let p = unsafe { alloc(layout) };
                if p.is_null() {
                    return Err(oom(bytes));
                }
                p
            } else {
                p
            };
            advise_huge(p, class);
            p
        }
    };
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    let now = IN_USE.fetch_add(class, Ordering::Relaxed) + class;
    PEAK.fetch_max(now, Ordering::Relaxed);
    if let Some(t) = began {
        use pyasc_events::event::{record, Event, EventKind};
        let was_reused = u64::from(reused.is_some());
        record(
            Event::new(EventKind::Alloc, "alloc", t, std::time::Instant::now())
                .with("bytes", class as u64)
                .with("reused", was_reused),
        );
    }
    Ok(PoolBlock { ptr: NonNull::new(ptr).expect("checked above"), class, align })
}

fn oom(bytes: usize) -> IrError {
    IrError::new(ErrorKind::OutOfMemory, format!("out of memory allocating {bytes} bytes"))
}

impl Drop for PoolBlock {
    fn drop(&mut self) {
        let began = pyasc_events::event::enabled().then(std::time::Instant::now);
        IN_USE.fetch_sub(self.class, Ordering::Relaxed);
        if CACHED.load(Ordering::Relaxed) + self.class <= cache_limit() {
            let mut guard = pyasc_events::forksafe::lock(&CACHE);
            guard
                .get_or_insert_with(HashMap::new)
                .entry((self.class, self.align))
                .or_default()
                .push(self.ptr.as_ptr() as usize);
            CACHED.fetch_add(self.class, Ordering::Relaxed);
        } else {
            // SAFETY: allocated with this class and alignment.
            unsafe { dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.class, self.align)) };
        }
        if let Some(t) = began {
            use pyasc_events::event::{record, Event, EventKind};
            record(Event::new(EventKind::Free, "free", t, std::time::Instant::now()).with("bytes", self.class as u64));
        }
    }
}

/// Below this many bytes a copy or fill runs on the calling thread.
const PARALLEL_COPY_BYTES: usize = 1 << 20;

/// Copy `n` bytes, spreading large copies over the worker pool; overlapping ranges are moved
/// as by `memmove`.
///
/// # Safety
/// `src` and `dst` must each address `n` bytes.
pub unsafe fn copy_bytes(dst: *mut u8, src: *const u8, n: usize) {
    let (d0, s0) = (dst as usize, src as usize);
    if d0 < s0 + n && s0 < d0 + n {
        // Overlapping ranges (two views of one buffer): a memmove, as `np.copyto` gives.
        // SAFETY: per the contract above; `copy` allows overlap.
        unsafe { std::ptr::copy(src, dst, n) };
        return;
    }
    if n < PARALLEL_COPY_BYTES || crate::pool::num_threads() == 1 {
        // SAFETY: per the contract above.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
        return;
    }
    use rayon::prelude::*;
    // SAFETY: per the contract above; chunks are disjoint.
    let (d, s) = unsafe { (std::slice::from_raw_parts_mut(dst, n), std::slice::from_raw_parts(src, n)) };
    let chunk = (n / (crate::pool::num_threads() * 4)).max(PARALLEL_COPY_BYTES / 4);
    crate::pool::install(|| d.par_chunks_mut(chunk).zip(s.par_chunks(chunk)).for_each(|(d, s)| d.copy_from_slice(s)));
}

/// Set `n` bytes to zero, spreading large fills over the worker pool.
///
/// # Safety
/// `dst` must address `n` writable bytes.
pub unsafe fn zero_bytes(dst: *mut u8, n: usize) {
    use rayon::prelude::*;
    // SAFETY: per the contract above.
    let d = unsafe { std::slice::from_raw_parts_mut(dst, n) };
    if n < PARALLEL_COPY_BYTES {
        d.fill(0);
    } else {
        crate::pool::install(|| d.par_chunks_mut(PARALLEL_COPY_BYTES / 4).for_each(|c| c.fill(0)));
    }
}

/// Free every cached block.
pub fn empty_cache() {
    let taken = pyasc_events::forksafe::lock(&CACHE).take();
    for ((class, align), ptrs) in taken.into_iter().flatten() {
        for p in ptrs {
            CACHED.fetch_sub(class, Ordering::Relaxed);
            // SAFETY: allocated with this class and alignment.
            unsafe { dealloc(p as *mut u8, Layout::from_size_align_unchecked(class, align)) };
        }
    }
}

/// Pool statistics.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes in blocks handed out and not yet returned.
    pub in_use: usize,
    /// Bytes in free blocks kept for reuse.
    pub cached: usize,
    /// Highest `in_use` seen.
    pub peak: usize,
    /// Blocks handed out.
    pub allocations: usize,
    /// Of those, how many were reused from the cache.
    pub reuses: usize,
}

/// Start the peak over from the bytes in use now (`torch.cuda.reset_peak_memory_stats`).
pub fn reset_peak() {
    PEAK.store(IN_USE.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// Current statistics.
pub fn stats() -> PoolStats {
    PoolStats {
        in_use: IN_USE.load(Ordering::Relaxed),
        cached: CACHED.load(Ordering::Relaxed),
        peak: PEAK.load(Ordering::Relaxed),
        allocations: ALLOCS.load(Ordering::Relaxed),
        reuses: REUSES.load(Ordering::Relaxed),
    }
}

/// Blocks of at least this many bytes are aligned to [`HUGE_PAGE`] and advised to use
/// transparent huge pages, as NumPy does for its large arrays: a 16 MiB array spans 4096
/// small pages, more than the second-level TLB holds, so a pass over it and its output
/// walks the page table every 4 KiB.
const HUGE_MIN_BYTES: usize = 4 << 20;

/// The huge page size of x86-64 and most aarch64 Linux systems.
const HUGE_PAGE: usize = 2 << 20;

/// Ask the kernel to back `bytes` bytes at `p` (a fresh allocation) with transparent huge
/// pages; a hint that changes nothing where they are off or unsupported.
fn advise_huge(p: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    if bytes >= HUGE_MIN_BYTES {
        // SAFETY: the range is a live allocation of ours; the advice only affects how the
        // kernel backs it, never its contents, and an error leaves it as it was.
        unsafe { libc::madvise(p as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (p, bytes);
}

pub(crate) use pyasc_ir::tile::STREAM_MIN_BYTES;

/// Copy `n` bytes from `src` to `dst` with streaming stores for the 16-byte aligned part of
/// `dst` (any alignment of `src`). Call [`store_fence`] before others may read `dst`.
///
/// # Safety
/// `src` and `dst` address `n` bytes each and do not overlap.
pub(crate) unsafe fn stream_copy(dst: *mut u8, src: *const u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use pyasc_kernels::isa::{active, Isa};
        // One store instruction per cache line where the ISA has 64-byte vectors: with 16-byte
        // stores the copy out of a streamed tile was a tenth of a three-branch elementwise
        // kernel's time (perf).
        match active() {
            // SAFETY: the active ISA is one this CPU supports; per the contract above.
            Isa::Avx512 => unsafe { stream_copy_avx512(dst, src, n) },
            // SAFETY: as above.
            Isa::Avx2Fma => unsafe { stream_copy_avx(dst, src, n) },
            // SAFETY: per the contract above.
            _ => unsafe { stream_copy_sse2(dst, src, n) },
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: per the contract above.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, n)
    };
}

/// Define a [`stream_copy`] variant storing `$width`-byte vectors (`$store` of `$load`) from a
/// `$width`-byte aligned start, compiled for `$feature`.
macro_rules! stream_copy_variant {
    ($(#[$doc:meta])* $name:ident, $feature:literal, $vec:ident, $width:literal, $load:ident, $store:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As for [`stream_copy`]; the CPU has the feature the variant is compiled for.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feature)]
        unsafe fn $name(dst: *mut u8, src: *const u8, n: usize) {
            use std::arch::x86_64::{$load, $store, $vec};
            let head = dst.align_offset($width).min(n);
            // SAFETY: every access stays inside the `n` bytes of each side.
            unsafe {
                std::ptr::copy_nonoverlapping(src, dst, head);
                let mut i = head;
                while i + $width <= n {
                    $store(dst.add(i) as *mut $vec, $load(src.add(i) as *const $vec));
                    i += $width;
                }
                std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), n - i);
            }
        }
    };
}

stream_copy_variant!(
    /// [`stream_copy`] with 64-byte streaming stores (AVX-512F).
    stream_copy_avx512, "avx512f", __m512i, 64, _mm512_loadu_si512, _mm512_stream_si512
);
stream_copy_variant!(
    /// [`stream_copy`] with 32-byte streaming stores (AVX).
    stream_copy_avx, "avx", __m256i, 32, _mm256_loadu_si256, _mm256_stream_si256
);
stream_copy_variant!(
    /// [`stream_copy`] with 16-byte streaming stores (SSE2, every x86-64 CPU).
    stream_copy_sse2, "sse2", __m128i, 16, _mm_loadu_si128, _mm_stream_si128
);

/// Make this thread's streaming stores visible to other threads (they are weakly ordered).
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a store fence has no memory operands.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_waste_at_most_a_quarter() {
        for bytes in [1usize, 127, 128, 1000, 4096, 5000, 1 << 20, (1 << 20) + 1, 3 << 25, 123_456_789] {
            let c = size_class(bytes);
            assert!(c >= bytes && c.is_multiple_of(ALIGN));
            assert!(c <= bytes.max(ALIGN) + bytes.max(ALIGN) / 4 + ALIGN, "{bytes} -> {c}");
        }
    }

    #[test]
    fn byte_counts_parse_with_suffixes() {
        assert_eq!(parse_bytes("1024"), Some(1024));
        assert_eq!(parse_bytes("64M"), Some(64 << 20));
        assert_eq!(parse_bytes(" 2g "), Some(2 << 30));
        assert_eq!(parse_bytes("12k"), Some(12 << 10));
        assert_eq!(parse_bytes("lots"), None);
        assert_eq!(parse_bytes(""), None);
    }

    #[test]
    fn large_alignments_are_honoured_and_bad_ones_rejected() {
        let b = allocate_aligned(1000, 4096).unwrap();
        assert_eq!(b.as_ptr() as usize % 4096, 0);
        assert_eq!(allocate_aligned(1000, 100).unwrap_err().kind, ErrorKind::Alignment);
    }

    #[test]
    fn large_blocks_start_on_a_huge_page_and_come_back_from_the_cache() {
        let a = allocate(HUGE_MIN_BYTES + 12345).unwrap();
        let p = a.as_ptr();
        assert_eq!(p as usize % HUGE_PAGE, 0);
        assert_eq!(a.alignment(), HUGE_PAGE);
        // SAFETY: the block holds at least this many bytes.
        unsafe { std::ptr::write_bytes(p, 7, HUGE_MIN_BYTES + 12345) };
        drop(a);
        let b = allocate(HUGE_MIN_BYTES + 100).unwrap();
        assert_eq!(b.as_ptr(), p, "same class and alignment come back");
        let small = allocate(HUGE_MIN_BYTES / 2).unwrap();
        assert_eq!(small.alignment(), ALIGN);
    }

    #[test]
    fn freed_blocks_are_reused_aligned() {
        let a = allocate(3 << 20).unwrap();
        let p = a.as_ptr();
        assert_eq!(p as usize % ALIGN, 0);
        drop(a);
        let before = stats().reuses;
        let b = allocate((3 << 20) - 100).unwrap();
        assert_eq!(b.as_ptr(), p, "same class comes back");
        assert!(stats().reuses > before);
    }

    /// A streaming copy variant.
    type CopyFn = unsafe fn(*mut u8, *const u8, usize);

    /// Every variant the CPU can run, the dispatched one first.
    fn stream_copies() -> Vec<(&'static str, CopyFn)> {
        let mut v: Vec<(&'static str, CopyFn)> = vec![("dispatched", stream_copy)];
        #[cfg(target_arch = "x86_64")]
        {
            v.push(("sse2", stream_copy_sse2));
            if std::arch::is_x86_feature_detected!("avx") {
                v.push(("avx", stream_copy_avx));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                v.push(("avx512", stream_copy_avx512));
            }
        }
        v
    }

    #[test]
    fn stream_copy_moves_every_byte_at_any_alignment_and_length() {
        let src: Vec<u8> = (0..400u32).map(|i| (i * 7 % 251) as u8).collect();
        for (name, copy) in stream_copies() {
            for (soff, doff) in (0..70).map(|d| (3, d)).chain((0..70).map(|s| (s, 0))) {
                for n in [0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200, 255, 320] {
                    let mut dst = vec![0u8; 400];
                    // SAFETY: both ranges lie inside their own vectors.
                    unsafe { copy(dst.as_mut_ptr().add(doff), src.as_ptr().add(soff), n) };
                    store_fence();
                    assert_eq!(&dst[doff..doff + n], &src[soff..soff + n], "{name}: offsets {soff}/{doff}, {n} bytes");
                    assert!(
                        dst[..doff].iter().chain(&dst[doff + n..]).all(|&b| b == 0),
                        "{name}: offsets {soff}/{doff}, {n} bytes"
                    );
                }
            }
        }
    }
}
