//! Instruction-set detection and selection.
//!
//! [`detected`] is the best ISA the CPU supports, probed once. [`active`] is what the kernels
//! dispatch on: the detected ISA, optionally lowered by the `PYASC_ISA` environment variable or
//! overridden process-wide by [`force`] (a test hook). The choice is cached in an atomic so each
//! kernel call pays one relaxed load.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// A SIMD instruction set the kernels are compiled for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Portable code without target-specific features.
    Scalar,
    /// x86_64 baseline (SSE2).
    Sse2,
    /// aarch64 Advanced SIMD.
    Neon,
    /// x86_64 AVX2 with fused multiply-add.
    Avx2Fma,
    /// x86_64 AVX-512 F/BW/DQ/VL.
    Avx512,
}

impl Isa {
    /// Short lower-case name: "avx512", "avx2+fma", "sse2", "neon" or "scalar".
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Sse2 => "sse2",
            Isa::Neon => "neon",
            Isa::Avx2Fma => "avx2+fma",
            Isa::Avx512 => "avx512",
        }
    }

    fn from_u8(v: u8) -> Isa {
        match v {
            1 => Isa::Scalar,
            2 => Isa::Sse2,
            3 => Isa::Neon,
            4 => Isa::Avx2Fma,
            _ => Isa::Avx512,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            Isa::Scalar => 1,
            Isa::Sse2 => 2,
            Isa::Neon => 3,
            Isa::Avx2Fma => 4,
            Isa::Avx512 => 5,
        }
    }
}

/// The best ISA this CPU supports (probed once, then cached).
pub fn detected() -> Isa {
    static DETECTED: OnceLock<Isa> = OnceLock::new();
    *DETECTED.get_or_init(probe)
}

#[cfg(target_arch = "x86_64")]
fn probe() -> Isa {
    let avx512 = is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512dq")
        && is_x86_feature_detected!("avx512vl");
    let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
    if avx512 && avx2 {
        Isa::Avx512
    } else if avx2 {
        Isa::Avx2Fma
    } else {
        Isa::Sse2
    }
}

#[cfg(target_arch = "aarch64")]
fn probe() -> Isa {
    Isa::Neon
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn probe() -> Isa {
    Isa::Scalar
}

/// Whether kernels for `isa` can run on this CPU.
fn supported(isa: Isa) -> bool {
    let best = detected();
    match isa {
        Isa::Scalar => true,
        Isa::Neon => best == Isa::Neon,
        Isa::Sse2 | Isa::Avx2Fma | Isa::Avx512 => cfg!(target_arch = "x86_64") && best != Isa::Neon && isa <= best,
    }
}

/// Clamps a requested ISA to one this CPU runs: itself if supported, else the detected one if
/// the request was higher, else scalar.
fn clamp(isa: Isa) -> Isa {
    if supported(isa) {
        isa
    } else if isa > detected() {
        detected()
    } else {
        Isa::Scalar
    }
}

/// The detected ISA lowered by the `PYASC_ISA` environment variable, if set.
fn from_env() -> Isa {
    let best = detected();
    let wanted = match std::env::var("PYASC_ISA").ok().as_deref().map(str::trim) {
        Some("avx512") => Isa::Avx512,
        Some("avx2") | Some("avx2+fma") => Isa::Avx2Fma,
        Some("sse2") => Isa::Sse2,
        Some("neon") => Isa::Neon,
        Some("scalar") => Isa::Scalar,
        _ => best,
    };
    if wanted >= best {
        best
    } else {
        clamp(wanted)
    }
}

/// 0 = not yet decided; otherwise `Isa::to_u8`.
static ACTIVE: AtomicU8 = AtomicU8::new(0);

/// The ISA kernels dispatch on: [`detected`], lowered by `PYASC_ISA=avx512|avx2|sse2|scalar`
/// if set (never raised above the detected one), unless overridden by [`force`].
#[inline]
pub fn active() -> Isa {
    match ACTIVE.load(Ordering::Relaxed) {
        0 => {
            let isa = from_env();
            // Keep a value a concurrent `force` stored first.
            let _ = ACTIVE.compare_exchange(0, isa.to_u8(), Ordering::Relaxed, Ordering::Relaxed);
            Isa::from_u8(ACTIVE.load(Ordering::Relaxed))
        }
        v => Isa::from_u8(v),
    }
}

/// Test hook: overrides [`active`] process-wide (clamped to what the CPU supports);
/// `None` restores the default ([`detected`] lowered by `PYASC_ISA`).
pub fn force(isa: Option<Isa>) {
    let isa = match isa {
        Some(isa) => clamp(isa),
        None => from_env(),
    };
    ACTIVE.store(isa.to_u8(), Ordering::Relaxed);
}

/// Every ISA this CPU can run, lowest first (useful to test each dispatch path).
pub fn available() -> Vec<Isa> {
    [Isa::Scalar, Isa::Sse2, Isa::Neon, Isa::Avx2Fma, Isa::Avx512].into_iter().filter(|&i| supported(i)).collect()
}

/// Test helper: keeps every other test from forcing the ISA while the guard lives (tests run
/// on parallel threads and the override is process-wide).
#[cfg(test)]
pub(crate) fn hold_isa() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Test helper: runs `f` once with each ISA this CPU has forced active, one caller at a time
/// (the override is process-wide), then restores the default.
#[cfg(test)]
pub(crate) fn each_isa(mut f: impl FnMut(Isa)) {
    let _serial = hold_isa();
    for isa in available() {
        force(Some(isa));
        f(isa);
    }
    force(None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for isa in [Isa::Scalar, Isa::Sse2, Isa::Neon, Isa::Avx2Fma, Isa::Avx512] {
            assert_eq!(Isa::from_u8(isa.to_u8()), isa);
        }
        assert_eq!(Isa::Avx2Fma.name(), "avx2+fma");
        assert_eq!(Isa::Avx512.name(), "avx512");
    }

    #[test]
    fn force_is_clamped_and_restorable() {
        let _serial = hold_isa();
        let best = detected();
        force(Some(Isa::Avx512));
        assert!(active() <= best);
        force(Some(Isa::Scalar));
        assert_eq!(active(), Isa::Scalar);
        force(None);
        assert!(active() <= best);
        assert!(available().contains(&best));
        assert!(available().contains(&Isa::Scalar));
    }
}
