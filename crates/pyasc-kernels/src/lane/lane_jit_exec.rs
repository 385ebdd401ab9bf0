//! Executable memory for [`crate::lane_jit`]: the assembled bytes copied into fresh anonymous
//! pages, which are then made read-only and executable (never writable and executable at
//! once), and unmapped when dropped.

/// Machine code in pages of its own.
pub(crate) struct Exec {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the pages are immutable after construction; running the code from any thread is
// the caller's concern (the code itself keeps no state).
unsafe impl Send for Exec {}
// SAFETY: as above.
unsafe impl Sync for Exec {}

impl Exec {
    /// Pages holding `code`, executable; `None` when the system refuses them.
    pub(crate) fn new(code: &[u8]) -> Option<Exec> {
        let len = code.len().max(1);
        // SAFETY: a fresh private anonymous mapping; the result is checked before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        let exec = Exec { ptr, len };
        // SAFETY: the mapping is `len` writable bytes, `code` fits it.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), ptr as *mut u8, code.len()) };
        // SAFETY: the mapping is ours; from here on it is read and executed only.
        if unsafe { libc::mprotect(ptr, len, libc::PROT_READ | libc::PROT_EXEC) } != 0 {
            return None;
        }
        Some(exec)
    }

    /// The first byte of the code.
    pub(crate) fn ptr(&self) -> *const u8 {
        self.ptr as *const u8
    }

    /// Bytes of code.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `new` and nothing runs from it any more (its owner
        // is being dropped).
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}
