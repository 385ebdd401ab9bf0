//! Least-significant-digit radix sorts over unsigned keys (stable, one histogram pass for
//! every digit, digits on which all keys agree skipped), with insertion sort for short runs.

use super::keys::Key;

/// Below this many elements insertion sort beats the radix passes.
const SMALL: usize = 48;

/// Sort `a` by the byte digits `byte(x, d)` for `d` in `0..nbytes`, stably; `tmp` is scratch.
fn radix<T: Copy + Default>(a: &mut Vec<T>, tmp: &mut Vec<T>, nbytes: usize, byte: impl Fn(&T, usize) -> usize) {
    let n = a.len();
    let mut counts = vec![[0u32; 256]; nbytes];
    for x in a.iter() {
        for (d, c) in counts.iter_mut().enumerate() {
            c[byte(x, d)] += 1;
        }
    }
    tmp.clear();
    tmp.resize(n, T::default());
    for (d, c) in counts.iter().enumerate() {
        if c[byte(&a[0], d)] as usize == n {
            continue;
        }
        let mut pos = [0u32; 256];
        let mut sum = 0u32;
        for (p, k) in pos.iter_mut().zip(c.iter()) {
            *p = sum;
            sum += k;
        }
        for x in a.iter() {
            let b = byte(x, d);
            // SAFETY: the prefix sums place every element at a distinct slot below n.
            unsafe { *tmp.get_unchecked_mut(pos[b] as usize) = *x };
            pos[b] += 1;
        }
        std::mem::swap(a, tmp);
    }
}

/// Sort keys ascending.
pub fn sort_keys<K: Key>(a: &mut Vec<K>, tmp: &mut Vec<K>) {
    if a.len() <= SMALL {
        insertion(a, |x, y| x < y);
    } else {
        radix(a, tmp, K::BYTES, |x, d| x.byte(d));
    }
}

/// A key with the index it came from.
#[derive(Copy, Clone, Default, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pair<K> {
    /// The key.
    pub key: K,
    /// Its position in the row.
    pub idx: u32,
}

/// Sort pairs by key, equal keys in their present order (stable).
pub fn sort_pairs<K: Key>(a: &mut Vec<Pair<K>>, tmp: &mut Vec<Pair<K>>) {
    if a.len() <= SMALL {
        insertion(a, |x, y| x.key < y.key);
    } else {
        radix(a, tmp, K::BYTES, |x, d| x.key.byte(d));
    }
}

/// Stable insertion sort by `less`.
fn insertion<T: Copy>(a: &mut [T], less: impl Fn(&T, &T) -> bool) {
    for i in 1..a.len() {
        let x = a[i];
        let mut j = i;
        while j > 0 && less(&x, &a[j - 1]) {
            a[j] = a[j - 1];
            j -= 1;
        }
        a[j] = x;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *seed >> 11
    }

    #[test]
    fn keys_match_std_sort() {
        let mut s = 7;
        for n in [0, 1, 2, 5, 47, 48, 49, 100, 1000, 4097] {
            for modulo in [2u64, 300, u64::MAX] {
                let v: Vec<u32> = (0..n).map(|_| (lcg(&mut s) % modulo) as u32).collect();
                let mut a = v.clone();
                sort_keys(&mut a, &mut Vec::new());
                let mut want = v.clone();
                want.sort();
                assert_eq!(a, want, "n={n}");
                let w: Vec<u64> = (0..n).map(|_| lcg(&mut s) % modulo).collect();
                let mut a = w.clone();
                sort_keys(&mut a, &mut Vec::new());
                let mut want = w;
                want.sort();
                assert_eq!(a, want);
            }
        }
    }

    #[test]
    fn pairs_are_stable() {
        let mut s = 3;
        for n in [0, 1, 10, 48, 49, 1000, 3000] {
            let v: Vec<u16> = (0..n).map(|_| (lcg(&mut s) % 37) as u16).collect();
            let mut a: Vec<Pair<u16>> = v.iter().enumerate().map(|(i, k)| Pair { key: *k, idx: i as u32 }).collect();
            sort_pairs(&mut a, &mut Vec::new());
            let mut want: Vec<(u16, usize)> = v.iter().enumerate().map(|(i, k)| (*k, i)).collect();
            want.sort_by_key(|p| p.0);
            assert_eq!(a.iter().map(|p| (p.key, p.idx as usize)).collect::<Vec<_>>(), want);
        }
    }
}
