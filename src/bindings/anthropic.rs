//! Anthropic Messages' most common shapes, rendered without the general Python code.
//!
//! `anthropic_render` turns a message with no recorded provider fields (no `meta`) that is
//! not a system message, and whose blocks are text, tool calls, string tool results or
//! reasoning, into the one Anthropic message dict the general renderer in
//! `ctxtrim.formats.anthropic` makes for it, in the same key order, so the kept JSON bytes
//! are the same. Anything else (images, tool results made of blocks, recorded fields, a
//! system message, which only the general renderer may refuse) is `None`, for the general
//! renderer.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};

use super::convert::classes;

/// The Anthropic message dict of `message` in a common shape (see the module docs), or
/// `None` for the general renderer.
#[pyfunction]
pub fn anthropic_render<'py>(message: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyList>>> {
    let py = message.py();
    let c = classes(py)?;
    if !message.get_type().is(c.message.bind(py))
        || !message.getattr(intern!(py, "meta"))?.is_none()
    {
        return Ok(None);
    }
    let role = message.getattr(intern!(py, "role"))?;
    if role.cast_exact::<PyString>()?.to_str()? == "system" {
        return Ok(None);
    }
    let content = message.getattr(intern!(py, "content"))?;
    let parts = PyList::empty(py);
    for block in content.cast_exact::<PyTuple>()?.iter() {
        let ty = block.get_type();
        let part = PyDict::new(py);
        if ty.is(c.text.bind(py)) {
            part.set_item(intern!(py, "type"), intern!(py, "text"))?;
            part.set_item(intern!(py, "text"), block.getattr(intern!(py, "text"))?)?;
        } else if ty.is(c.tool_use.bind(py)) {
            part.set_item(intern!(py, "type"), intern!(py, "tool_use"))?;
            for key in [intern!(py, "id"), intern!(py, "name"), intern!(py, "input")] {
                part.set_item(key, block.getattr(key)?)?;
            }
        } else if ty.is(c.tool_result.bind(py)) {
            let output = block.getattr(intern!(py, "content"))?;
            if output.cast_exact::<PyString>().is_err() {
                return Ok(None); // text and image blocks: the general renderer
            }
            part.set_item(intern!(py, "type"), intern!(py, "tool_result"))?;
            let id = block.getattr(intern!(py, "tool_use_id"))?;
            part.set_item(intern!(py, "tool_use_id"), id)?;
            part.set_item(intern!(py, "content"), output)?;
            let is_error = block.getattr(intern!(py, "is_error"))?;
            if is_error.cast_exact::<PyBool>()?.is_true() {
                part.set_item(intern!(py, "is_error"), is_error)?;
            }
        } else if ty.is(c.reasoning.bind(py)) {
            let signature = block.getattr(intern!(py, "signature"))?;
            let redacted = block.getattr(intern!(py, "redacted"))?;
            if redacted.cast_exact::<PyBool>()?.is_true() {
                part.set_item(intern!(py, "type"), intern!(py, "redacted_thinking"))?;
                part.set_item(intern!(py, "data"), signature)?;
            } else {
                part.set_item(intern!(py, "type"), intern!(py, "thinking"))?;
                part.set_item(intern!(py, "thinking"), block.getattr(intern!(py, "text"))?)?;
                part.set_item(intern!(py, "signature"), signature)?;
            }
        } else {
            return Ok(None); // images: the general renderer
        }
        parts.append(part)?;
    }
    let rendered = PyDict::new(py);
    rendered.set_item(intern!(py, "role"), role)?;
    rendered.set_item(intern!(py, "content"), parts)?;
    Ok(Some(PyList::new(py, [rendered])?))
}
