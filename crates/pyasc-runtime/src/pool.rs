//! The worker pool: a rayon pool of its own (not rayon's global one, which cannot be rebuilt),
//! sized once from `PYASC_NUM_THREADS` (at most [`MAX_THREADS`]) or the number of cores, and
//! built again on first use in a forked child, whose worker threads are gone. A thread inside
//! [`serial`] sees one worker: kernels it runs stay on it (pipelines give each worker its own
//! micro-batches this way).

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, OnceLock};

static THREADS: OnceLock<usize> = OnceLock::new();

thread_local! {
    /// Whether this thread runs kernels on itself alone ([`serial`]).
    static SERIAL: Cell<bool> = const { Cell::new(false) };
}

/// The most worker threads `PYASC_NUM_THREADS` may ask for.
pub const MAX_THREADS: usize = 256;

/// Number of worker threads kernels are spread over (1 inside [`serial`]).
pub fn num_threads() -> usize {
    if SERIAL.with(Cell::get) {
        return 1;
    }
    pool_threads()
}

/// Runs `f` with every kernel it launches on the calling thread alone: [`num_threads`] is 1
/// there until `f` returns.
pub fn serial<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SERIAL.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SERIAL.with(|s| s.replace(true)));
    f()
}

/// Number of threads of the worker pool, whatever the calling thread is.
pub fn pool_threads() -> usize {
    *THREADS.get_or_init(|| {
        std::env::var("PYASC_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|n| *n > 0)
            // More workers than this only adds contention (and thousands would exhaust the process).
            .map(|n| n.min(MAX_THREADS))
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
    })
}

/// The current pool (null until first use, and again in a forked child).
static POOL: AtomicPtr<rayon::ThreadPool> = AtomicPtr::new(std::ptr::null_mut());
static BUILD: Mutex<()> = Mutex::new(());

/// The worker pool, built on first use.
pub fn pool() -> &'static rayon::ThreadPool {
    let p = POOL.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: pools are leaked, never freed.
        return unsafe { &*p };
    }
    let _building = pyasc_ir::forksafe::lock(&BUILD);
    let p = POOL.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: as above.
        return unsafe { &*p };
    }
    crate::fork::install();
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(pool_threads())
        .thread_name(|i| format!("pyasc-worker-{i}"))
        .build()
        .or_else(|_| rayon::ThreadPoolBuilder::new().num_threads(1).build())
        .expect("a one-thread pool can always be built");
    let p: &'static rayon::ThreadPool = Box::leak(Box::new(built));
    POOL.store(p as *const _ as *mut _, Ordering::Release);
    p
}

/// Run `f` inside the worker pool (rayon's parallel iterators in it use the pool's threads).
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    pool().install(f)
}

/// In a forked child: the pool's threads are gone, so the next use builds a new pool. The old
/// one is leaked (dropping it would wait for threads that do not exist).
pub(crate) fn reset_in_child() {
    POOL.store(std::ptr::null_mut(), Ordering::Release);
}

/// Runs `f(0..blocks)` on the calling thread and the launch team's helpers (or, when the team
/// is busy, `helpers` rayon workers) together: each takes the next unclaimed block until none
/// is left. The caller works instead of waiting for the others to wake. Returns the
/// first error any block returned (the others still finish; no new block starts after it).
pub fn for_blocks<E: Send>(blocks: usize, helpers: usize, f: impl Fn(usize) -> Result<(), E> + Sync) -> Result<(), E> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let error: Mutex<Option<E>> = Mutex::new(None);
    // The kernel these blocks belong to, for the block events of every thread that runs one.
    let kernel = pyasc_ir::event::current_kernel();
    let work = || {
        let outer = pyasc_ir::event::set_kernel(kernel);
        while !failed.load(Ordering::Relaxed) {
            let b = next.fetch_add(1, Ordering::Relaxed);
            if b >= blocks {
                break;
            }
            if let Err(e) = f(b) {
                failed.store(true, Ordering::Relaxed);
                error.lock().expect("error slot poisoned").get_or_insert(e);
            }
        }
        pyasc_ir::event::set_kernel(outer);
    };
    if helpers == 0 || blocks <= 1 {
        work();
    } else if !crate::team::run(&work) {
        // Another launch holds the team: share rayon's pool instead.
        pool().in_place_scope(|s| {
            for _ in 0..helpers.min(blocks - 1) {
                s.spawn(|_| work());
            }
            work();
        });
    }
    match error.into_inner().expect("error slot poisoned") {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_block_runs_once() {
        let hits: Vec<AtomicUsize> = (0..97).map(|_| AtomicUsize::new(0)).collect();
        for_blocks::<()>(97, 3, |b| {
            hits[b].fetch_add(1, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn serial_sees_one_thread() {
        let outside = num_threads();
        assert_eq!(serial(num_threads), 1);
        assert_eq!(serial(|| serial(num_threads)), 1);
        assert_eq!(num_threads(), outside);
        assert_eq!(pool_threads(), outside);
    }

    #[test]
    fn an_error_is_returned() {
        let r = for_blocks(50, 2, |b| if b == 7 { Err(b) } else { Ok(()) });
        assert_eq!(r, Err(7));
    }
}
