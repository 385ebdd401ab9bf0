//! Run-time ISA dispatch ([`pyasc_kernels::isa::active`]; `PYASC_ISA` forces the lower
//! paths): the top-k scan for elements above the current k-th best (the same loop compiled
//! for AVX-512 and for AVX2, portable code otherwise) and the sort of 32-bit keys (the
//! AVX-512 quicksort of `avx512`, else the caller's radix sort).

use super::keys::{Elem, Key};
use pyasc_kernels::isa::{active, Isa};

/// The first position in `row` whose total-order key is above `thr`.
pub fn first_above<T: Elem>(row: &[T], thr: u64) -> Option<usize> {
    let t = T::K::from_wide(thr);
    #[cfg(target_arch = "x86_64")]
    {
        match active() {
            // SAFETY: the ISA was detected on this CPU.
            Isa::Avx512 => return unsafe { scan_avx512(row, t) },
            // SAFETY: as above.
            Isa::Avx2Fma => return unsafe { scan_avx2(row, t) },
            _ => {}
        }
    }
    let _ = active;
    scan(row, t)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn scan_avx512<T: Elem>(row: &[T], t: T::K) -> Option<usize> {
    scan(row, t)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn scan_avx2<T: Elem>(row: &[T], t: T::K) -> Option<usize> {
    scan(row, t)
}

/// Chunks of 64 tested with a branch-free reduction (vectorised by the compiler), then the
/// chunk holding a hit searched element by element.
#[inline(always)]
fn scan<T: Elem>(row: &[T], t: T::K) -> Option<usize> {
    let mut base = 0;
    for chunk in row.chunks(64) {
        let mut any = false;
        for v in chunk {
            any |= v.tkey() > t;
        }
        if any {
            return chunk.iter().position(|v| v.tkey() > t).map(|p| base + p);
        }
        base += chunk.len();
    }
    None
}

/// Sort keys with the AVX-512 quicksort when they are 32-bit and the active ISA is AVX-512;
/// false (keys untouched) when the caller must sort them itself.
pub fn sort_keys<K: Key>(keys: &mut [K], tmp: &mut Vec<u32>) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::any::TypeId::of::<K>() == std::any::TypeId::of::<u32>() && active() == Isa::Avx512 {
            // SAFETY: K is u32 (same layout); AVX-512 was detected on this CPU.
            unsafe {
                let k = std::slice::from_raw_parts_mut(keys.as_mut_ptr() as *mut u32, keys.len());
                super::avx512::sort_u32(k, tmp);
            }
            return true;
        }
    }
    let _ = (keys, tmp);
    false
}
