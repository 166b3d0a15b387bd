//! Fast readers of provider messages in their most common shapes.
//!
//! `chat_fast` reads one Chat Completions message dict, and `chat_fast_prefix` the longest
//! prefix of a list, when it has one of the shapes servers receive on every turn: a `system`/`user` message whose content is a string, an
//! `assistant` one with string or null content and plain function calls whose `arguments`
//! are the compact JSON of an object, a `tool` message with string content. Such a message
//! needs no record of provider fields, so the result is exactly what the general reader in
//! `ctxtrim.formats.openai_chat` makes. On anything else it answers `None` and the general
//! reader runs, which records what it must or names what is wrong. The arguments are parsed
//! and re-encoded with the same Python functions the general reader uses (`loads`, `dumps`),
//! so "compact JSON" means the same thing on both paths.

use pyo3::exceptions::{PyRecursionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use pyo3::{intern, Py};

use super::convert::classes;

/// A non-empty exact `str`.
fn nonempty(value: Option<&Bound<'_, PyAny>>) -> bool {
    value.is_some_and(|v| {
        v.cast_exact::<PyString>()
            .is_ok_and(|s| s.to_str().is_ok_and(|t| !t.is_empty()))
    })
}

fn get<'py>(
    d: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    d.get_item(key)
}

/// One Chat Completions message in a common shape → a `Message`, or a `ToolResultBlock` for
/// a `tool` message (the caller joins consecutive ones into one user message); `None` for
/// the general reader. `loads`/`dumps` are the general reader's JSON functions and `raw_key`
/// its marker for arguments kept as text (first, so that `functools.partial` binds them).
#[pyfunction]
pub fn chat_fast<'py>(
    loads: &Bound<'py, PyAny>,
    dumps: &Bound<'py, PyAny>,
    raw_key: &Bound<'py, PyString>,
    msg: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match read_chat(msg, loads, dumps, raw_key) {
        Ok(read) => Ok(read),
        // What the general reader names (bad values, arguments too deep): its job, not ours.
        Err(e) if e.is_instance_of::<PyValueError>(msg.py()) => Ok(None),
        Err(e) if e.is_instance_of::<PyRecursionError>(msg.py()) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The longest prefix of `items` whose messages all have a common shape, read as
/// `chat_fast` reads each, consecutive `tool` messages joined into one user message:
/// `(messages, next, run, run_start)`, where `next` is the index of the first item left for
/// the general reader and `run` the tool results read since `run_start` that a following
/// `tool` message may still join (empty when the whole list was read).
#[pyfunction]
#[allow(clippy::type_complexity)] // the tuple is what the Python caller unpacks
pub fn chat_fast_prefix<'py>(
    loads: &Bound<'py, PyAny>,
    dumps: &Bound<'py, PyAny>,
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
            out.append(c.message.bind(py).call1((intern!(py, "user"), blocks))?)?;
        }
        Ok(())
    };
    let mut next = 0;
    while next < items.len() {
        let Some(read) = chat_fast(loads, dumps, raw_key, &items.get_item(next)?)? else {
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
    loads: &Bound<'py, PyAny>,
    dumps: &Bound<'py, PyAny>,
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
        c.message
            .bind(py)
            .call1((role, PyTuple::new(py, blocks)?))
            .map(Some)
    };
    match role.to_str() {
        Ok("tool") => {
            let call_id = get(msg, intern!(py, "tool_call_id"))?;
            match text {
                Some(text) if msg.len() == 3 && nonempty(call_id.as_ref()) => {
                    c.tool_result.bind(py).call1((call_id, text)).map(Some)
                }
                _ => Ok(None),
            }
        }
        Ok("system" | "user") => match text {
            Some(text) if msg.len() == 2 => message(role, vec![c.text.bind(py).call1((text,))?]),
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
                blocks.push(c.text.bind(py).call1((text,))?);
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
                let Some(block) = read_call(&call, loads, dumps, raw_key, &c.tool_use)? else {
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
    loads: &Bound<'py, PyAny>,
    dumps: &Bound<'py, PyAny>,
    raw_key: &Bound<'py, PyString>,
    tool_use: &Py<pyo3::types::PyType>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = call.py();
    let Ok(call) = call.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    let is_function = get(call, intern!(py, "type"))?.is_some_and(|t| {
        t.cast_exact::<PyString>()
            .is_ok_and(|s| s.to_str().is_ok_and(|s| s == "function"))
    });
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
    let Some(text) = text else {
        return Ok(None);
    };
    let args = loads.call1((&text,))?;
    let Ok(args) = args.cast_into_exact::<PyDict>() else {
        return Ok(None);
    };
    if !dumps.call1((&args,))?.eq(&text)? || args.contains(raw_key)? {
        return Ok(None);
    }
    tool_use.bind(py).call1((call_id, name, args)).map(Some)
}
