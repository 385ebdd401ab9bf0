//! Fusion grouping: which nodes get a buffer of their own and which kernels compute them.
//!
//! Needs: a promoted, folded graph. Guarantees: `Fusion::groups` lists kernels in an order
//! that respects dependencies. A group is either an *element* group (its anchors share one
//! shape, the kernel's iteration space) or a *row* group (anchored by reductions over the
//! same axes of the same shape: the kernel walks whole rows, the reduced axes innermost).
//! Anchors are the only nodes that may be written to memory (when a later kernel or the
//! caller reads them); every other node is recomputed inside each kernel that needs it, so a
//! chain of elementwise ops costs one pass over memory.
//!
//! Anchors are the outputs, every reduction, and by `op_break_level`:
//! * 0: every op (one kernel per primitive);
//! * 1: also every op whose consumer broadcasts it to a larger shape; reductions fuse with
//!   their producers only;
//! * 2 and 3: only a transcendental or power op broadcast by a factor of 8 or more; and row
//!   groups also take the consumers of their reductions, broadcast back over the rows
//!   (`x - x.max(-1, keepdims=True)`) or computed per row (`x.sum(-1) / n`, and values
//!   read one element per row beside them, [`read_per_row`]: a detector's box corners from
//!   `x[:, 0]` beside its best class score), so softmax, layer_norm and friends are one pass
//!   over each row.
//!
//! A scan along the last axis of rows short enough for a tile ([`row_scan`]) is a row group
//! too (its result has one value per element, not per row): its producers are computed in
//! its kernel and, at levels 2 and 3, its consumers too, so `np.cumsum(x * 2 + 1, -1) / n`
//! is one pass over memory. Other scans are library kernels reading their operand from memory.
//!
//! Which anchor may join which group is decided by the fusion rules, one per file
//! (`elem.rs`, `rows.rs`, `epilogue.rs`); an anchor no rule admits starts a kernel of its own.
//! Every op has an explicit iteration space ([`space_of`]); a library op that is not
//! registered is an error.

mod elem;
mod epilogue;
mod rows;

use crate::pass::{CompileState, Pass};
use pyasc_ir::error::Result;
use pyasc_ir::library::ScanKind;
use pyasc_ir::op::{Axes, Op};
use pyasc_ir::{Attr, Graph, LibId, NodeId, Shape};

/// Rows longer than this are not fused with consumers that broadcast back over them (the
/// row would not fit a tile).
pub const ROW_FUSE_MAX: usize = 16384;

/// The iteration space of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Space {
    /// Elementwise over this shape.
    Elem(Shape),
    /// A library routine (matmul, pad, concatenate, take): a kernel of its own, with the
    /// elementwise epilogues its op admits.
    Library(LibId),
    /// Rows: reductions of `shape` over `axes`.
    Rows {
        /// The reduced operand's shape.
        shape: Shape,
        /// The reduced axes.
        axes: Axes,
    },
}

impl Space {
    /// Number of rows of a row space (1 value per row after the reduction).
    pub fn rows(&self) -> usize {
        match self {
            Space::Elem(s) => s.numel(),
            Space::Library(_) => 0,
            Space::Rows { shape, axes } => {
                let n = shape.rank();
                (0..n).filter(|i| !axes.contains(*i)).map(|i| shape.0[i]).product()
            }
        }
    }
    /// Elements per row.
    pub fn row_len(&self) -> usize {
        match self {
            Space::Elem(_) | Space::Library(_) => 0,
            Space::Rows { shape, axes } => axes.list(shape.rank()).iter().map(|a| shape.0[*a]).product(),
        }
    }
}

/// One kernel to build.
#[derive(Clone, Debug)]
pub struct Group {
    /// Its iteration space.
    pub space: Space,
    /// Nodes the kernel must compute and may write out, in topological order.
    pub anchors: Vec<NodeId>,
}

/// The kernels to build.
#[derive(Clone, Debug, Default)]
pub struct Fusion {
    /// Kernels in execution order.
    pub groups: Vec<Group>,
    /// Per node: an anchor (computed by exactly one kernel, read by others from a buffer).
    pub materialized: Vec<bool>,
    /// Per node: read outside its group or returned (needs a buffer).
    pub escapes: Vec<bool>,
}

/// Groups nodes into kernels.
pub struct FusePass;

fn expensive(op: &Op) -> bool {
    match op {
        Op::Unary(u) => u.is_expensive(),
        Op::Binary(b) => b.is_expensive(),
        _ => false,
    }
}

impl Pass for FusePass {
    fn name(&self) -> &'static str {
        "fuse"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let g = &st.graph;
        let level = st.options.op_break_level;
        let mut mat = vec![false; g.len()];
        for o in &g.outputs {
            mat[o.index()] = true;
        }
        for (i, n) in g.nodes.iter().enumerate() {
            if let Op::View(_) = n.op {
                // A view reads memory: what it views must be in a buffer.
                let b = view_base(g, NodeId(i as u32));
                if !g.node(b).op.is_data() {
                    mat[b.index()] = true;
                }
                continue;
            }
            if n.op.is_leaf() {
                continue;
            }
            if let Op::Library(id, _) = n.op {
                id.op()?;
            }
            let library = n.op.is_library();
            if level == 0 || n.op.is_reduce() || library {
                mat[i] = true;
            }
            if library && row_scan(g, NodeId(i as u32)).is_none() {
                // Library routines read their operands from memory.
                for &x in &n.inputs {
                    let b = view_base(g, x);
                    if !matches!(g.node(b).op, Op::Input(_)) {
                        mat[b.index()] = true;
                    }
                }
            }
            for &x in &n.inputs {
                let p = g.node(x);
                if p.op.is_data() || mat[x.index()] || p.op.is_reduce() {
                    continue;
                }
                let factor = n.shape.numel() as f64 / p.shape.numel().max(1) as f64;
                let broadcast = p.shape != n.shape && factor > 1.0 && !n.op.is_reduce();
                if broadcast && (level == 1 || (expensive(&p.op) && factor >= 8.0)) {
                    mat[x.index()] = true;
                    st.notes.push(format!(
                        "%{} ({}) materialised: broadcast from {} to {}",
                        x.0,
                        p.op.name(),
                        p.shape,
                        n.shape
                    ));
                }
            }
        }
        let (groups, group_of) = group_anchors(g, &mat, level)?;
        let mut escapes = vec![false; g.len()];
        for o in &g.outputs {
            escapes[o.index()] = true;
        }
        for (k, grp) in groups.iter().enumerate() {
            for &a in &grp.anchors {
                let (direct, viewed) = frontier(g, &mat, a);
                for d in direct {
                    if group_of[d.index()] != Some(k) {
                        escapes[d.index()] = true;
                    }
                }
                for d in viewed {
                    escapes[d.index()] = true;
                }
            }
        }
        for (k, grp) in groups.iter().enumerate() {
            let names: Vec<String> = grp.anchors.iter().map(|r| format!("%{}", r.0)).collect();
            let what = match &grp.space {
                Space::Elem(s) => format!("over {s}"),
                Space::Library(id) => id.op()?.name().to_string(),
                Space::Rows { shape, .. } => format!("over rows of {shape} ({} per row)", grp.space.row_len()),
            };
            st.notes.push(format!(
                "kernel {k}: anchors {} {what}, {} ops fused",
                names.join(" "),
                count_ops(g, &mat, &grp.anchors)
            ));
        }
        st.fusion = Some(Fusion { groups, materialized: mat, escapes });
        Ok(())
    }
}

/// The node a chain of views starting at `x` reads from.
pub fn view_base(g: &Graph, mut x: NodeId) -> NodeId {
    while let Op::View(_) = g.node(x).op {
        x = g.node(x).inputs[0];
    }
    x
}

/// The anchors a node reads (its frontier), stopping at leaves and other anchors: those read
/// directly, and those read through a view (which must be in memory before the kernel runs).
pub fn frontier(g: &Graph, mat: &[bool], root: NodeId) -> (Vec<NodeId>, Vec<NodeId>) {
    let mut seen = vec![false; g.len()];
    let mut stack = vec![root];
    let (mut direct, mut viewed) = (Vec::new(), Vec::new());
    while let Some(n) = stack.pop() {
        for &x in &g.node(n).inputs {
            if seen[x.index()] {
                continue;
            }
            seen[x.index()] = true;
            if let Op::View(_) = g.node(x).op {
                let b = view_base(g, x);
                if mat[b.index()] && !viewed.contains(&b) {
                    viewed.push(b);
                }
            } else if mat[x.index()] {
                direct.push(x);
            } else if !g.node(x).op.is_data() {
                stack.push(x);
            }
        }
    }
    (direct, viewed)
}

/// Number of non-leaf nodes computed by a kernel with these anchors.
pub fn count_ops(g: &Graph, mat: &[bool], anchors: &[NodeId]) -> usize {
    let mut seen = vec![false; g.len()];
    let mut stack: Vec<NodeId> = anchors.to_vec();
    let mut count = 0;
    while let Some(n) = stack.pop() {
        if seen[n.index()] || g.node(n).op.is_data() {
            continue;
        }
        seen[n.index()] = true;
        count += 1;
        for &x in &g.node(n).inputs {
            if !mat[x.index()] {
                stack.push(x);
            }
        }
    }
    count
}

/// True when `id` can be computed per row inside row group `k`: every path from it ends in
/// a reduction of that group or a constant (never in an argument or another buffer).
fn per_row(g: &Graph, mat: &[bool], group_of: &[Option<usize>], k: usize, id: NodeId) -> bool {
    let n = g.node(id);
    match n.op {
        Op::Const(_) | Op::Fill(_) => true,
        Op::Input(_) | Op::View(_) => false,
        Op::Reduce { .. } => group_of[id.index()] == Some(k),
        // A scan (or another routine) gives one value per element.
        Op::Library(..) => false,
        _ if mat[id.index()] && group_of[id.index()] != Some(k) => false,
        _ => n.inputs.iter().all(|x| per_row(g, mat, group_of, k, *x)),
    }
}

/// True when a value of shape `s` read from memory can be one value per row of row space
/// `space`: one element per row, in the rows' order (the kept axes, unit extents aside), and
/// no NumPy broadcast of it against the space (a `(n,)` column beside rows of `n` elements
/// would vary along each row, so it stays an element operand there).
pub fn read_per_row(space: &Space, s: &Shape) -> bool {
    let Space::Rows { shape, axes } = space else { return false };
    let squeeze = |d: &mut dyn Iterator<Item = usize>| d.filter(|e| *e != 1).collect::<Vec<_>>();
    let kept = squeeze(&mut (0..shape.rank()).filter(|i| !axes.contains(*i)).map(|i| shape.0[i]));
    s.numel() == space.rows() && squeeze(&mut s.0.iter().copied()) == kept && !s.broadcasts_to(shape)
}

/// The iteration space of a kernel anchored at node `id`. Every op is named here: a new
/// op kind must say which space it has.
pub fn space_of(g: &Graph, id: NodeId) -> Result<Space> {
    let n = g.node(id);
    Ok(match n.op {
        Op::Reduce { axes, .. } => Space::Rows { shape: g.node(n.inputs[0]).shape.clone(), axes },
        Op::Library(lib, _) => {
            lib.op()?;
            match row_scan(g, id) {
                Some(_) => Space::Rows { shape: n.shape.clone(), axes: Axes(1 << (n.shape.rank() - 1)) },
                None => Space::Library(lib),
            }
        }
        Op::Unary(_) | Op::Binary(_) | Op::Where | Op::Cast(_) => Space::Elem(n.shape.clone()),
        // Leaves and views returned as they are: copied by an element kernel.
        Op::Input(_) | Op::Const(_) | Op::Fill(_) | Op::View(_) => Space::Elem(n.shape.clone()),
    })
}

/// The kind of scan node `id` when it runs as a row instruction of a tile kernel: a scan along
/// the last axis, rows of 2 to [`ROW_FUSE_MAX`] elements, of a dtype the instruction computes.
/// Other scans (other axes, longer rows: a blocked scan) run as library kernels.
pub fn row_scan(g: &Graph, id: NodeId) -> Option<ScanKind> {
    let n = g.node(id);
    let Op::Library(LibId::SCAN, attr) = n.op else { return None };
    let Ok(Attr::Scan(kind, axis)) = g.attr(attr) else { return None };
    let rank = n.shape.rank();
    let fits = rank > 0 && *axis + 1 == rank && (2..=ROW_FUSE_MAX).contains(&n.shape.0[*axis]);
    (fits && pyasc_ir::tile::scans(*kind, n.dtype())).then_some(*kind)
}

/// What a fusion rule sees when an anchor looks for a group to join.
pub struct Candidate<'a> {
    /// The graph.
    pub g: &'a Graph,
    /// Per node: an anchor.
    pub mat: &'a [bool],
    /// Per node: its group, for anchors already placed.
    pub group_of: &'a [Option<usize>],
    /// `op_break_level`.
    pub level: u8,
    /// The anchor.
    pub id: NodeId,
    /// Its iteration space.
    pub space: &'a Space,
    /// Groups whose results it reads directly.
    pub deps: &'a [usize],
    /// The group considered, and its index.
    pub group: &'a Group,
    /// Index of `group`.
    pub k: usize,
}

/// One fusion rule: may an anchor join a group?
pub trait FusionRule: Sync {
    /// Name shown in notes.
    fn name(&self) -> &'static str;
    /// `Some(verdict)` when the rule covers this pair of spaces, `None` when it does not.
    fn fits(&self, c: &Candidate) -> Option<bool>;
}

/// The fusion rules, tried in order; the first that covers a pair decides.
pub static RULES: [&dyn FusionRule; 3] = [&elem::SameShape, &rows::Rows, &epilogue::LibraryEpilogue];

/// Assign anchors to groups; returns the groups and each anchor's group.
fn group_anchors(g: &Graph, mat: &[bool], level: u8) -> Result<(Vec<Group>, Vec<Option<usize>>)> {
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of: Vec<Option<usize>> = vec![None; g.len()];
    for (i, &m) in mat.iter().enumerate() {
        if !m {
            continue;
        }
        let id = NodeId(i as u32);
        let n = g.node(id);
        // Every group this anchor reads from must run before the one it joins (or be it, for
        // values read directly; memory read through a view must be complete beforehand).
        let (direct, viewed) = frontier(g, mat, id);
        let deps: Vec<usize> = direct.iter().filter_map(|d| group_of[d.index()]).collect();
        let strict: Vec<usize> = viewed.iter().filter_map(|d| group_of[d.index()]).collect();
        let ready = |k: usize| deps.iter().all(|d| *d <= k) && strict.iter().all(|d| *d < k);
        let space = space_of(g, id)?;
        let fits = |k: usize, grp: &Group| -> bool {
            if n.op.is_data() || grp.anchors.iter().any(|a| g.node(*a).op.is_data()) || level == 0 || !ready(k) {
                return false;
            }
            let c = Candidate { g, mat, group_of: &group_of, level, id, space: &space, deps: &deps, group: grp, k };
            RULES.iter().find_map(|r| r.fits(&c)).unwrap_or(false)
        };
        let k = match groups.iter().enumerate().position(|(k, grp)| fits(k, grp)) {
            Some(k) => k,
            None => {
                groups.push(Group { space, anchors: Vec::new() });
                groups.len() - 1
            }
        };
        groups[k].anchors.push(id);
        group_of[i] = Some(k);
    }
    Ok((groups, group_of))
}
