//! Bulk 16-bit float conversions: every ISA path against the portable definition, over all
//! 65,536 patterns and every rounding edge of float32 -> 16-bit.

mod common;

use pyasc_kernels::convert16::*;

/// Every 16-bit pattern and a float32 set with every rounding edge: each pattern widened,
/// and the midpoints to its neighbour with one ulp either side.
fn float32_edges() -> Vec<f32> {
    let mut v = Vec::new();
    for h in 0..=u16::MAX {
        let b = (h as u32) << 16;
        for d in [0u32, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF] {
            v.push(f32::from_bits(b | d));
        }
    }
    for h in 0..=u16::MAX {
        let x = f16_value(h);
        v.push(x);
        let b = x.to_bits();
        for d in [0x0FFFu32, 0x1000, 0x1001] {
            v.push(f32::from_bits(b.wrapping_add(d)));
        }
    }
    v
}

#[test]
fn portable_bfloat16_rounding_matches_the_half_crate() {
    for x in float32_edges() {
        let want = half::bf16::from_f32(x).to_bits();
        if x.is_nan() {
            assert!(half::bf16::from_bits(bf16_bits(x)).is_nan() && bf16_bits(x) >> 15 == want >> 15);
        } else {
            assert_eq!(bf16_bits(x), want, "{x:e}");
        }
    }
}

#[test]
fn every_path_gives_the_portable_bits() {
    let x = float32_edges();
    let patterns: Vec<u16> = (0..=u16::MAX).collect();
    common::for_each_isa(|isa| {
        let mut h = vec![0u16; x.len()];
        f32_to_bf16(&x, &mut h);
        for (i, (a, b)) in x.iter().zip(&h).enumerate() {
            assert_eq!(*b, bf16_bits(*a), "{isa:?} bf16 of {a:e} ({:#x}) at {i}", a.to_bits());
        }
        f32_to_f16(&x, &mut h);
        for (a, b) in x.iter().zip(&h) {
            assert_eq!(*b, f16_bits(*a), "{isa:?} f16 of {a:e} ({:#x})", a.to_bits());
        }
        let mut w = vec![0f32; patterns.len()];
        bf16_to_f32(&patterns, &mut w);
        for (p, y) in patterns.iter().zip(&w) {
            assert_eq!(y.to_bits(), bf16_value(*p).to_bits(), "{isa:?} bf16 {p:#x}");
        }
        f16_to_f32(&patterns, &mut w);
        for (p, y) in patterns.iter().zip(&w) {
            assert_eq!(y.to_bits(), f16_value(*p).to_bits(), "{isa:?} f16 {p:#x}");
        }
    });
}
