//! Views: movement ops that only change how memory is read (transpose, reshape, slicing
//! with steps, broadcasting). A view never computes anything; the executor turns a chain of
//! views over a buffer into new extents, strides and an offset when it launches a kernel.

use crate::error::{IrError, Result};
use crate::shape::Shape;

/// One axis of a slice: `len` elements from `start` every `step` (negative: backwards).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SliceDim {
    /// First index.
    pub start: usize,
    /// Distance between taken indices.
    pub step: isize,
    /// Number of indices taken.
    pub len: usize,
}

/// A movement op.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ViewSpec {
    /// Axis `i` of the result is axis `perm[i]` of the operand.
    Transpose(Vec<usize>),
    /// Same elements in C order, new extents.
    Reshape(Vec<usize>),
    /// One [`SliceDim`] per axis.
    Slice(Vec<SliceDim>),
    /// NumPy broadcasting to a larger shape.
    BroadcastTo(Vec<usize>),
}

/// How `pad` fills the border (NumPy's `np.pad` modes).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PadMode {
    /// A constant value.
    Constant,
    /// The edge value repeated.
    Edge,
    /// Mirror without repeating the edge.
    Reflect,
    /// Periodic continuation.
    Wrap,
}

/// `np.pad`: `widths[i] = (before, after)` per axis.
#[derive(Clone, Debug, PartialEq)]
pub struct PadSpec {
    /// Elements added before and after, per axis.
    pub widths: Vec<(usize, usize)>,
    /// Fill rule.
    pub mode: PadMode,
    /// The constant of `PadMode::Constant` (already of the operand's dtype).
    pub cval: crate::Scalar,
}

impl PadSpec {
    /// The padded shape, or an error for a bad width count or an empty axis to mirror.
    pub fn out_shape(&self, s: &Shape) -> Result<Shape> {
        if self.widths.len() != s.rank() {
            return Err(IrError::shape(format!(
                "pad widths for {} axes given to a tensor of rank {}",
                self.widths.len(),
                s.rank()
            )));
        }
        for ((b, a), d) in self.widths.iter().zip(&s.0) {
            if *d == 0 && (b + a) > 0 && self.mode != PadMode::Constant {
                return Err(IrError::shape("can only pad an empty axis with a constant"));
            }
        }
        Ok(Shape(self.widths.iter().zip(&s.0).map(|((b, a), d)| b + d + a).collect()))
    }

    /// For output index `i` of an axis of extent `n` padded with `before`: the source index,
    /// or `None` for the constant.
    pub fn source(&self, i: usize, n: usize, before: usize) -> Option<usize> {
        let j = i as isize - before as isize;
        let n = n as isize;
        if (0..n).contains(&j) {
            return Some(j as usize);
        }
        Some(match self.mode {
            PadMode::Constant => return None,
            PadMode::Edge => j.clamp(0, n - 1) as usize,
            PadMode::Wrap => j.rem_euclid(n) as usize,
            PadMode::Reflect => {
                if n == 1 {
                    0
                } else {
                    let p = 2 * (n - 1);
                    let k = j.rem_euclid(p);
                    (if k < n { k } else { p - k }) as usize
                }
            }
        })
    }
}

/// A strided view of memory: extents, strides and offset in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strided {
    /// Extents.
    pub shape: Vec<usize>,
    /// Strides in elements.
    pub strides: Vec<isize>,
    /// Offset of element `[0, ...]` from the base, in elements.
    pub offset: isize,
}

impl ViewSpec {
    /// The shape the view gives an operand of shape `s`, or the error naming the mismatch.
    pub fn out_shape(&self, s: &Shape) -> Result<Shape> {
        match self {
            ViewSpec::Transpose(p) => {
                let mut sorted = p.clone();
                sorted.sort_unstable();
                if sorted != (0..s.rank()).collect::<Vec<_>>() {
                    return Err(IrError::shape(format!("axes {p:?} are not a permutation of {} axes", s.rank())));
                }
                Ok(Shape(p.iter().map(|i| s.0[*i]).collect()))
            }
            ViewSpec::Reshape(n) => {
                if n.iter().product::<usize>() != s.numel() {
                    return Err(IrError::shape(format!("cannot reshape {s} ({} elements) into {:?}", s.numel(), n)));
                }
                Ok(Shape(n.clone()))
            }
            ViewSpec::Slice(d) => {
                if d.len() != s.rank() {
                    return Err(IrError::internal("slice rank mismatch"));
                }
                for (dim, ext) in d.iter().zip(&s.0) {
                    let last = dim.start as isize + (dim.len as isize - 1) * dim.step;
                    if dim.len > 0 && (dim.start >= *ext || last < 0 || last >= *ext as isize) {
                        return Err(IrError::shape(format!("slice out of range for an axis of {ext}")));
                    }
                }
                Ok(Shape(d.iter().map(|x| x.len).collect()))
            }
            ViewSpec::BroadcastTo(t) => {
                let target = Shape(t.clone());
                if !s.broadcasts_to(&target) {
                    return Err(IrError::shape(format!("cannot broadcast {s} to {target}")));
                }
                Ok(target)
            }
        }
    }

    /// Apply the view to strided memory. `None` for a reshape the strides cannot express
    /// (the caller then makes the operand contiguous first).
    pub fn apply(&self, v: &Strided) -> Option<Strided> {
        Some(match self {
            ViewSpec::Transpose(p) => Strided {
                shape: p.iter().map(|i| v.shape[*i]).collect(),
                strides: p.iter().map(|i| v.strides[*i]).collect(),
                offset: v.offset,
            },
            ViewSpec::Slice(d) => Strided {
                shape: d.iter().map(|x| x.len).collect(),
                strides: d.iter().zip(&v.strides).map(|(x, s)| x.step * s).collect(),
                offset: v.offset + d.iter().zip(&v.strides).map(|(x, s)| x.start as isize * s).sum::<isize>(),
            },
            ViewSpec::BroadcastTo(t) => {
                let lead = t.len() - v.shape.len();
                Strided {
                    shape: t.clone(),
                    strides: (0..t.len())
                        .map(|i| if i < lead || v.shape[i - lead] != t[i] { 0 } else { v.strides[i - lead] })
                        .collect(),
                    offset: v.offset,
                }
            }
            ViewSpec::Reshape(n) => {
                Strided { shape: n.clone(), strides: reshape_strides(&v.shape, &v.strides, n)?, offset: v.offset }
            }
        })
    }

    /// The text form used by the printer.
    pub fn describe(&self) -> String {
        match self {
            ViewSpec::Transpose(p) => format!("transpose{p:?}"),
            ViewSpec::Reshape(n) => format!("reshape{n:?}"),
            ViewSpec::Slice(d) => {
                let parts: Vec<String> = d.iter().map(|x| format!("{}:{}:{}", x.start, x.len, x.step)).collect();
                format!("slice[{}]", parts.join(","))
            }
            ViewSpec::BroadcastTo(t) => format!("broadcast_to{t:?}"),
        }
    }
}

/// Strides for viewing memory of `shape`/`strides` with extents `new`, without copying (as
/// NumPy's reshape does when it can); `None` when impossible.
pub fn reshape_strides(shape: &[usize], strides: &[isize], new: &[usize]) -> Option<Vec<isize>> {
    let numel: usize = shape.iter().product();
    if numel == 0 || numel == 1 {
        // Any strides address the (at most one) element.
        let mut st = vec![0isize; new.len()];
        let mut s = 1isize;
        for i in (0..new.len()).rev() {
            st[i] = s;
            s *= new[i].max(1) as isize;
        }
        return Some(st);
    }
    // Drop unit axes, then match groups of old axes with groups of new axes of equal size;
    // each old group must be contiguous within itself.
    let old: Vec<(usize, isize)> = shape.iter().zip(strides).filter(|(d, _)| **d != 1).map(|(d, s)| (*d, *s)).collect();
    let mut out = vec![0isize; new.len()];
    let (mut oi, mut ni) = (0usize, 0usize);
    while ni < new.len() {
        if new[ni] == 1 {
            out[ni] = 0;
            ni += 1;
            continue;
        }
        let (mut op, mut np) = (old[oi].0, new[ni]);
        let (o0, n0) = (oi, ni);
        while op != np {
            if op < np {
                oi += 1;
                op *= old[oi].0;
            } else {
                ni += 1;
                np *= new[ni];
            }
        }
        for k in o0..oi {
            if old[k].1 != old[k + 1].1 * old[k + 1].0 as isize {
                return None;
            }
        }
        // Strides of the new group, innermost = the old group's innermost stride.
        let mut s = old[oi].1;
        for k in (n0..=ni).rev() {
            out[k] = s;
            s *= new[k] as isize;
        }
        oi += 1;
        ni += 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reshape_strides_follow_numpy() {
        assert_eq!(reshape_strides(&[2, 3, 4], &[12, 4, 1], &[6, 4]), Some(vec![4, 1]));
        assert_eq!(reshape_strides(&[2, 3, 4], &[12, 4, 1], &[2, 12]), Some(vec![12, 1]));
        assert_eq!(reshape_strides(&[2, 3, 4], &[12, 4, 1], &[1, 24, 1]), Some(vec![0, 1, 0]));
        // A transposed matrix cannot be flattened without a copy.
        assert_eq!(reshape_strides(&[3, 2], &[1, 3], &[6]), None);
        // But splitting one of its axes can.
        assert_eq!(reshape_strides(&[4, 2], &[1, 4], &[2, 2, 2]), Some(vec![2, 1, 4]));
    }

    #[test]
    fn pad_sources_follow_numpy_modes() {
        let spec = |mode| PadSpec { widths: vec![(3, 3)], mode, cval: crate::Scalar::Float(0.0) };
        // np.pad(np.arange(3), 3, mode) indices.
        let idx = |mode| (0..9).map(|i| spec(mode).source(i, 3, 3)).collect::<Vec<_>>();
        let s = |v: &[usize]| v.iter().map(|x| Some(*x)).collect::<Vec<_>>();
        assert_eq!(idx(PadMode::Edge), s(&[0, 0, 0, 0, 1, 2, 2, 2, 2]));
        assert_eq!(idx(PadMode::Wrap), s(&[0, 1, 2, 0, 1, 2, 0, 1, 2]));
        assert_eq!(idx(PadMode::Reflect), s(&[1, 2, 1, 0, 1, 2, 1, 0, 1]));
        assert_eq!(idx(PadMode::Constant)[..4], [None, None, None, Some(0)]);
    }

    #[test]
    fn views_compose_into_strides() {
        let base = Strided { shape: vec![3, 4], strides: vec![4, 1], offset: 0 };
        let t = ViewSpec::Transpose(vec![1, 0]).apply(&base).unwrap();
        assert_eq!((t.shape.clone(), t.strides.clone()), (vec![4, 3], vec![1, 4]));
        let s = ViewSpec::Slice(vec![SliceDim { start: 3, step: -2, len: 2 }, SliceDim { start: 0, step: 1, len: 3 }])
            .apply(&t)
            .unwrap();
        assert_eq!((s.shape, s.strides, s.offset), (vec![2, 3], vec![-2, 4], 3));
        let b = ViewSpec::BroadcastTo(vec![5, 3, 4]).apply(&base).unwrap();
        assert_eq!(b.strides, vec![0, 4, 1]);
        assert!(ViewSpec::Reshape(vec![5]).out_shape(&Shape(vec![2, 3])).is_err());
        assert!(ViewSpec::Transpose(vec![0, 0]).out_shape(&Shape(vec![2, 3])).is_err());
    }
}
