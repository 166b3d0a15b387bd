//! Chat Completions' most common shapes, read and rendered without the general Python code.
//!
//! `chat_fast` reads one Chat Completions message dict, and `chat_fast_prefix` the longest
//! prefix of a list, when it has one of the shapes servers receive on every turn: a `system`/`user` message whose content is a string, an
//! `assistant` one with string or null content and plain function calls whose `arguments`
//! are the compact JSON of an object, a `tool` message with string content. Such a message
//! needs no record of provider fields, so the result is exactly what the general reader in
//! `ctxtrim.formats.openai_chat` makes. On anything else it answers `None` and the general
//! reader runs, which records what it must or names what is wrong. The arguments are parsed
//! and re-encoded with the functions the general reader uses (`json_loads`, `compact_json`),
//! so "compact JSON" means the same thing on both paths.
//!
//! `chat_render` is the other direction: a message with no recorded provider fields (no
//! `meta`, no `name`) whose blocks have a common shape — text in a system, user or assistant
//! message, plain tool calls after or among an assistant's text, string tool results alone in
//! a user message — becomes the Chat Completions dicts the general renderer makes for it, in
//! the same key order, so the kept JSON bytes are the same. Anything else is `None`, for the
//! general renderer.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};
use pyo3::{intern, Py};

use crate::json_write::{write_message, write_tool, CallParts, Content};

use super::convert::classes;
use super::json::compact_json;
use super::message::{new_message, text_block, text_tool_result, tool_use_block};
use super::shapes::{arguments, get, is_tag, nonempty, plain, stop_on_invalid};

/// One Chat Completions message in a common shape → a `Message`, or a `ToolResultBlock` for
/// a `tool` message (the caller joins consecutive ones into one user message); `None` for
/// the general reader. `raw_key` is its marker for arguments kept as text (first, so that
/// `functools.partial` binds it).
#[pyfunction]
pub fn chat_fast<'py>(
    raw_key: &Bound<'py, PyString>,
    msg: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    stop_on_invalid(msg.py(), read_chat(msg, raw_key))
}

/// The longest prefix of `items` whose messages all have a common shape, read as
/// `chat_fast` reads each, consecutive `tool` messages joined into one user message:
/// `(messages, next, run, run_start)`, where `next` is the index of the first item left for
/// the general reader and `run` the tool results read since `run_start` that a following
/// `tool` message may still join (empty when the whole list was read).
#[pyfunction]
#[allow(clippy::type_complexity)] // the tuple is what the Python caller unpacks
pub fn chat_fast_prefix<'py>(
    raw_key: &Bound<'py, PyString>,
    items: &Bound<'py, PyList>,
) -> PyResult<(Bound<'py, PyList>, usize, Bound<'py, PyList>, usize)> {
    let py = items.py();
    let c = classes(py)?;
    let out = PyList::empty(py);
    let mut run: Vec<Bound<'py, PyAny>> = Vec::new();
    let mut run_start = 0;
    let flush = |run: &mut Vec<Bound<'py, PyAny>>| -> PyResult<()> {
        if !run.is_empty() {
            let blocks = PyTuple::new(py, run.drain(..))?;
            out.append(new_message(c, intern!(py, "user"), blocks)?)?;
        }
        Ok(())
    };
    let mut next = 0;
    while next < items.len() {
        let Some(read) = chat_fast(raw_key, &items.get_item(next)?)? else {
            return Ok((out, next, PyList::new(py, run)?, run_start));
        };
        if read.get_type().is(c.tool_result.bind(py)) {
            if run.is_empty() {
                run_start = next;
            }
            run.push(read);
        } else {
            flush(&mut run)?;
            out.append(read)?;
        }
        next += 1;
    }
    flush(&mut run)?;
    Ok((out, next, PyList::empty(py), run_start))
}

fn read_chat<'py>(
    msg: &Bound<'py, PyAny>,
    raw_key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = msg.py();
    let c = classes(py)?;
    let Ok(msg) = msg.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    let Some(role) = get(msg, intern!(py, "role"))? else {
        return Ok(None);
    };
    let Ok(role) = role.cast_exact::<PyString>() else {
        return Ok(None);
    };
    let content = get(msg, intern!(py, "content"))?;
    let text = content
        .as_ref()
        .and_then(|v| v.cast_exact::<PyString>().ok().cloned());
    let message = |role: &Bound<'py, PyString>, blocks: Vec<Bound<'py, PyAny>>| {
        new_message(c, role, PyTuple::new(py, blocks)?).map(Some)
    };
    match role.to_str() {
        Ok("tool") => {
            let call_id = get(msg, intern!(py, "tool_call_id"))?;
            match text {
                Some(text) if msg.len() == 3 => match call_id {
                    Some(id) if nonempty(Some(&id)) => {
                        text_tool_result(c, &id, &text, false).map(Some)
                    }
                    _ => Ok(None),
                },
                _ => Ok(None),
            }
        }
        Ok("system" | "user") => match text {
            Some(text) if msg.len() == 2 => message(role, vec![text_block(c, &text)?]),
            _ => Ok(None),
        },
        Ok("assistant") => {
            let Some(content) = content else {
                return Ok(None);
            };
            if msg.contains(intern!(py, "name"))? {
                return Ok(None);
            }
            let mut blocks = Vec::with_capacity(2);
            if let Some(text) = text {
                blocks.push(text_block(c, &text)?);
            } else if !content.is_none() {
                return Ok(None);
            }
            let calls = get(msg, intern!(py, "tool_calls"))?.filter(|v| !v.is_none());
            let Some(calls) = calls else {
                return if msg.len() == 2 {
                    message(role, blocks)
                } else {
                    Ok(None)
                };
            };
            let Ok(calls) = calls.cast_exact::<PyList>() else {
                return Ok(None);
            };
            if msg.len() != 3 || calls.is_empty() {
                return Ok(None);
            }
            for call in calls.iter() {
                let Some(block) = read_call(&call, raw_key)? else {
                    return Ok(None);
                };
                blocks.push(block);
            }
            message(role, blocks)
        }
        _ => Ok(None),
    }
}

/// One `{"id", "type": "function", "function": {"name", "arguments"}}` → a `ToolUseBlock`.
fn read_call<'py>(
    call: &Bound<'py, PyAny>,
    raw_key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = call.py();
    let Ok(call) = call.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    let is_function = is_tag(get(call, intern!(py, "type"))?.as_ref(), "function");
    if call.len() != 3 || !is_function {
        return Ok(None);
    }
    let call_id = get(call, intern!(py, "id"))?;
    let Some(Ok(function)) =
        get(call, intern!(py, "function"))?.map(Bound::cast_into_exact::<PyDict>)
    else {
        return Ok(None);
    };
    if function.len() != 2 || !nonempty(call_id.as_ref()) {
        return Ok(None);
    }
    let name = get(&function, intern!(py, "name"))?;
    let text = get(&function, intern!(py, "arguments"))?;
    if !nonempty(name.as_ref()) || !nonempty(text.as_ref()) {
        return Ok(None);
    }
    let Some(Ok(text)) = text.map(Bound::cast_into_exact::<PyString>) else {
        return Ok(None);
    };
    let (Some(call_id), Some(name)) = (call_id, name) else {
        return Ok(None);
    };
    let c = classes(py)?;
    let Some(args) = arguments(&text, raw_key)? else {
        return Ok(None);
    };
    tool_use_block(c, &call_id, &name, args.as_any()).map(Some)
}

/// A message's blocks in a common shape for rendering (see the module docs).
struct Shape<'py> {
    role: Bound<'py, PyString>,
    texts: Vec<Bound<'py, PyAny>>,
    calls: Vec<Bound<'py, PyAny>>,
    results: Vec<Bound<'py, PyAny>>,
}

/// `message`'s blocks sorted into texts, calls and results when it may have a common shape
/// (a `Message` with no `meta` and no `name`, of text, tool-use and tool-result blocks only);
/// `None` for the general renderer. Results are alone in a user message, and there is
/// something to render.
fn shape<'py>(message: &Bound<'py, PyAny>) -> PyResult<Option<Shape<'py>>> {
    let py = message.py();
    let c = classes(py)?;
    if !message.get_type().is(c.message.bind(py))
        || !message.getattr(intern!(py, "meta"))?.is_none()
        || !message.getattr(intern!(py, "name"))?.is_none()
    {
        return Ok(None);
    }
    let role = message.getattr(intern!(py, "role"))?;
    let Ok(role) = role.cast_into_exact::<PyString>() else {
        return Ok(None);
    };
    let content = message.getattr(intern!(py, "content"))?;
    let blocks = content.cast_exact::<PyTuple>()?;
    let is = |block: &Bound<'py, PyAny>, ty: &Py<PyType>| block.get_type().is(ty.bind(py));
    let mut shape = Shape {
        role,
        texts: Vec::with_capacity(1),
        calls: Vec::new(),
        results: Vec::new(),
    };
    for block in blocks.iter() {
        if is(&block, &c.text) {
            shape.texts.push(block.getattr(intern!(py, "text"))?);
        } else if is(&block, &c.tool_use) {
            shape.calls.push(block);
        } else if is(&block, &c.tool_result) {
            shape.results.push(block);
        } else {
            return Ok(None); // images, reasoning: the general renderer
        }
    }
    let results_alone = shape.texts.is_empty() && shape.role.to_str()? == "user";
    if !shape.results.is_empty() && !results_alone {
        return Ok(None);
    }
    if shape.texts.is_empty() && shape.calls.is_empty() && shape.results.is_empty() {
        return Ok(None);
    }
    Ok(Some(shape))
}

/// The Chat Completions dicts of `message` in a common shape (see the module docs), or
/// `None` for the general renderer. `raw_key` is its marker for arguments kept as text
/// (first, for `functools.partial`).
#[pyfunction]
pub fn chat_render<'py>(
    raw_key: &Bound<'py, PyString>,
    message: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let py = message.py();
    let Some(shape) = shape(message)? else {
        return Ok(None);
    };
    let out = PyList::empty(py);
    if !shape.results.is_empty() {
        // A user message of tool results only: one `tool` message each.
        for result in shape.results {
            let output = result.getattr(intern!(py, "content"))?;
            if output.cast_exact::<PyString>().is_err() {
                return Ok(None);
            }
            let d = PyDict::new(py);
            d.set_item(intern!(py, "role"), intern!(py, "tool"))?;
            d.set_item(
                intern!(py, "tool_call_id"),
                result.getattr(intern!(py, "tool_use_id"))?,
            )?;
            d.set_item(intern!(py, "content"), output)?;
            out.append(d)?;
        }
        return Ok(Some(out));
    }
    let d = PyDict::new(py);
    d.set_item(intern!(py, "role"), &shape.role)?;
    d.set_item(intern!(py, "content"), text_content(py, shape.texts)?)?;
    if !shape.calls.is_empty() {
        let rendered = PyList::empty(py);
        for call in shape.calls {
            let input = call.getattr(intern!(py, "input"))?;
            if input.cast::<PyDict>()?.contains(raw_key)? {
                return Ok(None); // arguments kept as text: the general renderer
            }
            let function = PyDict::new(py);
            function.set_item(intern!(py, "name"), call.getattr(intern!(py, "name"))?)?;
            function.set_item(intern!(py, "arguments"), compact_json(&input)?)?;
            let item = PyDict::new(py);
            item.set_item(intern!(py, "id"), call.getattr(intern!(py, "id"))?)?;
            item.set_item(intern!(py, "type"), intern!(py, "function"))?;
            item.set_item(intern!(py, "function"), function)?;
            rendered.append(item)?;
        }
        d.set_item(intern!(py, "tool_calls"), rendered)?;
    }
    out.append(d)?;
    Ok(Some(out))
}

/// `chat_render`'s dicts as the JSON the request holds (comma-joined objects, no
/// brackets), written straight from the message: the bytes msgspec writes for those dicts.
/// `None` for the general path: not a common shape, or a string that is not valid UTF-8 or
/// not an exact `str` (the encoder decides what becomes of those).
#[pyfunction]
pub fn chat_render_json<'py>(
    raw_key: &Bound<'py, PyString>,
    message: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let py = message.py();
    let Some(shape) = shape(message)? else {
        return Ok(None);
    };
    let mut out: Vec<u8> = Vec::with_capacity(160);
    if !shape.results.is_empty() {
        for (i, result) in shape.results.iter().enumerate() {
            let output = result.getattr(intern!(py, "content"))?;
            let id = result.getattr(intern!(py, "tool_use_id"))?;
            let (Some(id), Some(output)) = (plain(&id), plain(&output)) else {
                return Ok(None);
            };
            if i > 0 {
                out.push(b',');
            }
            write_tool(&mut out, id, output);
        }
        return Ok(Some(PyBytes::new(py, &out)));
    }
    let Some(role) = plain(&shape.role) else {
        return Ok(None);
    };
    let Some(texts) = shape.texts.iter().map(plain).collect::<Option<Vec<_>>>() else {
        return Ok(None);
    };
    let content = match texts.as_slice() {
        [] => Content::Null,
        [text] => Content::Text(text),
        parts => Content::Parts(parts),
    };
    // Each call's parts, kept alive while their text is borrowed.
    let mut held = Vec::with_capacity(shape.calls.len());
    for call in &shape.calls {
        let input = call.getattr(intern!(py, "input"))?;
        if input.cast::<PyDict>()?.contains(raw_key)? {
            return Ok(None); // arguments kept as text: the general renderer
        }
        held.push((
            call.getattr(intern!(py, "id"))?,
            call.getattr(intern!(py, "name"))?,
            compact_json(&input)?.into_any(),
        ));
    }
    let mut calls = Vec::with_capacity(held.len());
    for (id, name, arguments) in &held {
        let (Some(id), Some(name), Some(arguments)) = (plain(id), plain(name), plain(arguments))
        else {
            return Ok(None);
        };
        calls.push(CallParts {
            id,
            name,
            arguments,
        });
    }
    write_message(&mut out, role, content, &calls);
    Ok(Some(PyBytes::new(py, &out)))
}

fn text_content<'py>(
    py: Python<'py>,
    texts: Vec<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    match texts.len() {
        0 => Ok(py.None().into_bound(py)),
        1 => Ok(texts
            .into_iter()
            .next()
            .unwrap_or_else(|| py.None().into_bound(py))),
        _ => {
            let parts = PyList::empty(py);
            for text in texts {
                let part = PyDict::new(py);
                part.set_item(intern!(py, "type"), intern!(py, "text"))?;
                part.set_item(intern!(py, "text"), text)?;
                parts.append(part)?;
            }
            Ok(parts.into_any())
        }
    }
}
