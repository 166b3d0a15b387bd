//! Token estimates of texts and messages.

use pyo3::prelude::*;

use super::convert::meta_of;
use crate::tokens;

/// Texts longer than this are estimated with the GIL released; below it, detaching costs
/// more than the scan.
const DETACH_ABOVE: usize = 64 * 1024;

/// Estimated tokens of a text (script-aware: CJK and emoji are not under-counted).
#[pyfunction]
pub fn estimate_tokens(py: Python<'_>, text: &str) -> u32 {
    if text.len() > DETACH_ABOVE {
        py.detach(|| tokens::estimate_tokens(text))
    } else {
        tokens::estimate_tokens(text)
    }
}

/// Estimated tokens of one message: texts, tool names and inputs, images, overhead.
#[pyfunction]
pub fn message_tokens(message: &Bound<'_, PyAny>) -> PyResult<u32> {
    Ok(meta_of(message, None, "message")?.tokens)
}
