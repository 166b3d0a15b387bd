//! What the provider readers in the core (`chat.rs`, `anthropic.rs`, `responses.rs`, `gemini.rs`) share:
//! reading a payload dict's fields by exact type, tool-call arguments text, and handing
//! anything the general Python reader must name back to it.
//!
//! A reader in the core only says yes to what the general reader accepts without recording
//! anything; on anything else it stops, and the general reader records what it must or names
//! what is wrong. So a value a check here does not like is never an error, only a stop.

use pyo3::exceptions::{PyRecursionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::json::{is_compact_json_of, json_loads};
use super::message::{nonempty_str, plain_str};

/// `d[key]`, or `None` when absent.
pub fn get<'py>(
    d: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    d.get_item(key)
}

/// A value present and a non-empty, valid UTF-8 `str` (an id, a name).
pub fn nonempty(value: Option<&Bound<'_, PyAny>>) -> bool {
    value.is_some_and(nonempty_str)
}

/// The value as an exact `str` of valid UTF-8 (empty or not): text the readers take as it is.
pub fn text<'a, 'py>(value: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyString>> {
    value
        .and_then(|v| v.cast_exact::<PyString>().ok())
        .filter(|s| plain_str(s))
}

/// Whether the value is the exact `str` `expected` (a `type` or `role` tag).
pub fn is_tag(value: Option<&Bound<'_, PyAny>>, expected: &str) -> bool {
    value.is_some_and(|v| {
        v.cast_exact::<PyString>()
            .is_ok_and(|s| s.to_str().is_ok_and(|s| s == expected))
    })
}

/// The value's text when it is an exact `str` (a tag to match on), else `None`.
pub fn tag<'py>(value: Option<&Bound<'py, PyAny>>) -> Option<Bound<'py, PyString>> {
    value.and_then(|v| v.cast_exact::<PyString>().ok().cloned())
}

/// Tool-call arguments text the general reader takes without recording it: the compact JSON
/// of an object, exactly as `compact_json` writes what `json_loads` reads (the general
/// reader's own functions, so "compact" means the same on both paths), and not the stand-in
/// for arguments kept as text (`raw_key`, which renders as that text). The parsed object, or
/// `None`. Text that does not parse raises the decoder's `ValueError` (or `RecursionError`),
/// which [`stop_on_invalid`] turns into a stop.
pub fn arguments<'py>(
    text: &Bound<'py, PyString>,
    raw_key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Ok(args) = json_loads(text.as_any())?.cast_into_exact::<PyDict>() else {
        return Ok(None);
    };
    if args.contains(raw_key)? || !is_compact_json_of(args.as_any(), text)? {
        return Ok(None);
    }
    Ok(Some(args))
}

/// `read`'s answer, with what the general reader names (bad values a constructor refused,
/// arguments that do not parse or are nested too deep) turned into `None`: its job, not ours.
pub fn stop_on_invalid<T>(py: Python<'_>, read: PyResult<Option<T>>) -> PyResult<Option<T>> {
    match read {
        Ok(read) => Ok(read),
        Err(e) if e.is_instance_of::<PyValueError>(py) => Ok(None),
        Err(e) if e.is_instance_of::<PyRecursionError>(py) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The text of an exact `str` that is valid UTF-8, else `None` (a renderer writing JSON
/// itself leaves anything else to the encoder).
pub fn plain<'a>(value: &'a Bound<'_, PyAny>) -> Option<&'a str> {
    value.cast_exact::<PyString>().ok()?.to_str().ok()
}
