//! float32 division by a broadcast scalar (computed as a float64 multiply by the reciprocal)
//! against true float32 division, bit for bit, under every ISA: random bit patterns, edge
//! values and quotients next to rounding midpoints, for awkward divisors.

// 1.41421 is the divisor the GELU benchmark writes, not an approximation of sqrt 2.
#![allow(clippy::approx_constant)]

mod common;

use common::{for_each_isa, specials_f32, Rng};
use pyasc_ir::op::BinaryOp;
use pyasc_kernels::binary;
use pyasc_kernels::Src;

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn divisors(rng: &mut Rng) -> Vec<f32> {
    let mut d = vec![
        1.41421,
        3.0,
        0.1,
        7e-39,
        1e38,
        f32::MAX,
        f32::MIN_POSITIVE,
        1.0,
        2.0,
        0.5,
        1024.0,
        2f32.powi(-126),
        2f32.powi(127),
        f32::from_bits(1),
        f32::from_bits(0x0000_0003),
        f32::from_bits(0x0040_0000),
        f32::from_bits(0x007f_ffff),
        1e-40,
        -1.41421,
        -3.0,
        -0.1,
        -7e-39,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0 - f32::EPSILON / 2.0,
        1.0 + f32::EPSILON,
        f32::from_bits(0x3fff_ffff),
        f32::from_bits(0x3f80_0001),
        // Short odd significands: subnormal quotients can be exact midpoints.
        3072.0,
        -3.0 * 1048576.0,
        5.0 * 4096.0,
        7.0 * 1073741824.0,
        1e10,
        6e3,
        // ... whose float64 reciprocal is off by almost half an ulp (123: 0.95, 1997: 0.96).
        123.0 * 1048576.0,
        -1997.0 * 4096.0,
        503.0 * 2.0,
    ];
    d.extend((0..24).map(|_| f32::from_bits(rng.next_u32())));
    d
}

/// Random bit patterns, specials, values around the subnormal boundary and the top.
fn common_inputs(rng: &mut Rng) -> Vec<f32> {
    let mut x: Vec<f32> = (0..1 << 20).map(|_| f32::from_bits(rng.next_u32())).collect();
    x.extend(specials_f32());
    for c in [0.0f32, f32::MIN_POSITIVE, f32::MAX, 1.0] {
        for d in -2000i64..=2000 {
            let b = c.to_bits() as i64 + d;
            if (0..=0x7f80_0000).contains(&b) {
                x.push(f32::from_bits(b as u32));
                x.push(-f32::from_bits(b as u32));
            }
        }
    }
    x
}

/// `x` whose quotient by `c` lies next to a float32 rounding midpoint (in the normal, the
/// subnormal and the overflow range), and their neighbours.
fn near_midpoints(rng: &mut Rng, c: f32) -> Vec<f32> {
    let mut x = vec![];
    for _ in 0..1 << 16 {
        let mid = if rng.next_u32().is_multiple_of(2) {
            let e = rng.uniform(-152.0, 129.0).floor();
            let m = (rng.next_u32() >> 7) | 1; // 25-bit odd: a midpoint of 24-bit significands
            m as f64 * (e - 25.0).exp2()
        } else {
            // Subnormal midpoints (2k + 1) 2^-150 with k of random bit length.
            let k = rng.next_u32() >> (9 + rng.next_u32() % 23);
            (2 * k + 1) as f64 * 2f64.powi(-150)
        };
        let v = (mid * c as f64) as f32;
        for d in -1i32..=1 {
            let b = (v.to_bits() as i32).wrapping_add(d) as u32;
            x.push(f32::from_bits(b));
        }
    }
    x
}

#[test]
fn div_by_scalar_matches_division() {
    let mut rng = Rng::new(11);
    let ds = divisors(&mut rng);
    let base = common_inputs(&mut rng);
    let sets: Vec<Vec<f32>> = ds.iter().map(|&c| [&base[..], &near_midpoints(&mut rng, c)].concat()).collect();
    for_each_isa(|isa| {
        for (&c, x) in ds.iter().zip(&sets) {
            let mut y = vec![0.0f32; x.len()];
            binary::arith(BinaryOp::Div, Src::Slice(x), Src::Scalar(c), &mut y);
            for (&v, &g) in x.iter().zip(&y) {
                let w = v / c;
                assert!(same(g, w), "[{}] {v:e} / {c:e} = {g:e}, want {w:e}", isa.name());
            }
        }
    });
}

#[test]
fn div_other_operand_forms() {
    let mut rng = Rng::new(12);
    let n = 4099;
    let a: Vec<f32> = (0..n).map(|_| f32::from_bits(rng.next_u32())).collect();
    let b: Vec<f32> = (0..n).map(|_| f32::from_bits(rng.next_u32())).collect();
    for_each_isa(|isa| {
        let mut y = vec![0.0f32; n];
        binary::arith(BinaryOp::Div, Src::Slice(&a), Src::Slice(&b), &mut y);
        assert!(y.iter().zip(a.iter().zip(&b)).all(|(&g, (&p, &q))| same(g, p / q)), "[{}] slice/slice", isa.name());
        binary::arith(BinaryOp::Div, Src::Scalar(a[0]), Src::Slice(&b), &mut y);
        assert!(y.iter().zip(&b).all(|(&g, &q)| same(g, a[0] / q)), "[{}] scalar/slice", isa.name());
        binary::arith(BinaryOp::Div, Src::Scalar(a[0]), Src::Scalar(b[0]), &mut y);
        assert!(y.iter().all(|&g| same(g, a[0] / b[0])), "[{}] scalar/scalar", isa.name());
        // Short and odd lengths (partial chunks).
        for len in [0, 1, 63, 64, 65, 130] {
            let mut y = vec![0.0f32; len];
            binary::arith(BinaryOp::Div, Src::Slice(&a[..len]), Src::Scalar(b[1]), &mut y);
            assert!(y.iter().zip(&a).all(|(&g, &p)| same(g, p / b[1])), "[{}] len {len}", isa.name());
        }
    });
}

/// Every float32 dividend for a few divisors, among them an all-ones significand and divisors
/// at the bounds of the reciprocal-with-correction path (ignored by default: about five minutes;
/// `cargo test --release --test div_scalar -- --ignored`).
#[test]
#[ignore]
fn div_by_scalar_all_dividends() {
    const CHUNK: u64 = 1 << 16;
    let ds = [1.41421f32, 3.0, -0.1, f32::from_bits(0x3fff_ffff), 1.0 - f32::EPSILON / 2.0, 7.9e-31, 1.2e30];
    let mut x = vec![0.0f32; CHUNK as usize];
    let mut y = vec![0.0f32; CHUNK as usize];
    for_each_isa(|isa| {
        for &c in &ds {
            for start in (0..1u64 << 32).step_by(CHUNK as usize) {
                for (i, v) in x.iter_mut().enumerate() {
                    *v = f32::from_bits((start + i as u64) as u32);
                }
                binary::arith(BinaryOp::Div, Src::Slice(&x), Src::Scalar(c), &mut y);
                for (&v, &g) in x.iter().zip(&y) {
                    assert!(same(g, v / c), "[{}] {v:e} / {c:e} = {g:e}, want {:e}", isa.name(), v / c);
                }
            }
        }
    });
}
