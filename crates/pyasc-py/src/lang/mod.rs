//! The kernel language (`pyasc.lang`): block programs from traced statement tuples, run at
//! once or queued on a stream.

pub mod block_kernel;
pub mod kernel_launch;
