//! Static shapes and NumPy broadcasting.

use crate::error::{IrError, Result};
use std::fmt;

/// A static shape: one extent per axis, outermost first.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Shape(pub Vec<usize>);

impl Shape {
    /// The 0-d shape.
    pub fn scalar() -> Self {
        Shape(Vec::new())
    }
    /// Number of axes.
    pub fn rank(&self) -> usize {
        self.0.len()
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.0.iter().product()
    }
    /// Bytes of an array of this shape with `itemsize`-byte elements, `None` when the count
    /// overflows or exceeds `isize::MAX` (no allocation or pointer offset could address it).
    pub fn checked_bytes(&self, itemsize: usize) -> Option<usize> {
        let n = self.0.iter().try_fold(itemsize, |acc, &d| acc.checked_mul(d))?;
        (n <= isize::MAX as usize).then_some(n)
    }
    /// A `ShapeError` unless an array of this shape and element size is addressable.
    pub fn check_size(&self, itemsize: usize) -> crate::error::Result<()> {
        match self.checked_bytes(itemsize) {
            Some(_) => Ok(()),
            None => Err(crate::error::IrError::shape(format!(
                "an array of shape {self} with {itemsize}-byte elements is too large to address"
            ))),
        }
    }
    /// The extents.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }
    /// Broadcast two shapes as NumPy does.
    pub fn broadcast(&self, other: &Shape) -> Result<Shape> {
        let rank = self.rank().max(other.rank());
        let mut out = vec![0; rank];
        for (i, slot) in out.iter_mut().enumerate() {
            let a = dim_from_right(&self.0, rank - 1 - i);
            let b = dim_from_right(&other.0, rank - 1 - i);
            *slot = match (a, b) {
                (x, y) if x == y => x,
                (1, y) => y,
                (x, 1) => x,
                _ => {
                    return Err(IrError::shape(format!(
                        "operands could not be broadcast together with shapes {self} and {other}"
                    )))
                }
            };
        }
        Ok(Shape(out))
    }
    /// True when this shape broadcasts to `target` without changing `target`.
    pub fn broadcasts_to(&self, target: &Shape) -> bool {
        matches!(self.broadcast(target), Ok(s) if &s == target)
    }
}

fn dim_from_right(dims: &[usize], k: usize) -> usize {
    if k < dims.len() {
        dims[dims.len() - 1 - k]
    } else {
        1
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        if self.0.len() == 1 {
            f.write_str(",")?;
        }
        f.write_str(")")
    }
}

impl From<Vec<usize>> for Shape {
    fn from(v: Vec<usize>) -> Self {
        Shape(v)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_past_the_address_space_are_rejected() {
        assert_eq!(Shape(vec![2, 3]).checked_bytes(4), Some(24));
        assert_eq!(Shape(vec![1 << 40, 1 << 40]).checked_bytes(1), None);
        assert_eq!(Shape(vec![1 << 62]).checked_bytes(2), None);
        assert!(Shape(vec![usize::MAX, 0]).checked_bytes(8).is_none());
        assert!(Shape(vec![0, 5]).check_size(8).is_ok());
    }

    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        let s = |v: &[usize]| Shape(v.to_vec());
        assert_eq!(s(&[3, 1]).broadcast(&s(&[4])).unwrap(), s(&[3, 4]));
        assert_eq!(s(&[]).broadcast(&s(&[2, 2])).unwrap(), s(&[2, 2]));
        assert_eq!(s(&[0, 1]).broadcast(&s(&[1, 5])).unwrap(), s(&[0, 5]));
        assert!(s(&[3]).broadcast(&s(&[4])).is_err());
        assert_eq!(s(&[2]).to_string(), "(2,)");
        assert!(s(&[1, 4]).broadcasts_to(&s(&[3, 4])));
        assert!(!s(&[3, 4]).broadcasts_to(&s(&[4])));
    }
}
