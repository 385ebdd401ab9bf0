//! Integer expressions of block programs: a shared table of nodes (each operand an earlier
//! node), so a value a program uses in many places is one node, and a schedule that
//! evaluates each node once per block or once per iteration of the innermost loop whose
//! variable it reads.

use std::collections::HashMap;

/// Index of a node of an expression table.
pub type ExprId = u32;

/// One node of an expression table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// A constant.
    Const(i64),
    /// The running block's index.
    Block,
    /// The number of blocks of the launch.
    BlockNum,
    /// The current value of loop variable `i`.
    Var(u16),
    /// Integer scalar argument `i`.
    Arg(u16),
    /// A binary integer operation on two earlier nodes.
    Bin(IntOp, ExprId, ExprId),
}

/// Integer operations of [`Expr`] (division and remainder floor, as in Python).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum IntOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a // b`.
    FloorDiv,
    /// `a % b`.
    Mod,
    /// `min(a, b)`.
    Min,
    /// `max(a, b)`.
    Max,
}

impl IntOp {
    /// `a op b` (`Err` on overflow or division by zero).
    pub fn apply(self, a: i64, b: i64) -> std::result::Result<i64, &'static str> {
        let floor = |a: i64, b: i64| a.div_euclid(b) - i64::from(b < 0 && a.rem_euclid(b) != 0);
        let r = match self {
            IntOp::Add => a.checked_add(b),
            IntOp::Sub => a.checked_sub(b),
            IntOp::Mul => a.checked_mul(b),
            IntOp::FloorDiv | IntOp::Mod if b == 0 => return Err("integer division by zero"),
            IntOp::FloorDiv if a == i64::MIN && b == -1 => None,
            IntOp::FloorDiv => Some(floor(a, b)),
            IntOp::Mod if b == -1 => Some(0),
            IntOp::Mod => b.checked_mul(floor(a, b)).and_then(|q| a.checked_sub(q)),
            IntOp::Min => Some(a.min(b)),
            IntOp::Max => Some(a.max(b)),
        };
        r.ok_or("integer overflow")
    }
}

/// A table of expression nodes in dependency order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Exprs {
    /// The nodes; a `Bin` node's operands come before it.
    pub nodes: Vec<Expr>,
    index: HashMap<Expr, ExprId>,
}

impl Exprs {
    /// The id of `e`, added if new (equal nodes share one id).
    pub fn intern(&mut self, e: Expr) -> ExprId {
        if let Some(&i) = self.index.get(&e) {
            return i;
        }
        let i = self.nodes.len() as ExprId;
        self.nodes.push(e);
        self.index.insert(e, i);
        i
    }

    /// Loop variables each node reads (bit `v` for variable `v`); `Err` for an operand that is
    /// not an earlier node or a variable id of 64 or more.
    pub fn var_sets(&self) -> std::result::Result<Vec<u64>, String> {
        let mut sets: Vec<u64> = Vec::with_capacity(self.nodes.len());
        for (i, e) in self.nodes.iter().enumerate() {
            let s = match *e {
                Expr::Var(v) if v < 64 => 1u64 << v,
                Expr::Var(v) => return Err(format!("loop variable {v}: at most 64 loops")),
                Expr::Bin(_, a, b) if (a as usize) < i && (b as usize) < i => sets[a as usize] | sets[b as usize],
                Expr::Bin(..) => return Err(format!("expression node {i} reads a later node")),
                _ => 0,
            };
            sets.push(s);
        }
        Ok(sets)
    }

    /// The evaluation schedule: nodes reading no loop variable, and for each variable the
    /// nodes whose deepest variable (by `depth`, the nesting of each variable's loop) it is.
    pub fn schedule(&self, depth: &[usize]) -> std::result::Result<(Vec<ExprId>, Vec<Vec<ExprId>>), String> {
        let sets = self.var_sets()?;
        let mut top = Vec::new();
        let mut by_var = vec![Vec::new(); depth.len()];
        for (i, s) in sets.iter().enumerate() {
            let deepest = (0..64usize).filter(|v| s & (1u64 << v) != 0).max_by_key(|&v| depth.get(v).copied());
            match deepest {
                None => top.push(i as ExprId),
                Some(v) if v < depth.len() => by_var[v].push(i as ExprId),
                Some(v) => return Err(format!("expression node {i} reads undeclared loop variable {v}")),
            }
        }
        Ok((top, by_var))
    }
}

/// Values an expression table is evaluated with, and the nodes' current values.
#[derive(Clone, Debug)]
pub struct ExprValues {
    /// Block index.
    pub block: i64,
    /// Blocks of the launch.
    pub block_num: i64,
    /// Loop variables by id.
    pub vars: Vec<i64>,
    /// Current value of each node.
    pub vals: Vec<i64>,
}

impl ExprValues {
    /// Evaluate the nodes `ids` (in order) with integer arguments `args`.
    pub fn update(&mut self, nodes: &[Expr], ids: &[ExprId], args: &[i64]) -> std::result::Result<(), &'static str> {
        for &i in ids {
            let v = match nodes[i as usize] {
                Expr::Const(c) => c,
                Expr::Block => self.block,
                Expr::BlockNum => self.block_num,
                Expr::Var(v) => self.vars[v as usize],
                Expr::Arg(a) => *args.get(a as usize).ok_or("a missing scalar argument")?,
                Expr::Bin(op, a, b) => op.apply(self.vals[a as usize], self.vals[b as usize])?,
            };
            self.vals[i as usize] = v;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_operations_follow_python() {
        assert_eq!(IntOp::FloorDiv.apply(-7, 2), Ok(-4));
        assert_eq!(IntOp::Mod.apply(-7, 2), Ok(1));
        assert_eq!(IntOp::FloorDiv.apply(7, -2), Ok(-4));
        assert_eq!(IntOp::Mod.apply(7, -2), Ok(-1));
        assert_eq!(IntOp::Mod.apply(6, 3), Ok(0));
        assert!(IntOp::Mod.apply(1, 0).is_err());
        assert!(IntOp::Mul.apply(i64::MAX, 2).is_err());
        assert!(IntOp::FloorDiv.apply(i64::MIN, -1).is_err());
        for a in -20i64..20 {
            for b in [-7i64, -3, -1, 1, 2, 5] {
                let (q, r) = (IntOp::FloorDiv.apply(a, b).unwrap(), IntOp::Mod.apply(a, b).unwrap());
                assert_eq!(q * b + r, a);
                assert!(r == 0 || (r < 0) == (b < 0), "{a} % {b} = {r}");
            }
        }
    }

    #[test]
    fn nodes_are_shared_and_scheduled_by_their_deepest_loop() {
        let mut t = Exprs::default();
        let blk = t.intern(Expr::Block);
        let c = t.intern(Expr::Const(100));
        let base = t.intern(Expr::Bin(IntOp::Mul, blk, c));
        assert_eq!(t.intern(Expr::Bin(IntOp::Mul, blk, c)), base, "equal nodes share an id");
        let i = t.intern(Expr::Var(0));
        let j = t.intern(Expr::Var(1));
        let bi = t.intern(Expr::Bin(IntOp::Add, base, i));
        let bij = t.intern(Expr::Bin(IntOp::Add, bi, j));
        // Variable 0's loop at depth 0, variable 1's nested in it.
        let (top, by_var) = t.schedule(&[0, 1]).unwrap();
        assert_eq!(top, vec![blk, c, base]);
        assert_eq!(by_var, vec![vec![i, bi], vec![j, bij]]);
        let mut v = ExprValues { block: 3, block_num: 8, vars: vec![5, 7], vals: vec![0; t.nodes.len()] };
        v.update(&t.nodes, &top, &[]).unwrap();
        v.update(&t.nodes, &by_var[0], &[]).unwrap();
        v.update(&t.nodes, &by_var[1], &[]).unwrap();
        assert_eq!(v.vals[bij as usize], 312);
    }
}
