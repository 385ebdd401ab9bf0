//! The stencil sweep keeps its rings and band buffers between calls: a later sweep reuses them
//! whatever they hold and gives the bits of a per-cell reference, and `release_kept` frees
//! them. Its own test binary, so that no other sweep takes or keeps buffers meanwhile.

use pyasc_kernels::stencil::{BinOp, Instr, Operand, Program};
use pyasc_kernels::stencil_sweep::{release_kept, sweep, Fixed, Layout};

/// `steps` Jacobi steps `(n + s + w + e) / 4` computed cell by cell, border cells kept.
fn reference(u: &[f32], rows: usize, cols: usize, steps: usize) -> Vec<f32> {
    let mut cur = u.to_vec();
    for _ in 0..steps {
        let mut next = cur.clone();
        for i in 1..rows - 1 {
            for j in 1..cols - 1 {
                let k = i * cols + j;
                next[k] = (((cur[k - cols] + cur[k + cols]) + cur[k - 1]) + cur[k + 1]) * 0.25;
            }
        }
        cur = next;
    }
    cur
}

#[test]
fn kept_buffers_are_reused_with_any_contents_and_released() {
    let (rows, cols) = (97, 300);
    let l = Layout { shape: [rows, cols, 1], lo: [1, 1, 0], hi: [1, 1, 0] };
    let r = |o: isize| Operand::Read { field: 0, offset: o };
    let w = cols as isize;
    let prog = Program {
        instrs: vec![Instr::Sum {
            ops: vec![r(-w), r(w), r(-1), r(1)],
            neg: vec![false; 3],
            post: Some((BinOp::Mul, 0.25)),
            dest: None,
        }],
        tmps: 0,
    };
    let serial = |n: usize, f: &(dyn Fn(usize) + Sync)| (0..n).for_each(f);
    release_kept();
    // Rows of 300 cells run as a wavefront; the second and third grids reuse the first's rings.
    for (g, seed) in [(0usize, 7919usize), (1, 104_729), (2, 31)] {
        let u: Vec<f32> = (0..rows * cols).map(|k| ((k * seed + g) % 1013) as f32 / 101.0 - 3.0).collect();
        let mut got = vec![f32::NAN; u.len()];
        sweep(&prog, &l, &[&u], Fixed::From(&u), &mut got, None, 21, 2, 1 << 20, &serial).unwrap();
        assert_eq!(got, reference(&u, rows, cols, 21), "grid {g}");
    }
    let freed = release_kept();
    // One thread ran both bands, one after the other: its rings for the 20 steps before the
    // last, 8 rows of 300 float32 cells each, at least.
    assert!(freed >= 20 * 8 * 300 * 4, "released {freed} bytes");
    assert_eq!(release_kept(), 0);
}
