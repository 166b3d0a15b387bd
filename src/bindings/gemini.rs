//! Gemini `contents` in their most common shapes, read without the general Python code.
//!
//! `gemini_fast_prefix` reads, from a start index, the longest run of contents in which each
//! has exactly `role` (`user` or `model`) and `parts`, each part one of `{"text": str}`, a
//! model's `{"function_call": {"id", "name", "args": dict}}` or a user's
//! `{"function_response": {"id", "name", "response": {"output": str}}}` whose name is its
//! call's. These need no record of provider fields, so each message is exactly what the
//! general reader in `ctxtrim.formats.gemini` makes; the first content in any other shape (or
//! with a value a constructor refuses) ends the run, and the general reader takes it.
//!
//! Pairing: the reader shares the general reader's state, and changes it only for a content
//! it returns a message for: a model content's calls become the waiting calls (and their
//! names are recorded by id, first name kept), a user content's responses are taken off the
//! waiting calls. So reading a content here or in Python leaves the same state.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::convert::{classes, Classes};
use super::message::{new_message, text_block, text_tool_result, tool_use_block};
use super::shapes::{get, stop_on_invalid, text};

/// What one content read in a common shape changes in the pairing state.
enum Pairing<'py> {
    /// A model content: its calls, `(name, id)`, in order.
    Calls(Vec<(Bound<'py, PyString>, Bound<'py, PyString>)>),
    /// A user content: the ids its responses answer.
    Answers(Vec<Bound<'py, PyString>>),
}

/// The messages of the contents from `start` on, up to the first one in another shape, and
/// the index of that content (`len(items)` when all were read): `(messages, next)`. `names`
/// (call id → function name) and `waiting` (a list of `(name, id)` tuples) are the general
/// reader's pairing state, updated in place for each content read.
#[pyfunction]
pub fn gemini_fast_prefix<'py>(
    items: &Bound<'py, PyList>,
    start: usize,
    names: &Bound<'py, PyDict>,
    waiting: &Bound<'py, PyList>,
) -> PyResult<(Bound<'py, PyList>, usize)> {
    let py = items.py();
    let c = classes(py)?;
    let out = PyList::empty(py);
    let mut next = start;
    while next < items.len() {
        let item = items.get_item(next)?;
        let Some((message, pairing)) = stop_on_invalid(py, read_content(c, &item, names))? else {
            break;
        };
        match pairing {
            Pairing::Calls(calls) => {
                waiting.del_slice(0, waiting.len())?;
                for (name, id) in calls {
                    if !names.contains(&id)? {
                        names.set_item(&id, &name)?;
                    }
                    waiting.append(PyTuple::new(py, [name, id])?)?;
                }
            }
            Pairing::Answers(ids) => {
                for id in ids {
                    // The first waiting call with this id, as the general reader takes it.
                    for (j, pair) in waiting.iter().enumerate() {
                        if pair.get_item(1)?.eq(&id)? {
                            waiting.del_item(j)?;
                            break;
                        }
                    }
                }
            }
        }
        out.append(message)?;
        next += 1;
    }
    Ok((out, next))
}

type Read<'py> = Option<(Bound<'py, PyAny>, Pairing<'py>)>;

fn read_content<'py>(
    c: &Classes,
    item: &Bound<'py, PyAny>,
    names: &Bound<'py, PyDict>,
) -> PyResult<Read<'py>> {
    let py = item.py();
    let Ok(item) = item.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    if item.len() != 2 {
        return Ok(None);
    }
    let (Some(role), Some(parts)) = (
        get(item, intern!(py, "role"))?,
        get(item, intern!(py, "parts"))?,
    ) else {
        return Ok(None);
    };
    let Ok(parts) = parts.cast_exact::<PyList>() else {
        return Ok(None);
    };
    let model = match role.cast_exact::<PyString>().map(|r| r.to_str()) {
        Ok(Ok("model")) => true,
        Ok(Ok("user")) => false,
        _ => return Ok(None),
    };
    let mut blocks = Vec::with_capacity(parts.len());
    let mut calls = Vec::new();
    let mut answers = Vec::new();
    for part in parts.iter() {
        let Ok(part) = part.cast_exact::<PyDict>() else {
            return Ok(None);
        };
        if part.len() != 1 {
            return Ok(None);
        }
        if let Some(t) = text(get(part, intern!(py, "text"))?.as_ref()) {
            blocks.push(text_block(c, t)?);
            continue;
        }
        let block = if model {
            let Some((block, call)) = read_call(c, part)? else {
                return Ok(None);
            };
            calls.push(call);
            block
        } else {
            let Some((block, id)) = read_response(c, part, names)? else {
                return Ok(None);
            };
            answers.push(id);
            block
        };
        blocks.push(block);
    }
    let role = if model {
        intern!(py, "assistant")
    } else {
        intern!(py, "user")
    };
    let message = new_message(c, role, PyTuple::new(py, blocks)?)?;
    let pairing = if model {
        Pairing::Calls(calls)
    } else {
        Pairing::Answers(answers)
    };
    Ok(Some((message, pairing)))
}

/// `{"function_call": {"id", "name", "args"}}` with string id and name and a dict of args:
/// the tool call, and its `(name, id)`.
#[allow(clippy::type_complexity)] // a block and the pair it opens
fn read_call<'py>(
    c: &Classes,
    part: &Bound<'py, PyDict>,
) -> PyResult<
    Option<(
        Bound<'py, PyAny>,
        (Bound<'py, PyString>, Bound<'py, PyString>),
    )>,
> {
    let py = part.py();
    let Some(call) = get(part, intern!(py, "function_call"))? else {
        return Ok(None);
    };
    let Ok(call) = call.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    if call.len() != 3 {
        return Ok(None);
    }
    let (Some(id), Some(name), Some(args)) = (
        get(call, intern!(py, "id"))?,
        get(call, intern!(py, "name"))?,
        get(call, intern!(py, "args"))?,
    ) else {
        return Ok(None);
    };
    let (Ok(id), Ok(name)) = (id.cast_exact::<PyString>(), name.cast_exact::<PyString>()) else {
        return Ok(None);
    };
    if !args.is_exact_instance_of::<PyDict>() {
        return Ok(None);
    }
    let block = tool_use_block(c, id, name, &args)?;
    Ok(Some((block, (name.clone(), id.clone()))))
}

/// `{"function_response": {"id", "name", "response": {"output": str}}}` answering a call
/// read before under the same name: the tool result, and the id it answers.
fn read_response<'py>(
    c: &Classes,
    part: &Bound<'py, PyDict>,
    names: &Bound<'py, PyDict>,
) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyString>)>> {
    let py = part.py();
    let Some(response) = get(part, intern!(py, "function_response"))? else {
        return Ok(None);
    };
    let Ok(response) = response.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    if response.len() != 3 {
        return Ok(None);
    }
    let (Some(id), Some(name), Some(body)) = (
        get(response, intern!(py, "id"))?,
        get(response, intern!(py, "name"))?,
        get(response, intern!(py, "response"))?,
    ) else {
        return Ok(None);
    };
    let (Ok(id), Ok(name), Ok(body)) = (
        id.cast_exact::<PyString>(),
        name.cast_exact::<PyString>(),
        body.cast_exact::<PyDict>(),
    ) else {
        return Ok(None);
    };
    let called = names.get_item(id)?;
    if !called.is_some_and(|called| called.eq(name).unwrap_or(false)) || body.len() != 1 {
        return Ok(None);
    }
    let Some(output) = get(body, intern!(py, "output"))? else {
        return Ok(None);
    };
    let Ok(output) = output.cast_exact::<PyString>() else {
        return Ok(None);
    };
    let block = text_tool_result(c, id, output, false)?;
    Ok(Some((block, id.clone())))
}
