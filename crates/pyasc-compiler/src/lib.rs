//! pyasc-compiler: turns a traced [`Graph`] into a [`KernelPlan`].
//!
//! The pipeline is an explicit list of passes ([`pipeline`]), one pass per file, each a
//! struct implementing [`Pass`]. After every graph pass the verifier runs when
//! [`CompileOptions::verify_each_pass`] is set (always in tests and debug builds).
//!
//! ```text
//! verify → precision → attention → promote → host_ints → fold → implicit_broadcast → cse → attention_stats → dce → fuse → lower (tiles, registers, tile sizes)
//! ```

pub mod attention;
pub mod attention_stats;
pub mod chain;
pub mod cse;
pub mod dce;
pub mod deviation;
pub mod fold;
pub mod fuse;
pub mod half_math;
pub mod host_ints;
pub mod implicit_broadcast;
pub mod int_bounds;
pub mod int_exact;
pub mod lower;
pub mod pass;
pub mod precision;
pub mod promote;
pub mod reduce_map;
pub mod rewrite;
pub mod scale_shift;
pub mod scan_map;
pub mod select_cmp;
pub mod single;
pub mod stack_columns;

pub use pass::{compile, pipeline, CompileOptions, CompileState, Compiled, Pass, PassReport};
pub use pyasc_ir::tile::KernelPlan;
pub use pyasc_ir::{Graph, IrError};
