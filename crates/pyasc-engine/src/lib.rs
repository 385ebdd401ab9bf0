//! pyasc-engine: everything between the Python front end and the compiler and runtime,
//! without Python.
//!
//! * [`signature`]: typed call signatures, the key of the plan cache.
//! * [`trace`]: tracing state, the graph an operator's function builds.
//! * [`gears`]: the padded axes of a geared trace, and the masks that keep padding out of
//!   reductions.
//! * [`scope`]: the per-thread stack of open precision scopes.
//! * [`operator`]: the plan cache, compiling, re-specialisation for new extents and the one
//!   launch path (now, or queued on a stream).
//! * [`event`]: the event stream of passes, kernels, blocks and stream tasks (from `pyasc-ir`).

pub mod gears;
pub mod operator;
pub mod scope;
pub mod signature;
pub mod trace;
pub mod vectorized;

pub use operator::{take_queued_records, CacheInfo, Entry, Launched, Operator, OperatorConfig, Order, Source};
pub use pyasc_ir::event;
pub use signature::{ArgType, DynamicKey, Signature};
pub use trace::{Captured, ConstArray, Extra, Trace, TraceRef, Traced, TracedNode};
