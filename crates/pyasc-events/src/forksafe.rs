//! Locks that stay usable in a process forked while other threads hold them.
//!
//! `fork()` copies only the calling thread: a mutex that another thread held at that moment
//! stays locked forever in the child. Short critical sections that worker threads enter
//! (buffer bookkeeping, the memory pool's free lists, the event buffers) take their mutex
//! through [`lock`], which also holds the *fork gate*: a shared, re-entrant gate counted per
//! thread. [`quiesce`], called just before `fork()`, closes the gate and waits until no thread
//! is inside it, so none of those mutexes is held when the process is copied; [`resume`]
//! opens it again, in the parent and (with [`reset_in_child`]) in the child.
//!
//! Rules that keep this free of deadlocks: a gated section never blocks waiting for another
//! thread's progress (no condition-variable waits, no joins), and the forking thread is never
//! inside the gate itself.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Threads about to fork (the gate is closed while this is non-zero).
static CLOSING: AtomicUsize = AtomicUsize::new(0);
/// Threads inside the gate.
static INSIDE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// How deeply the calling thread is nested inside the gate.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Being inside the fork gate; leaving it when dropped. Not `Send`: it counts for its thread.
pub struct Gate {
    _thread: PhantomData<*const ()>,
}

/// Enter the fork gate (waiting while a fork is in progress, unless already inside).
pub fn enter() -> Gate {
    DEPTH.with(|d| {
        if d.get() == 0 {
            let mut spins = 0u32;
            loop {
                if CLOSING.load(Ordering::SeqCst) == 0 {
                    INSIDE.fetch_add(1, Ordering::SeqCst);
                    if CLOSING.load(Ordering::SeqCst) == 0 {
                        break;
                    }
                    INSIDE.fetch_sub(1, Ordering::SeqCst);
                }
                pause(&mut spins);
            }
        }
        d.set(d.get() + 1);
    });
    Gate { _thread: PhantomData }
}

impl Drop for Gate {
    fn drop(&mut self) {
        DEPTH.with(|d| {
            d.set(d.get() - 1);
            if d.get() == 0 {
                INSIDE.fetch_sub(1, Ordering::SeqCst);
            }
        });
    }
}

fn pause(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// A mutex guard held inside the fork gate.
pub struct Locked<'a, T> {
    // Field order is drop order: the mutex is released before the gate.
    guard: MutexGuard<'a, T>,
    _gate: Gate,
}

/// Lock `m` inside the fork gate. A mutex poisoned by a panic is used as it is (every value
/// such a mutex holds stays consistent between statements).
pub fn lock<T>(m: &Mutex<T>) -> Locked<'_, T> {
    let gate = enter();
    Locked { guard: m.lock().unwrap_or_else(|p| p.into_inner()), _gate: gate }
}

impl<T> Deref for Locked<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for Locked<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// Close the gate and wait until no other thread is inside it (called just before `fork()`).
pub fn quiesce() {
    CLOSING.fetch_add(1, Ordering::SeqCst);
    let own = if DEPTH.with(Cell::get) > 0 { 1 } else { 0 };
    let mut spins = 0u32;
    while INSIDE.load(Ordering::SeqCst) > own {
        pause(&mut spins);
    }
}

/// Open the gate again after [`quiesce`] (in the parent once `fork()` returned).
pub fn resume() {
    CLOSING.fetch_sub(1, Ordering::SeqCst);
}

/// Open the gate in a forked child: only the calling thread exists there, so only its own
/// nesting counts.
pub fn reset_in_child() {
    CLOSING.store(0, Ordering::SeqCst);
    INSIDE.store(if DEPTH.with(Cell::get) > 0 { 1 } else { 0 }, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn nested_locks_and_quiesce_waits_for_sections_to_end() {
        static M: Mutex<u32> = Mutex::new(0);
        static N: Mutex<u32> = Mutex::new(0);
        {
            let mut a = lock(&M);
            let mut b = lock(&N);
            *a += 1;
            *b += 1;
        }
        let inside = Arc::new(AtomicBool::new(false));
        let i2 = inside.clone();
        let t = std::thread::spawn(move || {
            let mut g = lock(&M);
            i2.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(60));
            *g += 1;
        });
        while !inside.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let began = Instant::now();
        quiesce();
        // The other thread has left its section: the mutex is free.
        assert!(began.elapsed() >= Duration::from_millis(30), "{:?}", began.elapsed());
        assert!(M.try_lock().is_ok());
        resume();
        t.join().unwrap();
        assert_eq!(*lock(&M), 2);
    }

    #[test]
    fn a_closed_gate_holds_new_entries_back_until_resumed() {
        static M: Mutex<u32> = Mutex::new(0);
        quiesce();
        let entered = Arc::new(AtomicBool::new(false));
        let e2 = entered.clone();
        let t = std::thread::spawn(move || {
            *lock(&M) += 1;
            e2.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(30));
        assert!(!entered.load(Ordering::SeqCst), "entered a closed gate");
        resume();
        t.join().unwrap();
        assert!(entered.load(Ordering::SeqCst));
    }
}
