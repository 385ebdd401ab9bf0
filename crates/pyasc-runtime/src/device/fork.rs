//! Keeping pyasc usable in a child process after `fork()` (`os.fork`, `multiprocessing`'s
//! fork start method).
//!
//! Only the forking thread exists in the child: the launch team's helpers, the worker pool
//! and the streams' worker threads are gone, and a mutex another thread held at the moment of
//! the fork would stay locked forever. Handlers registered with `pthread_atfork` therefore:
//!
//! * before the fork, close the fork gate ([`pyasc_events::forksafe`]) so that no thread is inside
//!   a short critical section (buffer bookkeeping, the memory pool, event buffers), then lock
//!   every stream's and event's state, so that none is held by another thread;
//! * in the parent, release all of it;
//! * in the child, reset every stream (its worker is gone: the task it was running fails and
//!   poisons what it writes, queued tasks run on a new worker), release the locks, open the
//!   gate, and drop the launch team and the worker pool, which are built anew on first use.

use std::cell::RefCell;
use std::sync::Once;

thread_local! {
    /// The stream and event locks held by this thread between the prepare handler and the
    /// parent or child handler (all three run on the forking thread).
    static HELD: RefCell<Option<crate::stream::HeldForFork>> = const { RefCell::new(None) };
}

extern "C" fn prepare() {
    pyasc_events::forksafe::quiesce();
    let held = crate::stream::HeldForFork::lock_all();
    HELD.with(|h| *h.borrow_mut() = Some(held));
}

extern "C" fn parent() {
    HELD.with(|h| drop(h.borrow_mut().take()));
    pyasc_events::forksafe::resume();
}

extern "C" fn child() {
    // Buffers are poisoned while resetting streams: the gate must be open (nobody else runs).
    pyasc_events::forksafe::reset_in_child();
    if let Some(held) = HELD.with(|h| h.borrow_mut().take()) {
        held.release_in_child();
    }
    crate::team::reset_in_child();
    crate::pool::reset_in_child();
}

extern "C" {
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> std::os::raw::c_int;
}

/// Register the fork handlers (once per process; called when the first thread or stream
/// pyasc owns is created).
pub fn install() {
    static ONCE: Once = Once::new();
    // SAFETY: the handlers are plain functions that live for the whole process.
    ONCE.call_once(|| unsafe {
        pthread_atfork(Some(prepare), Some(parent), Some(child));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::Stream;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    extern "C" {
        fn fork() -> i32;
        fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
        fn _exit(code: i32) -> !;
    }

    /// Fork; run `child` in the child (its return value is the exit code, 99 on a panic) and
    /// return the child's exit status, failing after 20 s (a hang).
    fn in_child(child: impl FnOnce() -> i32) -> i32 {
        // SAFETY: the child only runs `child` and exits without unwinding into the harness.
        let pid = unsafe { fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(99);
            // SAFETY: ends the child at once, without running the parent's exit handlers.
            unsafe { _exit(code) }
        }
        let began = std::time::Instant::now();
        let mut status = 0;
        loop {
            // SAFETY: `status` is a valid out-pointer; 1 is WNOHANG.
            let r = unsafe { waitpid(pid, &mut status, 1) };
            if r == pid {
                return (status >> 8) & 0xff;
            }
            assert!(began.elapsed() < Duration::from_secs(20), "the child hung");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_child_runs_streams_and_kernels_while_the_parent_was_busy() {
        install();
        // Threads exist and a lock-taking section is busy in another thread while forking.
        let s = Stream::new();
        s.enqueue(Box::new(|| Ok(())));
        s.synchronize().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let busy = std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                let b = crate::buffer::DeviceBuffer::alloc(1 << 20, 128).unwrap();
                b.poison(&pyasc_ir::IrError::internal("x"));
                b.heal();
            }
        });
        for _ in 0..5 {
            let code = in_child(|| {
                let ran = Arc::new(AtomicUsize::new(0));
                let r = ran.clone();
                s.enqueue(Box::new(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }));
                s.synchronize().unwrap();
                let fresh = Stream::new();
                let r = ran.clone();
                fresh.enqueue(Box::new(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }));
                fresh.synchronize().unwrap();
                let b = crate::buffer::DeviceBuffer::alloc(1 << 20, 128).unwrap();
                assert!(b.poisoned().is_none());
                let units = AtomicUsize::new(0);
                crate::pool::for_blocks::<()>(64, crate::pool::num_threads() - 1, |_| {
                    units.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                })
                .unwrap();
                if ran.load(Ordering::SeqCst) == 2 && units.load(Ordering::Relaxed) == 64 {
                    0
                } else {
                    1
                }
            });
            assert_eq!(code, 0);
        }
        stop.store(true, Ordering::Relaxed);
        busy.join().unwrap();
    }

    #[test]
    fn a_task_running_at_the_fork_fails_in_the_child_and_poisons_its_output() {
        install();
        let s = Stream::new();
        let out = crate::buffer::DeviceBuffer::alloc(64, 128).unwrap();
        let started = Arc::new(AtomicBool::new(false));
        let st = started.clone();
        let seq = s.enqueue_writing(
            "slow",
            Box::new(move || {
                st.store(true, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(300));
                Ok(())
            }),
            vec![out.clone()],
        );
        while !started.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let code = in_child(|| {
            s.core().wait_for(seq);
            let err = s.synchronize().unwrap_err();
            let poisoned = out.poisoned().map(|e| e.message).unwrap_or_default();
            i32::from(!(err.message.contains("forked") && poisoned.contains("forked")))
        });
        assert_eq!(code, 0);
        s.synchronize().unwrap();
        assert!(out.poisoned().is_none(), "the parent's task finished normally");
    }
}
