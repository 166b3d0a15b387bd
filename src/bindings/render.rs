//! `join_renderings`: a window's request body from its messages' kept provider renderings.
//!
//! Each message keeps its provider rendering (JSON bytes: the comma-joined items it becomes)
//! in its slot for that format (`ctxtrim.messages.CACHE_SLOTS`); a request for a window is those
//! bytes joined into one JSON array. Joining is the per-call work of every request, so it is
//! done here in one pass; a message not rendered yet is handed to the format's Python
//! `render(message, index)`, which renders it, keeps the result and returns it.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PySequence, PyString};

/// The JSON array of the renderings of `messages` kept under `attr`, rendering those that
/// have none with `render(message, index) -> bytes` (an empty rendering adds no item).
#[pyfunction]
pub fn join_renderings<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    attr: &Bound<'py, PyString>,
    render: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let list = match messages.cast::<PyList>() {
        Ok(list) => list.clone(),
        Err(_) => messages.cast::<PySequence>()?.to_list()?,
    };
    let mut out: Vec<u8> = Vec::with_capacity(64 * list.len() + 2);
    out.push(b'[');
    for (i, message) in list.iter().enumerate() {
        let kept = message.getattr_opt(attr)?;
        let rendered = match kept.as_ref().and_then(|k| k.cast::<PyBytes>().ok()) {
            Some(bytes) => bytes.clone(),
            None => render.call1((&message, i))?.cast_into::<PyBytes>()?,
        };
        let bytes = rendered.as_bytes();
        if !bytes.is_empty() {
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(bytes);
        }
    }
    out.push(b']');
    Ok(PyBytes::new(py, &out))
}
