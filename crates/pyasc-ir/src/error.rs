//! Typed errors shared by every crate, with ACL-style numeric codes and the user's source line.

use std::fmt;
use std::sync::Arc;

/// A place in the user's Python source: the expression that created a node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceLoc {
    /// The file name as Python reports it.
    pub file: Arc<str>,
    /// 1-based line number.
    pub line: u32,
}

impl fmt::Display for SourceLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// What went wrong; each kind maps to one Python exception class and one code.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An argument that is not an array or scalar, or an option out of range.
    InvalidArgument,
    /// Memory not aligned as required.
    Alignment,
    /// Shapes that do not broadcast or do not fit the op.
    Shape,
    /// A dtype the op does not accept.
    DType,
    /// Tracing failed: data-dependent control flow, an unsupported Python construct.
    Trace,
    /// A function required to become one kernel could not be fused.
    Fusion,
    /// A feature that exists in the API but not on this backend yet.
    Unsupported,
    /// A debug check found NaN or infinity produced by an op.
    Numerical,
    /// A Python integer outside the range of the integer dtype it is combined with.
    Overflow,
    /// The device ran out of memory.
    OutOfMemory,
    /// The device failed.
    Device,
    /// A bug in pyasc.
    Internal,
}

impl ErrorKind {
    /// Every kind.
    pub const ALL: [ErrorKind; 12] = [
        ErrorKind::InvalidArgument,
        ErrorKind::Alignment,
        ErrorKind::Shape,
        ErrorKind::DType,
        ErrorKind::Trace,
        ErrorKind::Fusion,
        ErrorKind::Unsupported,
        ErrorKind::Numerical,
        ErrorKind::Overflow,
        ErrorKind::OutOfMemory,
        ErrorKind::Device,
        ErrorKind::Internal,
    ];

    /// The numeric code: 1xxxxx bad input, 2xxxxx resources, 5xxxxx internal.
    pub fn code(self) -> u32 {
        match self {
            ErrorKind::InvalidArgument => 100000,
            ErrorKind::Alignment => 100001,
            ErrorKind::Shape => 100002,
            ErrorKind::DType => 100003,
            ErrorKind::Trace => 100004,
            ErrorKind::Fusion => 100005,
            ErrorKind::Unsupported => 100006,
            ErrorKind::Numerical => 100007,
            ErrorKind::Overflow => 100008,
            ErrorKind::OutOfMemory => 200001,
            ErrorKind::Device => 200002,
            ErrorKind::Internal => 500001,
        }
    }

    /// The name of the Python exception class.
    pub fn class_name(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "InvalidArgumentError",
            ErrorKind::Alignment => "AlignmentError",
            ErrorKind::Shape => "ShapeError",
            ErrorKind::DType => "DTypeError",
            ErrorKind::Trace => "TraceError",
            ErrorKind::Fusion => "FusionError",
            ErrorKind::Unsupported => "UnsupportedError",
            ErrorKind::Numerical => "NumericalError",
            ErrorKind::Overflow => "IntegerOverflowError",
            ErrorKind::OutOfMemory => "OutOfMemoryError",
            ErrorKind::Device => "DeviceError",
            ErrorKind::Internal => "InternalError",
        }
    }
}

/// An error with its kind, message and (when it comes from user code) source location.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct IrError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// The explanation, naming the problem.
    pub message: String,
    /// The user's line responsible, when known.
    pub loc: Option<SourceLoc>,
}

impl fmt::Display for IrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.loc {
            Some(loc) => write!(f, "{} (at {loc})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl IrError {
    /// A new error without a location.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        IrError { kind, message: message.into(), loc: None }
    }
    /// Attach a location unless one is already set.
    pub fn at(mut self, loc: Option<&SourceLoc>) -> Self {
        if self.loc.is_none() {
            self.loc = loc.cloned();
        }
        self
    }
    /// Shorthand for a shape error.
    pub fn shape(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Shape, message)
    }
    /// Shorthand for a dtype error.
    pub fn dtype(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::DType, message)
    }
    /// Shorthand for an internal error (a pyasc bug).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
}

/// Result type of the IR and compiler crates.
pub type Result<T, E = IrError> = std::result::Result<T, E>;
