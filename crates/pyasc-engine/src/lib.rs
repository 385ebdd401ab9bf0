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
//! * [`door`]: the one door to execution: every plan of every front end runs on a `Device`
//!   through it, and records one launch event.
//! * [`pipeline`]: the host's software pipeline of compiled stages over micro-batches.
//! * [`library_call`]: plans of one library routine (stencil sweeps, detection routines)
//!   launched outside a traced operator.
//! * [`event`]: the event stream of passes, kernels, blocks and stream tasks (from `pyasc-ir`).

pub mod door;
pub mod gears;
pub mod library_call;
pub mod operator;
pub mod pipeline;
pub mod scope;
pub mod signature;
pub mod trace;
pub mod vectorized;

pub use operator::{take_queued_records, CacheInfo, Entry, Launched, Operator, OperatorConfig, Order, Source};
pub use pyasc_events::event;
pub use signature::{ArgType, DynamicKey, Signature};
pub use trace::{Captured, ConstArray, Extra, Trace, TraceRef, Traced, TracedNode};
