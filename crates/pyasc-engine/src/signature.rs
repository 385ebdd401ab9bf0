//! Call signatures: what a compiled plan is specialised for. An operator caches one plan per
//! [`Signature`] (dtype and shape of each array, the kind of each Python scalar), and with
//! dynamic shapes one traced graph per [`DynamicKey`] (dtypes, ranks and which axes have
//! extent 1, not the extents).
//!
//! A signature is built in place, argument by argument ([`Signature::clear`],
//! [`Signature::push_array`], [`Signature::push_weak`]), reusing its storage, so the cached
//! call path can look up a plan without allocating.

use pyasc_ir::dtype::{VType, WeakKind};
use pyasc_ir::DType;
use std::fmt;

/// The type of one argument as a plan sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArgType {
    /// An array (or a NumPy scalar, a 0-d array): strongly typed, with its extents.
    Array {
        /// Element type.
        dtype: DType,
        /// Extents.
        shape: Vec<usize>,
    },
    /// A Python `bool`, `int` or `float`: weakly typed and 0-d, its value is not part of
    /// the signature (a new value never recompiles). Its storage dtype is int64, float64 or
    /// bool, or uint64 for a Python int in `[2**63, 2**64)`.
    Weak(VType),
}

impl ArgType {
    /// The value type of the argument.
    pub fn vtype(&self) -> VType {
        match self {
            ArgType::Array { dtype, .. } => VType::strong(*dtype),
            ArgType::Weak(v) => *v,
        }
    }

    /// The extents (empty for scalars).
    pub fn shape(&self) -> &[usize] {
        match self {
            ArgType::Array { shape, .. } => shape,
            ArgType::Weak(_) => &[],
        }
    }
}

impl fmt::Display for ArgType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgType::Array { dtype, shape } => write!(f, "{dtype}{shape:?}"),
            ArgType::Weak(v) => {
                let kind = format!("{:?}", v.weak.unwrap_or(WeakKind::Int)).to_lowercase();
                if v.dtype == DType::U64 {
                    write!(f, "{kind}[uint64]")
                } else {
                    write!(f, "{kind}")
                }
            }
        }
    }
}

/// The types of all arguments of one call: the key of an operator's plan cache.
#[derive(Clone, Debug, Default)]
pub struct Signature {
    args: Vec<ArgType>,
    /// Arguments in use (`args` beyond it are kept for their storage).
    len: usize,
}

impl Signature {
    /// An empty signature.
    pub fn new() -> Self {
        Signature::default()
    }

    /// A signature of these argument types.
    pub fn of(args: Vec<ArgType>) -> Self {
        let len = args.len();
        Signature { args, len }
    }

    /// Forget the arguments, keeping the storage for the next call.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Append an array argument (copies `shape` into storage kept from earlier calls).
    pub fn push_array(&mut self, dtype: DType, shape: &[usize]) {
        if let Some(ArgType::Array { dtype: d, shape: s }) = self.args.get_mut(self.len) {
            *d = dtype;
            s.clear();
            s.extend_from_slice(shape);
        } else {
            let a = ArgType::Array { dtype, shape: shape.to_vec() };
            self.put(a);
            return;
        }
        self.len += 1;
    }

    /// Append a Python scalar argument.
    pub fn push_weak(&mut self, kind: WeakKind) {
        self.put(ArgType::Weak(VType::weak(kind)));
    }

    /// Append a Python int in `[2**63, 2**64)`: weakly typed, held as uint64.
    pub fn push_weak_u64(&mut self) {
        self.put(ArgType::Weak(VType { dtype: DType::U64, weak: Some(WeakKind::Int) }));
    }

    fn put(&mut self, a: ArgType) {
        if self.len < self.args.len() {
            self.args[self.len] = a;
        } else {
            self.args.push(a);
        }
        self.len += 1;
    }

    /// The argument types.
    pub fn args(&self) -> &[ArgType] {
        &self.args[..self.len]
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a call without arguments.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A copy holding only the arguments in use (what the cache stores).
    pub fn to_owned_key(&self) -> Signature {
        Signature::of(self.args().to_vec())
    }

    /// The key of the traced graph a dynamic-shape operator re-specialises from.
    pub fn dynamic_key(&self) -> DynamicKey {
        DynamicKey(
            self.args()
                .iter()
                .map(|a| match a {
                    ArgType::Array { dtype, shape } => {
                        DynArg::Array { dtype: *dtype, ones: shape.iter().map(|d| *d == 1).collect() }
                    }
                    ArgType::Weak(v) => DynArg::Weak(*v),
                })
                .collect(),
        )
    }
}

// Equality and hashing only look at the arguments in use.
impl PartialEq for Signature {
    fn eq(&self, other: &Signature) -> bool {
        self.args() == other.args()
    }
}

impl Eq for Signature {}

impl std::hash::Hash for Signature {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.args().hash(state);
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(")?;
        for (i, a) in self.args().iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{a}")?;
        }
        write!(f, ")")
    }
}

/// One argument of a [`DynamicKey`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DynArg {
    /// An array: dtype, and per axis whether its extent is 1 (broadcasting depends on it).
    Array {
        /// Element type.
        dtype: DType,
        /// Per axis: extent 1.
        ones: Vec<bool>,
    },
    /// A Python scalar.
    Weak(VType),
}

/// What a dynamic-shape trace is valid for: per argument its type, rank and unit axes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DynamicKey(pub Vec<DynArg>);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn reused_storage_gives_equal_keys() {
        let mut s = Signature::new();
        s.push_array(DType::F32, &[2, 3, 4]);
        s.push_weak(WeakKind::Float);
        let key = s.to_owned_key();
        s.clear();
        s.push_array(DType::F32, &[5]);
        assert_ne!(s.to_owned_key(), key);
        s.clear();
        s.push_array(DType::F32, &[2, 3, 4]);
        s.push_weak(WeakKind::Float);
        // Equal although the storage differs (the Vec of `key` has no spare slots).
        let mut map = HashMap::new();
        map.insert(key, 1);
        assert_eq!(map.get(&s), Some(&1));
        assert_eq!(s.to_string(), "(float32[2, 3, 4], float)");
    }

    #[test]
    fn dynamic_key_ignores_extents_but_not_unit_axes() {
        let sig = |shape: &[usize]| {
            let mut s = Signature::new();
            s.push_array(DType::F32, shape);
            s.dynamic_key()
        };
        assert_eq!(sig(&[4, 8]), sig(&[16, 3]));
        assert_ne!(sig(&[4, 8]), sig(&[1, 8]));
        assert_ne!(sig(&[4, 8]), sig(&[4]));
    }
}
