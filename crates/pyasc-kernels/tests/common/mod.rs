//! Shared test helpers: the ulp metric, a seeded generator, input sets and the ISA lock.

#![allow(dead_code)]

use pyasc_kernels::isa::{self, Isa};
use std::sync::{Mutex, MutexGuard};

/// `isa::force` is process-wide: tests that switch ISA hold this lock.
static ISA_LOCK: Mutex<()> = Mutex::new(());

/// Runs `f` once under every ISA this CPU supports, serialised against other such tests.
pub fn for_each_isa(mut f: impl FnMut(Isa)) {
    let _guard: MutexGuard<'_, ()> = ISA_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    for isa in isa::available() {
        isa::force(Some(isa));
        assert_eq!(isa::active(), isa);
        f(isa);
    }
    isa::force(None);
}

/// Maps a float32 onto a line where neighbouring floats differ by 1 (±0 both map to 0).
fn ordered(x: f32) -> i64 {
    let b = x.to_bits();
    let m = (b & 0x7fff_ffff) as i64;
    if b >> 31 != 0 {
        -m
    } else {
        m
    }
}

/// Distance in float32 ulps; NaN matches NaN only (otherwise `u64::MAX`).
pub fn ulp_f32(a: f32, b: f32) -> u64 {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => 0,
        (false, false) => (ordered(a) - ordered(b)).unsigned_abs(),
        _ => u64::MAX,
    }
}

/// Relative error of float64 `a` against reference `r` (0 when equal, incl. both NaN/inf).
pub fn rel_f64(a: f64, r: f64) -> f64 {
    if a == r || (a.is_nan() && r.is_nan()) {
        0.0
    } else if r == 0.0 || !r.is_finite() {
        f64::INFINITY
    } else {
        ((a - r) / r).abs()
    }
}

/// xorshift64* generator with a fixed seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// Special float32 values every function is checked on.
pub fn specials_f32() -> Vec<f32> {
    vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x8000_0001),
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        0.5,
        2.0,
        std::f32::consts::PI,
        std::f32::consts::FRAC_PI_2,
        88.72284,
        88.72283,
        -87.33655,
        -103.97208,
        -104.0,
        128.0,
        -149.0,
        -150.0,
        1e5,
        1e30,
        -1e30,
    ]
}

/// The float32 test set: `n` random bit patterns (whole range), dense sweeps around the
/// interesting points `centers` (±2^12 neighbouring floats each), every 1/64 of the range
/// [-160, 160], and the special values.
pub fn inputs_f32(n: usize, centers: &[f32], seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    let mut v: Vec<f32> = (0..n).map(|_| f32::from_bits(rng.next_u32())).collect();
    let base = [0.0f32, 1.0, -1.0, f32::MIN_POSITIVE, -f32::MIN_POSITIVE];
    for &c in base.iter().chain(centers) {
        let b = c.to_bits() as i64;
        for d in -4096i64..=4096 {
            let nb = b + d;
            if (0..=u32::MAX as i64).contains(&nb) {
                v.push(f32::from_bits(nb as u32));
            }
        }
    }
    for i in -160 * 64..=160 * 64 {
        v.push(i as f32 / 64.0);
    }
    // Small magnitudes densely across binades: 2^-40 .. 2^2.
    for i in 0..200_000 {
        let e = rng.uniform(-40.0, 2.0);
        let s = if i % 2 == 0 { 1.0 } else { -1.0 };
        v.push((s * e.exp2()) as f32);
    }
    v.extend(specials_f32());
    v
}

#[test]
fn ulp_metric() {
    assert_eq!(ulp_f32(1.0, 1.0), 0);
    assert_eq!(ulp_f32(1.0, f32::from_bits(1.0f32.to_bits() + 2)), 2);
    assert_eq!(ulp_f32(f32::from_bits(1), -f32::from_bits(1)), 2);
    assert_eq!(ulp_f32(0.0, -0.0), 0);
    assert_eq!(ulp_f32(f32::NAN, f32::NAN), 0);
    assert_eq!(ulp_f32(f32::NAN, 1.0), u64::MAX);
    assert_eq!(ulp_f32(f32::MAX, f32::INFINITY), 1);
}
