//! `np.stack(columns, axis=1)` written row by row.
//!
//! A stack of `k` one-dimensional arrays reaches the concatenation as `k` arguments of shape
//! `(n, 1)`. Copied one argument after another, each fills every `k`-th element of the
//! output with a strided loop; walked by rows, each output row of `k` elements is written
//! whole from the `k` columns' next elements, a loop whose `k` loads and stores the compiler
//! unrolls (for `k` up to [`MAX_COLUMNS`]).

use crate::view::InputView;

/// Most columns written by the row walk; wider stacks take the general copy.
pub const MAX_COLUMNS: usize = 8;

/// Writes the concatenation of `args` along `axis` into the C-contiguous `out` and returns
/// true when it is a stack of columns: rank 2, `axis` 1, every argument one element wide,
/// 2 to [`MAX_COLUMNS`] of them of one dtype. Otherwise writes nothing and returns false.
///
/// # Safety
/// Every argument must be readable over its view and `out` writable for the joined shape.
pub unsafe fn stack_columns(args: &[&InputView], out: *mut u8, axis: usize) -> bool {
    let Some(first) = args.first() else { return false };
    let columns = axis == 1
        && (2..=MAX_COLUMNS).contains(&args.len())
        && args.iter().all(|a| a.shape.len() == 2 && a.shape[1] == 1 && a.shape[0] == first.shape[0])
        && args.iter().all(|a| a.dtype == first.dtype);
    if !columns {
        return false;
    }
    let n = first.shape[0];
    macro_rules! by_size {
        ($k:literal) => {
            // SAFETY: per this function's contract.
            unsafe {
                match first.dtype.size() {
                    1 => rows::<u8, $k>(args, out, n),
                    2 => rows::<u16, $k>(args, out, n),
                    4 => rows::<u32, $k>(args, out, n),
                    8 => rows::<u64, $k>(args, out, n),
                    _ => return false,
                }
            }
        };
    }
    match args.len() {
        2 => by_size!(2),
        3 => by_size!(3),
        4 => by_size!(4),
        5 => by_size!(5),
        6 => by_size!(6),
        7 => by_size!(7),
        8 => by_size!(8),
        _ => return false,
    }
    true
}

/// Output row `i` is element `i` of each of the `K` columns, for `n` rows.
///
/// # Safety
/// As for [`stack_columns`]; `args` holds `K` views of elements of `T`.
unsafe fn rows<T: Copy, const K: usize>(args: &[&InputView], out: *mut u8, n: usize) {
    let src: [(*const T, isize); K] = std::array::from_fn(|c| (args[c].ptr as *const T, args[c].strides[0]));
    let out = out as *mut T;
    for i in 0..n {
        // SAFETY: row `i` of every column and of the output exist (the caller's contract).
        unsafe {
            let o = out.add(i * K);
            for (c, (p, s)) in src.iter().enumerate() {
                *o.add(c) = *p.offset(i as isize * s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyasc_ir::DType;

    fn column(data: &[f32], start: usize, stride: isize, n: usize) -> InputView {
        InputView {
            ptr: data[start..].as_ptr() as *const u8,
            dtype: DType::F32,
            shape: vec![n, 1],
            strides: vec![stride, 1],
        }
    }

    /// Stacks of 2 to 8 columns, contiguous or strided, equal indexing by hand; other
    /// concatenations are left to the general copy.
    #[test]
    fn stacked_columns_match_indexing_and_other_shapes_are_declined() {
        let data: Vec<f32> = (0..400).map(|i| i as f32 * 0.5 - 7.0).collect();
        for k in 2..=MAX_COLUMNS {
            for (n, stride) in [(0usize, 1isize), (1, 1), (13, 1), (13, 9), (40, 3)] {
                let views: Vec<InputView> = (0..k).map(|c| column(&data, c * 5, stride, n)).collect();
                let args: Vec<&InputView> = views.iter().collect();
                let mut out = vec![f32::NAN; n * k];
                // SAFETY: every column reads inside `data` (start <= 35, (n - 1) * stride <= 117).
                assert!(unsafe { stack_columns(&args, out.as_mut_ptr() as *mut u8, 1) });
                for i in 0..n {
                    for c in 0..k {
                        assert_eq!(out[i * k + c], data[c * 5 + i * stride as usize], "k {k} n {n} row {i} column {c}");
                    }
                }
            }
        }
        let a = column(&data, 0, 1, 4);
        let wide =
            InputView { ptr: data.as_ptr() as *const u8, dtype: DType::F32, shape: vec![4, 2], strides: vec![2, 1] };
        let mut out = vec![0f32; 64];
        let o = out.as_mut_ptr() as *mut u8;
        // SAFETY: nothing is written when the arguments are declined.
        unsafe {
            assert!(!stack_columns(&[&a, &wide], o, 1), "an argument two elements wide");
            assert!(!stack_columns(&[&a, &a], o, 0), "along the first axis");
            assert!(!stack_columns(&[&a], o, 1), "one column");
            assert!(!stack_columns(&[&a; MAX_COLUMNS + 1], o, 1), "more columns than unrolled");
        }
        assert!(out.iter().all(|v| *v == 0.0));
    }
}
