//! The worker pool: rayon's global pool, sized once from `PYASC_NUM_THREADS` (at most
//! [`MAX_THREADS`]) or the number of cores.

use std::sync::OnceLock;

static THREADS: OnceLock<usize> = OnceLock::new();

/// The most worker threads `PYASC_NUM_THREADS` may ask for.
pub const MAX_THREADS: usize = 256;

/// Number of worker threads kernels are spread over (built on first use).
pub fn num_threads() -> usize {
    *THREADS.get_or_init(|| {
        let n = std::env::var("PYASC_NUM_THREADS")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|n| *n > 0)
            // More workers than this only adds contention (and thousands would exhaust the process).
            .map(|n| n.min(MAX_THREADS))
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
        // Another library may have built the global pool already; then use its size.
        let _ =
            rayon::ThreadPoolBuilder::new().num_threads(n).thread_name(|i| format!("pyasc-worker-{i}")).build_global();
        rayon::current_num_threads()
    })
}
