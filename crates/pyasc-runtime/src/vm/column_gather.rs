//! Gathering several strided operands of one layout in a single walk.
//!
//! A kernel that reads `x[:, 0]`, `x[:, 1]`, `x[:, 2]` and `x[:, 3]` of a row-major `x` gathers
//! four tiles whose elements sit one row apart. Gathered one after another, each operand
//! fetches every row's cache line again once a tile spans more lines than the L1 cache holds.
//! Walked together, each position copies the element of every operand while its line is in
//! cache, so each row is fetched once.

use crate::layout::for_each_run;

/// One operand of a joint gather: where its element 0 is and where its tile goes.
#[derive(Copy, Clone, Debug)]
pub struct Column {
    /// The operand's element at position 0 of the iteration space.
    pub base: *const u8,
    /// The tile it is gathered into.
    pub dst: *mut u8,
}

/// Copy the elements at flat iteration positions `start..start + len` of every operand in
/// `cols` (each `size` bytes, all with the same `dims` and `strides`, in elements) into its
/// tile, walking the positions once.
///
/// # Safety
/// Every position of the iteration space `dims` must address a readable element from each
/// `base` through `strides`; each `dst` must be writable for `len` elements and overlap no
/// operand.
pub unsafe fn gather_columns(
    size: usize,
    cols: &[Column],
    dims: &[usize],
    strides: &[isize],
    start: usize,
    len: usize,
) {
    // SAFETY: per this function's contract; each arm copies whole elements.
    unsafe {
        match size {
            1 => walk::<u8>(cols, dims, strides, start, len),
            2 => walk::<u16>(cols, dims, strides, start, len),
            4 => walk::<u32>(cols, dims, strides, start, len),
            8 => walk::<u64>(cols, dims, strides, start, len),
            other => unreachable!("no dtype has {other}-byte elements"),
        }
    }
}

/// [`gather_columns`] for elements of `T`.
///
/// # Safety
/// As for [`gather_columns`].
unsafe fn walk<T: Copy>(cols: &[Column], dims: &[usize], strides: &[isize], start: usize, len: usize) {
    let s = strides[strides.len() - 1];
    for_each_run(dims, strides, start, len, |k, off, run| {
        // SAFETY: positions `k..k + run` address valid elements of every operand (the
        // caller's contract); each tile holds `len` elements.
        unsafe {
            match cols {
                [a] => {
                    let (a0, a1) = (a.base as *const T, a.dst as *mut T);
                    for j in 0..run {
                        *a1.add(k + j) = *a0.offset(off + j as isize * s);
                    }
                }
                [a, b] => {
                    let (a0, b0) = (a.base as *const T, b.base as *const T);
                    let (a1, b1) = (a.dst as *mut T, b.dst as *mut T);
                    for j in 0..run {
                        let o = off + j as isize * s;
                        *a1.add(k + j) = *a0.offset(o);
                        *b1.add(k + j) = *b0.offset(o);
                    }
                }
                [a, b, c, d] => {
                    let (a0, b0, c0, d0) =
                        (a.base as *const T, b.base as *const T, c.base as *const T, d.base as *const T);
                    let (a1, b1, c1, d1) = (a.dst as *mut T, b.dst as *mut T, c.dst as *mut T, d.dst as *mut T);
                    for j in 0..run {
                        let o = off + j as isize * s;
                        *a1.add(k + j) = *a0.offset(o);
                        *b1.add(k + j) = *b0.offset(o);
                        *c1.add(k + j) = *c0.offset(o);
                        *d1.add(k + j) = *d0.offset(o);
                    }
                }
                _ => {
                    for j in 0..run {
                        let o = off + j as isize * s;
                        for c in cols {
                            *(c.dst as *mut T).add(k + j) = *(c.base as *const T).offset(o);
                        }
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::gather_elems;

    /// Joint gathers of 1 to 5 columns of a row-major matrix, from every start and for runs
    /// that cross rows, equal separate [`gather_elems`] calls, for each element size.
    #[test]
    fn joint_gathers_equal_separate_gathers() {
        fn check<T: Copy + PartialEq + std::fmt::Debug + From<u8>>(size: usize) {
            let (rows, cols) = (7usize, 9usize);
            let data: Vec<T> = (0..rows * cols).map(|i| T::from((i % 251) as u8)).collect();
            // Iteration spaces: a column walk (1-D, stride 9) and a 2-D walk over a 3-wide
            // block of every second row.
            let spaces: [(Vec<usize>, Vec<isize>); 2] = [(vec![rows], vec![9]), (vec![4, 3], vec![18, 2])];
            for (dims, strides) in &spaces {
                let n: usize = dims.iter().product();
                for count in 1..=5usize {
                    for start in 0..n {
                        for len in [1, 2, n - start] {
                            if start + len > n {
                                continue;
                            }
                            let mut joint = vec![vec![T::from(0); len]; count];
                            let cols: Vec<Column> = joint
                                .iter_mut()
                                .enumerate()
                                .map(|(c, t)| Column {
                                    base: data[c..].as_ptr() as *const u8,
                                    dst: t.as_mut_ptr() as *mut u8,
                                })
                                .collect();
                            // SAFETY: every position addresses an element of `data` (the last
                            // column starts at 4 and the walks end within 9 * 6 + 4 + 2).
                            unsafe { gather_columns(size, &cols, dims, strides, start, len) };
                            for (c, got) in joint.iter().enumerate() {
                                let mut want = vec![T::from(0); len];
                                // SAFETY: as above.
                                unsafe {
                                    gather_elems(
                                        size,
                                        data[c..].as_ptr() as *const u8,
                                        dims,
                                        strides,
                                        start,
                                        want.as_mut_ptr() as *mut u8,
                                        len,
                                    )
                                };
                                assert_eq!(got, &want, "{count} columns, column {c}, start {start}, len {len}");
                            }
                        }
                    }
                }
            }
        }
        check::<u8>(1);
        check::<u16>(2);
        check::<u32>(4);
        check::<u64>(8);
    }
}
