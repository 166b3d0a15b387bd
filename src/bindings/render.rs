//! `join_renderings`: a window's request body from its messages' kept provider renderings.
//!
//! Each message keeps its provider rendering (JSON bytes: the comma-joined items it becomes)
//! in its slot for that format (`ctxtrim.messages.CACHE_SLOTS`); a request for a window is those
//! bytes joined into one JSON array. Joining is the per-call work of every request, so it is
//! done here in one pass; a message not rendered yet is handed to the format's renderer of
//! common shapes, `fast(message)` (one of the core's, given), and if that has no answer to
//! the format's Python `render(message, index)`, which renders it, keeps the result and
//! returns it. A common shape's objects are encoded and kept here, as `render` would.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PySequence, PyString};

use super::convert::classes;

/// The JSON array of the renderings of `messages` kept under `attr`, rendering those that
/// have none with `fast(message) -> list | None` when given, else (or when it gives `None`)
/// with `render(message, index) -> bytes` (an empty rendering adds no item).
#[pyfunction]
#[pyo3(signature = (messages, attr, render, fast=None))]
pub fn join_renderings<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    attr: &Bound<'py, PyString>,
    render: &Bound<'py, PyAny>,
    fast: Option<&Bound<'py, PyAny>>,
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
            None => match fast.map(|f| f.call1((&message,))).transpose()? {
                Some(objects) if !objects.is_none() => keep(&message, attr, &objects)?,
                _ => render.call1((&message, i))?.cast_into::<PyBytes>()?,
            },
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

/// The comma-joined JSON of a message's provider `objects` (a list), kept on it under `attr`
/// (a slot of the frozen message), as the Python `render` keeps it.
fn keep<'py>(
    message: &Bound<'py, PyAny>,
    attr: &Bound<'py, PyString>,
    objects: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let py = message.py();
    let c = classes(py)?;
    let encoded = c.json_encode.bind(py).call1((objects,))?;
    let encoded = encoded.cast::<PyBytes>()?.as_bytes();
    // `[...]` without its brackets (msgspec writes a list as exactly that).
    let inner = encoded
        .get(1..encoded.len().saturating_sub(1))
        .unwrap_or_default();
    let rendered = PyBytes::new(py, inner);
    c.force_setattr.bind(py).call1((message, attr, &rendered))?;
    Ok(rendered)
}
