//! The executing half of the sort library op ([`pyasc_ir::library::SortSpec`]): sorting,
//! argsort, partitions, top-k, gathers along an axis, order statistics (rows spread over the
//! worker pool), `searchsorted` and `unique` (whole arrays).
//!
//! Every element type is mapped to an order-preserving unsigned key (`keys`); rows are read
//! into scratch (any strides), sorted (`radix`: stable LSD radix sort, so argsort ties keep
//! index order) or selected (`select`, whose top-k scan has AVX-512 and AVX2 paths chosen at
//! run time in `simd`) on keys, and written to the C-contiguous output.

#[cfg(target_arch = "x86_64")]
pub mod avx512;
pub mod keys;
pub mod radix;
pub mod rows;
pub mod search;
pub mod select;
pub mod simd;

use crate::library::LibraryKernel;
use crate::view::InputView;
use keys::{Bool, Elem};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::library::{LibCall, SortMode, SortSpec};
use pyasc_ir::tile::TileKernel;
use pyasc_ir::{Attr, DType, LibId};

/// Sorting and selection as a library routine.
pub struct SortKernel;

/// Call `$f::<T>(args)` with `T` the element type of `$dt`.
macro_rules! by_dtype {
    ($dt:expr, $f:ident ( $($arg:expr),* )) => {
        match $dt {
            DType::Bool => $f::<Bool>($($arg),*),
            DType::I8 => $f::<i8>($($arg),*),
            DType::U8 => $f::<u8>($($arg),*),
            DType::I16 => $f::<i16>($($arg),*),
            DType::U16 => $f::<u16>($($arg),*),
            DType::I32 => $f::<i32>($($arg),*),
            DType::U32 => $f::<u32>($($arg),*),
            DType::I64 => $f::<i64>($($arg),*),
            DType::U64 => $f::<u64>($($arg),*),
            DType::F32 => $f::<f32>($($arg),*),
            DType::F64 => $f::<f64>($($arg),*),
            other => Err(IrError::dtype(format!("sorting {other} arrays is not supported"))),
        }
    };
}

impl LibraryKernel for SortKernel {
    fn id(&self) -> LibId {
        LibId::SORT
    }
    unsafe fn run(&self, call: &LibCall, operands: &[&InputView], out: *mut u8, k: &TileKernel) -> Result<()> {
        let Attr::Sort(spec) = &call.attr else { return Err(IrError::internal("sort needs a sort attribute")) };
        let loc = k.locs.first();
        let x = operands.first().ok_or_else(|| IrError::internal("sort needs an operand"))?;
        let r = match &spec.mode {
            SortMode::SearchSorted { right } => {
                let v = operands.get(1).ok_or_else(|| IrError::internal("searchsorted needs values"))?;
                // SAFETY: per the trait's contract.
                unsafe { by_dtype!(x.dtype, run_search(x, v, *right, out)) }
            }
            SortMode::Unique { size, fill } => {
                // SAFETY: per the trait's contract.
                unsafe { by_dtype!(x.dtype, run_unique(x, *size, *fill, out)) }
            }
            // SAFETY: per the trait's contract.
            _ => unsafe { by_dtype!(x.dtype, run_rows(spec, operands, out)) },
        };
        r.map_err(|mut e| {
            if e.loc.is_none() {
                e.loc = loc.cloned();
            }
            e
        })
    }
}

unsafe fn run_search<T: Elem>(a: &InputView, v: &InputView, right: bool, out: *mut u8) -> Result<()> {
    // SAFETY: per the caller's contract.
    unsafe { search::searchsorted::<T>(a, v, right, out as *mut i64) };
    Ok(())
}

unsafe fn run_unique<T: Elem>(x: &InputView, size: usize, fill: Option<pyasc_ir::Scalar>, out: *mut u8) -> Result<()> {
    let fill = fill.map(|s| match s {
        pyasc_ir::Scalar::Float(f) => T::from_f64(f),
        pyasc_ir::Scalar::Int(i) => T::from_f64(i as f64),
        pyasc_ir::Scalar::Bool(b) => T::from_f64(b as u8 as f64),
    });
    // SAFETY: per the caller's contract.
    unsafe { search::unique::<T>(x, size, fill, out as *mut T) };
    Ok(())
}

unsafe fn run_rows<T: Elem>(spec: &SortSpec, operands: &[&InputView], out: *mut u8) -> Result<()> {
    // SAFETY: per the caller's contract.
    unsafe { rows::run::<T>(spec, operands, out) }
}
