//! Chat Completions JSON bytes → messages, for a body whose messages all have a common shape
//! (the core's `chat_json::read_chat_json`): the Python objects are built here, as the dict
//! reader (`chat.rs`) builds them from the same values, so both paths make equal messages.
//!
//! Given the slot of the format's kept JSON, each message also keeps its Chat Completions
//! rendering, written from the values just read (`json_write`): a server that reads a body
//! and sends the window on renders nothing. It is the rendering `chat_render_json` writes for
//! the message (the same parts: texts, calls with their compact arguments, string results),
//! so what the bytes path sends does not depend on how the message was read.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use pyo3::{intern, Py};

use crate::chat_json::{read_chat_json, Call, ChatMessage, TextRole};
use crate::json_write::{write_message, write_tool, CallParts, Content};

use super::convert::classes;
use super::message::{new_message, text_block, text_tool_result, tool_use_block};
use super::shapes::{arguments, stop_on_invalid};
use super::slots::CacheSlot;

/// Bodies longer than this are parsed with the GIL released (a whole history, say).
const DETACH_ABOVE: usize = 64 * 1024;

/// The messages of the JSON `data` (a message array or a request body), or `None` when the
/// general reader must read it: a message in another shape, text `serde_json` refuses, or
/// arguments that are not the compact JSON of an object (checked as `chat_fast` checks them;
/// `raw_key` is the marker of arguments kept as text). Consecutive tool messages become one
/// user message, as in `from_openai_chat`. With `json_attr`, each message keeps its
/// rendering's JSON in that slot (see the module docs).
#[pyfunction]
#[pyo3(signature = (raw_key, data, json_attr=None))]
pub fn chat_json_fast<'py>(
    py: Python<'py>,
    raw_key: &Bound<'py, PyString>,
    data: &[u8],
    json_attr: Option<&Bound<'py, PyString>>,
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
    let slot = json_attr.map(CacheSlot::named).transpose()?;
    stop_on_invalid(py, build(py, raw_key, read, slot.as_ref()))
}

fn build<'py>(
    py: Python<'py>,
    raw_key: &Bound<'py, PyString>,
    read: Vec<ChatMessage>,
    slot: Option<&CacheSlot<'py>>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let c = classes(py)?;
    let out = PyList::empty(py);
    let mut run: Vec<Bound<'py, PyAny>> = Vec::new();
    // The JSON of the tool messages in `run`, comma-joined.
    let mut run_json: Vec<u8> = Vec::new();
    let keep = |message: &Bound<'py, PyAny>, json: &[u8]| -> PyResult<()> {
        match slot {
            Some(slot) if !json.is_empty() => slot.set(message, PyBytes::new(py, json).as_any()),
            _ => Ok(()),
        }
    };
    let flush = |run: &mut Vec<Bound<'py, PyAny>>, run_json: &mut Vec<u8>| -> PyResult<()> {
        if !run.is_empty() {
            let blocks = PyTuple::new(py, run.drain(..))?;
            let message = new_message(c, intern!(py, "user"), blocks)?;
            keep(&message, run_json)?;
            out.append(message)?;
        }
        run_json.clear();
        Ok(())
    };
    let mut json: Vec<u8> = Vec::with_capacity(256);
    for m in read {
        json.clear();
        let message = match m {
            ChatMessage::Tool { call_id, text } => {
                let (id, content) = (PyString::new(py, &call_id), PyString::new(py, &text));
                let result = text_tool_result(c, &id, &content, false)?;
                run.push(result);
                if slot.is_some() {
                    if !run_json.is_empty() {
                        run_json.push(b',');
                    }
                    write_tool(&mut run_json, &call_id, &text);
                }
                continue;
            }
            ChatMessage::Text { role, text } => {
                let role = match role {
                    TextRole::System => intern!(py, "system"),
                    TextRole::User => intern!(py, "user"),
                };
                let block = text_block(c, &PyString::new(py, &text))?;
                if slot.is_some() {
                    write_message(&mut json, role.to_str()?, Content::Text(&text), &[]);
                }
                new_message(c, role, PyTuple::new(py, [block])?)?
            }
            ChatMessage::Assistant { text, calls } => {
                let mut blocks = Vec::with_capacity(calls.len() + 1);
                if let Some(text) = &text {
                    blocks.push(text_block(c, &PyString::new(py, text))?);
                }
                for call in &calls {
                    let Some(block) = call_block(py, raw_key, call)? else {
                        return Ok(None);
                    };
                    blocks.push(block);
                }
                if slot.is_some() && !blocks.is_empty() {
                    let content = text.as_deref().map_or(Content::Null, Content::Text);
                    let parts: Vec<CallParts<'_>> = calls
                        .iter()
                        .map(|call| CallParts {
                            id: &call.id,
                            name: &call.name,
                            arguments: &call.arguments,
                        })
                        .collect();
                    write_message(&mut json, "assistant", content, &parts);
                }
                new_message(c, intern!(py, "assistant"), PyTuple::new(py, blocks)?)?
            }
        };
        flush(&mut run, &mut run_json)?;
        keep(&message, &json)?;
        out.append(message)?;
    }
    flush(&mut run, &mut run_json)?;
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
