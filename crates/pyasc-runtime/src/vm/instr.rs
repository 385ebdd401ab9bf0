//! Executing one tile instruction: the single place where dtypes pick SIMD primitives
//! of `pyasc-kernels`.

use pyasc_ir::error::{IrError, Result};
use pyasc_ir::op::{BinaryClass, BinaryOp, ReduceOp, UnaryKind, UnaryOp};
use pyasc_ir::tile::{Instr, RegDecl};
use pyasc_ir::{DType, Scalar};
use pyasc_kernels::binary;
use pyasc_kernels::chain::{chain, chains, ChainFloat};
use pyasc_kernels::scale_shift::{normalize, scale_shift};
use pyasc_kernels::select_cmp::select_cmp;
use pyasc_kernels::unary;
use pyasc_kernels::{cast, fill, select, Element, Src, UInt8};
use std::slice;

/// A register's contents for the current tile.
#[derive(Copy, Clone, Debug)]
pub enum Val {
    /// `len` elements at this address.
    Ptr(*mut u8),
    /// One value broadcast over the tile.
    Scalar(Scalar),
}

/// Conversion of a constant to a tile element type.
pub trait FromScalar: Element {
    /// The constant as this type.
    fn from_scalar(s: Scalar) -> Self;
}

impl FromScalar for u8 {
    fn from_scalar(s: Scalar) -> Self {
        s.as_bool() as u8
    }
}
/// Integer constants: wrapped into the type (a uint64 constant is held by its bits).
macro_rules! int_from_scalar {
    ($($t:ty),*) => {$(
        impl FromScalar for $t {
            fn from_scalar(s: Scalar) -> Self {
                s.as_i64() as $t
            }
        }
    )*};
}

int_from_scalar!(i8, i16, u16, i32, u32, i64, u64);

impl FromScalar for UInt8 {
    fn from_scalar(s: Scalar) -> Self {
        UInt8(s.as_i64() as u8)
    }
}
impl FromScalar for f32 {
    fn from_scalar(s: Scalar) -> Self {
        s.as_f64() as f32
    }
}
impl FromScalar for f64 {
    fn from_scalar(s: Scalar) -> Self {
        s.as_f64()
    }
}

/// Run `$body` with `$T` bound to the element type of `$dtype`.
macro_rules! with_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::Bool => {
                type $T = u8;
                $body
            }
            DType::I8 => {
                type $T = i8;
                $body
            }
            DType::U8 => {
                type $T = UInt8;
                $body
            }
            DType::I16 => {
                type $T = i16;
                $body
            }
            DType::U16 => {
                type $T = u16;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::U32 => {
                type $T = u32;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::U64 => {
                type $T = u64;
                $body
            }
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            other => {
                return Err(IrError::new(
                    pyasc_ir::error::ErrorKind::Unsupported,
                    format!("{other} tiles are not executable on this device"),
                ))
            }
        }
    };
}

/// Typed view of an operand.
///
/// # Safety
/// A `Ptr` must address `len` initialised elements of `T` not written during the borrow.
pub(crate) unsafe fn src<'a, T: FromScalar>(v: Val, len: usize) -> Src<'a, T> {
    match v {
        // SAFETY: per the contract above.
        Val::Ptr(p) => Src::Slice(unsafe { slice::from_raw_parts(p as *const T, len) }),
        Val::Scalar(s) => Src::Scalar(T::from_scalar(s)),
    }
}

/// `d = op2(op1(a, b), c)` (`op2(c, ..)` if `swap`) on a float tile.
///
/// # Safety
/// As for [`exec`].
unsafe fn exec_chain(
    op1: BinaryOp,
    op2: BinaryOp,
    swap: bool,
    dtype: DType,
    abc: [Val; 3],
    d: Val,
    len: usize,
) -> Result<()> {
    if !chains(op1) || !chains(op2) {
        return Err(IrError::internal(format!("no chain kernel for {} then {}", op1.name(), op2.name())));
    }
    /// # Safety
    /// As for [`exec`].
    unsafe fn typed<T: ChainFloat + FromScalar>(
        op1: BinaryOp,
        op2: BinaryOp,
        swap: bool,
        [a, b, c]: [Val; 3],
        d: Val,
        len: usize,
    ) -> Result<()> {
        // SAFETY: per this function's contract.
        unsafe { chain::<T>(op1, op2, swap, src(a, len), src(b, len), src(c, len), dst(d, len)?) };
        Ok(())
    }
    // SAFETY: per this function's contract.
    unsafe {
        match dtype {
            DType::F32 => typed::<f32>(op1, op2, swap, abc, d, len),
            DType::F64 => typed::<f64>(op1, op2, swap, abc, d, len),
            other => Err(IrError::internal(format!("no {other} chain kernel"))),
        }
    }
}

/// `d = op1(a, b) * scale + shift` on `len` elements of a float dtype.
///
/// # Safety
/// As for [`exec`].
unsafe fn exec_scale_shift(op1: BinaryOp, dtype: DType, ops: [Val; 4], d: Val, len: usize) -> Result<()> {
    if !chains(op1) {
        return Err(IrError::internal(format!("no scale-shift kernel starting with {}", op1.name())));
    }
    /// # Safety
    /// As for [`exec`].
    unsafe fn typed<T: ChainFloat + FromScalar>(
        op1: BinaryOp,
        [a, b, s, t]: [Val; 4],
        d: Val,
        len: usize,
    ) -> Result<()> {
        // SAFETY: per this function's contract.
        unsafe { scale_shift::<T>(op1, src(a, len), src(b, len), src(s, len), src(t, len), dst(d, len)?) };
        Ok(())
    }
    // SAFETY: per this function's contract.
    unsafe {
        match dtype {
            DType::F32 => typed::<f32>(op1, ops, d, len),
            DType::F64 => typed::<f64>(op1, ops, d, len),
            other => Err(IrError::internal(format!("no {other} scale-shift kernel"))),
        }
    }
}

/// Typed view of a destination.
///
/// # Safety
/// `v` must be a `Ptr` to `len` writable elements of `T` that nothing else borrows.
unsafe fn dst<'a, T>(v: Val, len: usize) -> Result<&'a mut [T]> {
    match v {
        // SAFETY: per the contract above.
        Val::Ptr(p) => Ok(unsafe { slice::from_raw_parts_mut(p as *mut T, len) }),
        Val::Scalar(_) => Err(IrError::internal("instruction writes a scalar register")),
    }
}

/// Apply a slice-to-slice function to an operand that may be a scalar: a scalar is
/// computed once and broadcast.
fn map1<S: FromScalar, D: FromScalar>(x: Src<'_, S>, y: &mut [D], f: impl Fn(&[S], &mut [D])) {
    match x {
        Src::Slice(s) => f(s, y),
        Src::Scalar(v) => {
            if let Some((first, rest)) = y.split_first_mut() {
                f(&[v], slice::from_mut(first));
                fill(*first, rest);
            }
        }
    }
}

/// `d = ((x - mean) * rstd) * scale + shift` on a float tile.
///
/// # Safety
/// As for [`exec`].
unsafe fn exec_normalize(dtype: DType, ops: [Val; 5], d: Val, len: usize) -> Result<()> {
    /// # Safety
    /// As for [`exec`].
    unsafe fn typed<T: ChainFloat + FromScalar>([x, m, r, s, t]: [Val; 5], d: Val, len: usize) -> Result<()> {
        // SAFETY: per this function's contract.
        unsafe { normalize::<T>(src(x, len), src(m, len), src(r, len), src(s, len), src(t, len), dst(d, len)?) };
        Ok(())
    }
    // SAFETY: per this function's contract.
    unsafe {
        match dtype {
            DType::F32 => typed::<f32>(ops, d, len),
            DType::F64 => typed::<f64>(ops, d, len),
            other => Err(IrError::internal(format!("no {other} normalize kernel"))),
        }
    }
}

/// `d = cmp(a, b) ? t : f` on a tile of 32- or 64-bit values.
///
/// # Safety
/// As for [`exec`].
unsafe fn exec_select_cmp(cmp: BinaryOp, dtype: DType, ops: [Val; 4], d: Val, len: usize) -> Result<()> {
    /// # Safety
    /// As for [`exec`].
    unsafe fn typed<T: Element + FromScalar>(cmp: BinaryOp, [a, b, t, f]: [Val; 4], d: Val, len: usize) -> Result<()> {
        // SAFETY: per this function's contract.
        unsafe { select_cmp::<T>(cmp, src(a, len), src(b, len), src(t, len), src(f, len), dst(d, len)?) };
        Ok(())
    }
    // SAFETY: per this function's contract.
    unsafe {
        match dtype {
            DType::F32 => typed::<f32>(cmp, ops, d, len),
            DType::F64 => typed::<f64>(cmp, ops, d, len),
            DType::I32 => typed::<i32>(cmp, ops, d, len),
            DType::I64 => typed::<i64>(cmp, ops, d, len),
            other => Err(IrError::internal(format!("no {other} compare-select kernel"))),
        }
    }
}

/// Execute `ins` on a tile of `len` elements.
///
/// # Safety
/// `vals` must hold, for every register, a value valid for `len` elements of the
/// register's dtype; the destination must not alias any operand (the tile verifier
/// guarantees distinct registers, the VM distinct memory).
pub unsafe fn exec(ins: &Instr, decls: &[RegDecl], vals: &[Val], len: usize) -> Result<()> {
    let dt = |r: pyasc_ir::tile::Reg| decls[r.0 as usize].dtype;
    let val = |r: pyasc_ir::tile::Reg| vals[r.0 as usize];
    // SAFETY: register values satisfy this function's contract (for every block below).
    unsafe {
        match *ins {
            Instr::Unary { op, dst: d, src: s } => exec_unary(op, dt(s), val(s), val(d), len),
            Instr::Binary { op, dst: d, a, b } => exec_binary(op, dt(a), val(a), val(b), val(d), len),
            Instr::Select { dst: d, cond, a, b } => with_dtype!(dt(d), T => {
                select::<T>(src::<u8>(val(cond), len), src::<T>(val(a), len), src::<T>(val(b), len), dst::<T>(val(d), len)?);
                Ok(())
            }),
            Instr::SelectCmp { cmp, dst: d, a, b, t, f } => {
                exec_select_cmp(cmp, dt(d), [val(a), val(b), val(t), val(f)], val(d), len)
            }
            Instr::Cast { dst: d, src: s } if dt(s).is_half() || dt(d).is_half() => {
                crate::half_cast::cast(dt(s), dt(d), val(s), val(d), len)
            }
            Instr::Cast { dst: d, src: s } => with_dtype!(dt(s), S => with_dtype!(dt(d), D => {
                map1(src::<S>(val(s), len), dst::<D>(val(d), len)?, cast::<S, D>);
                Ok(())
            })),
            Instr::Chain { op1, op2, swap, dst: d, a, b, c } => {
                exec_chain(op1, op2, swap, dt(d), [val(a), val(b), val(c)], val(d), len)
            }
            Instr::ScaleShift { op1, dst: d, a, b, scale, shift } => {
                exec_scale_shift(op1, dt(d), [val(a), val(b), val(scale), val(shift)], val(d), len)
            }
            Instr::Normalize { dst: d, x, mean, rstd, scale, shift } => {
                exec_normalize(dt(d), [val(x), val(mean), val(rstd), val(scale), val(shift)], val(d), len)
            }
            Instr::Reduce { .. } | Instr::ReduceMap { .. } | Instr::SumSquaredDev { .. } => {
                Err(IrError::internal("reductions run row by row in the VM"))
            }
            Instr::Copy { dst: d, src: s } if dt(d).is_half() => match val(s) {
                Val::Ptr(p) => {
                    dst::<u16>(val(d), len)?.copy_from_slice(slice::from_raw_parts(p as *const u16, len));
                    Ok(())
                }
                v @ Val::Scalar(_) => crate::half_cast::cast(DType::F64, dt(d), v, val(d), len),
            },
            Instr::Scan { .. } | Instr::ScanMap { .. } => Err(IrError::internal("scans run row by row in the VM")),
            Instr::Copy { dst: d, src: s } => with_dtype!(dt(d), T => {
                let out = dst::<T>(val(d), len)?;
                match src::<T>(val(s), len) {
                    Src::Slice(x) => out.copy_from_slice(x),
                    Src::Scalar(v) => fill(v, out),
                }
                Ok(())
            }),
        }
    }
}

unsafe fn exec_unary(op: UnaryOp, dtype: DType, s: Val, d: Val, len: usize) -> Result<()> {
    let unsupported = || Err(IrError::internal(format!("{} has no {dtype} kernel", op.name())));
    let classify = op.kind() == UnaryKind::Classify;
    let float = unary::has_float_kernel(op);
    let int = unary::has_int_kernel(op);
    // SAFETY: operand and destination are valid for `len` elements (caller's contract).
    unsafe {
        match dtype {
            DType::F32 if classify => {
                map1(src::<f32>(s, len), dst::<u8>(d, len)?, |x, y| unary::classify_f32(op, x, y))
            }
            DType::F64 if classify => {
                map1(src::<f64>(s, len), dst::<u8>(d, len)?, |x, y| unary::classify_f64(op, x, y))
            }
            DType::F32 if float => map1(src::<f32>(s, len), dst::<f32>(d, len)?, |x, y| unary::f32(op, x, y)),
            DType::F64 if float => map1(src::<f64>(s, len), dst::<f64>(d, len)?, |x, y| unary::f64(op, x, y)),
            DType::I32 if int => map1(src::<i32>(s, len), dst::<i32>(d, len)?, |x, y| unary::i32(op, x, y)),
            DType::I64 if int => map1(src::<i64>(s, len), dst::<i64>(d, len)?, |x, y| unary::i64(op, x, y)),
            DType::U64 if int => map1(src::<u64>(s, len), dst::<u64>(d, len)?, |x, y| unary::u64(op, x, y)),
            DType::Bool => match op {
                UnaryOp::Not => map1(src::<u8>(s, len), dst::<u8>(d, len)?, unary::bool_not),
                UnaryOp::Abs | UnaryOp::Square => {
                    map1(src::<u8>(s, len), dst::<u8>(d, len)?, |x, y| y.copy_from_slice(x))
                }
                _ => return unsupported(),
            },
            _ => return unsupported(),
        }
    }
    Ok(())
}

/// True when a signed integer exponent among `len` elements of `b` is negative.
///
/// # Safety
/// `b` must address `len` elements of `dtype` (or be a scalar).
unsafe fn negative_exponent(dtype: DType, b: Val, len: usize) -> bool {
    fn any_negative<T: Copy + PartialOrd + Default>(s: Src<'_, T>) -> bool {
        match s {
            Src::Slice(x) => x.iter().any(|v| *v < T::default()),
            Src::Scalar(v) => v < T::default(),
        }
    }
    // SAFETY: per the contract above.
    unsafe {
        match dtype {
            DType::I32 => any_negative(src::<i32>(b, len)),
            DType::I64 => any_negative(src::<i64>(b, len)),
            _ => false,
        }
    }
}

pub(crate) unsafe fn exec_binary(op: BinaryOp, dtype: DType, a: Val, b: Val, d: Val, len: usize) -> Result<()> {
    let unsupported = || Err(IrError::internal(format!("{} has no {dtype} kernel", op.name())));
    // SAFETY: the exponent holds `len` elements (caller's contract).
    if op == BinaryOp::Pow && unsafe { negative_exponent(dtype, b, len) } {
        // As NumPy: an error, never a silent 0 (1 ** -1 is 1, 2 ** -1 is not an integer).
        return Err(IrError::new(
            pyasc_ir::error::ErrorKind::InvalidArgument,
            "integers to negative integer powers are not allowed",
        ));
    }
    // SAFETY: operands and destination are valid for `len` elements (caller's contract).
    unsafe {
        match (op.class(), dtype) {
            (BinaryClass::Compare, _) => with_dtype!(dtype, T => {
                binary::compare::<T>(op, src::<T>(a, len), src::<T>(b, len), dst::<u8>(d, len)?);
            }),
            (BinaryClass::Bitwise, DType::Bool) => binary::bitwise::<u8>(op, src(a, len), src(b, len), dst(d, len)?),
            (BinaryClass::Bitwise, DType::I32) => binary::bitwise::<i32>(op, src(a, len), src(b, len), dst(d, len)?),
            (BinaryClass::Bitwise, DType::I64) => binary::bitwise::<i64>(op, src(a, len), src(b, len), dst(d, len)?),
            (BinaryClass::Bitwise, DType::U64) => binary::bitwise::<u64>(op, src(a, len), src(b, len), dst(d, len)?),
            (BinaryClass::Arith | BinaryClass::Integer, DType::I32) => {
                binary::arith::<i32>(op, src(a, len), src(b, len), dst(d, len)?)
            }
            (BinaryClass::Arith | BinaryClass::Integer, DType::I64) => {
                binary::arith::<i64>(op, src(a, len), src(b, len), dst(d, len)?)
            }
            (BinaryClass::Arith | BinaryClass::Integer, DType::U64) => {
                binary::arith::<u64>(op, src(a, len), src(b, len), dst(d, len)?)
            }
            (BinaryClass::Arith | BinaryClass::Float, DType::F32) => {
                binary::arith::<f32>(op, src(a, len), src(b, len), dst(d, len)?)
            }
            (BinaryClass::Arith | BinaryClass::Float, DType::F64) => {
                binary::arith::<f64>(op, src(a, len), src(b, len), dst(d, len)?)
            }
            _ => return unsupported(),
        }
    }
    Ok(())
}

/// `d = op(a, b)` over `rows` rows of `c` elements where an operand flagged `true` holds one
/// value per row: float arithmetic in one kernel dispatch for all the rows. False (nothing
/// done) for other ops and dtypes, which run row by row.
///
/// # Safety
/// Element operands and the destination hold `rows * c` elements, per-row operands `rows`.
pub(crate) unsafe fn exec_binary_rows(
    op: BinaryOp,
    dtype: DType,
    a: (Val, bool),
    b: (Val, bool),
    d: Val,
    rows: usize,
    c: usize,
) -> Result<bool> {
    if !matches!(op.class(), BinaryClass::Arith | BinaryClass::Float) || c == 0 {
        return Ok(false);
    }
    unsafe fn operand<'a, T: FromScalar>(v: (Val, bool), rows: usize, c: usize) -> binary::RowSrc<'a, T> {
        match v {
            // SAFETY: per the contract of `exec_binary_rows`.
            (Val::Ptr(p), true) => binary::RowSrc::PerRow(unsafe { slice::from_raw_parts(p as *const T, rows) }),
            // SAFETY: as above.
            (Val::Ptr(p), false) => binary::RowSrc::Rows(unsafe { slice::from_raw_parts(p as *const T, rows * c) }),
            (Val::Scalar(s), _) => binary::RowSrc::Scalar(T::from_scalar(s)),
        }
    }
    // SAFETY: per this function's contract.
    unsafe {
        match dtype {
            DType::F32 => binary::arith_rows::<f32>(op, operand(a, rows, c), operand(b, rows, c), dst(d, rows * c)?, c),
            DType::F64 => binary::arith_rows::<f64>(op, operand(a, rows, c), operand(b, rows, c), dst(d, rows * c)?, c),
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// `op` over `n` copies of `v` (of dtype `dtype`), as the row kernels would compute it.
fn reduce_uniform(op: ReduceOp, dtype: DType, v: Scalar, n: usize) -> Scalar {
    let float = dtype.is_float();
    let round = |x: f64| if dtype == DType::F32 { x as f32 as f64 } else { x };
    match op {
        ReduceOp::Sum if float => Scalar::Float(round(round(v.as_f64()) * n as f64)),
        ReduceOp::Sum => Scalar::Int(v.as_i64().wrapping_mul(n as i64)),
        ReduceOp::Prod if float => Scalar::Float(round(round(v.as_f64()).powf(n as f64))),
        ReduceOp::Prod => {
            let (mut acc, mut base, mut e) = (1i64, v.as_i64(), n as u64);
            while e > 0 {
                if e & 1 == 1 {
                    acc = acc.wrapping_mul(base);
                }
                base = base.wrapping_mul(base);
                e >>= 1;
            }
            Scalar::Int(acc)
        }
        ReduceOp::Max | ReduceOp::Min => v,
        ReduceOp::ArgMax | ReduceOp::ArgMin => Scalar::Int(0),
        ReduceOp::Any => Scalar::Bool(n > 0 && v.as_bool()),
        ReduceOp::All => Scalar::Bool(n == 0 || v.as_bool()),
    }
}

/// Write `v` as one element of `dtype` at `p`.
///
/// # Safety
/// `p` must be valid for one element of `dtype`.
pub(crate) unsafe fn write_scalar(p: *mut u8, dtype: DType, v: Scalar) -> Result<()> {
    // SAFETY: per the contract above.
    unsafe {
        with_dtype!(dtype, T => {
            *(p as *mut T) = T::from_scalar(v);
            Ok(())
        })
    }
}

/// `dst[r, :] = kind(src[r, :])` (running values) for `rows` rows of `row_len` elements; a
/// broadcast source is first spread over one row (each row then scans the same values).
///
/// # Safety
/// `src` (unless a scalar) and `dst` must address `rows * row_len` elements of `dtype`.
pub unsafe fn exec_scan(
    kind: pyasc_ir::library::ScanKind,
    dtype: DType,
    input: Val,
    dst: Val,
    rows: usize,
    row_len: usize,
) -> Result<()> {
    let Val::Ptr(dp) = dst else { return Err(IrError::internal("scan into a scalar register")) };
    match input {
        // SAFETY: per this function's contract.
        Val::Ptr(sp) => unsafe { crate::scan::scan_rows(kind, dtype, sp, dp, rows, row_len) },
        Val::Scalar(v) => {
            let size = dtype.size();
            let mut row = vec![0u64; (row_len * size).div_ceil(8)];
            let rp = row.as_mut_ptr() as *mut u8;
            for i in 0..row_len {
                // SAFETY: `row` holds `row_len` elements of `dtype`.
                unsafe { write_scalar(rp.add(i * size), dtype, v)? };
            }
            for r in 0..rows {
                // SAFETY: row `r` of the destination holds `row_len` elements.
                unsafe { crate::scan::scan_rows(kind, dtype, rp, dp.add(r * row_len * size), 1, row_len)? };
            }
            Ok(())
        }
    }
}

/// `dst[r] = op(src[r * row_len .. (r + 1) * row_len])` for `rows` rows.
///
/// # Safety
/// `src` must address `rows * row_len` elements of `dtype`; `dst` `rows` elements of the
/// reduction's result dtype.
pub unsafe fn exec_reduce(op: ReduceOp, dtype: DType, input: Val, dst: Val, rows: usize, row_len: usize) -> Result<()> {
    use pyasc_kernels::reduce as r;
    let Val::Ptr(dp) = dst else { return Err(IrError::internal("reduction into a scalar register")) };
    if let Val::Scalar(v) = input {
        // A uniform row (a broadcast value) reduces in closed form: no row-sized copy.
        let value = reduce_uniform(op, dtype, v, row_len);
        let out = op.result_dtype(dtype);
        for i in 0..rows {
            // SAFETY: `dst` holds `rows` elements of the result dtype (caller's contract).
            unsafe { write_scalar(dp.add(i * out.size()), out, value)? };
        }
        return Ok(());
    }
    if let (Val::Ptr(sp), DType::F32, true) = (input, dtype, row_len > 0) {
        let arg = matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin);
        if arg || matches!(op, ReduceOp::Max | ReduceOp::Min) {
            // All rows in one dispatch (short rows otherwise cost a dispatch each).
            let max = matches!(op, ReduceOp::ArgMax | ReduceOp::Max);
            // SAFETY: the source holds `rows` rows of `row_len` float32 values, the
            // destination `rows` results (caller's contract).
            unsafe {
                let x = std::slice::from_raw_parts(sp as *const f32, rows * row_len);
                if arg {
                    r::arg_extreme_rows_f32(x, row_len, max, std::slice::from_raw_parts_mut(dp as *mut i64, rows));
                } else {
                    r::extreme_rows_f32(x, row_len, max, std::slice::from_raw_parts_mut(dp as *mut f32, rows));
                }
            }
            return Ok(());
        }
    }
    let row = |i: usize| -> Val {
        match input {
            // SAFETY: row `i` lies inside the source (caller's contract).
            Val::Ptr(p) => Val::Ptr(unsafe { p.add(i * row_len * dtype.size()) }),
            s => s,
        }
    };
    // SAFETY: rows and destinations are valid per the caller's contract (for every block below).
    unsafe {
        for i in 0..rows {
            macro_rules! rowslice {
                ($t:ty) => {
                    match src::<$t>(row(i), row_len) {
                        Src::Slice(x) => x,
                        Src::Scalar(_) => return Err(IrError::internal("uniform rows reduce in closed form")),
                    }
                };
            }
            match (op, dtype) {
                (ReduceOp::ArgMax | ReduceOp::ArgMin, _) => {
                    let max = op == ReduceOp::ArgMax;
                    let idx = match dtype {
                        DType::F32 => r::arg_extreme_f32(rowslice!(f32), max),
                        DType::F64 => r::arg_extreme_f64(rowslice!(f64), max),
                        _ => with_dtype!(dtype, T => r::arg_extreme(rowslice!(T), max)),
                    };
                    *(dp as *mut i64).add(i) = idx as i64;
                }
                (ReduceOp::Any, DType::Bool) => *dp.add(i) = r::any_u8(rowslice!(u8)) as u8,
                (ReduceOp::All, DType::Bool) => *dp.add(i) = r::all_u8(rowslice!(u8)) as u8,
                (ReduceOp::Sum, DType::F32) => *(dp as *mut f32).add(i) = r::sum_f32(rowslice!(f32)) as f32,
                (ReduceOp::Sum, DType::F64) => *(dp as *mut f64).add(i) = r::sum_f64(rowslice!(f64)),
                (ReduceOp::Sum, DType::I64) => *(dp as *mut i64).add(i) = r::sum_i64(rowslice!(i64)),
                (ReduceOp::Sum, DType::U64) => *(dp as *mut u64).add(i) = r::sum_u64(rowslice!(u64)),
                (ReduceOp::Prod, DType::F32) => *(dp as *mut f32).add(i) = r::prod_f64(rowslice!(f32)) as f32,
                (ReduceOp::Prod, DType::F64) => *(dp as *mut f64).add(i) = r::prod_f64(rowslice!(f64)),
                (ReduceOp::Prod, DType::I64) => *(dp as *mut i64).add(i) = r::prod_i64(rowslice!(i64)),
                (ReduceOp::Prod, DType::U64) => *(dp as *mut u64).add(i) = r::prod_u64(rowslice!(u64)),
                (ReduceOp::Max, DType::F32) => *(dp as *mut f32).add(i) = r::max_f32(rowslice!(f32)),
                (ReduceOp::Min, DType::F32) => *(dp as *mut f32).add(i) = r::min_f32(rowslice!(f32)),
                (ReduceOp::Max, DType::F64) => *(dp as *mut f64).add(i) = r::max_f64(rowslice!(f64)),
                (ReduceOp::Min, DType::F64) => *(dp as *mut f64).add(i) = r::min_f64(rowslice!(f64)),
                (ReduceOp::Max | ReduceOp::Min, DType::Bool | DType::I32 | DType::I64 | DType::U64) => {
                    let max = op == ReduceOp::Max;
                    macro_rules! extreme {
                        ($t:ty) => {{
                            let x = rowslice!($t);
                            let v = if max { r::max_int(x) } else { r::min_int(x) };
                            *(dp as *mut $t).add(i) = v.ok_or_else(|| IrError::internal("max/min of an empty row"))?;
                        }};
                    }
                    match dtype {
                        DType::Bool => extreme!(u8),
                        DType::I32 => extreme!(i32),
                        DType::U64 => extreme!(u64),
                        _ => extreme!(i64),
                    }
                }
                _ => return Err(IrError::internal(format!("no {} reduction for {dtype}", op.name()))),
            }
        }
    }
    Ok(())
}

/// `dst[i] = op(map(a[i, :], b[i, :]))` for each of `rows` rows of `row_len` elements (a
/// scalar operand stands for a uniform row).
///
/// # Safety
/// `a` and `b` must hold `rows * row_len` elements of `dtype` (or be scalars) and `dst`
/// `rows` values of `dtype`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn exec_reduce_map(
    op: ReduceOp,
    map: BinaryOp,
    dtype: DType,
    a: Val,
    b: Val,
    dst: Val,
    rows: usize,
    row_len: usize,
) -> Result<()> {
    use pyasc_kernels::reduce_map::{maps, sum_map_f32, sum_map_f64};
    let Val::Ptr(dp) = dst else { return Err(IrError::internal("reduction into a scalar register")) };
    if op != ReduceOp::Sum || !maps(map) {
        return Err(IrError::internal(format!("no mapped {} of {}", op.name(), map.name())));
    }
    let row = |v: Val, i: usize| -> Val {
        match v {
            // SAFETY: row `i` lies inside the operand (caller's contract).
            Val::Ptr(p) => Val::Ptr(unsafe { p.add(i * row_len * dtype.size()) }),
            s => s,
        }
    };
    // SAFETY: rows and destinations are valid per the caller's contract.
    unsafe {
        for i in 0..rows {
            match dtype {
                DType::F32 => {
                    let s = sum_map_f32(map, src(row(a, i), row_len), src(row(b, i), row_len), row_len);
                    *(dp as *mut f32).add(i) = s as f32;
                }
                DType::F64 => {
                    let s = sum_map_f64(map, src(row(a, i), row_len), src(row(b, i), row_len), row_len);
                    *(dp as *mut f64).add(i) = s;
                }
                _ => return Err(IrError::internal(format!("no mapped sum for {dtype}"))),
            }
        }
    }
    Ok(())
}

/// `dst[r] = sum((src[r, :] - c_r)^2)` for `rows` rows of `row_len` float elements, where
/// `c_r` is `center` itself when it is a scalar and its `r`-th value otherwise (one value
/// per row).
///
/// # Safety
/// `src` holds `rows * row_len` elements (or is a scalar), a pointer `center` `rows` values
/// and `dst` `rows` values, all of `dtype`.
pub unsafe fn exec_sum_sq_dev(
    dtype: DType,
    src: Val,
    center: Val,
    dst: Val,
    rows: usize,
    row_len: usize,
) -> Result<()> {
    use pyasc_kernels::reduce_map::{sum_sq_dev_f32, sum_sq_dev_f64};
    let Val::Ptr(dp) = dst else { return Err(IrError::internal("reduction into a scalar register")) };
    /// Row `r`'s sum, stored as the row's result.
    ///
    /// # Safety
    /// As for `exec_sum_sq_dev`.
    unsafe fn row<T: FromScalar + Element>(
        x: Val,
        c: Val,
        n: usize,
        sum: fn(&[T], T) -> f64,
        out: *mut T,
        to: fn(f64) -> T,
    ) {
        // SAFETY: per the contract above.
        let (xs, m) = unsafe { (self::src::<T>(x, n), self::src::<T>(c, 1)) };
        let m = match m {
            Src::Scalar(m) | Src::Slice(&[m]) => m,
            Src::Slice(_) => unreachable!("one centre value"),
        };
        let total = match xs {
            Src::Slice(xs) => sum(xs, m),
            // A broadcast row is summed like any other, value by value.
            Src::Scalar(u) => sum(&vec![u; n], m),
        };
        // SAFETY: per the contract above.
        unsafe { *out = to(total) };
    }
    // SAFETY: rows, centres and destinations are valid per the contract above.
    unsafe {
        for r in 0..rows {
            let at = |v: Val, step: usize| match v {
                Val::Ptr(p) => Val::Ptr(p.add(r * step * dtype.size())),
                s => s,
            };
            let (x, c) = (at(src, row_len), at(center, 1));
            match dtype {
                DType::F32 => row::<f32>(x, c, row_len, sum_sq_dev_f32, (dp as *mut f32).add(r), |v| v as f32),
                DType::F64 => row::<f64>(x, c, row_len, sum_sq_dev_f64, (dp as *mut f64).add(r), |v| v),
                _ => return Err(IrError::internal(format!("no sum of squared deviations for {dtype}"))),
            }
        }
    }
    Ok(())
}
