//! Token estimates of texts and messages.

use pyo3::prelude::*;

use pyo3::exceptions::PyValueError;

use super::facts::facts_of;
use crate::tokens::{self, Encoding};

/// Texts longer than this are estimated with the GIL released; below it, detaching costs
/// more than the scan.
const DETACH_ABOVE: usize = 64 * 1024;

/// The `Encoding` named `name` (`"cl100k_base"`, `"o200k_base"`, or without `_base`).
pub fn encoding_of(name: &str) -> PyResult<Encoding> {
    name.parse().map_err(PyValueError::new_err)
}

/// Estimated tokens of a text (script-aware: CJK and emoji are not under-counted), priced
/// as `encoding` does.
///
/// `encoding` left out (the common call) is not parsed at all: this is called once per text
/// in tight loops, where parsing the default name was a tenth of the call.
#[pyfunction]
#[pyo3(signature = (text, *, encoding = None), text_signature = "(text, *, encoding='cl100k_base')")]
pub fn estimate_tokens(py: Python<'_>, text: &str, encoding: Option<&str>) -> PyResult<u32> {
    let encoding = encoding.map_or(Ok(Encoding::Cl100k), encoding_of)?;
    Ok(if text.len() > DETACH_ABOVE {
        py.detach(|| tokens::estimate_tokens_for(text, encoding))
    } else {
        tokens::estimate_tokens_for(text, encoding)
    })
}

/// Estimated tokens of one message: texts, tool names and inputs, images, overhead; or, with
/// `counter` (a `TokenCounter`), its `count_message`. Either is read once per message object
/// (and counter) and kept with the message's facts.
#[pyfunction]
#[pyo3(signature = (message, *, encoding = None, counter = None), text_signature = "(message, *, encoding='cl100k_base', counter=None)")]
pub fn message_tokens(
    message: &Bound<'_, PyAny>,
    encoding: Option<&str>,
    counter: Option<&Bound<'_, PyAny>>,
) -> PyResult<u32> {
    let encoding = encoding.map_or(Ok(Encoding::Cl100k), encoding_of)?;
    facts_of(message, || "message".to_owned())?
        .get()
        .tokens(message, encoding, counter)
}

/// The canonical name of the price table `name` selects (`"cl100k_base"`, `"o200k_base"`,
/// `"anthropic"`): an encoding or table name, or a model name such as `"gpt-4o"`.
#[pyfunction]
pub fn price_table(name: &str) -> PyResult<&'static str> {
    Ok(encoding_of(name)?.name())
}

/// `(width, height)` as the image's header (PNG, JPEG, GIF, WebP) states them; `ValueError`
/// saying why if it cannot be read.
#[pyfunction]
pub fn image_size(data: &[u8]) -> PyResult<(u32, u32)> {
    tokens::image::image_size(data)
        .map(|s| (s.width, s.height))
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Tokens of one image under `rule` (`"openai-high"`, `"openai-low"`, `"anthropic"`), or the
/// image rule of the price table `encoding` (default `cl100k_base`: OpenAI's high detail); the
/// flat `IMAGE_TOKENS` if its header cannot be read.
#[pyfunction]
#[pyo3(signature = (data, *, encoding = None, rule = None), text_signature = "(data, *, encoding='cl100k_base', rule=None)")]
pub fn image_tokens(data: &[u8], encoding: Option<&str>, rule: Option<&str>) -> PyResult<u32> {
    let rule = match rule {
        Some(r) => r.parse().map_err(PyValueError::new_err)?,
        None => encoding
            .map_or(Ok(Encoding::Cl100k), encoding_of)?
            .image_rule(),
    };
    Ok(rule.price_data(data))
}
