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
    let _building = pyasc_events::forksafe::lock(&BUILD);
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
///
/// The caller takes blocks from the front, the others from the back: consecutive launches over
/// the same rows (a filter writing rows that the next kernel reads) then find most of each
/// thread's rows in its own core's cache instead of the other core's. In the YOLOv5 example the
/// candidates kernel reads the rows `filter_rows` has just copied.
pub fn for_blocks<E: Send>(blocks: usize, helpers: usize, f: impl Fn(usize) -> Result<(), E> + Sync) -> Result<(), E> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Mutex;
    // Blocks taken from the front (low 32 bits) and from the back (high 32 bits).
    let taken = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let error: Mutex<Option<E>> = Mutex::new(None);
    let caller = std::thread::current().id();
    // The kernel these blocks belong to, for the block events of every thread that runs one.
    let kernel = pyasc_events::event::current_kernel();
    let claim = |front: bool| -> Option<usize> {
        let mut cur = taken.load(Ordering::Relaxed);
        loop {
            let (f, b) = ((cur & 0xffff_ffff) as usize, (cur >> 32) as usize);
            if f + b >= blocks {
                return None;
            }
            let next = if front { cur + 1 } else { cur + (1 << 32) };
            match taken.compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(if front { f } else { blocks - 1 - b }),
                Err(now) => cur = now,
            }
        }
    };
    let work = || {
        let outer = pyasc_events::event::set_kernel(kernel);
        let front = std::thread::current().id() == caller;
        while !failed.load(Ordering::Relaxed) {
            let Some(b) = claim(front) else { break };
            if let Err(e) = f(b) {
                failed.store(true, Ordering::Relaxed);
                error.lock().expect("error slot poisoned").get_or_insert(e);
            }
        }
        pyasc_events::event::set_kernel(outer);
    };
    assert!(u32::try_from(blocks).is_ok(), "for_blocks: 2^32 or more blocks");
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
    fn the_caller_takes_blocks_from_the_front_and_the_others_from_the_back() {
        let caller = std::thread::current().id();
        let mine: Vec<AtomicUsize> = (0..200).map(|_| AtomicUsize::new(2)).collect();
        for_blocks::<()>(200, 1, |b| {
            // Some work per block, so the helper has time to join.
            let spin: u64 = (0..2000u64).fold(0, |a, i| a.wrapping_add(i * i));
            std::hint::black_box(spin);
            mine[b].store(usize::from(std::thread::current().id() == caller), Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
        let by_caller: Vec<usize> = mine.iter().map(|m| m.load(Ordering::Relaxed)).collect();
        // Every block ran; the caller's form a prefix, the others' the rest.
        assert!(by_caller.iter().all(|m| *m < 2));
        let split = by_caller.iter().take_while(|m| **m == 1).count();
        assert!(split >= 1 && by_caller[split..].iter().all(|m| *m == 0), "{by_caller:?}");
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
