//! A tile kernel for unit tests: a 1-D elementwise kernel of given registers and body, every
//! other field empty.

use pyasc_ir::tile::{Instr, RegDecl, TileKernel};
use pyasc_ir::Shape;

/// An elementwise kernel over `n` elements with `regs` and `body`, in tiles of `tile`.
pub(crate) fn kernel(n: usize, tile: usize, regs: Vec<RegDecl>, body: Vec<Instr>) -> TileKernel {
    TileKernel {
        name: "k".into(),
        shape: Shape(vec![n]),
        perm: vec![0],
        row_len: 0,
        library: None,
        args: vec![],
        arg_views: vec![],
        outs: vec![],
        regs,
        body,
        tile_elems: tile,
        program: None,
        locs: vec![],
        fused_ops: 0,
    }
}
