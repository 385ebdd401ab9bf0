//! Scans along the rows inside fused row kernels: every kind and dtype gives the bits of the
//! scan routine on the same rows (tiles of several rows, many tiles, many threads) under every
//! ISA the machine has, with an elementwise producer computed in the kernel and a broadcast
//! (constant) operand.

use pyasc_compiler::{compile, CompileOptions};
use pyasc_ir::dtype::VType;
use pyasc_ir::library::ScanKind;
use pyasc_ir::op::BinaryOp;
use pyasc_ir::tile::Instr;
use pyasc_ir::{Attr, DType, Graph, LibId, Scalar, Shape};
use pyasc_kernels::isa;
use pyasc_runtime::scan::run_scan;
use pyasc_runtime::{device_for, DeviceKind, InputView, OutputPtr, RunOptions};

/// Run `g` (outputs of `numel` elements of `size` bytes each) on `inputs`; returns their bytes
/// and whether the plan was one kernel computing row scans.
fn run(g: Graph, inputs: &[InputView], numel: usize, size: usize) -> (Vec<Vec<u8>>, bool) {
    let c = compile(g, &CompileOptions { verify_each_pass: true, ..Default::default() }).unwrap();
    let fused = c.plan.kernels.len() == 1
        && c.plan.kernels[0].library.is_none()
        && c.plan.kernels[0].body.iter().any(|i| matches!(i, Instr::Scan { .. } | Instr::ScanMap { .. }));
    let mut outs = vec![vec![0u8; numel * size]; c.plan.outputs.len()];
    let ptrs: Vec<OutputPtr> = outs.iter_mut().map(|o| OutputPtr(o.as_mut_ptr())).collect();
    device_for(DeviceKind::Cpu).execute(&c.plan, inputs, &ptrs, RunOptions::default()).unwrap();
    (outs, fused)
}

/// Bytes of `n` pseudo-random elements of `dtype` (small values, so products stay finite).
fn data(dtype: DType, n: usize) -> Vec<u8> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut out = Vec::with_capacity(n * dtype.size());
    for _ in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let v = (s >> 40) as f64 / (1u64 << 24) as f64 * 2.5 - 0.5;
        match dtype {
            DType::Bool => out.push((s >> 33) as u8 & 1),
            DType::I8 | DType::U8 => out.push((s >> 35) as u8),
            DType::I16 => out.extend(((s >> 30) as i16).to_ne_bytes()),
            DType::I32 => out.extend(((s >> 20) as i32).to_ne_bytes()),
            DType::U64 => out.extend((s >> 3).to_ne_bytes()),
            DType::F32 => out.extend((v as f32).to_ne_bytes()),
            DType::F64 => out.extend(v.to_ne_bytes()),
            other => panic!("no data for {other}"),
        }
    }
    out
}

#[test]
fn row_scans_in_row_kernels_equal_the_scan_routine_on_every_isa() {
    for i in isa::available() {
        isa::force(Some(i));
        row_scans_equal_the_routine();
    }
    isa::force(None);
}

fn row_scans_equal_the_routine() {
    let (rows, n) = (301, 129);
    let kinds = [ScanKind::Sum, ScanKind::Prod, ScanKind::Max, ScanKind::Min, ScanKind::LogSumExp];
    for dtype in [DType::Bool, DType::I8, DType::U8, DType::I16, DType::I32, DType::U64, DType::F32, DType::F64] {
        let x = data(dtype, rows * n);
        let view = InputView::contiguous(x.as_ptr(), dtype, vec![rows, n]);
        for kind in kinds {
            if kind == ScanKind::LogSumExp && !dtype.is_float() {
                continue;
            }
            // Two scans of the same rows share a row kernel (one alone calls the routine).
            let other = if kind == ScanKind::Max { ScanKind::Min } else { ScanKind::Max };
            let mut g = Graph::new();
            let xi = g.add_input(VType::strong(dtype), Shape(vec![rows, n]));
            let s = g.library(LibId::SCAN, Attr::Scan(kind, 1), &[xi], None).unwrap();
            let t = g.library(LibId::SCAN, Attr::Scan(other, 1), &[xi], None).unwrap();
            g.outputs.extend([s, t]);
            let (got, fused) = run(g, std::slice::from_ref(&view), rows * n, dtype.size());
            assert!(fused, "{kind:?} {dtype}");
            for (k, got) in [kind, other].into_iter().zip(got) {
                let mut want = vec![0u8; rows * n * dtype.size()];
                // SAFETY: `view` covers `x`, `want` holds its elements.
                unsafe { run_scan(&view, want.as_mut_ptr(), k, 1).unwrap() };
                assert_eq!(got, want, "{k:?} {dtype}");
            }
        }
    }
}

#[test]
fn producers_and_constant_rows_scan_inside_the_kernel() {
    let (rows, n) = (4096, 100);
    let x: Vec<f64> = (0..rows * n).map(|i| (i % 97) as f64 * 0.25 - 3.0).collect();
    let mut g = Graph::new();
    let xi = g.add_input(VType::strong(DType::F64), Shape(vec![rows, n]));
    let two = g.constant(Scalar::Float(2.0), VType::strong(DType::F64), None);
    let p = g.binary(BinaryOp::Mul, xi, two, None).unwrap();
    let s = g.library(LibId::SCAN, Attr::Scan(ScanKind::Max, 1), &[p], None).unwrap();
    let one = g.constant(Scalar::Float(1.0), VType::strong(DType::F64), None);
    let y = g.binary(BinaryOp::Add, s, one, None).unwrap();
    g.outputs.push(y);
    let (got, fused) = run(g, &[InputView::contiguous(x.as_ptr().cast(), DType::F64, vec![rows, n])], rows * n, 8);
    let got = &got[0];
    assert!(fused);
    for r in [0, 1, 2047, rows - 1] {
        let mut m = f64::NEG_INFINITY;
        for k in 0..n {
            m = m.max(x[r * n + k] * 2.0);
            let v = f64::from_ne_bytes(got[(r * n + k) * 8..(r * n + k + 1) * 8].try_into().unwrap());
            assert_eq!(v, m + 1.0, "row {r} k {k}");
        }
    }
    // A constant row: every row is 1.5, 3.0, 4.5, ...
    let mut g = Graph::new();
    let c = g.fill(Scalar::Float(1.5), DType::F32, Shape(vec![3, 40]), None);
    let s = g.library(LibId::SCAN, Attr::Scan(ScanKind::Sum, 1), &[c], None).unwrap();
    g.outputs.push(s);
    let (got, fused) = run(g, &[], 120, 4);
    let got = &got[0];
    assert!(fused, "a constant operand is computed in the kernel");
    for r in 0..3 {
        for k in 0..40 {
            let v = f32::from_ne_bytes(got[(r * 40 + k) * 4..(r * 40 + k + 1) * 4].try_into().unwrap());
            assert_eq!(v, 1.5 * (k + 1) as f32, "row {r} k {k}");
        }
    }
}
