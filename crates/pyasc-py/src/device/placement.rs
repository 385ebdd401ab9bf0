//! Where new DeviceArrays and operators on the CPU are placed: the CPU device, or, while the
//! private test switch `_pyasc._use_opaque_test_device(True)` is on, the opaque test device,
//! whose memory the host cannot address. The switch exists so that tests run the bindings'
//! paths for a device with memory of its own; it only affects objects made while it is on.

use pyasc_runtime::DeviceKind;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

static OPAQUE: AtomicBool = AtomicBool::new(false);

/// The device kind new DeviceArrays are allocated on.
pub fn array_kind() -> DeviceKind {
    if OPAQUE.load(Ordering::Relaxed) {
        DeviceKind::OpaqueTest
    } else {
        DeviceKind::Cpu
    }
}

/// The device kind an operator asking for `kind` runs on.
pub fn operator_kind(kind: DeviceKind) -> DeviceKind {
    if kind == DeviceKind::Cpu {
        array_kind()
    } else {
        kind
    }
}

/// Private test switch: place new DeviceArrays and CPU operators on the opaque test device
/// (`on`) or on the CPU. Returns the previous setting.
#[pyfunction]
pub fn _use_opaque_test_device(on: bool) -> bool {
    OPAQUE.swap(on, Ordering::Relaxed)
}
