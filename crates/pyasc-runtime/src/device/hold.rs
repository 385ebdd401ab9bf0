//! Holding a stream: a task queued on it that waits until its [`Hold`] is released (or
//! dropped), so that tests can observe work queued behind it before it may run, without
//! depending on timing. A hold left unreleased gives up after [`HOLD_LIMIT`] with an error
//! raised at the stream's next synchronisation, so it can never hang a process; cancelled
//! stream work stops holding too.

use crate::stream::Stream;
use pyasc_ir::error::{ErrorKind, IrError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The longest a hold keeps its stream waiting.
pub const HOLD_LIMIT: Duration = Duration::from_secs(60);

type Gate = Arc<(Mutex<bool>, Condvar)>;

/// A held stream: the work queued behind the hold runs once it is released or dropped.
pub struct Hold {
    gate: Gate,
}

impl Hold {
    /// Let the stream run the work queued behind the hold.
    pub fn release(&self) {
        let gate = &self.gate;
        *gate.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
        gate.1.notify_all();
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.release();
    }
}

/// Hold `stream` at its current end until the hold is released.
pub fn hold(stream: &Stream) -> Hold {
    let gate: Gate = Arc::new((Mutex::new(false), Condvar::new()));
    let g = gate.clone();
    stream.enqueue_named(
        "hold",
        Box::new(move || {
            let began = Instant::now();
            let token = crate::interrupt::current();
            let (m, cv) = &*g;
            let mut released = m.lock().unwrap_or_else(|p| p.into_inner());
            while !*released {
                if let Some(t) = &token {
                    // Cancelled work (Ctrl-C during a synchronisation) stops holding.
                    t.check()?;
                }
                if began.elapsed() > HOLD_LIMIT {
                    return Err(IrError::new(ErrorKind::Device, "a stream hold was never released"));
                }
                released = cv.wait_timeout(released, Duration::from_millis(50)).unwrap_or_else(|p| p.into_inner()).0;
            }
            Ok(())
        }),
    );
    Hold { gate }
}
