//! Run-time ISA dispatch of the top-k scan for elements above the current k-th best: the
//! same loop compiled for AVX-512 and for AVX2, chosen by [`pyasc_kernels::isa::active`],
//! portable code otherwise (`PYASC_ISA` forces the lower paths).

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
