//! The launch team: helper threads that stay awake for a moment between kernel launches.
//!
//! Waking a sleeping thread costs tens to hundreds of microseconds on a virtual machine
//! (the idle vCPU has to be woken by the hypervisor), which is a large share of a kernel
//! that runs for a millisecond. The team's helpers spin for [`SPIN`] after each job before
//! they sleep, so back-to-back launches find them awake. A launch publishes its job, works
//! on it itself, then closes it: helpers that have not joined by then are not waited for
//! (so a helper that is still waking up, or one that does not exist because the process
//! forked, costs nothing), and the launcher waits only for those that did join.
//!
//! One job runs at a time; a launch that finds the team busy (another thread is launching)
//! uses rayon's pool instead.
//!
//! Work that runs on rayon's pool for a long time (a large matrix product) holds a [`park`]
//! guard while it runs: idle helpers sleep at once instead of spinning on cores that rayon's
//! workers need (on a machine with as many workers as cores, a spinning helper slows such a
//! product by a third). Launches in the meantime still wake them.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long an idle helper keeps spinning for the next job before it sleeps.
const SPIN: Duration = Duration::from_millis(2);

/// `state` layout: job epoch in the high 32 bits, a closed flag, helpers that joined.
const CLOSED: u64 = 1 << 31;
const JOINED: u64 = CLOSED - 1;

/// A job as the helpers see it: the address of the launcher's closure, valid while the job
/// is open or some helper that joined it is still running it.
#[derive(Copy, Clone)]
struct JobPtr(*const (dyn Fn() + Sync));
// SAFETY: the closure is `Sync`, and the launcher keeps it alive until every helper that
// joined has finished with it.
unsafe impl Send for JobPtr {}

struct Team {
    state: AtomicU64,
    job: Mutex<Option<JobPtr>>,
    done: AtomicUsize,
    panicked: AtomicBool,
    busy: AtomicBool,
    sleeping: Mutex<usize>,
    wake: Condvar,
}

/// The current team (null until first use, and again in a forked child, whose helpers are gone).
static TEAM: AtomicPtr<Team> = AtomicPtr::new(std::ptr::null_mut());
static BUILD: Mutex<()> = Mutex::new(());

fn team() -> &'static Team {
    let t = TEAM.load(Ordering::Acquire);
    if !t.is_null() {
        // SAFETY: teams are leaked, never freed.
        return unsafe { &*t };
    }
    let _building = pyasc_events::forksafe::lock(&BUILD);
    let t = TEAM.load(Ordering::Acquire);
    if !t.is_null() {
        // SAFETY: as above.
        return unsafe { &*t };
    }
    crate::fork::install();
    let t: &'static Team = Box::leak(Box::new(Team {
        state: AtomicU64::new(CLOSED),
        job: Mutex::new(None),
        done: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
        busy: AtomicBool::new(false),
        sleeping: Mutex::new(0),
        wake: Condvar::new(),
    }));
    for i in 0..crate::pool::pool_threads().saturating_sub(1) {
        let _ = std::thread::Builder::new().name(format!("pyasc-team-{i}")).spawn(move || helper(t));
    }
    TEAM.store(t as *const Team as *mut Team, Ordering::Release);
    t
}

/// In a forked child: the helpers are gone (and the team's locks may be held by them), so
/// the next launch builds a new team. The old one is leaked.
pub(crate) fn reset_in_child() {
    TEAM.store(std::ptr::null_mut(), Ordering::Release);
}

/// A helper's life: wait for an open job, join it, run it, report, repeat.
fn helper(t: &'static Team) {
    let mut seen = t.state.load(Ordering::Acquire) >> 32;
    loop {
        let mut idle_since = Instant::now();
        let mut spins = 0u32;
        let state = loop {
            let s = t.state.load(Ordering::Acquire);
            if s >> 32 != seen {
                break s;
            }
            spins += 1;
            let parked = HEAVY.load(Ordering::Relaxed) > 0;
            if parked || (spins.is_multiple_of(1024) && idle_since.elapsed() > SPIN) {
                let mut n = t.sleeping.lock().expect("team lock poisoned");
                *n += 1;
                // Re-check under the lock: a launcher bumps the epoch before it takes the
                // lock to notify, so no wake-up is lost.
                while t.state.load(Ordering::Acquire) >> 32 == seen {
                    n = t.wake.wait(n).expect("team lock poisoned");
                }
                *n -= 1;
                idle_since = Instant::now();
            }
            std::hint::spin_loop();
        };
        seen = state >> 32;
        if join(t, seen) {
            let job = (*t.job.lock().expect("team lock poisoned")).expect("an open job has a closure");
            // SAFETY: the job stays valid until this helper reports it done (module docs).
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { (*job.0)() }));
            if run.is_err() {
                t.panicked.store(true, Ordering::Relaxed);
            }
            t.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// Long-running work on rayon's pool in progress (live [`Parked`] guards).
static HEAVY: AtomicUsize = AtomicUsize::new(0);

/// While alive, idle helpers sleep instead of spinning; see [`park`].
pub struct Parked(());

impl Drop for Parked {
    fn drop(&mut self) {
        HEAVY.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Keep idle helpers asleep while the returned guard lives: taken around work that keeps
/// rayon's workers busy for long. A launch meanwhile still wakes them for its job.
pub fn park() -> Parked {
    HEAVY.fetch_add(1, Ordering::Relaxed);
    Parked(())
}

/// Join job `epoch` if it is still open.
fn join(t: &Team, epoch: u64) -> bool {
    let mut s = t.state.load(Ordering::Acquire);
    loop {
        if s >> 32 != epoch || s & CLOSED != 0 {
            return false;
        }
        match t.state.compare_exchange_weak(s, s + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return true,
            Err(now) => s = now,
        }
    }
}

/// Runs `work` on the calling thread and on every helper that joins in time; returns after
/// all of them have finished. `work` must split the job among however many run it (each call
/// claims units until none is left). Returns false, without running anything, if the team
/// is busy with another launch. A panic in a helper is raised again here.
pub fn run(work: &(dyn Fn() + Sync)) -> bool {
    let t = team();
    if t.busy.swap(true, Ordering::Acquire) {
        return false;
    }
    // SAFETY: only the lifetime is erased; the job is withdrawn (closed, and every helper
    // that joined has finished) before this function returns.
    let ptr: *const (dyn Fn() + Sync) = unsafe { std::mem::transmute(work) };
    *t.job.lock().expect("team lock poisoned") = Some(JobPtr(ptr));
    t.done.store(0, Ordering::Relaxed);
    let epoch = (t.state.load(Ordering::Relaxed) >> 32) + 1;
    t.state.store(epoch << 32, Ordering::Release);
    if *t.sleeping.lock().expect("team lock poisoned") > 0 {
        t.wake.notify_all();
    }
    let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
    // Close the job; helpers that joined are counted in the low bits.
    let joined = (t.state.fetch_or(CLOSED, Ordering::AcqRel) & JOINED) as usize;
    while t.done.load(Ordering::Acquire) < joined {
        std::hint::spin_loop();
    }
    *t.job.lock().expect("team lock poisoned") = None;
    let helper_panicked = t.panicked.swap(false, Ordering::Relaxed);
    t.busy.store(false, Ordering::Release);
    if let Err(p) = mine {
        std::panic::resume_unwind(p);
    }
    assert!(!helper_panicked, "a kernel worker panicked");
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `run`, retried while another test's launch holds the team.
    fn run_now(work: &(dyn Fn() + Sync)) {
        while !run(work) {
            std::thread::yield_now();
        }
    }

    #[test]
    fn every_unit_runs_once_over_many_launches() {
        for round in 0..2000 {
            let units = 1 + round % 37;
            let next = AtomicUsize::new(0);
            let hits: Vec<AtomicUsize> = (0..units).map(|_| AtomicUsize::new(0)).collect();
            let work = || loop {
                let u = next.fetch_add(1, Ordering::Relaxed);
                if u >= units {
                    break;
                }
                hits[u].fetch_add(1, Ordering::Relaxed);
            };
            run_now(&work);
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "round {round}");
        }
    }

    #[test]
    fn a_sleeping_helper_is_woken_and_joins() {
        run_now(&|| {});
        // Long enough for every helper to have gone to sleep.
        std::thread::sleep(SPIN * 5);
        let entered = AtomicUsize::new(0);
        let helpers = crate::pool::num_threads() - 1;
        // The launcher waits (at most 5 s) inside the job until a helper has joined it too.
        let work = || {
            entered.fetch_add(1, Ordering::SeqCst);
            let began = Instant::now();
            while helpers > 0 && entered.load(Ordering::SeqCst) < 2 && began.elapsed() < Duration::from_secs(5) {
                std::hint::spin_loop();
            }
        };
        run_now(&work);
        let want = if helpers > 0 { 2 } else { 1 };
        assert!(entered.load(Ordering::SeqCst) >= want, "{} threads ran the job", entered.load(Ordering::SeqCst));
    }

    #[test]
    fn parked_helpers_sleep_at_once_and_launches_still_wake_them() {
        if crate::pool::num_threads() < 2 {
            return; // no helper to park
        }
        run_now(&|| {});
        let t = team();
        {
            let _parked = park();
            // After a launch, every idle helper is asleep well within the spin time (retried:
            // other tests' launches keep helpers busy now and then).
            let helpers = crate::pool::num_threads() - 1;
            let asleep_soon = || {
                run_now(&|| {});
                let began = Instant::now();
                while began.elapsed() < SPIN / 2 {
                    if *t.sleeping.lock().unwrap() >= helpers {
                        return true;
                    }
                    std::thread::yield_now();
                }
                false
            };
            assert!((0..50).any(|_| asleep_soon()), "parked helpers kept spinning");
            // A launch meanwhile still gets a helper (the launcher waits for one to join).
            let entered = AtomicUsize::new(0);
            let work = || {
                entered.fetch_add(1, Ordering::SeqCst);
                let began = Instant::now();
                while entered.load(Ordering::SeqCst) < 2 && began.elapsed() < Duration::from_secs(5) {
                    std::hint::spin_loop();
                }
            };
            run_now(&work);
            assert_eq!(entered.load(Ordering::SeqCst), 2);
        }
        assert_eq!(HEAVY.load(Ordering::Relaxed), 0);
    }
}
