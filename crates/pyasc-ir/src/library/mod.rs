//! Library kernels: ops run by a hand-written routine instead of a tile program (matmul,
//! pad, concatenate, take, scans, convolution, pooling, pixel shuffle, fused attention, its
//! backward pass and its forward that keeps the rows' statistics, the
//! detection routines, stencil sweeps and kernel-language launches).
//!
//! Each one implements [`LibraryOp`] once, in its own file, and is registered in
//! [`REGISTRY`]. Everything the graph and the compiler need to know about it goes through
//! the trait: name and printed form, operand count, result type, the operand dtypes its
//! routine computes in (promotion casts to them), whether a re-specialised graph may re-infer
//! it, whether fusion may run elementwise epilogues in its kernel, its lowering into a
//! [`LibCall`] and the check of the lowered kernel. Routines read their operands from memory;
//! an op whose common case fits a tile can have a tile instruction as well (scans along short
//! rows are `Instr::Scan`, fused with producers and consumers like any instruction). The
//! executing half lives in the runtime, keyed by [`LibId`]. An id without a registered op is
//! an error everywhere, never a silent default.

mod attention;
mod attention_backward;
mod attention_stats;
mod block_launch;
mod concat;
mod conv;
mod detection;
mod matmul;
mod nonzero;
mod pad;
mod pool;
mod scan;
mod scatter;
mod shuffle;
mod sort;
pub mod stencil;
mod take;

use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::shape::Shape;
use crate::tile::BufferDecl;

pub use attention::{attention_shape, Attention, AttnMask, AttnSpec};
pub use attention_backward::{attention_backward_shape, AttentionBackward};
pub use attention_stats::{attention_stats_shape, AttentionStats};
pub use block_launch::{BlockCall, BlockLaunch};
pub use concat::Concat;
pub use conv::{Conv, ConvSpec};
pub use detection::{BoxIou, GatherRows, Nms, NmsMask, NmsSpec, RowFilter, SelectRows};
pub use matmul::MatMul;
pub use nonzero::NonZero;
pub use pad::Pad;
pub use pool::{Pool, PoolKind, PoolSpec};
pub use scan::{Scan, ScanKind};
pub use scatter::{Scatter, ScatterMode};
pub use shuffle::{shuffle_shape, PixelShuffle};
pub use sort::{SortMode, SortOp, SortSpec};
pub use stencil::{StencilSpec, StencilSweep};
pub use take::Take;

/// Identity of a library op: its index in [`REGISTRY`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LibId(pub u16);

impl LibId {
    /// The registered op, or an error naming the unknown id.
    pub fn op(self) -> Result<&'static dyn LibraryOp> {
        lookup(self)
    }
}

/// The one list of library ops: each line gives an op's [`LibId`] constant and its
/// [`LibraryOp`]; the ids are the lines' positions and [`REGISTRY`] holds the ops in that
/// order, so the two cannot disagree.
macro_rules! library_ops {
    ($($(#[$doc:meta])* $id:ident => $op:expr;)*) => {
        /// Positions in the list.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[repr(u16)]
        enum Position {
            $($id,)*
        }

        impl LibId {
            $($(#[$doc])* pub const $id: LibId = LibId(Position::$id as u16);)*
        }

        /// Every library op, indexed by [`LibId`].
        pub static REGISTRY: &[&dyn LibraryOp] = &[$(&$op,)*];
    };
}

library_ops! {
    /// `a @ b`.
    MATMUL => MatMul;
    /// `np.pad`.
    PAD => Pad;
    /// `np.concatenate`.
    CONCAT => Concat;
    /// `np.take`.
    TAKE => Take;
    /// Scans: `np.cumsum`, `np.cumprod`, `ufunc.accumulate`.
    SCAN => Scan;
    /// Sorting and selection (`np.sort`, `np.argsort`, top-k, quantiles, ...).
    SORT => SortOp;
    /// Functional scatter (`y[idx] = v`, `x.at[idx].add(v)`).
    SCATTER => Scatter;
    /// Positions of non-zero elements with a static size.
    NONZERO => NonZero;
    /// N-d convolution (`conv1d`, `conv2d`, `conv3d`).
    CONV => Conv;
    /// 2-D max and average pooling.
    POOL => Pool;
    /// `pixel_shuffle`.
    PIXEL_SHUFFLE => PixelShuffle;
    /// Fused scaled dot-product attention.
    ATTENTION => Attention;
    /// Pairwise IoU of two box arrays.
    BOX_IOU => BoxIou;
    /// Greedy non-maximum suppression.
    NMS => Nms;
    /// The greedy sweep over an IoU matrix.
    NMS_MASK => NmsMask;
    /// The rows of a matrix whose value in a column is above a threshold.
    SELECT_ROWS => SelectRows;
    /// Rows of a matrix by index.
    GATHER_ROWS => GatherRows;
    /// `steps` applications of a stencil body.
    STENCIL => StencilSweep;
    /// A launch of a kernel-language kernel.
    BLOCK_LAUNCH => BlockLaunch;
    /// The backward pass of fused attention (no mask).
    ATTENTION_BACKWARD => AttentionBackward;
    /// Fused attention (no mask) that also writes its rows' log-sum-exp.
    ATTENTION_STATS => AttentionStats;
}

/// The library op with id `id`.
pub fn lookup(id: LibId) -> Result<&'static dyn LibraryOp> {
    match REGISTRY.get(id.0 as usize) {
        Some(op) if op.id() == id => Ok(*op),
        _ => Err(IrError::internal(format!("unknown library op #{}", id.0))),
    }
}

/// A library op as the IR and the compiler see it.
pub trait LibraryOp: Sync {
    /// Its id (its index in [`REGISTRY`]).
    fn id(&self) -> LibId;
    /// Name used in errors and kernel notes.
    fn name(&self) -> &'static str;
    /// The printed form, with the attribute (`concatenate[1]`).
    fn describe(&self, attr: &Attr) -> String {
        let _ = attr;
        self.name().to_string()
    }
    /// True when `n` operands suit the op.
    fn arity_ok(&self, n: usize) -> bool;
    /// Result type and shape from the operands (NumPy's rules).
    fn infer(&self, attr: &Attr, operands: &[(VType, &Shape)]) -> Result<(VType, Shape)>;
    /// The dtype operand `i` must have when the result is `result` (promotion casts it);
    /// `None` (the default) keeps the operand's dtype.
    fn operand_dtype(&self, i: usize, result: DType) -> Option<DType> {
        let _ = (i, result);
        None
    }
    /// True when the routine reads bfloat16 and float16 operands as they are and computes
    /// into float32: a node whose result dtype is 16-bit then keeps its operands in that
    /// dtype (cast by promotion) and computes a float32 result, rounded where stored.
    fn reads_half(&self) -> bool {
        false
    }
    /// False when the result shape is fixed by the attribute, so a graph holding the op must
    /// be traced again for new argument shapes.
    fn reinfers(&self) -> bool {
        true
    }
    /// True when elementwise ops over the result (bias, activation) may run in the same
    /// kernel, on each tile of the result while it is in cache.
    fn fuses_epilogue(&self) -> bool {
        false
    }
    /// True for the cube ops (matrix products, convolutions): under a `mixed_*` precision
    /// policy they read 16-bit operands and accumulate in float32, like the matrix unit of an
    /// NPU; every other op keeps float32.
    fn is_cube(&self) -> bool {
        false
    }
    /// The call a kernel makes for a node with this attribute and `operands` operands.
    fn lower(&self, attr: &Attr, operands: usize) -> Result<LibCall> {
        Ok(LibCall { id: self.id(), attr: attr.clone(), operands: operands as u16 })
    }
    /// The cotangents of the operands (`None`: none reaches it) given the result `y` and its
    /// cotangent `g`; `wanted[i]` says whether operand `i` needs one. The default: the op has
    /// no gradient rule (a typed error).
    fn vjp(
        &self,
        attr: &Attr,
        b: &mut crate::grad::Builder<'_>,
        inputs: &[crate::graph::NodeId],
        y: crate::graph::NodeId,
        g: crate::graph::NodeId,
        wanted: &[bool],
    ) -> Result<Vec<Option<crate::graph::NodeId>>> {
        let _ = (attr, b, inputs, y, g, wanted);
        Err(crate::grad::no_rule(self.name()))
    }

    /// Check a lowered call: its operand buffers (in order) and its output buffer. The default
    /// checks that the operands' types and shapes infer the output buffer's.
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        let typed: Vec<(VType, &Shape)> = operands.iter().map(|d| (VType::strong(d.dtype), &d.shape)).collect();
        let what = match self.infer(&call.attr, &typed) {
            Ok((t, shape)) if t.dtype == out.dtype && shape == out.shape => return Ok(()),
            Ok(_) => "writes another shape or dtype than it computes".to_string(),
            Err(e) => e.message,
        };
        Err(IrError::internal(format!("a {} call {what}", self.name())))
    }
}

/// A kernel's call of a library routine: `outs[0] = op(args[..operands])`. A kernel that
/// also has a tile program runs it after the routine (an epilogue reading `outs[0]`).
#[derive(Clone, Debug, PartialEq)]
pub struct LibCall {
    /// The routine.
    pub id: LibId,
    /// Its attribute.
    pub attr: Attr,
    /// How many of the kernel's first arguments are the routine's operands.
    pub operands: u16,
}

impl LibCall {
    /// The printed form.
    pub fn describe(&self) -> String {
        lookup(self.id).map_or_else(|_| format!("library#{}", self.id.0), |op| op.describe(&self.attr))
    }
}

/// A verification error for a library call.
pub(crate) fn bad_call(op: &dyn LibraryOp, what: &str) -> Result<()> {
    Err(IrError::internal(format!("a {} call {what}", op.name())))
}
