//! Whole-array modes of the sort op: `np.searchsorted` (binary search of each value in a
//! sorted 1-D array) and `np.unique` with a static size (sorted distinct values, NaNs as one,
//! cut or padded to the size).

use super::keys::Elem;
use super::radix::sort_keys;
use super::rows::Geometry;
use crate::view::InputView;

/// Every element of a strided view, in C order.
///
/// # Safety
/// `x` must be readable over its view.
unsafe fn elements<T: Elem>(x: &InputView) -> Vec<T> {
    if x.shape.is_empty() {
        // SAFETY: a 0-d view holds one element.
        return vec![unsafe { *(x.ptr as *const T) }];
    }
    let rank = x.shape.len();
    let g = Geometry::new(&x.shape, &x.strides, rank - 1);
    let mut out = Vec::with_capacity(g.rows() * g.n);
    let mut row = Vec::new();
    for r in 0..g.rows() {
        // SAFETY: rows of the view.
        unsafe { super::rows::read_row((x.ptr as *const T).offset(g.offset(r)), g.n, g.stride, &mut row) };
        out.extend_from_slice(&row);
    }
    out
}

/// `np.searchsorted(a, v, side)` into the int64 `out` (v's shape, C order).
///
/// # Safety
/// `a` and `v` must be readable over their views and `out` writable for v's elements.
pub unsafe fn searchsorted<T: Elem>(a: &InputView, v: &InputView, right: bool, out: *mut i64) {
    // SAFETY: per the contract.
    let keys: Vec<T::K> = unsafe { elements::<T>(a) }.iter().map(|x| x.ckey()).collect();
    // SAFETY: per the contract.
    let vals = unsafe { elements::<T>(v) };
    for (j, x) in vals.iter().enumerate() {
        let k = x.ckey();
        let p = if right { keys.partition_point(|a| *a <= k) } else { keys.partition_point(|a| *a < k) };
        // SAFETY: one output per value.
        unsafe { *out.add(j) = p as i64 };
    }
}

/// The sorted distinct values of `x` (equal values, `-0.0` and `0.0`, and NaNs count once),
/// the first `size` of them, padded with `fill` (or the smallest value) into `out`.
///
/// # Safety
/// `x` must be readable over its view and `out` writable for `size` elements.
pub unsafe fn unique<T: Elem>(x: &InputView, size: usize, fill: Option<T>, out: *mut T) {
    // SAFETY: per the contract.
    let vals = unsafe { elements::<T>(x) };
    let mut keys: Vec<T::K> = vals.iter().map(|v| v.key()).collect();
    sort_keys(&mut keys, &mut Vec::new());
    let mut uniq: Vec<T> = Vec::new();
    let mut last = None;
    for k in keys {
        let v = T::from_key(k);
        let c = v.ckey();
        if last != Some(c) {
            if uniq.len() == size {
                break;
            }
            uniq.push(v);
            last = Some(c);
        }
    }
    let pad = fill.or_else(|| uniq.first().copied()).unwrap_or_else(|| T::from_f64(0.0));
    for j in 0..size {
        // SAFETY: `size` outputs.
        unsafe { *out.add(j) = uniq.get(j).copied().unwrap_or(pad) };
    }
}
