//! Grapheme-safe clipping (see `crate::text`).

use pyo3::prelude::*;

/// The largest `n <= max_chars` such that `text[:n]` ends between two extended grapheme
/// clusters (Unicode UAX #29). Boundaries up to `max_chars` depend only on the first
/// `max_chars + 1` characters, so callers pass no more than that. A text holding lone
/// surrogates cannot cross into Rust (`UnicodeEncodeError`); `ctxtrim._text` handles it.
#[pyfunction]
pub fn grapheme_floor(
    text: &str,
    #[pyo3(from_py_with = super::args::max_chars)] max_chars: usize,
) -> usize {
    crate::text::grapheme_floor(text, max_chars)
}
