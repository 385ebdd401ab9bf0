//! Copies of short rows from a strided source into a contiguous tile: a row kernel over a
//! column slice (`x[:, 5:]` of a `(n, 85)` array) gathers its tile row by row.
//!
//! A call to the C library's `memcpy` per row of a few hundred bytes costs more in the call and
//! its size dispatch than in the copy itself; here all the rows of a tile are one dispatch and,
//! with AVX-512, each row is copied with 64-byte moves and one masked move for its tail.

use crate::dispatch::{dispatch, Kernel, Simd};

struct CopyRowsK<'a> {
    src: *const u8,
    pitch: isize,
    row_bytes: usize,
    dst: &'a mut [u8],
}

impl Kernel for CopyRowsK<'_> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let rows = self.dst.len() / self.row_bytes;
        #[cfg(target_arch = "x86_64")]
        if S::AVX512 {
            // SAFETY: `S::AVX512` is only true in the copy compiled for (and run on) AVX-512
            // (F and BW); every row lies inside the source (the caller's contract) and `dst`
            // holds `rows` rows.
            unsafe { copy_avx512(self.src, self.pitch, self.row_bytes, self.dst.as_mut_ptr(), rows) };
            return;
        }
        for (r, out) in self.dst.chunks_exact_mut(self.row_bytes).enumerate() {
            // SAFETY: row `r` lies inside the source (the caller's contract).
            unsafe {
                std::ptr::copy_nonoverlapping(self.src.offset(r as isize * self.pitch), out.as_mut_ptr(), out.len())
            };
        }
    }
}

/// The AVX-512 row loop: 64-byte moves, then one masked move of the row's last bytes.
///
/// # Safety
/// AVX-512F and BW are available; `rows` rows of `row_bytes` lie at `src + r * pitch` and
/// `dst` holds `rows * row_bytes` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn copy_avx512(src: *const u8, pitch: isize, row_bytes: usize, dst: *mut u8, rows: usize) {
    use std::arch::x86_64::*;
    let whole = row_bytes / 64 * 64;
    let tail = row_bytes - whole;
    let mask: __mmask64 = if tail == 0 { 0 } else { u64::MAX >> (64 - tail) };
    for r in 0..rows {
        // SAFETY: per this function's contract; masked lanes are neither read nor written.
        unsafe {
            let s = src.offset(r as isize * pitch);
            let d = dst.add(r * row_bytes);
            let mut i = 0;
            while i < whole {
                _mm512_storeu_si512(d.add(i) as *mut _, _mm512_loadu_si512(s.add(i) as *const _));
                i += 64;
            }
            if tail != 0 {
                _mm512_mask_storeu_epi8(
                    d.add(whole) as *mut i8,
                    mask,
                    _mm512_maskz_loadu_epi8(mask, s.add(whole) as *const i8),
                );
            }
        }
    }
}

/// Copy `dst.len() / row_bytes` rows of `row_bytes` bytes (> 0), row `r` read from
/// `src + r * pitch` bytes, one after another into `dst`.
///
/// # Safety
/// Every row must lie inside readable memory that `dst` does not overlap, and `dst.len()`
/// must be a multiple of `row_bytes`.
pub unsafe fn copy_rows(src: *const u8, pitch: isize, row_bytes: usize, dst: &mut [u8]) {
    assert!(row_bytes > 0 && dst.len().is_multiple_of(row_bytes), "whole rows");
    dispatch(CopyRowsK { src, pitch, row_bytes, dst });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_every_length_and_pitch_copy_exactly() {
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
        for row_bytes in [1usize, 4, 63, 64, 65, 128, 320, 340] {
            for pitch in [row_bytes as isize, 340, 512] {
                if pitch < row_bytes as isize {
                    continue;
                }
                let rows = (data.len() - row_bytes) / pitch as usize + 1;
                let rows = rows.min(9);
                let mut got = vec![0u8; rows * row_bytes + 1];
                // SAFETY: every row lies inside `data`; `got` holds the rows and one guard byte.
                unsafe { copy_rows(data.as_ptr(), pitch, row_bytes, &mut got[..rows * row_bytes]) };
                let want: Vec<u8> =
                    (0..rows).flat_map(|r| data[r * pitch as usize..r * pitch as usize + row_bytes].to_vec()).collect();
                assert_eq!(&got[..rows * row_bytes], &want[..], "{row_bytes} {pitch}");
                assert_eq!(got[rows * row_bytes], 0, "the guard byte is untouched");
            }
        }
        // A negative pitch walks the rows backwards.
        let mut got = vec![0u8; 20];
        // SAFETY: rows at 100, 90, 80, 70 lie inside `data`.
        unsafe { copy_rows(data.as_ptr().add(100), -10, 5, &mut got) };
        let want: Vec<u8> = (0..4).flat_map(|r| data[100 - 10 * r..105 - 10 * r].to_vec()).collect();
        assert_eq!(got, want);
    }
}
