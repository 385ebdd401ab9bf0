//! Devices seen from Python: `pyasc.DeviceArray`, streams and events, how the host reads and
//! writes device memory, where new arrays are placed, DLPack in and out, and the monitors.

pub mod device_array;
pub mod dlpack;
pub mod dlpack_import;
pub mod host_access;
pub mod monitor;
pub mod placement;
pub mod stream;
pub mod stream_hold;
