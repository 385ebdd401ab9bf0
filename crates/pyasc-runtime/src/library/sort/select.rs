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

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(s: &mut u64) -> u64 {
        *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *s >> 33
    }

    #[test]
    fn top_k_matches_a_stable_sort_by_descending_key() {
        let mut s = 5;
        for n in [1usize, 2, 10, 63, 64, 65, 500, 3000] {
            for modulo in [3u64, 1000] {
                let row: Vec<i32> = (0..n).map(|_| (lcg(&mut s) % modulo) as i32 - 500).collect();
                let mut want: Vec<usize> = (0..n).collect();
                // std's sort_by_key is stable: ties keep the lower index first.
                want.sort_by_key(|&j| std::cmp::Reverse(row[j]));
                for k in [0, 1, 5, n / 2, n].into_iter().filter(|&k| k <= n) {
                    let mut out = Vec::new();
                    top_k(&row, k, &mut out, &mut Vec::new());
                    let got: Vec<usize> = out.iter().map(|p| p.idx as usize).collect();
                    assert_eq!(got, want[..k], "n={n} k={k}");
                }
            }
        }
    }

    #[test]
    fn top_k_orders_floats_by_total_order() {
        let row = [1.0f32, f32::NAN, 0.0, -0.0, f32::INFINITY, 0.0, -f32::NAN];
        let mut out = Vec::new();
        top_k(&row, 7, &mut out, &mut Vec::new());
        let got: Vec<u32> = out.iter().map(|p| p.idx).collect();
        assert_eq!(got, [1, 4, 0, 2, 5, 3, 6]);
    }

    #[test]
    fn order_statistics_match_a_sorted_row() {
        let mut s = 9;
        for n in [1usize, 2, 3, 10, 11, 200] {
            let row: Vec<f64> = (0..n).map(|_| lcg(&mut s) as f64 / 7.0).collect();
            let mut sorted = row.clone();
            sorted.sort_by(f64::total_cmp);
            let want = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
            assert_eq!(median(&row, false, &mut Vec::new()), want);
            let mut out = Vec::new();
            quantiles(&row, &[0.0, 0.25, 1.0], false, false, &mut Vec::new(), &mut out);
            assert_eq!(out[0], sorted[0]);
            assert_eq!(out[2], sorted[n - 1]);
            let v = (n as f64 - 1.0) * 0.25;
            let (p, g) = (v.floor() as usize, v - v.floor());
            let (a, b) = (sorted[p], sorted[(p + 1).min(n - 1)]);
            let want = if g >= 0.5 { b - (b - a) * (1.0 - g) } else { a + (b - a) * g };
            assert_eq!(out[1], want);
        }
        let mut nan = vec![1.0, f64::NAN, 3.0];
        assert!(median(&nan, false, &mut Vec::new()).is_nan());
        assert_eq!(median(&nan, true, &mut Vec::new()), 2.0);
        nan.truncate(0);
        assert!(median(&nan, true, &mut Vec::new()).is_nan());
    }
}
