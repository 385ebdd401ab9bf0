//! The executing half of the stencil sweep library op ([`pyasc_ir::library::StencilSweep`]):
//! `pyasc-kernels`' temporal-blocking sweep over C-contiguous fields, its bands on the calling
//! thread and the launch team, the state between blocks of steps in a warm pool block.

use crate::library::LibraryKernel;
use crate::view::InputView;
use crate::{memory, pool};
use pyasc_ir::attr::Attr;
use pyasc_ir::error::{ErrorKind, IrError, Result};
use pyasc_ir::library::stencil::{FixedCells, StencilSpec};
use pyasc_ir::library::{LibCall, LibId};
use pyasc_ir::tile::TileKernel;
use pyasc_ir::DType;
use pyasc_kernels::stencil::StencilFloat;
use pyasc_kernels::stencil_sweep::{sweep, Fixed};

/// Runs stencil sweeps.
pub struct StencilKernel;

/// Frees the sweep's buffers kept between calls (see `pyasc_kernels::stencil_sweep`); returns
/// how many sets there were.
pub fn release_kept() -> usize {
    pyasc_kernels::stencil_sweep::release_kept()
}

/// The cells of a C-contiguous field.
///
/// # Safety
/// `v` must be a live view of `T` cells that outlives the slice's use.
unsafe fn cells<'a, T>(v: &InputView) -> Result<&'a [T]> {
    if !v.is_c_contiguous() {
        return Err(IrError::internal("stencil fields must be C-contiguous"));
    }
    // SAFETY: a live contiguous view (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(v.ptr as *const T, v.shape.iter().product()) })
}

/// # Safety
/// As for [`LibraryKernel::run`].
unsafe fn run_t<T: StencilFloat>(s: &StencilSpec, operands: &[&InputView], out: *mut u8) -> Result<()> {
    let fields = s.fields(operands.len());
    // SAFETY: live operands (the trait's contract).
    let slices: Vec<&[T]> = operands[..fields].iter().map(|v| unsafe { cells::<T>(v) }).collect::<Result<_>>()?;
    let fixed = match s.fixed {
        // SAFETY: as above.
        FixedCells::Array => Fixed::From(unsafe { cells::<T>(operands[fields])? }),
        FixedCells::Const(c) => Fixed::Const(T::from_f64(c)),
    };
    let n = s.layout.cells();
    // SAFETY: `out` holds the result, the fields' shape (the trait's contract).
    let out = unsafe { std::slice::from_raw_parts_mut(out as *mut T, n) };
    let threads = pool::num_threads();
    let par = |blocks: usize, f: &(dyn Fn(usize) + Sync)| {
        let _ = pool::for_blocks(blocks, threads.saturating_sub(1), |b| {
            f(b);
            Ok::<(), ()>(())
        });
    };
    // The state between blocks of steps lives in a warm pool block: a fresh allocation faults
    // in its pages on every call (a tenth of 100 Jacobi steps over 2048 x 2048 float32, perf).
    let spare_block = if s.steps > 1 { Some(memory::allocate(std::mem::size_of_val(out))?) } else { None };
    // SAFETY: the block holds at least `n` cells of `T` (aligned for any float), is ours alone
    // and outlives the sweep.
    let spare = spare_block.as_ref().map(|b| unsafe { std::slice::from_raw_parts_mut(b.as_ptr() as *mut T, n) });
    sweep(&s.program, &s.layout, &slices, fixed, out, spare, s.steps, threads, s.cache_bytes, &par)
        .map_err(|m| IrError::new(ErrorKind::InvalidArgument, m))
}

impl LibraryKernel for StencilKernel {
    fn id(&self) -> LibId {
        LibId::STENCIL
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, _k: &TileKernel) -> Result<()> {
        let Attr::Stencil(s) = &call.attr else { return Err(IrError::internal("a stencil sweep needs its spec")) };
        match operands.first().map(|v| v.dtype) {
            // SAFETY: per the trait's contract.
            Some(DType::F32) => unsafe { run_t::<f32>(s, operands, out) },
            // SAFETY: per the trait's contract.
            Some(DType::F64) => unsafe { run_t::<f64>(s, operands, out) },
            _ => Err(IrError::new(ErrorKind::DType, "the stencil sweep computes in float32 or float64")),
        }
    }
}
