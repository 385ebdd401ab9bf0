//! Python ints computed from arguments are computed on the host, exactly, at every call.
//!
//! Needs: a promoted graph (casts explicit).
//! Guarantees: no kernel computes arithmetic on Python ints. Where a value computed from
//! Python int arguments alone ([`IntExpr`]: `s * s`, `s // 2`) meets an array, a float or a
//! result, it becomes a hidden 0-d input ([`HostInt`]) that the launch evaluates as Python
//! does, with unbounded intermediates (up to 128 bits), and converts to the dtype it meets:
//! `x_f64 + s * s` with `s = 2**40` is `x + 1.2089e24`, as in NumPy, and `x_i64 + s // 2` with
//! `s = 2**63` is exact. A cast of such a value to a float dtype is itself the hidden input,
//! so a value beyond int64 reaches floats rounded once. Plain Python int arguments and
//! constants stay as they are.

use crate::int_bounds::{IntExpr, TooLarge};
use crate::pass::{CompileState, Pass};
use pyasc_ir::error::SourceLoc;
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::op::Op;
use pyasc_ir::{DType, Graph, Node, NodeId};

/// Replaces Python int arithmetic on arguments by host-computed hidden inputs.
pub struct HostIntsPass;

/// A hidden input computed on the host at each call: the value of `expr` as a `dtype` 0-d array.
#[derive(Clone, Debug, PartialEq)]
pub struct HostInt {
    /// How the value follows from the arguments.
    pub expr: IntExpr,
    /// The dtype it enters the kernel as.
    pub dtype: DType,
    /// The user's line that made the value meet an array.
    pub loc: Option<SourceLoc>,
}

impl HostInt {
    /// The value's bits as one element of [`HostInt::dtype`] (little end first), from `arg(i)`
    /// (argument `i`'s value); `Ok(None)` when an argument cannot be read.
    pub fn bits(&self, arg: impl Fn(usize) -> Option<i128>) -> Result<Option<u64>> {
        let overflow = |what: String| {
            IrError::new(
                ErrorKind::Overflow,
                format!("Python integer {what} ({}) out of bounds for {}", self.expr, self.dtype),
            )
            .at(self.loc.as_ref())
        };
        let v = match self.expr.eval(arg) {
            Err(TooLarge) => return Err(overflow("beyond 128 bits".into())),
            Ok(None) => return Ok(None),
            Ok(Some(v)) => v,
        };
        let bits = match self.dtype {
            DType::Bool => u64::from(v != 0),
            DType::F64 => (v as f64).to_bits(),
            DType::F32 => u64::from((v as f64 as f32).to_bits()),
            DType::F16 | DType::BF16 => {
                return Err(IrError::new(
                    ErrorKind::Unsupported,
                    format!("a Python int computed from the arguments meeting {}", self.dtype),
                )
                .at(self.loc.as_ref()))
            }
            dt => {
                let (lo, hi) = dt.int_range().ok_or_else(|| IrError::internal("an integer dtype without a range"))?;
                if v < lo || v > hi {
                    return Err(overflow(v.to_string()));
                }
                v as u64
            }
        };
        Ok(Some(bits))
    }
}

impl Pass for HostIntsPass {
    fn name(&self) -> &'static str {
        "host_ints"
    }
    fn run(&self, st: &mut CompileState) -> Result<()> {
        let (graph, hosted) = hoist(&st.graph)?;
        if !hosted.is_empty() {
            st.notes.push(format!("{} Python int values computed on the host", hosted.len()));
            st.graph = graph;
            st.host_ints = hosted;
        }
        Ok(())
    }
}

/// A node computing a Python int from arguments (not a plain argument or a constant).
fn computed(g: &Graph, x: NodeId) -> Option<IntExpr> {
    IntExpr::of(g, x).filter(|e| e.arg().is_none() && !matches!(g.node(x).op, Op::Const(_)))
}

/// The graph with every computed Python int that meets anything but Python int arithmetic
/// replaced by a hidden input, and those inputs in order.
fn hoist(g: &Graph) -> Result<(Graph, Vec<HostInt>)> {
    let live = g.live();
    let (mut out, mut map) = crate::rewrite::with_inputs(g);
    let mut hosted: Vec<HostInt> = Vec::new();
    // Hidden inputs made so far: (old node, new input).
    let mut made: Vec<(NodeId, NodeId)> = Vec::new();
    let mut hide = |out: &mut Graph, id: NodeId, expr: IntExpr, n: &Node| -> NodeId {
        if let Some((_, h)) = made.iter().find(|(o, _)| *o == id) {
            return *h;
        }
        let h = out.add_input(n.vtype, n.shape.clone());
        out.nodes[h.index()].loc = n.loc.clone();
        hosted.push(HostInt { expr, dtype: n.dtype(), loc: n.loc.clone() });
        made.push((id, h));
        h
    };
    for (i, n) in g.nodes.iter().enumerate() {
        if !live[i] || map[i].is_some() {
            continue;
        }
        let id = NodeId(i as u32);
        if computed(g, id).is_some() {
            // Part of a Python int expression: kept for its users inside it, dead otherwise.
            let ops = n.inputs.iter().map(|o| map[o.index()].expect("operands precede users")).collect();
            map[i] = Some(out.push(Node { inputs: ops, ..n.clone() }));
            continue;
        }
        if let (Op::Cast(_), [x]) = (n.op, n.inputs.as_slice()) {
            if let Some(e) = computed(g, *x) {
                // The value itself in the cast's dtype: one rounding for floats.
                map[i] = Some(hide(&mut out, id, e, n));
                continue;
            }
        }
        let mut ops = Vec::with_capacity(n.inputs.len());
        for o in &n.inputs {
            ops.push(match computed(g, *o) {
                Some(e) => hide(&mut out, *o, e, g.node(*o)),
                None => map[o.index()].expect("operands precede users"),
            });
        }
        map[i] = Some(out.push(Node { inputs: ops, ..n.clone() }));
    }
    let mut outputs = Vec::with_capacity(g.outputs.len());
    for o in &g.outputs {
        outputs.push(match computed(g, *o) {
            Some(e) => hide(&mut out, *o, e, g.node(*o)),
            None => map[o.index()].expect("outputs are live"),
        });
    }
    out.outputs = outputs;
    Ok((out, hosted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::int_bounds::Step;
    use crate::pass::CompileOptions;
    use crate::promote::PromotePass;
    use pyasc_ir::dtype::{VType, WeakKind};
    use pyasc_ir::op::BinaryOp;
    use pyasc_ir::verify::verify;
    use pyasc_ir::Shape;

    #[test]
    fn a_computed_int_meeting_floats_is_one_hidden_input_in_their_dtype() {
        let mut g = Graph::new();
        let x = g.add_input(VType::strong(DType::F64), Shape(vec![4]));
        let s = g.add_input(VType::weak(WeakKind::Int), Shape(vec![]));
        let sq = g.binary(BinaryOp::Mul, s, s, None).unwrap();
        let y = g.binary(BinaryOp::Add, x, sq, None).unwrap();
        g.outputs.push(y);
        let mut st = CompileState::new(g, CompileOptions::default());
        PromotePass.run(&mut st).unwrap();
        HostIntsPass.run(&mut st).unwrap();
        verify(&st.graph).unwrap();
        assert_eq!(st.graph.inputs.len(), 3);
        assert_eq!(st.host_ints.len(), 1);
        let h = &st.host_ints[0];
        assert_eq!(
            (h.dtype, &h.expr.0[..]),
            (DType::F64, &[Step::Arg(1), Step::Apply(Op::Binary(BinaryOp::Mul), vec![0, 0])][..])
        );
        // The sum reads the array and the hidden input; no multiply is left for the kernel.
        let out = st.graph.node(st.graph.outputs[0]);
        assert_eq!(out.inputs, vec![st.graph.inputs[0], st.graph.inputs[2]]);
        let s40 = |_: usize| Some(1i128 << 40);
        assert_eq!(h.bits(s40).unwrap(), Some(2f64.powi(80).to_bits()));
    }

    #[test]
    fn an_integer_hidden_input_must_fit_its_dtype() {
        let h = HostInt {
            expr: IntExpr(vec![Step::Arg(0), Step::Apply(Op::Binary(BinaryOp::Mul), vec![0, 0])]),
            dtype: DType::I64,
            loc: None,
        };
        assert_eq!(h.bits(|_| Some(-3)).unwrap(), Some(9));
        let err = h.bits(|_| Some(1i128 << 40)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Overflow);
        assert!(err.message.contains("1208925819614629174706176") && err.message.contains("int64"), "{}", err.message);
        assert_eq!(h.bits(|_| Some(1i128 << 64)).unwrap_err().kind, ErrorKind::Overflow);
    }
}
