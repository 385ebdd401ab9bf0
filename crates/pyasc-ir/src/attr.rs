//! Op attributes: one arena per graph for every payload an [`Op`](crate::op::Op) cannot
//! carry inline (view specs, pad widths, axes of library kernels). An op names its
//! attribute by [`AttrId`]; passes that rebuild a graph copy the arena as is.

use crate::library::ScanKind;
use crate::library::SortSpec;
use crate::view::{PadSpec, ViewSpec};

/// Index of an attribute in its graph's arena.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttrId(pub u32);

/// The payload of one op.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// No payload (`matmul`).
    None,
    /// One axis (`concatenate`, `take`).
    Axis(usize),
    /// A movement op.
    View(ViewSpec),
    /// `np.pad` widths, mode and constant.
    Pad(PadSpec),
    /// A scan's operation and axis.
    Scan(ScanKind, usize),
    /// What a sort call computes, along which axis.
    Sort(SortSpec),
    /// How a scatter combines values.
    Scatter(crate::library::ScatterMode),
    /// A static result length (`nonzero`'s `size=`).
    Count(usize),
    /// A convolution's strides, padding, dilation and groups.
    Conv(crate::library::ConvSpec),
    /// A pooling window.
    Pool(crate::library::PoolSpec),
    /// An upscale factor (`pixel_shuffle`).
    Upscale(usize),
    /// Fused attention's scale, causality and mask kind.
    Attention(crate::library::AttnSpec),
    /// NMS thresholds.
    Nms(crate::library::NmsSpec),
    /// The row filter's column and threshold.
    RowFilter(crate::library::RowFilter),
    /// A stencil sweep: its body, grid, steps and fixed cells.
    Stencil(std::sync::Arc<crate::library::StencilSpec>),
    /// A kernel-language launch: the prepared program, its arguments and block count.
    Block(crate::library::BlockCall),
}

impl Attr {
    /// The axis of an [`Attr::Axis`].
    pub fn axis(&self) -> Option<usize> {
        match self {
            Attr::Axis(a) => Some(*a),
            _ => None,
        }
    }
}
