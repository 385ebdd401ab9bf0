//! pyasc-events: what every layer records and locks, below the IR.
//!
//! * [`event`]: the one event stream of passes, kernel launches, blocks and stream tasks,
//!   collected from per-thread buffers while someone profiles.
//! * [`forksafe`]: the fork gate, which keeps worker threads' mutexes usable in a forked child.

pub mod event;
pub mod forksafe;
