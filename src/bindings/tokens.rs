//! Token estimates of texts and messages.

use pyo3::prelude::*;

use pyo3::exceptions::PyValueError;

use pyo3::intern;
use pyo3::types::{PyBytes, PyString};

use super::convert::{check_message, for_each_item, provider_facts, tool_input_json, with_str};
use super::facts::facts_of;
use crate::tokens::bpe::{Bpe, Pattern};
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

/// Tokens OpenAI adds per chat message, and for a message's `name` beyond the name itself.
const OPENAI_TOKENS_PER_MESSAGE: u32 = 3;
const OPENAI_TOKENS_PER_NAME: u32 = 1;

/// OpenAI's exact token count of texts under `cl100k_base` or `o200k_base`, from the
/// encoding's published `.tiktoken` vocabulary file (`data`, uncompressed).
#[pyclass(frozen, name = "BpeCounter", module = "ctxtrim._core")]
pub struct PyBpeCounter {
    bpe: Bpe,
    /// The price table (for images).
    table: Encoding,
    /// A chat message's framing plus its role's tokens: system, user, assistant, tool.
    roles: [u32; 4],
    /// The encoding's name.
    #[pyo3(get)]
    encoding: &'static str,
}

impl PyBpeCounter {
    /// `count_message`, for the core's own callers (no Python call in between).
    pub fn message_tokens(&self, message: &Bound<'_, PyAny>) -> PyResult<u32> {
        let py = message.py();
        let c = check_message(message, "message")?;
        let count = |t: &str| self.bpe.count(t) as u32;
        let image = |block: &Bound<'_, PyAny>| -> PyResult<u32> {
            if block.get_type().is(c.provider.bind(py)) {
                // A provider block (a document, an image behind a URL...): as its facts
                // price it, its text counted exactly.
                let facts = provider_facts(block)?;
                return Ok(count(facts.text()) + facts.fixed_tokens());
            }
            let data = block.getattr(intern!(py, "data"))?;
            Ok(match data.cast::<PyBytes>() {
                Ok(bytes) => self.table.image_rule().price_data(bytes.as_bytes()),
                Err(_) => tokens::IMAGE_TOKENS,
            })
        };
        let mut results = 0u32; // the tool messages its tool results become
        let mut body = 0u32; // the chat message of its other blocks
        let mut others = false;
        let content = message.getattr(intern!(py, "content"))?;
        for_each_item(&content, &mut |i, block| {
            let path = || format!("message.content[{i}]");
            let ty = block.get_type();
            if ty.is(c.text.bind(py)) {
                body += with_str(&block, intern!(py, "text"), path, count)?;
                others = true;
            } else if ty.is(c.tool_result.bind(py)) {
                results += self.roles[3];
                let inner = block.getattr(intern!(py, "content"))?;
                if let Ok(s) = inner.cast::<PyString>() {
                    results += count(s.to_str()?);
                } else {
                    for_each_item(&inner, &mut |_, part| {
                        if part.get_type().is(c.text.bind(py)) {
                            results += with_str(&part, intern!(py, "text"), path, count)?;
                        } else {
                            results += image(&part)?;
                        }
                        Ok(())
                    })?;
                }
            } else if ty.is(c.tool_use.bind(py)) {
                body += with_str(&block, intern!(py, "name"), path, count)?;
                let json = tool_input_json(c, &block, &path)?;
                body += count(std::str::from_utf8(json.as_bytes()).unwrap_or_default());
                others = true;
            } else if ty.is(c.image.bind(py)) || ty.is(c.provider.bind(py)) {
                body += image(&block)?;
                others = true;
            } else {
                others = true; // reasoning: Chat Completions does not send it back
            }
            Ok(())
        })?;
        let mut n = results;
        if others || results == 0 {
            let role = message.getattr(intern!(py, "role"))?;
            let framing = match role.cast::<PyString>()?.to_str()? {
                "system" => self.roles[0],
                "assistant" => self.roles[2],
                _ => self.roles[1],
            };
            n += framing + body;
            let name = message.getattr(intern!(py, "name"))?;
            if results == 0 && !name.is_none() {
                n += with_str(message, intern!(py, "name"), || "message".to_owned(), count)?
                    + OPENAI_TOKENS_PER_NAME;
            }
        }
        Ok(n)
    }
}

#[pymethods]
impl PyBpeCounter {
    #[new]
    fn new(py: Python<'_>, data: &[u8], encoding: &str) -> PyResult<Self> {
        let (pattern, name) = match encoding {
            "cl100k_base" => (Pattern::Cl100k, "cl100k_base"),
            "o200k_base" => (Pattern::O200k, "o200k_base"),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "encoding must be 'cl100k_base' or 'o200k_base', got {encoding:?}"
                )))
            }
        };
        let bpe = py
            .detach(|| Bpe::from_tiktoken(data, pattern))
            .map_err(|e| PyValueError::new_err(format!("not a .tiktoken vocabulary: {e}")))?;
        let frame = |role: &str| OPENAI_TOKENS_PER_MESSAGE + bpe.count(role) as u32;
        let roles = [
            frame("system"),
            frame("user"),
            frame("assistant"),
            frame("tool"),
        ];
        Ok(Self {
            bpe,
            table: encoding_of(name)?,
            roles,
            encoding: name,
        })
    }

    /// Tokens of `message` as Chat Completions bills it (OpenAI's cookbook): a chat
    /// message's framing, role and content; each tool result a `tool` message of its own;
    /// a `name` its tokens plus 1 (not on tool messages); a tool call its name and compact
    /// JSON input; an image by its size (OpenAI's high detail); reasoning nothing.
    fn count_message(&self, message: &Bound<'_, PyAny>) -> PyResult<u32> {
        self.message_tokens(message)
    }

    /// Tokens of `text` (special-token text counted as plain text).
    fn count(&self, py: Python<'_>, text: &str) -> usize {
        if text.len() > DETACH_ABOVE {
            py.detach(|| self.bpe.count(text))
        } else {
            self.bpe.count(text)
        }
    }

    /// The pieces `text` splits into before merging (the encoding's regex split).
    fn pieces<'a>(&self, text: &'a str) -> Vec<&'a str> {
        self.bpe
            .pieces(text)
            .into_iter()
            .map(|(a, b)| &text[a..b])
            .collect()
    }

    /// Tokens of `piece` by the rescanning merge and by the heap merge (for the tests).
    fn _merge_both(&self, piece: &[u8]) -> (usize, usize) {
        self.bpe.merge_both(piece)
    }

    /// Number of tokens in the vocabulary.
    fn __len__(&self) -> usize {
        self.bpe.len()
    }

    fn __repr__(&self) -> String {
        format!("BpeCounter({:?})", self.encoding)
    }
}
