//! uint64 kernels against `u128` references, the unsigned-only semantics (division, ordering,
//! right shifts, abs), and casts between every integer element type and the floats, under every
//! ISA.

mod common;

use common::for_each_isa;
use pyasc_ir::op::{BinaryOp, UnaryOp};
use pyasc_kernels::binary;
use pyasc_kernels::{cast, unary, Element, Src, UInt8};

/// Extremes and a spread of uint64 values (every value of an i64 would read negative above 2^63).
fn u64_values() -> Vec<u64> {
    let mut v =
        vec![0, 1, 2, 3, 7, 255, 256, 65_535, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, u64::MAX - 1, u64::MAX];
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..50 {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        v.push(s);
    }
    v
}

fn pairs() -> (Vec<u64>, Vec<u64>) {
    let v = u64_values();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &x in &v {
        for &y in &v {
            a.push(x);
            b.push(y);
        }
    }
    (a, b)
}

fn reference(op: BinaryOp, a: u64, b: u64) -> u64 {
    let (wa, wb) = (a as u128, b as u128);
    let wrap = |v: u128| v as u64;
    match op {
        BinaryOp::Add => wrap(wa + wb),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => wrap(wa * wb),
        BinaryOp::FloorDiv => a.checked_div(b).unwrap_or(0),
        BinaryOp::Mod | BinaryOp::Fmod => a.checked_rem(b).unwrap_or(0),
        BinaryOp::Min | BinaryOp::Fmin => a.min(b),
        BinaryOp::Max | BinaryOp::Fmax => a.max(b),
        BinaryOp::LeftShift => a.checked_shl(b.min(64) as u32).unwrap_or(0),
        BinaryOp::RightShift => a.checked_shr(b.min(64) as u32).unwrap_or(0),
        BinaryOp::Pow => {
            let (mut r, mut base, mut e) = (1u64, a, b);
            while e > 0 {
                if e & 1 == 1 {
                    r = r.wrapping_mul(base);
                }
                base = base.wrapping_mul(base);
                e >>= 1;
            }
            r
        }
        other => panic!("no reference for {}", other.name()),
    }
}

#[test]
fn uint64_arithmetic_is_unsigned() {
    let (a, b) = pairs();
    let ops = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::FloorDiv,
        BinaryOp::Mod,
        BinaryOp::Fmod,
        BinaryOp::Min,
        BinaryOp::Max,
        BinaryOp::Fmin,
        BinaryOp::Fmax,
        BinaryOp::LeftShift,
        BinaryOp::RightShift,
        BinaryOp::Pow,
    ];
    for_each_isa(|isa| {
        for op in ops {
            let mut y = vec![0u64; a.len()];
            binary::arith::<u64>(op, Src::Slice(&a), Src::Slice(&b), &mut y);
            for i in 0..a.len() {
                assert_eq!(y[i], reference(op, a[i], b[i]), "{isa:?} {} {} {}", a[i], op.name(), b[i]);
            }
            // A broadcast divisor takes the same path.
            let mut z = vec![0u64; a.len()];
            binary::arith::<u64>(op, Src::Slice(&a), Src::Scalar(b[17]), &mut z);
            for i in 0..a.len() {
                assert_eq!(z[i], reference(op, a[i], b[17]), "{isa:?} scalar {}", op.name());
            }
        }
    });
}

#[test]
fn uint64_comparisons_gcd_and_unary_read_unsigned_values() {
    let (a, b) = pairs();
    let mut lt = vec![0u8; a.len()];
    binary::compare::<u64>(BinaryOp::Lt, Src::Slice(&a), Src::Slice(&b), &mut lt);
    let mut g = vec![0u64; a.len()];
    binary::arith::<u64>(BinaryOp::Gcd, Src::Slice(&a), Src::Slice(&b), &mut g);
    for i in 0..a.len() {
        assert_eq!(lt[i], (a[i] < b[i]) as u8);
        if g[i] != 0 {
            assert_eq!((a[i] % g[i], b[i] % g[i]), (0, 0), "gcd divides both");
        }
    }
    let x = u64_values();
    let mut y = vec![0u64; x.len()];
    for (op, f) in [
        (UnaryOp::Abs, (|v| v) as fn(u64) -> u64),
        (UnaryOp::Relu, |v| v),
        (UnaryOp::Sign, |v| (v != 0) as u64),
        (UnaryOp::Neg, |v: u64| v.wrapping_neg()),
        (UnaryOp::Not, |v: u64| !v),
    ] {
        unary::u64(op, &x, &mut y);
        let want: Vec<u64> = x.iter().map(|v| f(*v)).collect();
        assert_eq!(y, want, "{}", op.name());
    }
}

/// `cast` of `x` to `D`, element by element.
fn cast_all<S: Element, D: Element + Default>(x: &[S]) -> Vec<D> {
    let mut y = vec![D::default(); x.len()];
    cast(x, &mut y);
    y
}

#[test]
fn integer_casts_wrap_extend_and_round_like_numpy() {
    for_each_isa(|_| {
        let wide: Vec<i64> = vec![-129, -128, -1, 0, 1, 127, 128, 255, 256, 65_535, 65_536, i64::MIN, i64::MAX];
        assert_eq!(cast_all::<i64, i8>(&wide), wide.iter().map(|v| *v as i8).collect::<Vec<_>>());
        assert_eq!(cast_all::<i64, UInt8>(&wide), wide.iter().map(|v| UInt8(*v as u8)).collect::<Vec<_>>());
        assert_eq!(cast_all::<i64, i16>(&wide), wide.iter().map(|v| *v as i16).collect::<Vec<_>>());
        assert_eq!(cast_all::<i64, u16>(&wide), wide.iter().map(|v| *v as u16).collect::<Vec<_>>());
        assert_eq!(cast_all::<i64, u32>(&wide), wide.iter().map(|v| *v as u32).collect::<Vec<_>>());
        // Narrow to the register dtype: sign extension for signed, zero extension for unsigned.
        let b: Vec<i8> = vec![-128, -1, 0, 127];
        assert_eq!(cast_all::<i8, i32>(&b), vec![-128, -1, 0, 127]);
        let u: Vec<UInt8> = [0u8, 1, 128, 255].map(UInt8).to_vec();
        assert_eq!(cast_all::<UInt8, i32>(&u), vec![0, 1, 128, 255]);
        assert_eq!(cast_all::<UInt8, u8>(&u), vec![0, 1, 1, 1], "uint8 to bool is != 0");
        assert_eq!(cast_all::<u32, i64>(&[u32::MAX, 0]), vec![4_294_967_295, 0]);
        // uint64 to floats reads the unsigned value.
        let big = [u64::MAX, 1 << 63, 3];
        assert_eq!(cast_all::<u64, f64>(&big), vec![18_446_744_073_709_551_615.0, 9_223_372_036_854_775_808.0, 3.0]);
        assert_eq!(cast_all::<u64, f32>(&big), vec![u64::MAX as f32, (1u64 << 63) as f32, 3.0]);
        assert_eq!(cast_all::<f64, i16>(&[-2.9, 2.9, 1000.5]), vec![-2, 2, 1000]);
        assert_eq!(cast_all::<u8, i16>(&[0, 1]), vec![0, 1], "bool to int16 is 0/1");
    });
}
