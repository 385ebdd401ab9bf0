//! Raw views of caller-owned memory: arrays read in place and output buffers.

use pyasc_ir::{DType, Scalar};

/// An argument as the executor reads it: any strides (in elements, possibly negative or
/// zero), never written.
#[derive(Clone, Debug)]
pub struct InputView {
    /// Address of element `[0, 0, ...]`, as the device running the plan addresses it.
    pub ptr: *const u8,
    /// Element type.
    pub dtype: DType,
    /// Extents.
    pub shape: Vec<usize>,
    /// Distance between neighbours along each axis, in elements.
    pub strides: Vec<isize>,
}

impl InputView {
    /// A C-contiguous view.
    pub fn contiguous(ptr: *const u8, dtype: DType, shape: Vec<usize>) -> Self {
        let mut strides = vec![0isize; shape.len()];
        let mut s = 1isize;
        for i in (0..shape.len()).rev() {
            strides[i] = s;
            s *= shape[i].max(1) as isize;
        }
        InputView { ptr, dtype, shape, strides }
    }

    /// Whether the elements lie in C order without gaps (axes of one element may have any stride).
    pub fn is_c_contiguous(&self) -> bool {
        let mut expect = 1isize;
        for (&n, &s) in self.shape.iter().zip(&self.strides).rev() {
            if n > 1 && s != expect {
                return false;
            }
            expect *= n as isize;
        }
        true
    }

    /// Read the element at flat C-order position 0 (used for 0-d and broadcast inputs).
    ///
    /// # Safety
    /// `ptr` must point to a readable element of `dtype`.
    pub unsafe fn first(&self) -> Scalar {
        // SAFETY: the caller guarantees ptr addresses one element of dtype.
        unsafe { read_scalar(self.ptr, self.dtype) }
    }
}

/// Read one element of `dtype` at `p`.
///
/// # Safety
/// `p` must point to a readable, aligned element of `dtype`.
pub unsafe fn read_scalar(p: *const u8, dtype: DType) -> Scalar {
    // SAFETY: per the contract above.
    unsafe {
        match dtype {
            DType::Bool => Scalar::Bool(*p != 0),
            DType::I8 => Scalar::Int(*(p as *const i8) as i64),
            DType::U8 => Scalar::Int(*p as i64),
            DType::I16 => Scalar::Int(*(p as *const i16) as i64),
            DType::U16 => Scalar::Int(*(p as *const u16) as i64),
            DType::I32 => Scalar::Int(*(p as *const i32) as i64),
            DType::U32 => Scalar::Int(*(p as *const u32) as i64),
            // uint64 values are held by their bits.
            DType::I64 | DType::U64 => Scalar::Int(*(p as *const i64)),
            DType::F32 => Scalar::Float(*(p as *const f32) as f64),
            DType::F64 => Scalar::Float(*(p as *const f64)),
            DType::F16 => Scalar::Float(half::f16::from_bits(*(p as *const u16)).to_f64()),
            DType::BF16 => Scalar::Float(half::bf16::from_bits(*(p as *const u16)).to_f64()),
        }
    }
}

/// A C-contiguous output buffer the caller allocated for one result of the plan, as the
/// device running the plan addresses it.
#[derive(Copy, Clone, Debug)]
pub struct OutputPtr(pub *mut u8);

/// A raw pointer that may cross threads; the executor guarantees disjoint writes.
#[derive(Copy, Clone, Debug)]
pub(crate) struct SendPtr(pub *mut u8);
// SAFETY: blocks write disjoint ranges and read memory nobody writes during the launch.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}
