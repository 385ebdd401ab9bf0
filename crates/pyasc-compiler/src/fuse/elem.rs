//! Elementwise fusion: an elementwise anchor joins an element group over the same shape.

use super::{Candidate, FusionRule, Space};

/// Element anchors of one shape share a kernel.
pub struct SameShape;

impl FusionRule for SameShape {
    fn name(&self) -> &'static str {
        "elementwise"
    }
    fn fits(&self, c: &Candidate) -> Option<bool> {
        match (&c.group.space, c.space) {
            (Space::Elem(a), Space::Elem(b)) => Some(a == b),
            _ => None,
        }
    }
}
