//! `nonzero` with a static size (JAX's rule): the flat positions (C order) of the first
//! `size` non-zero elements of the operand, as int64, padded with -1. The bindings turn it
//! into `nonzero`, `argwhere`, `flatnonzero` and `compress` with `size=` and `fill_value=`.

use super::{bad_call, LibCall, LibId, LibraryOp};
use crate::attr::Attr;
use crate::dtype::{DType, VType};
use crate::error::{IrError, Result};
use crate::shape::Shape;
use crate::tile::BufferDecl;

/// Positions of non-zero elements, a static number of them.
pub struct NonZero;

impl LibraryOp for NonZero {
    fn id(&self) -> LibId {
        LibId::NONZERO
    }
    fn name(&self) -> &'static str {
        "nonzero"
    }
    fn describe(&self, attr: &Attr) -> String {
        match attr {
            Attr::Count(n) => format!("nonzero[size={n}]"),
            _ => "nonzero".to_string(),
        }
    }
    fn arity_ok(&self, n: usize) -> bool {
        n == 1
    }
    fn infer(&self, attr: &Attr, _operands: &[(VType, &Shape)]) -> Result<(VType, Shape)> {
        match attr {
            Attr::Count(n) => Ok((VType::strong(DType::I64), Shape(vec![*n]))),
            _ => Err(IrError::internal("nonzero needs a size")),
        }
    }
    fn operand_dtype(&self, _i: usize, _result: DType) -> Option<DType> {
        Some(DType::Bool)
    }
    fn reinfers(&self) -> bool {
        false
    }
    fn verify_call(&self, call: &LibCall, operands: &[&BufferDecl], out: &BufferDecl) -> Result<()> {
        match (operands, &call.attr) {
            ([m], Attr::Count(_)) if m.dtype == DType::Bool && out.dtype == DType::I64 => Ok(()),
            _ => bad_call(self, "needs a size, a bool operand and an int64 result"),
        }
    }
}
