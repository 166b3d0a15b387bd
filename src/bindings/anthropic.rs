//! Anthropic Messages' most common shapes, read and rendered without the general Python code.
//!
//! `anthropic_fast_prefix` reads the longest prefix of a list of messages in which each has a
//! common shape: a `user` or `assistant` message with exactly `role` and `content`, its
//! content a string or a list of `text` blocks, `tool_use` blocks (in an assistant message)
//! and `tool_result` blocks (in a user message) whose content is a string or a list of
//! `text` blocks and whose `is_error`, if given, is true; each block with exactly the keys
//! the general reader in `ctxtrim.formats.anthropic` reads. A string system prompt is read
//! first. These need no record of provider fields but the string form of content, so each
//! message is exactly what the general reader makes; the first one in any other shape (or
//! with a value a constructor refuses) ends the prefix, and the general reader goes on from
//! there, recording what it must or naming what is wrong.
//!
//! `anthropic_render` turns a message with no recorded provider fields (no `meta`) that is
//! not a system message, and whose blocks are text, tool calls, string tool results or
//! reasoning, into the one Anthropic message dict the general renderer in
//! `ctxtrim.formats.anthropic` makes for it, in the same key order, so the kept JSON bytes
//! are the same. Anything else (images, tool results made of blocks, recorded fields, a
//! system message, which only the general renderer may refuse) is `None`, for the general
//! renderer. `anthropic_render_json` writes that dict's JSON straight from the message
//! (`crate::json_write`), for the bytes path; it also leaves to the encoder a string that is
//! not an exact, valid `str` and a tool input holding a float.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::json_write::{write_anthropic, AnthropicPart};

use super::convert::{classes, Classes};
use super::json::plain_json_bytes;
use super::message::{frozen_json, new_message, nonempty_str, text_block, tool_use_block};
use super::shapes::{get, is_tag, nonempty, plain, stop_on_invalid, tag, text};

/// The general reader's record for content given as a string (`{"anthropic": [{"t":
/// "message", "n": 1, "form": "str"}]}`), frozen once: messages share it (it never changes).
static STR_FORM: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

pub(super) fn str_form(py: Python<'_>) -> PyResult<&Py<PyAny>> {
    STR_FORM.get_or_try_init(py, || {
        let unit = PyDict::new(py);
        unit.set_item("t", "message")?;
        unit.set_item("n", 1)?;
        unit.set_item("form", "str")?;
        let meta = PyDict::new(py);
        meta.set_item("anthropic", PyList::new(py, [unit])?)?;
        let frozen = frozen_json(&meta)?;
        Ok(frozen.unwrap_or_else(|| meta.into_any()).unbind())
    })
}

/// The longest prefix of `items` in common shapes (see the module docs), as messages, and the
/// index of the first item left for the general reader: `(messages, next)`. A `system` that
/// is not `None` is read first, as the system message, if it is a string; any other system
/// prompt makes this read nothing (`([], 0)`), for the general reader.
#[pyfunction]
pub fn anthropic_fast_prefix<'py>(
    system: &Bound<'py, PyAny>,
    items: &Bound<'py, PyList>,
) -> PyResult<(Bound<'py, PyList>, usize)> {
    let py = items.py();
    let c = classes(py)?;
    let out = PyList::empty(py);
    if !system.is_none() {
        let read = stop_on_invalid(py, read_system(c, system))?;
        let Some(message) = read else {
            return Ok((out, 0));
        };
        out.append(message)?;
    }
    let mut next = 0;
    while next < items.len() {
        let item = items.get_item(next)?;
        let Some(message) = stop_on_invalid(py, read_message(c, &item))? else {
            break;
        };
        out.append(message)?;
        next += 1;
    }
    Ok((out, next))
}

fn read_system<'py>(
    c: &Classes,
    system: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = system.py();
    let Some(system) = text(Some(system)) else {
        return Ok(None);
    };
    let blocks = PyTuple::new(py, [text_block(c, system)?])?;
    new_message(c, intern!(py, "system"), blocks).map(Some)
}

fn read_message<'py>(c: &Classes, item: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = item.py();
    let Ok(item) = item.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    if item.len() != 2 {
        return Ok(None);
    }
    let Some(role) = tag(get(item, intern!(py, "role"))?.as_ref()) else {
        return Ok(None);
    };
    let assistant = match role.to_str() {
        Ok("assistant") => true,
        Ok("user") => false,
        _ => return Ok(None),
    };
    let Some(content) = get(item, intern!(py, "content"))? else {
        return Ok(None);
    };
    if let Some(content) = text(Some(&content)) {
        let blocks = PyTuple::new(py, [text_block(c, content)?])?;
        let options = PyDict::new(py);
        options.set_item(intern!(py, "meta"), str_form(py)?)?;
        return c
            .message
            .bind(py)
            .call((role, blocks), Some(&options))
            .map(Some);
    }
    let Ok(parts) = content.cast_exact::<PyList>() else {
        return Ok(None);
    };
    let mut blocks = Vec::with_capacity(parts.len());
    for part in parts.iter() {
        let Some(block) = read_block(c, &part, assistant)? else {
            return Ok(None);
        };
        blocks.push(block);
    }
    new_message(c, &role, PyTuple::new(py, blocks)?).map(Some)
}

/// One content block of a user (`assistant` false) or assistant message, in a common shape.
fn read_block<'py>(
    c: &Classes,
    part: &Bound<'py, PyAny>,
    assistant: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = part.py();
    let Ok(part) = part.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    let Some(kind) = tag(get(part, intern!(py, "type"))?.as_ref()) else {
        return Ok(None);
    };
    match kind.to_str() {
        Ok("text") => read_text(c, part),
        Ok("tool_use") if assistant && part.len() == 4 => {
            let id = get(part, intern!(py, "id"))?;
            let name = get(part, intern!(py, "name"))?;
            let input = get(part, intern!(py, "input"))?;
            match (id, name, input) {
                (Some(id), Some(name), Some(input))
                    if nonempty_str(&id)
                        && nonempty_str(&name)
                        && input.is_exact_instance_of::<PyDict>() =>
                {
                    tool_use_block(c, &id, &name, &input).map(Some)
                }
                _ => Ok(None),
            }
        }
        Ok("tool_result") if !assistant => {
            // `is_error` only when true: an explicit false is recorded by the general reader.
            let is_error = get(part, intern!(py, "is_error"))?;
            let flagged = is_error
                .as_ref()
                .is_some_and(|e| e.cast_exact::<PyBool>().is_ok_and(PyBoolMethods::is_true));
            if part.len() != if flagged { 4 } else { 3 } {
                return Ok(None);
            }
            let id = get(part, intern!(py, "tool_use_id"))?;
            let Some(content) = get(part, intern!(py, "content"))? else {
                return Ok(None);
            };
            if !nonempty(id.as_ref()) {
                return Ok(None);
            }
            let content = if text(Some(&content)).is_some() {
                content
            } else if let Ok(items) = content.cast_exact::<PyList>() {
                let mut texts = Vec::with_capacity(items.len());
                for item in items.iter() {
                    let Ok(item) = item.cast_exact::<PyDict>() else {
                        return Ok(None);
                    };
                    if !is_tag(get(item, intern!(py, "type"))?.as_ref(), "text") {
                        return Ok(None);
                    }
                    let Some(block) = read_text(c, item)? else {
                        return Ok(None);
                    };
                    texts.push(block);
                }
                PyTuple::new(py, texts)?.into_any()
            } else {
                return Ok(None);
            };
            c.tool_result
                .bind(py)
                .call1((id, content, flagged))
                .map(Some)
        }
        _ => Ok(None),
    }
}

/// A `{"type": "text", "text": ...}` block (its type already read).
fn read_text<'py>(c: &Classes, part: &Bound<'py, PyDict>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = part.py();
    if part.len() != 2 {
        return Ok(None);
    }
    match text(get(part, intern!(py, "text"))?.as_ref()) {
        Some(t) => text_block(c, t).map(Some),
        None => Ok(None),
    }
}

/// The role of `message` if a core renderer may render it: a `Message` with no recorded
/// fields that is not a system message (which only the general renderer may refuse).
fn renderable_role<'py>(
    c: &Classes,
    message: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = message.py();
    if !message.get_type().is(c.message.bind(py))
        || !message.getattr(intern!(py, "meta"))?.is_none()
    {
        return Ok(None);
    }
    let role = message.getattr(intern!(py, "role"))?;
    if role.cast_exact::<PyString>()?.to_str()? == "system" {
        return Ok(None);
    }
    Ok(Some(role))
}

/// The Anthropic message dict of `message` in a common shape (see the module docs), or
/// `None` for the general renderer.
#[pyfunction]
pub fn anthropic_render<'py>(message: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyList>>> {
    let py = message.py();
    let c = classes(py)?;
    let Some(role) = renderable_role(c, message)? else {
        return Ok(None);
    };
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

/// `anthropic_render`'s dict as the JSON the request holds, written straight from the
/// message (see the module docs), or `None` for the general path.
#[pyfunction]
pub fn anthropic_render_json<'py>(
    message: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let py = message.py();
    let c = classes(py)?;
    let Some(role) = renderable_role(c, message)? else {
        return Ok(None);
    };
    let Some(role_str) = plain(&role) else {
        return Ok(None);
    };
    // Each block's values, kept alive while their text is borrowed below.
    let blocks = message.getattr(intern!(py, "content"))?;
    let blocks = blocks.cast_exact::<PyTuple>()?;
    let mut held: Vec<Held<'py>> = Vec::with_capacity(blocks.len());
    for block in blocks.iter() {
        let ty = block.get_type();
        let get = |key| block.getattr(key);
        held.push(if ty.is(c.text.bind(py)) {
            Held::Text(get(intern!(py, "text"))?)
        } else if ty.is(c.tool_use.bind(py)) {
            let Some(input) = plain_json_bytes(&get(intern!(py, "input"))?)? else {
                return Ok(None);
            };
            Held::ToolUse(get(intern!(py, "id"))?, get(intern!(py, "name"))?, input)
        } else if ty.is(c.tool_result.bind(py)) {
            Held::ToolResult(
                get(intern!(py, "tool_use_id"))?,
                get(intern!(py, "content"))?,
                get(intern!(py, "is_error"))?.is_truthy()?, // a checked bool
            )
        } else if ty.is(c.reasoning.bind(py)) {
            Held::Reasoning(
                get(intern!(py, "text"))?,
                get(intern!(py, "signature"))?,
                get(intern!(py, "redacted"))?.is_truthy()?, // a checked bool
            )
        } else {
            return Ok(None); // images: the general renderer
        });
    }
    let mut parts = Vec::with_capacity(held.len());
    for h in &held {
        let part = match h {
            Held::Text(text) => plain(text).map(AnthropicPart::Text),
            Held::ToolUse(id, name, input) => match (plain(id), plain(name)) {
                (Some(id), Some(name)) => Some(AnthropicPart::ToolUse {
                    id,
                    name,
                    input: input.as_bytes(),
                }),
                _ => None,
            },
            Held::ToolResult(id, content, is_error) => match (plain(id), plain(content)) {
                (Some(tool_use_id), Some(content)) => Some(AnthropicPart::ToolResult {
                    tool_use_id,
                    content,
                    is_error: *is_error,
                }),
                _ => None, // text and image blocks: the general renderer
            },
            Held::Reasoning(text, signature, redacted) => match (plain(signature), *redacted) {
                (Some(data), true) => Some(AnthropicPart::Redacted { data }),
                (Some(signature), false) => {
                    plain(text).map(|text| AnthropicPart::Thinking { text, signature })
                }
                (None, _) => None,
            },
        };
        let Some(part) = part else {
            return Ok(None);
        };
        parts.push(part);
    }
    let mut out = Vec::with_capacity(256);
    write_anthropic(&mut out, role_str, &parts);
    Ok(Some(PyBytes::new(py, &out)))
}

/// A block's values, as `anthropic_render_json` reads them.
enum Held<'py> {
    Text(Bound<'py, PyAny>),
    ToolUse(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyBytes>),
    ToolResult(Bound<'py, PyAny>, Bound<'py, PyAny>, bool),
    Reasoning(Bound<'py, PyAny>, Bound<'py, PyAny>, bool),
}
