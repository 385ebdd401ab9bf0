//! Memory layouts of kernel operands: broadcasting strides, collapsing dimensions that
//! are contiguous for every operand, and gathering a strided tile into local memory.

/// Largest rank the executor handles (NumPy's limit is 64).
pub const MAX_RANK: usize = 64;

/// How the executor reads an argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Access {
    /// Contiguous in iteration order: tiles are read in place.
    Contiguous,
    /// Every element is the same one: read once as a scalar.
    Broadcast,
    /// Anything else: each tile is gathered (strides per collapsed dim).
    Strided(Vec<isize>),
}

/// Strides (in elements) of an operand of `shape`/`strides` broadcast to `dims`:
/// broadcast axes get stride 0.
pub fn broadcast_strides(shape: &[usize], strides: &[isize], dims: &[usize]) -> Vec<isize> {
    let off = dims.len() - shape.len();
    (0..dims.len()).map(|d| if d < off || shape[d - off] == 1 { 0 } else { strides[d - off] }).collect()
}

/// Drop unit dims and merge neighbours that are contiguous for every operand.
/// `strides` holds one stride vector per operand (all of length `dims.len()`), rewritten
/// in place; returns the collapsed dims (at least one).
pub fn collapse(dims: &[usize], strides: &mut [Vec<isize>]) -> Vec<usize> {
    let keep: Vec<usize> = (0..dims.len()).filter(|&d| dims[d] != 1).collect();
    let mut out_dims: Vec<usize> = Vec::with_capacity(keep.len());
    let mut out_strides: Vec<Vec<isize>> = vec![Vec::with_capacity(keep.len()); strides.len()];
    for &d in &keep {
        let mergeable = !out_dims.is_empty()
            && strides.iter().zip(&out_strides).all(|(s, o)| *o.last().unwrap() == s[d] * dims[d] as isize);
        if mergeable {
            *out_dims.last_mut().unwrap() *= dims[d];
            for (s, o) in strides.iter().zip(out_strides.iter_mut()) {
                *o.last_mut().unwrap() = s[d];
            }
        } else {
            out_dims.push(dims[d]);
            for (s, o) in strides.iter().zip(out_strides.iter_mut()) {
                o.push(s[d]);
            }
        }
    }
    if out_dims.is_empty() {
        out_dims.push(1);
        for o in out_strides.iter_mut() {
            o.push(0);
        }
    }
    for (s, o) in strides.iter_mut().zip(out_strides) {
        *s = o;
    }
    out_dims
}

/// Classify an operand's collapsed strides. An operand laid out in C order over the whole
/// iteration space is contiguous even when other operands keep the space from collapsing to
/// one dim (`x` in `x - b` with a broadcast row `b`).
pub fn classify(dims: &[usize], strides: &[isize]) -> Access {
    let mut step = 1isize;
    let c_order = dims.iter().zip(strides).rev().all(|(d, s)| {
        let ok = *d == 1 || *s == step;
        step *= *d as isize;
        ok
    });
    if strides.iter().zip(dims).all(|(s, d)| *s == 0 || *d == 1) {
        Access::Broadcast
    } else if c_order {
        Access::Contiguous
    } else {
        Access::Strided(strides.to_vec())
    }
}

/// Shortest broadcast run [`gather`] fills through the ISA dispatch (shorter ones are filled
/// inline: a dispatch per run would cost more than the stores it saves).
const FILL_DISPATCH_MIN: usize = 256;

/// Longest row [`gather`] copies through [`pyasc_kernels::copy_rows`] (longer ones are one
/// `memcpy` each, whose call costs little beside the copy).
const ROW_COPY_MAX: usize = 512;

/// Walks flat iteration positions `start..start + len` of the space `dims` in runs along its
/// innermost dim: `f(k, off, run)` for each run of `run` positions, the first at position
/// `start + k` and element offset `off` (through `strides`; the run steps by the innermost
/// stride).
#[inline(always)]
pub(crate) fn for_each_run(
    dims: &[usize],
    strides: &[isize],
    start: usize,
    len: usize,
    mut f: impl FnMut(usize, isize, usize),
) {
    let r = dims.len();
    let mut idx = [0usize; MAX_RANK];
    let mut rem = start;
    let mut off = 0isize;
    for d in (0..r).rev() {
        idx[d] = rem % dims[d];
        rem /= dims[d];
        off += idx[d] as isize * strides[d];
    }
    let (inner, s) = (dims[r - 1], strides[r - 1]);
    let mut k = 0;
    while k < len {
        let run = (inner - idx[r - 1]).min(len - k);
        f(k, off, run);
        k += run;
        idx[r - 1] += run;
        off += run as isize * s;
        if idx[r - 1] == inner {
            idx[r - 1] = 0;
            off -= inner as isize * s;
            let mut d = r - 1;
            while d > 0 {
                d -= 1;
                idx[d] += 1;
                off += strides[d];
                if idx[d] < dims[d] {
                    break;
                }
                off -= dims[d] as isize * strides[d];
                idx[d] = 0;
            }
        }
    }
}

/// Copy the elements at flat iteration positions `start..start + dst.len()` of a strided
/// operand into `dst`.
///
/// # Safety
/// Every position of the iteration space `dims` must address a readable element from
/// `base` through `strides`.
pub unsafe fn gather<T: pyasc_kernels::Element>(
    base: *const T,
    dims: &[usize],
    strides: &[isize],
    start: usize,
    dst: &mut [T],
) {
    let r = dims.len();
    let inner = dims[r - 1];
    let s = strides[r - 1];
    let rows = dst.len() / inner;
    if r == 2 && s == 1 && start.is_multiple_of(inner) && rows >= 2 && inner <= ROW_COPY_MAX {
        // Whole short rows of a column slice: one dispatch for all of them, then the rest.
        let size = std::mem::size_of::<T>();
        let off = (start / inner) as isize * strides[0];
        let (whole, rest) = dst.split_at_mut(rows * inner);
        // SAFETY: the rows are positions of the iteration space (caller's contract); `whole`
        // holds `rows` rows of `inner` elements.
        unsafe {
            let bytes = std::slice::from_raw_parts_mut(whole.as_mut_ptr() as *mut u8, std::mem::size_of_val(whole));
            pyasc_kernels::copy_rows::copy_rows(
                base.offset(off) as *const u8,
                strides[0] * size as isize,
                inner * size,
                bytes,
            );
            if !rest.is_empty() {
                gather(base, dims, strides, start + rows * inner, rest);
            }
        }
        return;
    }
    for_each_run(dims, strides, start, dst.len(), |k, off, run| {
        let out = &mut dst[k..k + run];
        // SAFETY: positions in range address valid elements (caller's contract).
        unsafe {
            let p = base.offset(off);
            match s {
                1 => std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), run),
                // Long runs with the widest stores; short ones inline (no dispatch per run).
                0 if run >= FILL_DISPATCH_MIN => pyasc_kernels::fill(*p, out),
                0 => out.fill(*p),
                _ => {
                    for (j, o) in out.iter_mut().enumerate() {
                        *o = *p.offset(j as isize * s);
                    }
                }
            }
        }
    });
}

/// [`gather`] for elements of `size` bytes (1, 2, 4 or 8): `len` elements into `dst`.
///
/// # Safety
/// As for [`gather`]; `base` and `dst` must be aligned for the element size and `dst` must
/// hold `len` elements.
pub unsafe fn gather_elems(
    size: usize,
    base: *const u8,
    dims: &[usize],
    strides: &[isize],
    start: usize,
    dst: *mut u8,
    len: usize,
) {
    // SAFETY: per this function's contract; each arm reads and writes whole elements.
    unsafe {
        match size {
            1 => gather(base, dims, strides, start, std::slice::from_raw_parts_mut(dst, len)),
            2 => gather(base as *const u16, dims, strides, start, std::slice::from_raw_parts_mut(dst as *mut u16, len)),
            4 => gather(base as *const u32, dims, strides, start, std::slice::from_raw_parts_mut(dst as *mut u32, len)),
            8 => gather(base as *const u64, dims, strides, start, std::slice::from_raw_parts_mut(dst as *mut u64, len)),
            other => unreachable!("no dtype has {other}-byte elements"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_contiguous_operands_to_one_dim() {
        let dims = [4, 5, 6];
        let mut s = vec![vec![30, 6, 1], vec![30, 6, 1]];
        assert_eq!(collapse(&dims, &mut s), vec![120]);
        assert_eq!(s, vec![vec![1], vec![1]]);
    }

    #[test]
    fn broadcast_rows_keep_two_dims() {
        let dims = [4, 5];
        let b = broadcast_strides(&[5], &[1], &dims);
        assert_eq!(b, vec![0, 1]);
        let mut s = vec![b, vec![5, 1]];
        assert_eq!(collapse(&dims, &mut s), vec![4, 5]);
        assert_eq!(classify(&[4, 5], &s[0]), Access::Strided(vec![0, 1]));
        assert_eq!(classify(&[4, 5], &[0, 0]), Access::Broadcast);
        // C order over a space that other operands keep 2-D.
        assert_eq!(classify(&[4, 5], &[5, 1]), Access::Contiguous);
        assert_eq!(classify(&[4, 1, 5], &[5, 0, 1]), Access::Contiguous);
        assert_eq!(classify(&[4, 5], &[1, 4]), Access::Strided(vec![1, 4]));
    }

    #[test]
    fn gather_matches_naive_indexing() {
        // A transposed 3x4 view of a 4x3 array, read from every start position.
        let data: Vec<i64> = (0..12).collect();
        let dims = [3, 4];
        let strides = [1isize, 3];
        let want: Vec<i64> = (0..12).map(|p| data[(p % 4) * 3 + p / 4]).collect();
        for start in 0..12 {
            for len in 0..=(12 - start) {
                let mut got = vec![-1i64; len];
                // SAFETY: every index of the 3x4 view lies inside `data`.
                unsafe { gather(data.as_ptr(), &dims, &strides, start, &mut got) };
                assert_eq!(got, want[start..start + len], "start {start} len {len}");
            }
        }
        // Negative strides: a reversed vector.
        let rev: Vec<i64> = (0..12).rev().collect();
        let mut got = vec![0i64; 12];
        // SAFETY: the reversed view walks `data` from its last element down to its first.
        unsafe { gather(data.as_ptr().add(11), &[12], &[-1], 0, &mut got) };
        assert_eq!(got, rev);
    }

    #[test]
    fn gathered_column_slices_match_naive_indexing_from_any_start() {
        // `x[:, 2:9]` of a 6 x 11 array: whole rows go through the row copy, partial rows
        // around them through the element loop.
        let data: Vec<u32> = (0..66).collect();
        let (dims, strides) = ([6usize, 7], [11isize, 1]);
        let want: Vec<u32> = (0..42).map(|p| data[(p / 7) * 11 + 2 + p % 7]).collect();
        for start in 0..42 {
            for len in 0..=(42 - start) {
                let mut got = vec![u32::MAX; len];
                // SAFETY: every position of the 6 x 7 view lies inside `data`.
                unsafe { gather(data.as_ptr().add(2), &dims, &strides, start, &mut got) };
                assert_eq!(got, want[start..start + len], "start {start} len {len}");
            }
        }
    }

    #[test]
    fn gather_reads_two_byte_elements_as_two_bytes() {
        // A transposed 3x5 view of a 5x3 array of 2-byte elements, in a buffer that ends
        // right after the last element: reading 8 bytes per element would run past it.
        let data: Vec<u16> = (0..15).map(|i| 1000 + i).collect();
        let want: Vec<u16> = (0..15).map(|p| data[(p % 5) * 3 + p / 5]).collect();
        for start in 0..15 {
            let len = 15 - start;
            let mut got = vec![0u16; len];
            // SAFETY: every position of the 5x3 space lies inside `data`; `got` holds `len`.
            unsafe {
                gather_elems(2, data.as_ptr() as *const u8, &[3, 5], &[1, 3], start, got.as_mut_ptr() as *mut u8, len)
            };
            assert_eq!(got, want[start..], "start {start}");
        }
        // Element sizes 1, 4 and 8 keep working through the same entry point.
        let wide: Vec<u64> = (0..6).collect();
        let mut got = vec![0u64; 6];
        // SAFETY: as above.
        unsafe { gather_elems(8, wide.as_ptr() as *const u8, &[3, 2], &[1, 3], 0, got.as_mut_ptr() as *mut u8, 6) };
        assert_eq!(got, vec![0, 3, 1, 4, 2, 5]);
    }
}
