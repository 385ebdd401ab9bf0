//! Stopping long work early: cancellation tokens that kernels check between tiles, and the
//! poll that turns a pending interrupt (Ctrl-C) into a cancellation.
//!
//! A launch run now takes the calling thread's [`Token`] ([`current`]); every thread that
//! runs a block of it checks the token between tiles ([`Token::check`]) and stops with an
//! error once it is cancelled, so the launch fails instead of returning outputs. The launching
//! thread may also carry a poll hook ([`with_poll`]): between tiles, at most every
//! [`POLL_INTERVAL`], it asks the hook whether the user interrupted, and cancels the token if
//! so. A stream task's token is cancelled through its stream ([`crate::stream::Stream::cancel_queued`]).

use crate::stream::StreamCore;
use pyasc_ir::error::{ErrorKind, IrError, Result};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a waiting or launching thread asks its poll hook.
pub const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Whether one launch (or stream task) should stop.
pub struct Token {
    flag: AtomicBool,
    /// A stream task: cancelled when its stream cancels work up to its number.
    task: Option<(Arc<StreamCore>, u64)>,
}

impl Default for Token {
    fn default() -> Self {
        Self::new()
    }
}

impl Token {
    /// A token cancelled only through [`Token::cancel`] (or the poll hook).
    pub fn new() -> Token {
        Token { flag: AtomicBool::new(false), task: None }
    }

    /// The token of task `seq` of a stream.
    pub fn for_task(core: Arc<StreamCore>, seq: u64) -> Token {
        Token { flag: AtomicBool::new(false), task: Some((core, seq)) }
    }

    /// Ask the work to stop.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// True once the work should stop.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || self.task.as_ref().is_some_and(|(core, seq)| core.is_cancelled(*seq))
    }

    /// Between tiles: run the poll hook when one is due on this thread, then fail if the
    /// work was cancelled.
    pub fn check(&self) -> Result<()> {
        if poll_due() && run_poll() {
            self.cancel();
        }
        if self.is_cancelled() {
            return Err(interrupted());
        }
        Ok(())
    }
}

/// The error of work stopped by a cancellation.
pub fn interrupted() -> IrError {
    IrError::new(ErrorKind::Device, "interrupted: the work was cancelled (KeyboardInterrupt) before it finished")
}

type Hook = *mut (dyn FnMut() -> bool + 'static);

thread_local! {
    static CURRENT: RefCell<Option<Arc<Token>>> = const { RefCell::new(None) };
    static HOOK: Cell<Option<Hook>> = const { Cell::new(None) };
    static NEXT_POLL: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// The calling thread's token, if its work can be cancelled.
pub fn current() -> Option<Arc<Token>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Run `f` with `token` as the calling thread's token (the previous one is restored).
pub fn with_token<R>(token: Option<Arc<Token>>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Token>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| *c.borrow_mut() = self.0.take());
        }
    }
    let _restore = Restore(CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), token)));
    f()
}

/// Run `f` with `hook` as the calling thread's poll hook: it returns true when the user
/// interrupted. It runs at most every [`POLL_INTERVAL`], on this thread only.
pub fn with_poll<R>(hook: &mut dyn FnMut() -> bool, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Hook>, Option<Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            HOOK.with(|h| h.set(self.0));
            NEXT_POLL.with(|n| n.set(self.1));
        }
    }
    // SAFETY: only the lifetime is erased; the hook is removed (by `Restore`) before `hook`'s
    // borrow ends, and it is only called on this thread.
    let ptr: Hook = unsafe { std::mem::transmute::<*mut (dyn FnMut() -> bool + '_), Hook>(hook) };
    let _restore = Restore(HOOK.with(|h| h.replace(Some(ptr))), NEXT_POLL.with(|n| n.get()));
    NEXT_POLL.with(|n| n.set(Some(Instant::now() + POLL_INTERVAL)));
    f()
}

/// True when this thread has a poll hook and its next poll is due.
fn poll_due() -> bool {
    NEXT_POLL.with(|n| n.get().is_some_and(|at| Instant::now() >= at))
}

/// Run this thread's poll hook now (if any); true when the user interrupted.
pub fn run_poll() -> bool {
    let Some(hook) = HOOK.with(Cell::get) else { return false };
    NEXT_POLL.with(|n| n.set(Some(Instant::now() + POLL_INTERVAL)));
    HOOK.with(|h| h.set(None));
    // SAFETY: the hook is alive while it is installed (see `with_poll`); it is not re-entered
    // because it is taken out while it runs.
    let interrupted = unsafe { (*hook)() };
    HOOK.with(|h| h.set(Some(hook)));
    interrupted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_token_fails_its_check() {
        let t = Token::new();
        assert!(t.check().is_ok());
        t.cancel();
        let e = t.check().unwrap_err();
        assert!(e.message.contains("interrupted"), "{e}");
    }

    #[test]
    fn the_poll_hook_runs_when_due_and_cancels() {
        let t = Token::new();
        let mut calls = 0;
        let mut hook = || {
            calls += 1;
            calls >= 2
        };
        let began = Instant::now();
        with_poll(&mut hook, || {
            while t.check().is_ok() {
                assert!(began.elapsed() < Duration::from_secs(5), "never interrupted");
            }
        });
        assert_eq!(calls, 2);
        // Two polls, one interval apart at least.
        assert!(began.elapsed() >= POLL_INTERVAL * 2);
        // Outside `with_poll` there is no hook.
        assert!(!run_poll());
    }

    #[test]
    fn tokens_are_per_thread_and_restored() {
        assert!(current().is_none());
        let t = Arc::new(Token::new());
        with_token(Some(t.clone()), || {
            assert!(Arc::ptr_eq(&current().unwrap(), &t));
            std::thread::spawn(|| assert!(current().is_none())).join().unwrap();
        });
        assert!(current().is_none());
    }
}
