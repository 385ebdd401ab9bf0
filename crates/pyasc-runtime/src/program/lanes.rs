//! Lane compaction for mask loops: counting a bool register's true lanes, listing them, and
//! moving register elements between a tile's full lanes and a dense prefix of the lanes
//! still running.
//!
//! A mask loop ([`pyasc_ir::program::WhileAny`]) runs its body on every lane of a tile until
//! the last lane is done; finished lanes only carry their values. When most lanes have
//! finished, the structured-program VM packs the running ones together and runs the body
//! over those alone, so a tile costs about the iterations its lanes need rather than the
//! slowest lane's count times the tile.

/// Number of true lanes among the first `n` bool elements (one byte each, 0 or 1) at `p`.
///
/// # Safety
/// `p` addresses `n` bytes.
pub(crate) unsafe fn count_true(p: *const u8, n: usize) -> usize {
    // SAFETY: per the contract.
    let bytes = unsafe { std::slice::from_raw_parts(p, n) };
    // Byte sums in 64-bit words (bools are 0 or 1, so a word's bytes never carry): eight
    // lanes an addition, flushed before a byte could pass 255.
    let mut total = 0usize;
    for block in bytes.chunks(8 * 255) {
        let words = block.chunks_exact(8);
        let rest = words.remainder();
        let mut acc = 0u64;
        for w in words {
            acc += u64::from_ne_bytes(w.try_into().expect("8 bytes"));
        }
        total += acc.to_ne_bytes().iter().map(|&b| b as usize).sum::<usize>();
        total += rest.iter().map(|&b| (b != 0) as usize).sum::<usize>();
    }
    total
}

/// The positions of the true lanes among the first `n` bool elements at `p`, in order.
///
/// # Safety
/// `p` addresses `n` bytes.
pub(crate) unsafe fn true_lanes(p: *const u8, n: usize, out: &mut Vec<u32>) {
    // SAFETY: per the contract.
    let bytes = unsafe { std::slice::from_raw_parts(p, n) };
    out.clear();
    out.extend(bytes.iter().enumerate().filter(|(_, &b)| b != 0).map(|(i, _)| i as u32));
}

/// `dst[k] = src[sel[k]]` for elements of `size` bytes. `dst` may be `src` itself: `sel` is
/// increasing, so every element is read before its slot is written.
///
/// # Safety
/// `src` holds every `sel[k]`-th element and `dst` `sel.len()` elements; `sel` is increasing.
pub(crate) unsafe fn gather(size: usize, src: *const u8, dst: *mut u8, sel: &[u32]) {
    // SAFETY: per the contract (typed moves for the usual sizes; in-place use only ever
    // moves an element down to a lower or equal slot).
    unsafe {
        match size {
            1 => sel.iter().enumerate().for_each(|(k, &j)| *dst.add(k) = *src.add(j as usize)),
            2 => move_typed::<u16>(src, dst, sel),
            4 => move_typed::<u32>(src, dst, sel),
            8 => move_typed::<u64>(src, dst, sel),
            _ => sel.iter().enumerate().for_each(|(k, &j)| {
                std::ptr::copy(src.add(j as usize * size), dst.add(k * size), size);
            }),
        }
    }
}

unsafe fn move_typed<T: Copy>(src: *const u8, dst: *mut u8, sel: &[u32]) {
    let (s, d) = (src as *const T, dst as *mut T);
    for (k, &j) in sel.iter().enumerate() {
        // SAFETY: per `gather`'s contract; register memory is aligned to its dtype.
        unsafe { d.add(k).write(s.add(j as usize).read()) };
    }
}

/// `dst[home[j]] = src[j]` for the lanes `j` in `lanes`, elements of `size` bytes.
///
/// # Safety
/// `src` holds every lane `j` listed, `dst` every `home[j]`.
pub(crate) unsafe fn scatter(
    size: usize,
    src: *const u8,
    dst: *mut u8,
    home: &[u32],
    lanes: impl Iterator<Item = usize>,
) {
    for j in lanes {
        // SAFETY: per the contract; the two registers never share memory.
        unsafe { std::ptr::copy_nonoverlapping(src.add(j * size), dst.add(home[j] as usize * size), size) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_lists_true_lanes() {
        for n in [0usize, 1, 7, 8, 9, 2040, 2041, 5000] {
            let bools: Vec<u8> = (0..n).map(|i| ((i * 7919) % 3 == 0) as u8).collect();
            let want: Vec<u32> = (0..n as u32).filter(|&i| bools[i as usize] != 0).collect();
            // SAFETY: the slices hold n bytes.
            assert_eq!(unsafe { count_true(bools.as_ptr(), n) }, want.len(), "n = {n}");
            let mut got = Vec::new();
            // SAFETY: as above.
            unsafe { true_lanes(bools.as_ptr(), n, &mut got) };
            assert_eq!(got, want);
        }
        let all = vec![1u8; 4096];
        // SAFETY: 4096 bytes (more than 255 per byte column: the sums must not wrap).
        assert_eq!(unsafe { count_true(all.as_ptr(), 4096) }, 4096);
    }

    #[test]
    fn gathers_in_place_and_scatters_home() {
        for size in [1usize, 2, 4, 8, 16] {
            let n = 37;
            let data: Vec<u8> = (0..n * size).map(|i| (i * 31 % 251) as u8).collect();
            let sel: Vec<u32> = (0..n as u32).filter(|i| i % 3 != 1).collect();
            let mut packed = vec![0u64; n * size / 8 + 2];
            let buf = packed.as_mut_ptr() as *mut u8;
            // SAFETY: `buf` holds n elements; gather within it in place.
            unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), buf, n * size);
                gather(size, buf, buf, &sel);
            }
            for (k, &j) in sel.iter().enumerate() {
                let want = &data[j as usize * size..(j as usize + 1) * size];
                // SAFETY: k < sel.len() <= n elements.
                let got = unsafe { std::slice::from_raw_parts(buf.add(k * size), size) };
                assert_eq!(got, want, "size {size}, lane {k}");
            }
            let mut home = vec![0u8; n * size];
            // SAFETY: `buf` holds sel.len() packed lanes; `home` n elements.
            unsafe { scatter(size, buf, home.as_mut_ptr(), &sel, 0..sel.len()) };
            for &j in &sel {
                let r = j as usize * size..(j as usize + 1) * size;
                assert_eq!(home[r.clone()], data[r]);
            }
        }
    }
}
