//! A launch of a kernel-language kernel as a library op: blocks `0..block_dim` of a prepared
//! [`BlockProgram`](crate::block::BlockProgram) over its global buffers, with its integer
//! arguments. The operands are the global buffers, one-dimensional, of the program's dtypes;
//! as Ascend C's global memory, the kernel stores into those it writes *in place*, the one
//! library op that writes its operands (its launchers order it as a writer of them). Its result
//! is an int64 scalar: the worker threads the blocks ran on.

use super::{LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result, SourceLoc};
use crate::shape::Shape;
use std::any::Any;
use std::sync::Arc;

/// One launch of a kernel-language kernel.
#[derive(Clone)]
pub struct BlockCall {
    /// The program as the runtime prepared it (verified and strip-planned); opaque here.
    pub program: Arc<dyn Any + Send + Sync>,
    /// The kernel's name.
    pub name: String,
    /// The dtype of each global buffer.
    pub globals: Vec<DType>,
    /// The integer scalar arguments.
    pub args: Vec<i64>,
    /// Blocks to run.
    pub block_dim: usize,
    /// The user's launch line (errors name it).
    pub site: Option<SourceLoc>,
}

impl std::fmt::Debug for BlockCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCall")
            .field("name", &self.name)
            .field("globals", &self.globals)
            .field("args", &self.args)
            .field("block_dim", &self.block_dim)
            .finish_non_exhaustive()
    }
}

impl PartialEq for BlockCall {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.program, &other.program)
            && self.args == other.args
            && self.block_dim == other.block_dim
            && self.site == other.site
    }
}

/// The kernel-language launch library op.
pub struct BlockLaunch;

impl LibraryOp for BlockLaunch {
    fn id(&self) -> LibId {
        LibId::BLOCK_LAUNCH
    }
    fn name(&self) -> &'static str {
        "kernel"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::Block(c) => format!("kernel {}[{}]", c.name, c.block_dim),
            _ => self.name().to_string(),
        }
    }
    fn arity_ok(&self, _n: usize) -> bool {
        true
    }
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        let Attr::Block(c) = attr else { return Err(IrError::internal("a kernel launch needs its program")) };
        let fits = operands.len() == c.globals.len()
            && operands.iter().zip(&c.globals).all(|((t, s), d)| t.dtype == *d && s.rank() == 1);
        if !fits {
            return Err(IrError::internal(format!("the arrays do not match kernel '{}' as traced", c.name)));
        }
        Ok((VType::strong(DType::I64), Shape(Vec::new())))
    }
    fn reinfers(&self) -> bool {
        false
    }
}
