//! pyasc-ir: the data structures every later stage agrees on.
//!
//! * [`dtype`]: element types and NumPy's promotion rules (NEP 50 weak scalars).
//! * [`shape`]: static shapes and broadcasting.
//! * [`op`]: the closed op enum of the graph IR with its group predicates.
//! * [`op_table`]: the one table defining every elementwise op (name, kind, NumPy semantics).
//! * [`grad`]: reverse-mode differentiation of a graph (vector-Jacobian products as new nodes).
//! * [`graph`]: the tensor-level SSA graph, stored in an arena and built by tracing.
//! * [`attr`]: the per-graph arena of op attributes.
//! * [`infer`]: the result dtype and shape of one op from its operands.
//! * [`library`]: library kernels (matmul, pad, ..., stencil sweeps, detection routines,
//!   kernel-language launches) behind one trait, registered once.
//! * [`verify`] / [`print`]: the verifier run after every pass and the text form.
//! * [`view`]: movement ops as strided views.
//! * [`tile`]: tile programs, the contract between the compiler and the backends.
//! * [`program`]: structured tile programs: loads and stores with index maps and dtype
//!   conversion, loop nests with carried registers.
//! * [`precision`]: precision policies and `precision_scope` spans.

pub mod attr;
pub mod block;
pub mod block_expr;
pub mod dtype;
pub mod error;
pub mod grad;
pub mod graph;
pub mod infer;
pub mod library;
pub mod op;
pub mod op_table;
pub mod precision;
pub mod print;
pub mod program;
pub mod scalar;
pub mod shape;
pub mod tile;
pub mod verify;
pub mod view;

pub use attr::{Attr, AttrId};
pub use dtype::DType;
pub use error::{IrError, SourceLoc};
pub use graph::{Graph, Node, NodeId};
pub use library::LibId;
pub use op::{Axes, BinaryOp, Op, ReduceOp, UnaryOp};
pub use scalar::Scalar;
pub use shape::Shape;
