//! The stack of open `pyasc.precision_scope` blocks, per thread.
//!
//! A trace remembers how deep the stack was when it began ([`depth`]); only scopes opened
//! after that apply to its nodes ([`innermost_since`]), so an operator's graph depends on its
//! own body, never on where it was first called.

use pyasc_ir::precision::Precision;
use std::cell::RefCell;

thread_local! {
    static SCOPES: RefCell<Vec<Precision>> = const { RefCell::new(Vec::new()) };
}

/// Open a scope on this thread.
pub fn push(p: Precision) {
    SCOPES.with(|s| s.borrow_mut().push(p));
}

/// Close this thread's innermost scope; false when none is open.
pub fn pop() -> bool {
    SCOPES.with(|s| s.borrow_mut().pop().is_some())
}

/// How many scopes are open on this thread.
pub fn depth() -> usize {
    SCOPES.with(|s| s.borrow().len())
}

/// The innermost scope opened after the first `base` ones, if any.
pub fn innermost_since(base: usize) -> Option<Precision> {
    SCOPES.with(|s| s.borrow().get(base..).and_then(|open| open.last().copied()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_a_base_hides_outer_ones() {
        assert_eq!(depth(), 0);
        push(Precision::Bf16);
        let base = depth();
        assert_eq!(innermost_since(0), Some(Precision::Bf16));
        assert_eq!(innermost_since(base), None);
        push(Precision::Fp32);
        assert_eq!(innermost_since(base), Some(Precision::Fp32));
        assert!(pop() && pop() && !pop());
        assert_eq!(innermost_since(5), None);
    }
}
