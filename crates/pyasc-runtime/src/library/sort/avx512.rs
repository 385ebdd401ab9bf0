//! AVX-512 quicksort of 32-bit keys: partitions 16 keys per step with compare masks and
//! register compresses (`vpcompressd` into a register, then a masked store: the memory form
//! is slow on some cores), ping-ponging between the keys and a scratch buffer, and finishes
//! runs of at most 16 keys with a bitonic sorting network inside one register. Recursion
//! deeper than a few times log2(n) (adversarial inputs) falls back to the standard sort.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

/// Runs of at most this many keys are sorted in registers (eight of them).
const LEAF: usize = 128;

/// Sort `keys` ascending; `tmp` is scratch (resized as needed).
///
/// # Safety
/// The CPU must support AVX-512 F.
#[target_feature(enable = "avx512f")]
pub unsafe fn sort_u32(keys: &mut [u32], tmp: &mut Vec<u32>) {
    let n = keys.len();
    // Room for the full-width stores past each partition's end.
    if tmp.len() < 2 * n {
        tmp.resize(2 * n, 0);
    }
    let (a, b) = tmp.split_at_mut(n);
    let depth = 2 * (usize::BITS - n.leading_zeros()) as usize + 8;
    // SAFETY: AVX-512 F per the contract; the buffers hold n keys each.
    unsafe { qsort(keys.as_mut_ptr(), a.as_mut_ptr(), b.as_mut_ptr(), n, true, depth) };
}

/// Sort the `n` keys at `src`. `in_place`: the result belongs at `src` (else at `dst`).
/// `dst` and `hi` are scratch of at least `n` keys each; `depth` recursions are left.
#[target_feature(enable = "avx512f")]
unsafe fn qsort(src: *mut u32, dst: *mut u32, hi: *mut u32, n: usize, in_place: bool, depth: usize) {
    // SAFETY: every access stays below n keys of its buffer.
    unsafe {
        if depth == 0 {
            let s = std::slice::from_raw_parts_mut(src, n);
            s.sort_unstable();
            if !in_place {
                std::ptr::copy_nonoverlapping(src, dst, n);
            }
            return;
        }
        if n <= LEAF {
            leaf(src, if in_place { src } else { dst }, n);
            return;
        }
        let pivot = median3(*src, *src.add(n / 2), *src.add(n - 1));
        let (mut l, mut r) = partition(src, dst, hi, n, pivot, false);
        if l == 0 {
            // The pivot is the smallest key: split off the keys equal to it instead.
            (l, r) = partition(src, dst, hi, n, pivot, true);
            if r == 0 {
                if !in_place {
                    std::ptr::copy_nonoverlapping(src, dst, n);
                }
                return;
            }
        }
        // dst now holds [left | right]; sort both parts from dst back into src.
        qsort(dst, src, hi, l, !in_place, depth - 1);
        qsort(dst.add(l), src.add(l), hi, r, !in_place, depth - 1);
    }
}

/// Partition the `n` keys at `src` into `dst`: keys below `pivot` (at or below it when
/// `le`) first, then the others. Returns the sizes of the two parts.
#[target_feature(enable = "avx512f")]
unsafe fn partition(src: *const u32, dst: *mut u32, hi: *mut u32, n: usize, pivot: u32, le: bool) -> (usize, usize) {
    // SAFETY: loads and stores stay below n keys of each buffer.
    unsafe {
        let p = _mm512_set1_epi32(pivot as i32);
        let (mut l, mut r) = (0usize, 0usize);
        let mut i = 0;
        while i < n {
            let m: __mmask16 = if n - i >= 16 { 0xffff } else { ((1u32 << (n - i)) - 1) as __mmask16 };
            let v = _mm512_maskz_loadu_epi32(m, src.add(i) as *const i32);
            let lo = if le { _mm512_cmple_epu32_mask(v, p) } else { _mm512_cmplt_epu32_mask(v, p) } & m;
            let up = !lo & m;
            let (nl, nr) = (lo.count_ones(), up.count_ones());
            let low = |c: u32| ((1u32 << c) - 1) as __mmask16;
            _mm512_mask_storeu_epi32(dst.add(l) as *mut i32, low(nl), _mm512_maskz_compress_epi32(lo, v));
            _mm512_mask_storeu_epi32(hi.add(r) as *mut i32, low(nr), _mm512_maskz_compress_epi32(up, v));
            l += nl as usize;
            r += nr as usize;
            i += 16;
        }
        std::ptr::copy_nonoverlapping(hi, dst.add(l), r);
        (l, r)
    }
}

fn median3(a: u32, b: u32, c: u32) -> u32 {
    a.max(b).min(a.min(b).max(c))
}

/// Sort `n <= LEAF` keys from `src` into `out` (which may be `src`) with register networks.
#[target_feature(enable = "avx512f")]
unsafe fn leaf(src: *const u32, out: *mut u32, n: usize) {
    // SAFETY: AVX-512 F per the caller; the networks touch only the n keys.
    unsafe {
        match n {
            0..=16 => regs::<1>(src, out, n),
            17..=32 => regs::<2>(src, out, n),
            33..=64 => regs::<4>(src, out, n),
            _ => regs::<8>(src, out, n),
        }
    }
}

/// Sort `n <= 16 R` keys in `R` registers (padded with the largest key): each register by
/// its network, then runs of 1, 2, 4, ... registers merged pairwise by bitonic merges.
#[inline(always)]
unsafe fn regs<const R: usize>(src: *const u32, out: *mut u32, n: usize) {
    let mask = |i: usize| -> __mmask16 {
        let c = n.saturating_sub(16 * i).min(16);
        ((1u32 << c) - 1) as __mmask16
    };
    // SAFETY: masked loads and stores touch only the n keys; AVX-512 F per the caller.
    unsafe {
        let pad = _mm512_set1_epi32(-1);
        let mut v = [pad; R];
        for (i, r) in v.iter_mut().enumerate() {
            *r = sort16(_mm512_mask_loadu_epi32(pad, mask(i), src.add(16 * i) as *const i32));
        }
        let mut w = 1;
        while w < R {
            let mut base = 0;
            while base < R {
                // Blocks [base, base + w) and [base + w, base + 2w), both sorted: the first
                // and the second reversed form a bitonic run; split it into lows and highs.
                let old = v;
                for i in 0..w {
                    let a = old[base + i];
                    let r = reverse(old[base + 2 * w - 1 - i]);
                    v[base + i] = _mm512_min_epu32(a, r);
                    v[base + w + i] = _mm512_max_epu32(a, r);
                }
                // Each half is bitonic: exchange across registers, then inside each one.
                for blk in [base, base + w] {
                    let mut d = w / 2;
                    while d >= 1 {
                        for i in 0..w {
                            if i & d == 0 {
                                let (x, y) = (v[blk + i], v[blk + i + d]);
                                v[blk + i] = _mm512_min_epu32(x, y);
                                v[blk + i + d] = _mm512_max_epu32(x, y);
                            }
                        }
                        d /= 2;
                    }
                    for i in 0..w {
                        v[blk + i] = merge16(v[blk + i]);
                    }
                }
                base += 2 * w;
            }
            w *= 2;
        }
        for (i, r) in v.iter().enumerate() {
            _mm512_mask_storeu_epi32(out.add(16 * i) as *mut i32, mask(i), *r);
        }
    }
}

/// The 16 lanes of `v` in reverse order.
#[inline(always)]
unsafe fn reverse(v: __m512i) -> __m512i {
    // SAFETY: callers run with AVX-512 F.
    unsafe { _mm512_permutexvar_epi32(_mm512_setr_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), v) }
}

/// Sort a bitonic register (4 compare-exchange steps).
#[inline(always)]
unsafe fn merge16(v: __m512i) -> __m512i {
    // SAFETY: callers run with AVX-512 F.
    unsafe {
        let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        const M: [u16; 4] = [max_mask(32, 8), max_mask(32, 4), max_mask(32, 2), max_mask(32, 1)];
        let mut v = step(v, _mm512_xor_si512(lane, _mm512_set1_epi32(8)), M[0]);
        v = step(v, _mm512_xor_si512(lane, _mm512_set1_epi32(4)), M[1]);
        v = step(v, _mm512_xor_si512(lane, _mm512_set1_epi32(2)), M[2]);
        step(v, _mm512_xor_si512(lane, _mm512_set1_epi32(1)), M[3])
    }
}

/// Compare-exchange of lanes `i` and `i ^ j`: lanes whose bit in `take_max` is set keep the
/// larger key.
#[inline(always)]
unsafe fn step(v: __m512i, perm: __m512i, take_max: u16) -> __m512i {
    // SAFETY: callers run with AVX-512 F.
    unsafe {
        let o = _mm512_permutexvar_epi32(perm, v);
        _mm512_mask_blend_epi32(take_max, _mm512_min_epu32(v, o), _mm512_max_epu32(v, o))
    }
}

/// Sort the 16 keys of one register (a bitonic network of 10 compare-exchange steps).
#[target_feature(enable = "avx512f")]
unsafe fn sort16(v: __m512i) -> __m512i {
    // SAFETY: AVX-512 F per the caller.
    unsafe {
        let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let x1 = _mm512_xor_si512(lane, _mm512_set1_epi32(1));
        let x2 = _mm512_xor_si512(lane, _mm512_set1_epi32(2));
        let x4 = _mm512_xor_si512(lane, _mm512_set1_epi32(4));
        let x8 = _mm512_xor_si512(lane, _mm512_set1_epi32(8));
        const M: [u16; 10] = [
            max_mask(2, 1),
            max_mask(4, 2),
            max_mask(4, 1),
            max_mask(8, 4),
            max_mask(8, 2),
            max_mask(8, 1),
            max_mask(16, 8),
            max_mask(16, 4),
            max_mask(16, 2),
            max_mask(16, 1),
        ];
        let mut v = step(v, x1, M[0]);
        v = step(v, x2, M[1]);
        v = step(v, x1, M[2]);
        v = step(v, x4, M[3]);
        v = step(v, x2, M[4]);
        v = step(v, x1, M[5]);
        v = step(v, x8, M[6]);
        v = step(v, x4, M[7]);
        v = step(v, x2, M[8]);
        v = step(v, x1, M[9]);
        v
    }
}

/// Lanes `i` that keep the larger key at stage `k`, distance `j` of an ascending network.
const fn max_mask(k: usize, j: usize) -> u16 {
    let mut m = 0u16;
    let mut i = 0;
    while i < 16 {
        if ((i & j) != 0) != ((i & k) != 0) {
            m |= 1 << i;
        }
        i += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_std_sort() {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            return;
        }
        let mut s = 11u64;
        let mut next = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 33) as u32
        };
        for n in [0usize, 1, 2, 15, 16, 17, 31, 33, 100, 1000, 1024, 4099, 70000] {
            for modulo in [1u32, 2, 5, 1000, u32::MAX] {
                let v: Vec<u32> = (0..n).map(|_| next() % modulo).collect();
                let mut a = v.clone();
                // SAFETY: AVX-512 F was detected.
                unsafe { sort_u32(&mut a, &mut Vec::new()) };
                let mut want = v;
                want.sort_unstable();
                assert_eq!(a, want, "n={n} modulo={modulo}");
            }
        }
        let mut asc: Vec<u32> = (0..5000).collect();
        let want = asc.clone();
        // SAFETY: as above.
        unsafe { sort_u32(&mut asc, &mut Vec::new()) };
        assert_eq!(asc, want);
        let mut desc: Vec<u32> = (0..5000).rev().collect();
        // SAFETY: as above.
        unsafe { sort_u32(&mut desc, &mut Vec::new()) };
        assert_eq!(desc, want);
    }
}
