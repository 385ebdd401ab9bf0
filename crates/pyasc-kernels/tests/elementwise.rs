//! arith / compare / bitwise / select / cast / fill against plain Rust semantics, for every
//! element type, every `Src` combination, lengths 0..100 and odd sizes, under every ISA.

mod common;

use common::{for_each_isa, Rng};
use pyasc_ir::op::BinaryOp;
use pyasc_kernels::binary::{self, Arith, Bits};
use pyasc_kernels::{cast, fill, select, Element, Src};
use std::fmt::Debug;

const LENS: [usize; 9] = [0, 1, 3, 7, 16, 31, 64, 99, 1023];

/// Calls `f` with every operand combination of two tiles of length `n`.
fn combos<T: Copy>(a: &[T], b: &[T], f: &mut impl FnMut(Src<'_, T>, Src<'_, T>, &dyn Fn(usize) -> (T, T))) {
    let (a0, b0) = (a[0], b[0]);
    f(Src::Slice(a), Src::Slice(b), &|i| (a[i], b[i]));
    f(Src::Slice(a), Src::Scalar(b0), &|i| (a[i], b0));
    f(Src::Scalar(a0), Src::Slice(b), &|i| (a0, b[i]));
    f(Src::Scalar(a0), Src::Scalar(b0), &|_| (a0, b0));
}

/// Bit-exact equality that treats NaN == NaN.
trait Same: Copy + Debug {
    fn same(self, o: Self) -> bool;
}
macro_rules! same_eq {
    ($($t:ty),*) => {$(impl Same for $t { fn same(self, o: Self) -> bool { self == o } })*};
}
same_eq!(u8, i32, i64);
impl Same for f32 {
    fn same(self, o: Self) -> bool {
        self.to_bits() == o.to_bits() || (self.is_nan() && o.is_nan())
    }
}
impl Same for f64 {
    fn same(self, o: Self) -> bool {
        self.to_bits() == o.to_bits() || (self.is_nan() && o.is_nan())
    }
}

fn check_arith<T: Arith + Same + Default>(gen: &mut impl FnMut() -> T, reference: &impl Fn(BinaryOp, T, T) -> T) {
    use BinaryOp::*;
    for n in LENS.into_iter().map(|n| n.max(1)) {
        let a: Vec<T> = (0..n).map(|_| gen()).collect();
        let b: Vec<T> = (0..n).map(|_| gen()).collect();
        for f in [Add, Sub, Mul, FloorDiv, Mod, Pow, Min, Max] {
            combos(&a, &b, &mut |sa, sb, get| {
                let mut y = vec![T::default(); n];
                binary::arith(f, sa, sb, &mut y);
                for (i, &v) in y.iter().enumerate() {
                    let (x, z) = get(i);
                    let want = reference(f, x, z);
                    assert!(v.same(want), "{f:?}({x:?}, {z:?}) = {v:?}, want {want:?}");
                }
            });
        }
    }
    let mut y: Vec<T> = vec![];
    binary::arith(BinaryOp::Add, Src::Slice(&[]), Src::Slice(&[]), &mut y);
}

macro_rules! int_ref {
    ($t:ty) => {
        |f: BinaryOp, a: $t, b: $t| -> $t {
            match f {
                BinaryOp::Add => a.wrapping_add(b),
                BinaryOp::Sub => a.wrapping_sub(b),
                BinaryOp::Mul => a.wrapping_mul(b),
                BinaryOp::Div => unreachable!(),
                BinaryOp::FloorDiv => {
                    if b == 0 {
                        0
                    } else {
                        let (q, r) = (a.wrapping_div(b), a.wrapping_rem(b));
                        if r != 0 && (r < 0) != (b < 0) {
                            q - 1
                        } else {
                            q
                        }
                    }
                }
                BinaryOp::Mod => {
                    if b == 0 {
                        0
                    } else {
                        let r = a.wrapping_rem(b);
                        if r != 0 && (r < 0) != (b < 0) {
                            r + b
                        } else {
                            r
                        }
                    }
                }
                BinaryOp::Pow => {
                    let (mut r, mut base, mut e): ($t, $t, $t) = (1, a, b);
                    while e > 0 {
                        if e & 1 == 1 {
                            r = r.wrapping_mul(base);
                        }
                        base = base.wrapping_mul(base);
                        e >>= 1;
                    }
                    if b < 0 {
                        0
                    } else {
                        r
                    }
                }
                BinaryOp::Min => a.min(b),
                BinaryOp::Max => a.max(b),
                _ => unreachable!("not arithmetic"),
            }
        }
    };
}

#[test]
fn arith_ints() {
    for_each_isa(|_| {
        let mut rng = Rng::new(1);
        let pool32 = [0, 1, -1, 2, -2, 3, 7, -7, 31, i32::MAX, i32::MIN, 100, -100];
        let mut g32 = || match rng.next_u32() % 3 {
            0 => pool32[rng.next_u32() as usize % pool32.len()],
            1 => rng.next_u32() as i32 % 50,
            _ => rng.next_u32() as i32,
        };
        check_arith::<i32>(&mut g32, &int_ref!(i32));
        let mut rng = Rng::new(2);
        let pool64 = [0, 1, -1, 2, -2, 3, 63, -5, i64::MAX, i64::MIN];
        let mut g64 = || match rng.next_u32() % 3 {
            0 => pool64[rng.next_u32() as usize % pool64.len()],
            1 => rng.next_u64() as i64 % 50,
            _ => rng.next_u64() as i64,
        };
        check_arith::<i64>(&mut g64, &int_ref!(i64));
    });
}

#[test]
fn int_division_by_zero_and_python_signs() {
    let a = [7i32, -7, 7, -7, 5, i32::MIN];
    let b = [2i32, 2, -2, -2, 0, -1];
    let mut y = [0i32; 6];
    binary::arith(BinaryOp::FloorDiv, Src::Slice(&a), Src::Slice(&b), &mut y);
    assert_eq!(y, [3, -4, -4, 3, 0, i32::MIN]);
    binary::arith(BinaryOp::Mod, Src::Slice(&a), Src::Slice(&b), &mut y);
    assert_eq!(y, [1, 1, -1, -1, 0, 0]);
}

/// NumPy's float floor_divide / remainder, written with early returns.
fn np_divmod(a: f64, b: f64) -> (f64, f64) {
    let m = a % b;
    if b == 0.0 {
        return (a / b, m);
    }
    let mut div = (a - m) / b;
    let mut m2 = m;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m2 += b;
            div -= 1.0;
        }
    } else {
        m2 = 0.0f64.copysign(b);
    }
    let fl = if div != 0.0 {
        let mut fl = div.floor();
        if div - fl > 0.5 {
            fl += 1.0;
        }
        fl
    } else {
        0.0f64.copysign(a / b)
    };
    (fl, m2)
}

fn np_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || a <= b {
        a
    } else {
        b
    }
}

fn np_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || a >= b {
        a
    } else {
        b
    }
}

#[test]
fn arith_floats() {
    let pool = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 3.0, 1e-300, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 7.0, -0.5];
    let r64 = |f: BinaryOp, a: f64, b: f64| match f {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::FloorDiv => np_divmod(a, b).0,
        BinaryOp::Mod => np_divmod(a, b).1,
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Min => np_min(a, b),
        BinaryOp::Max => np_max(a, b),
        _ => unreachable!("not arithmetic"),
    };
    for_each_isa(|_| {
        let mut rng = Rng::new(3);
        let mut g = || match rng.next_u32() % 2 {
            0 => pool[rng.next_u32() as usize % pool.len()],
            _ => rng.uniform(-20.0, 20.0),
        };
        check_arith::<f64>(&mut g, &r64);
        let mut rng = Rng::new(4);
        let mut g = || match rng.next_u32() % 2 {
            0 => pool[rng.next_u32() as usize % pool.len()] as f32,
            _ => rng.uniform(-20.0, 20.0) as f32,
        };
        let r32 = |f: BinaryOp, a: f32, b: f32| match f {
            BinaryOp::FloorDiv | BinaryOp::Mod => {
                // NumPy's float32 loop runs the same algorithm in float32.
                let m = a % b;
                if b == 0.0 {
                    return if f == BinaryOp::Mod { m } else { a / b };
                }
                let mut div = (a - m) / b;
                let mut m2 = m;
                if m != 0.0 {
                    if (b < 0.0) != (m < 0.0) {
                        m2 += b;
                        div -= 1.0;
                    }
                } else {
                    m2 = 0.0f32.copysign(b);
                }
                let fl = if div != 0.0 {
                    let mut fl = div.floor();
                    if div - fl > 0.5 {
                        fl += 1.0;
                    }
                    fl
                } else {
                    0.0f32.copysign(a / b)
                };
                if f == BinaryOp::Mod {
                    m2
                } else {
                    fl
                }
            }
            _ => r64(f, a as f64, b as f64) as f32,
        };
        check_arith::<f32>(&mut g, &r32);
        let mut y = [0.0f32; 3];
        binary::arith(BinaryOp::Div, Src::Slice(&[1.0, -1.0, 0.0]), Src::Scalar(0.0), &mut y);
        assert_eq!(y[..2], [f32::INFINITY, f32::NEG_INFINITY]);
        assert!(y[2].is_nan());
    });
}

fn check_compare<T: Element + PartialOrd + Debug>(a: &[T], b: &[T]) {
    use BinaryOp::*;
    for f in [Eq, Ne, Lt, Le, Gt, Ge] {
        combos(a, b, &mut |sa, sb, get| {
            let mut y = vec![9u8; a.len()];
            binary::compare(f, sa, sb, &mut y);
            for (i, &v) in y.iter().enumerate() {
                let (x, z) = get(i);
                let want = match f {
                    Eq => x == z,
                    Ne => x != z,
                    Lt => x < z,
                    Le => x <= z,
                    Gt => x > z,
                    Ge => x >= z,
                    _ => unreachable!("not a comparison"),
                } as u8;
                assert_eq!(v, want, "{f:?}({x:?}, {z:?})");
            }
        });
    }
}

#[test]
fn compare_all_types() {
    for_each_isa(|_| {
        let mut rng = Rng::new(5);
        for n in LENS.into_iter().map(|n| n.max(1)) {
            let u: Vec<u8> = (0..2 * n).map(|_| (rng.next_u32() % 2) as u8).collect();
            check_compare(&u[..n], &u[n..]);
            let i: Vec<i32> = (0..2 * n).map(|_| rng.next_u32() as i32 % 4).collect();
            check_compare(&i[..n], &i[n..]);
            let l: Vec<i64> = (0..2 * n).map(|_| rng.next_u64() as i64 % 4).collect();
            check_compare(&l[..n], &l[n..]);
            let pool = [0.0, -0.0, 1.0, f64::NAN, f64::INFINITY, -2.0];
            let d: Vec<f64> = (0..2 * n).map(|_| pool[rng.next_u32() as usize % 6]).collect();
            check_compare(&d[..n], &d[n..]);
            let s: Vec<f32> = d.iter().map(|&v| v as f32).collect();
            check_compare(&s[..n], &s[n..]);
        }
    });
}

fn check_bitwise<T: Bits + Debug + PartialEq + Default>(a: &[T], b: &[T], r: impl Fn(BinaryOp, T, T) -> T) {
    for f in [BinaryOp::And, BinaryOp::Or, BinaryOp::Xor] {
        combos(a, b, &mut |sa, sb, get| {
            let mut y = vec![T::default(); a.len()];
            binary::bitwise(f, sa, sb, &mut y);
            for (i, &v) in y.iter().enumerate() {
                let (x, z) = get(i);
                assert_eq!(v, r(f, x, z), "{f:?}({x:?}, {z:?})");
            }
        });
    }
}

macro_rules! bit_ref {
    () => {
        |f, a, b| match f {
            BinaryOp::And => a & b,
            BinaryOp::Or => a | b,
            BinaryOp::Xor => a ^ b,
            _ => unreachable!("not bitwise"),
        }
    };
}

#[test]
fn bitwise_all_types() {
    for_each_isa(|_| {
        let mut rng = Rng::new(6);
        for n in LENS.into_iter().map(|n| n.max(1)) {
            let u: Vec<u8> = (0..2 * n).map(|_| (rng.next_u32() % 2) as u8).collect();
            check_bitwise(&u[..n], &u[n..], bit_ref!());
            let i: Vec<i32> = (0..2 * n).map(|_| rng.next_u32() as i32).collect();
            check_bitwise(&i[..n], &i[n..], bit_ref!());
            let l: Vec<i64> = (0..2 * n).map(|_| rng.next_u64() as i64).collect();
            check_bitwise(&l[..n], &l[n..], bit_ref!());
        }
    });
}

fn check_select<T: Element + Same + Default>(c: &[u8], a: &[T], b: &[T]) {
    let n = c.len();
    let conds = [Src::Slice(c), Src::Scalar(c[0])];
    for sc in conds {
        combos(a, b, &mut |sa, sb, get| {
            let mut y = vec![T::default(); n];
            select(sc, sa, sb, &mut y);
            for (i, &v) in y.iter().enumerate() {
                let ci = match sc {
                    Src::Slice(c) => c[i],
                    Src::Scalar(c) => c,
                };
                let (x, z) = get(i);
                assert!(v.same(if ci != 0 { x } else { z }));
            }
        });
    }
}

#[test]
fn select_all_types() {
    for_each_isa(|_| {
        let mut rng = Rng::new(7);
        for n in LENS.into_iter().map(|n| n.max(1)) {
            let c: Vec<u8> = (0..n).map(|_| (rng.next_u32() % 3) as u8).collect();
            let f: Vec<f32> = (0..2 * n).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
            check_select(&c, &f[..n], &f[n..]);
            let d: Vec<f64> = (0..2 * n).map(|_| rng.uniform(-1.0, 1.0)).collect();
            check_select(&c, &d[..n], &d[n..]);
            let i: Vec<i32> = (0..2 * n).map(|_| rng.next_u32() as i32).collect();
            check_select(&c, &i[..n], &i[n..]);
            let l: Vec<i64> = (0..2 * n).map(|_| rng.next_u64() as i64).collect();
            check_select(&c, &l[..n], &l[n..]);
            let u: Vec<u8> = (0..2 * n).map(|_| (rng.next_u32() % 2) as u8).collect();
            check_select(&c, &u[..n], &u[n..]);
        }
        let mut y: Vec<f32> = vec![];
        select(Src::Slice(&[]), Src::Slice(&[]), Src::Scalar(1.0), &mut y);
    });
}

fn check_cast<S: Element + Copy, D: Element + Same + Default>(x: &[S], r: impl Fn(S) -> D) {
    for n in LENS {
        let n = n.min(x.len());
        let mut y = vec![D::default(); n];
        cast(&x[..n], &mut y);
        for (i, &v) in y.iter().enumerate() {
            assert!(v.same(r(x[i])), "cast #{i}: got {v:?}");
        }
    }
}

/// Checks casts of one integer or bool tile into every target type.
macro_rules! all_targets {
    ($x:expr) => {{
        let x = $x;
        check_cast(&x, |v| (v != Default::default()) as u8);
        check_cast(&x, |v| v as i32);
        check_cast(&x, |v| v as i64);
        check_cast(&x, |v| v as f32);
        check_cast(&x, |v| v as f64);
    }};
}

#[test]
fn cast_all_pairs() {
    for_each_isa(|_| {
        let mut rng = Rng::new(8);
        let pool = [0.0, -0.0, 0.5, -0.5, 1.7, -1.7, 3e9, -3e9, 1e20, f64::NAN, f64::INFINITY, -f64::INFINITY];
        let d: Vec<f64> =
            (0..1023).map(|i| if i % 2 == 0 { pool[i / 2 % pool.len()] } else { rng.uniform(-1e6, 1e6) }).collect();
        let f: Vec<f32> = d.iter().map(|&v| v as f32).collect();
        let i: Vec<i32> = (0..1023).map(|_| rng.next_u32() as i32 >> (rng.next_u32() % 31)).collect();
        let l: Vec<i64> = (0..1023).map(|_| rng.next_u64() as i64 >> (rng.next_u32() % 63)).collect();
        let u: Vec<u8> = (0..1023).map(|_| (rng.next_u32() % 2) as u8).collect();
        check_cast(&d, |v: f64| (v != 0.0) as u8);
        check_cast(&d, |v: f64| v as i32);
        check_cast(&d, |v: f64| v as i64);
        check_cast(&d, |v: f64| v as f32);
        check_cast(&d, |v: f64| v);
        check_cast(&f, |v: f32| (v != 0.0) as u8);
        check_cast(&f, |v: f32| v as i32);
        check_cast(&f, |v: f32| v as i64);
        check_cast(&f, |v: f32| v);
        check_cast(&f, |v: f32| v as f64);
        all_targets!(i);
        all_targets!(l);
        all_targets!(u);
        let mut z = [7u8; 3];
        fill(1u8, &mut z);
        assert_eq!(z, [1, 1, 1]);
    });
}

/// The vectorised float32 two-operand functions against their float64 definitions, rounded.
#[test]
fn float32_pair_functions_round_once() {
    let specials = [0.0f32, -0.0, 1.0, -1.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 88.0, -104.0, 3.4e38, 1e-45];
    let mut rng = Rng::new(21);
    let mut a: Vec<f32> = (0..4000).map(|_| rng.uniform(-120.0, 120.0) as f32).collect();
    let mut b: Vec<f32> = (0..4000).map(|_| rng.uniform(-120.0, 120.0) as f32).collect();
    for &p in &specials {
        for &q in &specials {
            a.push(p);
            b.push(q);
        }
    }
    for_each_isa(|isa| {
        for op in [BinaryOp::Hypot, BinaryOp::LogAddExp, BinaryOp::LogAddExp2] {
            let mut y = vec![0.0f32; a.len()];
            binary::arith(op, Src::Slice(&a), Src::Slice(&b), &mut y);
            for i in 0..a.len() {
                let want = op.eval_f64(a[i] as f64, b[i] as f64).unwrap() as f32;
                let ok = y[i] == want || (y[i].is_nan() && want.is_nan());
                let ulp = (y[i].to_bits() as i64 - want.to_bits() as i64).abs();
                assert!(ok || ulp <= 1, "{op:?} [{}] ({}, {}) = {}, want {want}", isa.name(), a[i], b[i], y[i]);
            }
        }
    });
}
