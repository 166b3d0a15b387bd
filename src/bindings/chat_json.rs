//! Chat Completions JSON bytes → messages, for a body whose messages all have a common shape
//! (the core's `chat_json::read_chat_json`): the Python objects are built here, as the dict
//! reader (`chat.rs`) builds them from the same values, so both paths make equal messages.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use pyo3::{intern, Py};

use crate::chat_json::{read_chat_json, Call, ChatMessage, TextRole};

use super::convert::classes;
use super::message::{new_message, text_block, tool_use_block};
use super::shapes::{arguments, stop_on_invalid};

/// Bodies longer than this are parsed with the GIL released (a whole history, say).
const DETACH_ABOVE: usize = 64 * 1024;

/// The messages of the JSON `data` (a message array or a request body), or `None` when the
/// general reader must read it: a message in another shape, text `serde_json` refuses, or
/// arguments that are not the compact JSON of an object (checked as `chat_fast` checks them;
/// `raw_key` is the marker of arguments kept as text). Consecutive tool messages become one
/// user message, as in `from_openai_chat`.
#[pyfunction]
pub fn chat_json_fast<'py>(
    py: Python<'py>,
    raw_key: &Bound<'py, PyString>,
    data: &[u8],
) -> PyResult<Option<Bound<'py, PyList>>> {
    // A turn's few messages parse in about a microsecond, less than releasing the GIL costs.
    let read = if data.len() > DETACH_ABOVE {
        py.detach(|| read_chat_json(data))
    } else {
        read_chat_json(data)
    };
    let Some(read) = read else {
        return Ok(None);
    };
    stop_on_invalid(py, build(py, raw_key, read))
}

fn build<'py>(
    py: Python<'py>,
    raw_key: &Bound<'py, PyString>,
    read: Vec<ChatMessage>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let c = classes(py)?;
    let out = PyList::empty(py);
    let mut run: Vec<Bound<'py, PyAny>> = Vec::new();
    let flush = |run: &mut Vec<Bound<'py, PyAny>>| -> PyResult<()> {
        if !run.is_empty() {
            let blocks = PyTuple::new(py, run.drain(..))?;
            out.append(new_message(c, intern!(py, "user"), blocks)?)?;
        }
        Ok(())
    };
    for m in read {
        let message = match m {
            ChatMessage::Tool { call_id, text } => {
                let result = c
                    .tool_result
                    .bind(py)
                    .call1((PyString::new(py, &call_id), PyString::new(py, &text)))?;
                run.push(result);
                continue;
            }
            ChatMessage::Text { role, text } => {
                let role = match role {
                    TextRole::System => intern!(py, "system"),
                    TextRole::User => intern!(py, "user"),
                };
                let block = text_block(c, &PyString::new(py, &text))?;
                new_message(c, role, PyTuple::new(py, [block])?)?
            }
            ChatMessage::Assistant { text, calls } => {
                let mut blocks = Vec::with_capacity(calls.len() + 1);
                if let Some(text) = text {
                    blocks.push(text_block(c, &PyString::new(py, &text))?);
                }
                for call in &calls {
                    let Some(block) = call_block(py, raw_key, call)? else {
                        return Ok(None);
                    };
                    blocks.push(block);
                }
                new_message(c, intern!(py, "assistant"), PyTuple::new(py, blocks)?)?
            }
        };
        flush(&mut run)?;
        out.append(message)?;
    }
    flush(&mut run)?;
    Ok(Some(out))
}

/// A call's `ToolUseBlock`, or `None` when its arguments are not the compact JSON of an object.
fn call_block<'py>(
    py: Python<'py>,
    raw_key: &Bound<'py, PyString>,
    call: &Call,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let text = PyString::new(py, &call.arguments);
    let Some(args) = arguments(&text, raw_key)? else {
        return Ok(None);
    };
    let c = classes(py)?;
    let id: Py<PyAny> = PyString::new(py, &call.id).into_any().unbind();
    let name = PyString::new(py, &call.name);
    tool_use_block(c, id.bind(py), name.as_any(), args.as_any()).map(Some)
}
