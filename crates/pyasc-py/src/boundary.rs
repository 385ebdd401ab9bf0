//! The boundary between Python and the Rust core: entry points that do real work run inside
//! [`guard`], so a Rust panic (a pyasc bug) reaches Python as a typed `InternalError` with
//! its message instead of `pyo3_runtime.PanicException`; long work done with the GIL released
//! runs inside [`detach_interruptible`], so Ctrl-C stops it within a few tens of milliseconds
//! and raises `KeyboardInterrupt`.

use crate::errors::to_py;
use pyasc_ir::error::IrError;
use pyasc_runtime::interrupt::{self, Token};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// The text of a panic payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Run `f`; a panic inside it becomes an `InternalError` naming the panic's message.
pub fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(to_py(IrError::internal(format!(
            "internal error in pyasc (please report it): {}",
            panic_message(&*payload)
        )))),
    }
}

/// Run `f` with the GIL released and a fresh cancellation token as the thread's token; every
/// [`POLL_INTERVAL`](interrupt::POLL_INTERVAL) the launching or waiting code re-acquires the
/// GIL briefly to run Python's signal handlers. When one raises (Ctrl-C: `KeyboardInterrupt`),
/// the token is cancelled, `f`'s work stops early, and that exception is returned instead of
/// `f`'s result, which is dropped (an interrupted kernel's outputs are never returned).
/// `f` receives the poll, for waits that run it themselves.
pub fn detach_interruptible<T: Send>(
    py: Python<'_>,
    f: impl FnOnce(&mut dyn FnMut() -> bool) -> T + Send,
) -> PyResult<T> {
    let mut pending: Option<PyErr> = None;
    let token = Arc::new(Token::new());
    let result = py.detach(|| {
        let mut poll = || {
            Python::attach(|py| match py.check_signals() {
                Ok(()) => false,
                Err(e) => {
                    pending.get_or_insert(e);
                    true
                }
            })
        };
        let t = token.clone();
        interrupt::with_poll(&mut poll, || {
            interrupt::with_token(Some(t), || {
                let mut again = interrupt::run_poll;
                f(&mut again)
            })
        })
    });
    match pending {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

/// Where the private test hook makes pyasc panic (0: nowhere).
static TEST_PANIC: AtomicU8 = AtomicU8::new(0);

/// Sites of the test hook.
pub const PANIC_IN_TRACE: u8 = 1;
/// A panic inside a launch, with the GIL released.
pub const PANIC_IN_LAUNCH: u8 = 2;

/// Make NumPy refuse to create the next small output arrays.
pub const FAIL_NUMPY_ALLOC: u8 = 3;

/// True when the test hook asks for the fault `site` (one relaxed load otherwise).
#[inline]
pub fn test_fault(site: u8) -> bool {
    TEST_PANIC.load(Ordering::Relaxed) == site
}

/// Panic here when the test hook asks for `site` (one relaxed load otherwise).
#[inline]
pub fn test_panic(site: u8) {
    if TEST_PANIC.load(Ordering::Relaxed) == site {
        panic!("test panic requested at site {site}");
    }
}

/// Private test hook: make the next operations panic at `site` ("trace", "launch") or fail
/// to allocate NumPy outputs ("numpy_alloc"), or nothing (`None`), to check that such
/// failures reach Python as typed errors.
#[pyfunction]
#[pyo3(signature = (site = None))]
pub fn _set_test_panic(site: Option<&str>) -> PyResult<()> {
    let code = match site {
        None => 0,
        Some("trace") => PANIC_IN_TRACE,
        Some("launch") => PANIC_IN_LAUNCH,
        Some("numpy_alloc") => FAIL_NUMPY_ALLOC,
        Some(other) => {
            return Err(to_py(IrError::new(
                pyasc_ir::error::ErrorKind::InvalidArgument,
                format!("unknown test panic site {other:?}"),
            )))
        }
    };
    TEST_PANIC.store(code, Ordering::Relaxed);
    Ok(())
}
