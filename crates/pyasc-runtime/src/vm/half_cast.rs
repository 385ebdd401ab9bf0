//! Conversions between 16-bit float tiles (float16, bfloat16) and float32/float64 tiles.
//!
//! Kernels compute 16-bit floats in float32 lanes: a tile is widened once where it is loaded
//! and rounded to nearest even once where it is stored. float32 conversions are
//! `pyasc_kernels::convert16` (AVX-512 or F16C where the CPU has them, chosen at run time);
//! float64 ones are the `half` crate's.

use crate::instr::Val;
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use pyasc_ir::error::{IrError, Result};
use pyasc_ir::DType;
use pyasc_kernels::convert16;
use std::slice;

/// `d = convert(s)` over `len` elements, `from` or `to` a 16-bit float and the other a float.
///
/// # Safety
/// `s` (when a pointer) must address `len` elements of `from`, `d` `len` writable elements of
/// `to`, not overlapping `s`.
pub unsafe fn cast(from: DType, to: DType, s: Val, d: Val, len: usize) -> Result<()> {
    let Val::Ptr(dp) = d else { return Err(IrError::internal("a conversion writes a scalar register")) };
    let unsupported = || Err(IrError::internal(format!("no conversion from {from} to {to}")));
    // SAFETY: per this function's contract (for every block below).
    unsafe {
        let out = |size: usize| slice::from_raw_parts_mut(dp, len * size);
        match s {
            Val::Scalar(v) => {
                // A broadcast value: one conversion, then a fill.
                let v = v.as_f64();
                match to {
                    DType::F16 => typed::<f16>(out(2)).fill(f16::from_f64(v)),
                    DType::BF16 => typed::<bf16>(out(2)).fill(bf16::from_f64(v)),
                    DType::F32 => typed::<f32>(out(4)).fill(v as f32),
                    DType::F64 => typed::<f64>(out(8)).fill(v),
                    _ => return unsupported(),
                }
            }
            Val::Ptr(sp) => {
                let x = |size: usize| slice::from_raw_parts(sp as *const u8, len * size);
                match (from, to) {
                    (DType::F16, DType::F32) => convert16::f16_to_f32(typed_ref(x(2)), typed(out(4))),
                    (DType::F16, DType::F64) => typed_ref::<f16>(x(2)).convert_to_f64_slice(typed(out(8))),
                    (DType::BF16, DType::F32) => convert16::bf16_to_f32(typed_ref(x(2)), typed(out(4))),
                    (DType::BF16, DType::F64) => typed_ref::<bf16>(x(2)).convert_to_f64_slice(typed(out(8))),
                    (DType::F32, DType::F16) => convert16::f32_to_f16(typed_ref(x(4)), typed(out(2))),
                    (DType::F64, DType::F16) => typed::<f16>(out(2)).convert_from_f64_slice(typed_ref(x(8))),
                    (DType::F32, DType::BF16) => convert16::f32_to_bf16(typed_ref(x(4)), typed(out(2))),
                    (DType::F64, DType::BF16) => typed::<bf16>(out(2)).convert_from_f64_slice(typed_ref(x(8))),
                    (DType::F16, DType::BF16) | (DType::BF16, DType::F16) => {
                        // Through float32, which holds every value of both exactly.
                        let mut wide = vec![0f32; len];
                        cast(from, DType::F32, s, Val::Ptr(wide.as_mut_ptr() as *mut u8), len)?;
                        return cast(DType::F32, to, Val::Ptr(wide.as_mut_ptr() as *mut u8), d, len);
                    }
                    _ => return unsupported(),
                }
            }
        }
    }
    Ok(())
}

/// # Safety
/// `b` must be aligned for `T` and a whole number of `T`s, every bit pattern a valid `T`.
unsafe fn typed<T>(b: &mut [u8]) -> &mut [T] {
    // SAFETY: per the contract above.
    unsafe { slice::from_raw_parts_mut(b.as_mut_ptr() as *mut T, b.len() / size_of::<T>()) }
}

/// # Safety
/// As for [`typed`].
unsafe fn typed_ref<T>(b: &[u8]) -> &[T] {
    // SAFETY: per the contract above.
    unsafe { slice::from_raw_parts(b.as_ptr() as *const T, b.len() / size_of::<T>()) }
}
