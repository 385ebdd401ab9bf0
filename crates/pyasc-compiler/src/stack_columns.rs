//! Stacks of per-row results written in place: `np.stack([a, b, c], axis=1)` of values a row
//! kernel computes one per row (a detector's box corners, best score and class) needs no
//! copy when the row kernel stores each value straight into its column of the stack.
//!
//! Needs: a lowered plan. Guarantees: [`KernelPlan::stack_columns`] lists each
//! `concatenate` kernel along the last axis whose operands are all `(n,)` buffers viewed as
//! `(n, 1)`, each written as a per-row output by one row kernel and read by nothing but that
//! concatenation. The plan itself is unchanged: a launch may write the columns with a stride
//! and skip the copy, or run it as planned (when it keeps every kernel's output).

use crate::pass::{CompileState, Pass};
use pyasc_ir::error::Result;
use pyasc_ir::library::LibId;
use pyasc_ir::tile::{BufferId, BufferKind, KernelPlan, RegKind, StackColumns};
use pyasc_ir::view::ViewSpec;

/// Finds the stacks whose columns their producers can write in place.
pub struct StackColumnsPass;

impl Pass for StackColumnsPass {
    fn name(&self) -> &'static str {
        "stack_columns"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let Some(plan) = st.plan.as_mut() else { return Ok(()) };
        let found: Vec<StackColumns> = (0..plan.kernels.len()).filter_map(|c| in_place(plan, c)).collect();
        for s in &found {
            st.notes.push(format!(
                "{}: its {} columns are written in place",
                plan.kernels[s.kernel].name,
                s.columns.len()
            ));
        }
        plan.stack_columns = found;
        Ok(())
    }
}

/// Kernel `c` as a stack written in place, when it is one.
fn in_place(plan: &KernelPlan, c: usize) -> Option<StackColumns> {
    let k = &plan.kernels[c];
    let call = k.library.as_ref()?;
    let [stack] = k.outs[..] else { return None };
    let out = &plan.buffers[stack.0 as usize];
    let concat_last = call.id == LibId::CONCAT && call.attr.axis() == Some(1) && k.body.is_empty();
    if !concat_last || out.shape.rank() != 2 || out.shape.0[1] != k.args.len() {
        return None;
    }
    let n = out.shape.0[0];
    let mut seen = Vec::new();
    for (b, views) in k.args.iter().zip(&k.arg_views) {
        let d = &plan.buffers[b.0 as usize];
        let column = d.kind == BufferKind::Computed
            && d.dtype == out.dtype
            && d.shape.0 == [n]
            && views[..] == [ViewSpec::Reshape(vec![n, 1])]
            && !seen.contains(b)
            && !plan.outputs.contains(b);
        if !column || !row_output_read_once(plan, c, *b) {
            return None;
        }
        seen.push(*b);
    }
    Some(StackColumns { kernel: c, stack, columns: seen })
}

/// Whether buffer `b` is a per-row output of exactly one earlier row kernel (a tile program
/// of its own, not a routine) and kernel `c` is the only kernel reading it.
fn row_output_read_once(plan: &KernelPlan, c: usize, b: BufferId) -> bool {
    let readers = plan.kernels.iter().filter(|k| k.args.contains(&b)).count();
    let mut writers = plan.kernels.iter().enumerate().filter(|(_, k)| k.outs.contains(&b));
    let (Some((w, k)), None) = (writers.next(), writers.next()) else { return false };
    let o = k.outs.iter().position(|x| *x == b).expect("a writer writes it") as u16;
    let per_row = k.regs.iter().filter(|r| r.kind == RegKind::Out(o)).all(|r| r.row);
    readers == 1 && w < c && k.row_len > 0 && k.library.is_none() && k.program.is_none() && per_row
}
