//! Finding the user's line: walk Python frames outward, skipping pyasc's own package and
//! NumPy, and report the first frame that belongs to the user.

use pyasc_ir::SourceLoc;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::sync::Arc;

static SKIP: PyOnceLock<Vec<String>> = PyOnceLock::new();

pub(crate) fn skip_prefixes(py: Python<'_>) -> &Vec<String> {
    SKIP.get_or_init(py, || {
        let mut v = Vec::new();
        for m in ["pyasc", "numpy"] {
            if let Ok(file) = py.import(m).and_then(|m| m.getattr("__file__")).and_then(|f| f.extract::<String>()) {
                if let Some(dir) = std::path::Path::new(&file).parent() {
                    v.push(format!("{}{}", dir.display(), std::path::MAIN_SEPARATOR));
                }
            }
        }
        v
    })
}

/// The file and line of the innermost frame outside pyasc and NumPy.
pub fn user_loc(py: Python<'_>) -> Option<SourceLoc> {
    let skip = skip_prefixes(py);
    let sys = py.import("sys").ok()?;
    let mut frame = sys.call_method1("_getframe", (0,)).ok()?;
    for _ in 0..64 {
        let code = frame.getattr("f_code").ok()?;
        let file: String = code.getattr("co_filename").ok()?.extract().ok()?;
        let internal =
            skip.iter().any(|p| file.starts_with(p.as_str())) || file.starts_with('<') && file.contains("frozen");
        if !internal {
            let line: u32 = frame.getattr("f_lineno").ok()?.extract().unwrap_or(0);
            return Some(SourceLoc { file: Arc::from(file.as_str()), line });
        }
        let back = frame.getattr("f_back").ok()?;
        if back.is_none() {
            return None;
        }
        frame = back;
    }
    None
}
