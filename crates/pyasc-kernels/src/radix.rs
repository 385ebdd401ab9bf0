//! Stable least-significant-digit radix sort of `(u64 key, index)` pairs, a byte per pass.
//!
//! NMS orders a few hundred to a few thousand boxes by score each call; a comparison sort
//! spends most of its time in unpredictable branches there. Here one pass over the keys finds
//! the bits in which they differ, bytes that all keys share are skipped (scores widened from
//! float32 leave the low three bytes equal, scores of one exponent range the top one), and each
//! remaining byte is a count and one scatter. Equal keys keep their order, as in any stable sort.

/// Below this many pairs the standard library's sort is quicker than the byte histograms.
const SMALL: usize = 64;

/// Sort `v` (fewer than 2^32 pairs) by key, stably (pairs with equal keys keep their order).
pub fn sort_stable(v: &mut Vec<(u64, usize)>) {
    let n = v.len();
    assert!(u32::try_from(n).is_ok(), "radix sort of 2^32 or more pairs");
    if n <= SMALL {
        v.sort_by_key(|p| p.0);
        return;
    }
    // The bits that differ between keys; bytes without any take no pass.
    let (any, all) = v.iter().fold((0u64, u64::MAX), |(o, a), p| (o | p.0, a & p.0));
    let differ = any ^ all;
    let mut src = std::mem::take(v);
    let mut dst = vec![(0u64, 0usize); n];
    let mut counts = [0u32; 256];
    for d in (0..8).filter(|d| (differ >> (8 * d)) & 0xff != 0) {
        let byte = |k: u64| ((k >> (8 * d)) & 0xff) as usize;
        counts.fill(0);
        for p in &src {
            counts[byte(p.0)] += 1;
        }
        let mut at = 0u32;
        for slot in counts.iter_mut() {
            let count = *slot;
            *slot = at;
            at += count;
        }
        for &(k, i) in &src {
            let b = byte(k);
            dst[counts[b] as usize] = (k, i);
            counts[b] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
    }
    *v = src;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    #[test]
    fn sorts_like_the_standard_stable_sort() {
        let mut rng = Rng(3);
        for n in [0usize, 1, 2, 63, 64, 65, 200, 1153, 5000] {
            for spread in [u64::MAX, 0xffff_0000, 0xff, 3, 0] {
                // Keys in a narrow range (many ties, shared bytes) and over the whole range.
                let v: Vec<(u64, usize)> = (0..n).map(|i| (rng.next() & spread | 0x3fd0 << 48, i)).collect();
                let mut want = v.clone();
                want.sort_by_key(|p| p.0);
                let mut got = v;
                sort_stable(&mut got);
                assert_eq!(got, want, "n {n} spread {spread:x}");
            }
        }
    }
}
