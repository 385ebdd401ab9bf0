//! Library routines launched on their own, outside a traced operator (stencil sweeps, the
//! detection routines): a plan of one kernel that calls the routine, which callers run through
//! the [door](crate::door) like every other plan.

use pyasc_ir::attr::Attr;
use pyasc_ir::dtype::VType;
use pyasc_ir::error::Result;
use pyasc_ir::library::{LibId, LibraryOp};
use pyasc_ir::shape::Shape;
use pyasc_ir::tile::{BufferDecl, BufferId, BufferKind, KernelPlan, TileKernel};
use pyasc_ir::DType;
use pyasc_runtime::PlanSource;

/// The plan that runs library op `id` with `attr` on `operands` (in order): one kernel named
/// `name`, its result (type and shape from the op's own inference) the plan's one output. An
/// operand the op refuses is its typed error.
pub fn library_plan(name: &str, id: LibId, attr: Attr, operands: &[(DType, &[usize])]) -> Result<KernelPlan> {
    let op: &dyn LibraryOp = id.op()?;
    let shapes: Vec<Shape> = operands.iter().map(|(_, s)| Shape(s.to_vec())).collect();
    let typed: Vec<(VType, &Shape)> = operands.iter().zip(&shapes).map(|((d, _), s)| (VType::strong(*d), s)).collect();
    let (result, shape) = op.infer(&attr, &typed)?;
    let mut buffers: Vec<BufferDecl> = operands
        .iter()
        .zip(shapes)
        .enumerate()
        .map(|(i, ((dtype, _), shape))| BufferDecl { dtype: *dtype, shape, kind: BufferKind::Input(i as u32) })
        .collect();
    let out = BufferId(buffers.len() as u32);
    buffers.push(BufferDecl { dtype: result.dtype, shape: shape.clone(), kind: BufferKind::Computed });
    let args: Vec<BufferId> = (0..operands.len() as u32).map(BufferId).collect();
    let kernel = TileKernel {
        name: name.to_string(),
        perm: (0..shape.rank()).collect(),
        shape,
        row_len: 0,
        library: Some(op.lower(&attr, operands.len())?),
        arg_views: vec![Vec::new(); args.len()],
        args,
        outs: vec![out],
        regs: Vec::new(),
        body: Vec::new(),
        tile_elems: 1,
        program: None,
        locs: Vec::new(),
        fused_ops: 1,
    };
    let plan = KernelPlan { buffers, kernels: vec![kernel], outputs: vec![out], stack_columns: Vec::new() };
    if cfg!(debug_assertions) {
        plan.verify()?;
    }
    Ok(plan)
}

/// The result's dtype and shape of a plan made by [`library_plan`].
pub fn result_of(plan: &KernelPlan) -> (DType, &[usize]) {
    let decl = &plan.buffers[plan.outputs[0].0 as usize];
    (decl.dtype, &decl.shape.0)
}

/// A plan made by [`library_plan`], kept alive by a launch queued on a stream.
pub struct LibraryPlan {
    /// The plan.
    pub plan: KernelPlan,
}

impl PlanSource for LibraryPlan {
    fn plan(&self) -> &KernelPlan {
        &self.plan
    }
    fn name(&self) -> &str {
        &self.plan.kernels[0].name
    }
}
