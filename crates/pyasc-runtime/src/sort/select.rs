//! Selection: top-k (`jax.lax.top_k`'s order), and the order statistics of NumPy's
//! `median`, `nanmedian`, `quantile` and `percentile` (linear method), computed from
//! selected elements with NumPy's exact arithmetic.

use super::keys::{Elem, Key};
use super::radix::{sort_keys, Pair};
use super::simd;

/// `out` = the `k` largest elements of `row` as (total-order key, index) pairs, largest first,
/// equal keys by lower index.
pub fn top_k<T: Elem>(row: &[T], k: usize, out: &mut Vec<Pair<T::K>>, tmp: &mut Vec<Pair<T::K>>) {
    out.clear();
    let n = row.len();
    if k == 0 {
        return;
    }
    // Pairs hold the complemented key, so ascending (key, idx) order is the wanted order.
    if k > 64 || k * 16 > n {
        let _ = tmp;
        let mut all: Vec<(u64, u32)> = row.iter().enumerate().map(|(j, v)| (!v.tkey().wide(), j as u32)).collect();
        if k < n {
            all.select_nth_unstable(k - 1);
        }
        all.truncate(k);
        all.sort_unstable();
        out.extend(all.iter().map(|p| Pair { key: T::K::default(), idx: p.1 }));
        return;
    }
    // Keep the best k seen so far, sorted; scan the rest for elements beating the k-th.
    let mut best: Vec<(u64, u32)> = row[..k].iter().enumerate().map(|(j, v)| (!v.tkey().wide(), j as u32)).collect();
    best.sort_unstable();
    let mut j = k;
    while j < n {
        // Complemented: an element enters when its key is above the k-th best one.
        let thr = !best[k - 1].0;
        let next = simd::first_above(&row[j..], thr).map_or(n, |d| j + d);
        if next >= n {
            break;
        }
        let c = !row[next].tkey().wide();
        // Later elements lose ties, so an entrant goes after every equal key.
        let pos = best.partition_point(|b| b.0 <= c);
        best.insert(pos, (c, next as u32));
        best.pop();
        j = next + 1;
    }
    out.extend(best.iter().map(|b| Pair { key: T::K::default(), idx: b.1 }));
}

/// The `nth` smallest keys for each position of `pos` (ascending) in `keys`, by successive
/// selections (a sort when there are many positions).
fn select_positions<K: super::keys::Key>(keys: &mut Vec<K>, pos: &[usize], tmp: &mut Vec<K>) -> Vec<K> {
    if pos.len() > 8 {
        sort_keys(keys, tmp);
        return pos.iter().map(|&p| keys[p]).collect();
    }
    let mut lo = 0;
    let mut out = Vec::with_capacity(pos.len());
    for &p in pos {
        if p < lo {
            out.push(keys[p]);
            continue;
        }
        let (_, v, _) = keys[lo..].select_nth_unstable(p - lo);
        out.push(*v);
        lo = p + 1;
    }
    out
}

/// The row's keys with the NaNs dropped (when `skip_nan`) into `keys`; `None` when a NaN
/// makes the statistic NaN.
fn valid_keys<T: Elem>(row: &[T], skip_nan: bool, keys: &mut Vec<T::K>) -> Option<()> {
    keys.clear();
    if T::FLOAT {
        if skip_nan {
            keys.extend(row.iter().filter(|v| !v.is_nan()).map(|v| v.key()));
        } else {
            if row.iter().any(|v| v.is_nan()) {
                return None;
            }
            keys.extend(row.iter().map(|v| v.key()));
        }
    } else {
        keys.extend(row.iter().map(|v| v.key()));
    }
    Some(())
}

/// `np.median` (`np.nanmedian` when `skip_nan`) of a row: the mean of the middle element or
/// pair, summed and halved in float32 for float32 rows and in float64 otherwise; NaN for
/// rows with a NaN (without `skip_nan`) and for empty rows.
pub fn median<T: Elem>(row: &[T], skip_nan: bool, keys: &mut Vec<T::K>) -> f64 {
    if valid_keys(row, skip_nan, keys).is_none() || keys.is_empty() {
        return f64::NAN;
    }
    let n = keys.len();
    let h = n / 2;
    let f32_row = T::FLOAT && std::mem::size_of::<T>() == 4;
    let mut tmp = Vec::new();
    if n % 2 == 1 {
        let v = select_positions(keys, &[h], &mut tmp);
        return T::from_key(v[0]).f64();
    }
    let v = select_positions(keys, &[h - 1, h], &mut tmp);
    let (a, b) = (T::from_key(v[0]).f64(), T::from_key(v[1]).f64());
    if f32_row {
        ((a as f32 + b as f32) / 2.0) as f64
    } else {
        (a + b) / 2.0
    }
}

/// NumPy's linear-method quantiles `q` of a row into `out` (float32 arithmetic when
/// `f32_math`), NaN for rows with a NaN (without `skip_nan`) or no valid element.
pub fn quantiles<T: Elem>(
    row: &[T],
    q: &[f64],
    skip_nan: bool,
    f32_math: bool,
    keys: &mut Vec<T::K>,
    out: &mut Vec<f64>,
) {
    out.clear();
    if valid_keys(row, skip_nan, keys).is_none() || keys.is_empty() {
        out.extend(q.iter().map(|_| f64::NAN));
        return;
    }
    let n = keys.len();
    // NumPy: virtual index (n - 1) q; at or past the last index both neighbours are the last
    // element and gamma is measured from index -1.
    let plan: Vec<(usize, usize, f64)> = q
        .iter()
        .map(|&q| {
            let v = (n as f64 - 1.0) * q;
            if v >= n as f64 - 1.0 {
                (n - 1, n - 1, v + 1.0)
            } else {
                let p = v.floor();
                (p as usize, p as usize + 1, v - p)
            }
        })
        .collect();
    let mut pos: Vec<usize> = plan.iter().flat_map(|p| [p.0, p.1]).collect();
    pos.sort_unstable();
    pos.dedup();
    let mut tmp = Vec::new();
    let vals = select_positions(keys, &pos, &mut tmp);
    let at = |i: usize| T::from_key(vals[pos.binary_search(&i).expect("selected")]);
    for &(p, nx, gamma) in &plan {
        let (a, b) = (at(p), at(nx));
        let r = if f32_math {
            let (a, b) = (a.f64() as f32, b.f64() as f32);
            let d = b - a;
            if gamma >= 0.5 {
                (b - d * (1.0 - gamma) as f32) as f64
            } else {
                (a + d * gamma as f32) as f64
            }
        } else {
            let d = T::diff_f64(b, a);
            if gamma >= 0.5 {
                b.f64() - d * (1.0 - gamma)
            } else {
                a.f64() + d * gamma
            }
        };
        out.push(r);
    }
}

/// Store statistic `v` at element `at` of a float32 (`f32_out`) or float64 output.
///
/// # Safety
/// `out` must be writable at `at`.
pub unsafe fn store_stat<T: Elem>(out: *mut u8, f32_out: bool, at: usize, v: f64) {
    // SAFETY: per the contract.
    unsafe {
        if f32_out {
            *(out as *mut f32).add(at) = v as f32;
        } else {
            *(out as *mut f64).add(at) = v;
        }
    }
}
