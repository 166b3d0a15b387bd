//! autogen-core's messages read as ctxtrim skeletons, without a Python frame per message.
//!
//! `ctxtrim.integrations.autogen.to_skeleton` is the definition: it turns one autogen
//! `LLMMessage` into the `Message` the drop-ins decide on (role, tool ids, text for the
//! estimates). `autogen_skeletons` reads a list of them from an index on and makes, for each
//! message in one of the shapes autogen's own code builds, exactly what `to_skeleton` makes:
//! the message of an exact autogen class (no subclass), its fields of the exact types autogen
//! declares (`str` of valid UTF-8, a `list` of exact `FunctionCall`s or
//! `FunctionExecutionResult`s, a `bool` or `None` error flag). It stops at the first message
//! it does not read so; the caller hands that one to `to_skeleton` and calls again after it,
//! so every unusual message, and every error, comes from the one Python definition.
//!
//! The autogen classes are passed in by the caller (this crate does not import autogen).

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple, PyType};

use super::convert::{classes, Classes};
use super::facts::set_facts;
use super::message::{checked_tool_use, new_message, plain_str, text_block, text_tool_result};
use super::shapes::stop_on_invalid;
use super::untrack::untrack;
use crate::meta::{Meta, Role};
use crate::tokens::{Encoding, TokenTally};

/// The autogen classes read, in the order the caller passes them.
struct Kinds<'py> {
    system: Bound<'py, PyType>,
    user: Bound<'py, PyType>,
    assistant: Bound<'py, PyType>,
    results: Bound<'py, PyType>,
    call: Bound<'py, PyType>,
    result: Bound<'py, PyType>,
}

impl<'py> Kinds<'py> {
    fn of(kinds: &Bound<'py, PyTuple>) -> PyResult<Self> {
        let kind = |i: usize| -> PyResult<Bound<'py, PyType>> {
            Ok(kinds.get_item(i)?.cast_into::<PyType>()?)
        };
        if kinds.len() != 6 {
            return Err(PyTypeError::new_err(
                "kinds must be (SystemMessage, UserMessage, AssistantMessage, \
                 FunctionExecutionResultMessage, FunctionCall, FunctionExecutionResult)",
            ));
        }
        Ok(Kinds {
            system: kind(0)?,
            user: kind(1)?,
            assistant: kind(2)?,
            results: kind(3)?,
            call: kind(4)?,
            result: kind(5)?,
        })
    }
}

/// The value as an exact `str` of valid UTF-8 (empty or not), else `None`.
fn exact_str<'py>(value: &Bound<'py, PyAny>) -> Option<Bound<'py, PyString>> {
    value
        .cast_exact::<PyString>()
        .ok()
        .filter(|s| plain_str(s))
        .cloned()
}

/// The facts of the skeleton being made, gathered from the values it is made of, exactly as
/// `convert::meta_of` would read them back from it (the same tally calls, in block order):
/// off unless the caller asked for facts.
struct Gathered {
    on: bool,
    tokens: TokenTally,
    uses: Vec<Arc<str>>,
    results: Vec<Arc<str>>,
    /// Whether the message holds anything besides tool results.
    other: bool,
}

impl Gathered {
    fn new(on: bool) -> Self {
        Gathered {
            on,
            tokens: TokenTally::with_encoding(Encoding::Cl100k),
            uses: Vec::new(),
            results: Vec::new(),
            other: false,
        }
    }

    fn text(&mut self, text: &str) {
        if self.on {
            self.tokens.text(text);
            self.other = true;
        }
    }

    fn tool_use(&mut self, id: &str, name: &str, json: &str) {
        if self.on {
            self.tokens.tool_use(name, json);
            self.uses.push(Arc::from(id));
            self.other = true;
        }
    }

    fn tool_result(&mut self, id: &str, content: &str) {
        if self.on {
            self.tokens.tool_result();
            self.tokens.text(content);
            self.results.push(Arc::from(id));
        }
    }

    fn meta(self, role: Role) -> Meta {
        let mut meta = Meta::new(role, self.tokens.total());
        // Most messages have one kind of tool id or none: the empty lists stay `Meta::new`'s.
        if !self.uses.is_empty() {
            meta.tool_uses = self.uses.into();
        }
        if !self.results.is_empty() {
            meta.tool_results = self.results.into();
        }
        meta.real_user = role == Role::User && self.other;
        meta
    }
}

/// A text block of `text`, tallied.
fn text<'py>(
    c: &Classes,
    facts: &mut Gathered,
    text: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyAny>> {
    facts.text(text.to_str()?);
    text_block(c, text)
}

/// `Message.<role>(text)`'s blocks for a text: one `TextBlock`, none for `""`.
fn text_blocks<'py>(
    c: &Classes,
    facts: &mut Gathered,
    s: &Bound<'py, PyString>,
    blocks: &mut Vec<Bound<'py, PyAny>>,
) -> PyResult<()> {
    if !s.to_str()?.is_empty() {
        blocks.push(text(c, facts, s)?);
    }
    Ok(())
}

/// A tool id as `to_skeleton` names it: the id, or for an empty one `"\0autogen-{i}-{j}"`.
fn call_id<'py>(id: &Bound<'py, PyString>, i: isize, j: usize) -> PyResult<Bound<'py, PyString>> {
    if id.to_str()?.is_empty() {
        return Ok(PyString::new(id.py(), &format!("\0autogen-{i}-{j}")));
    }
    Ok(id.clone())
}

/// The JSON msgspec writes for the input `{"arguments": arguments}` (what a tool call is
/// priced on): written here when `arguments` holds no control character (msgspec escapes
/// only those, `"` and `\`, and writes everything else as it is), else msgspec's own.
fn input_json(c: &Classes, input: &Bound<'_, PyAny>, arguments: &str) -> PyResult<String> {
    if arguments.bytes().all(|b| b >= 0x20) {
        let mut json = String::with_capacity(arguments.len() + 17);
        json.push_str("{\"arguments\":\"");
        for ch in arguments.chars() {
            if ch == '"' || ch == '\\' {
                json.push('\\');
            }
            json.push(ch);
        }
        json.push_str("\"}");
        return Ok(json);
    }
    let encoded = c.json_encode.bind(input.py()).call1((input,))?;
    Ok(String::from_utf8_lossy(encoded.cast::<PyBytes>()?.as_bytes()).into_owned())
}

/// The skeleton of one autogen message (`i`: its index in the history), or `None` when it
/// is not in a shape read here; with `facts`, its facts are set on it.
fn read<'py>(
    k: &Kinds<'py>,
    c: &Classes,
    msg: &Bound<'py, PyAny>,
    i: isize,
    facts: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = msg.py();
    let ty = msg.get_type();
    let content = |m: &Bound<'py, PyAny>| m.getattr(intern!(py, "content"));
    let mut blocks: Vec<Bound<'py, PyAny>> = Vec::with_capacity(2);
    let mut gathered = Gathered::new(facts);
    let (role, name) = if ty.is(&k.system) {
        let Some(s) = exact_str(&content(msg)?) else {
            return Ok(None);
        };
        text_blocks(c, &mut gathered, &s, &mut blocks)?;
        (Role::System, intern!(py, "system"))
    } else if ty.is(&k.user) {
        let content = content(msg)?;
        if let Some(s) = exact_str(&content) {
            text_blocks(c, &mut gathered, &s, &mut blocks)?;
        } else if let Ok(parts) = content.cast_exact::<PyList>() {
            // Every part a text block: a `str`'s own text, anything else "[image]".
            for part in parts.iter() {
                if let Ok(s) = part.cast_exact::<PyString>() {
                    if !plain_str(s) {
                        return Ok(None);
                    }
                    blocks.push(text(c, &mut gathered, s)?);
                } else if part.is_instance_of::<PyString>() {
                    return Ok(None); // a str subclass: to_skeleton keeps it as it is
                } else {
                    blocks.push(text(c, &mut gathered, intern!(py, "[image]"))?);
                }
            }
            if blocks.is_empty() {
                blocks.push(text(c, &mut gathered, intern!(py, ""))?);
            }
        } else {
            return Ok(None);
        }
        (Role::User, intern!(py, "user"))
    } else if ty.is(&k.assistant) {
        let content = content(msg)?;
        if let Some(s) = exact_str(&content) {
            text_blocks(c, &mut gathered, &s, &mut blocks)?;
        } else if let Ok(calls) = content.cast_exact::<PyList>() {
            let thought = msg.getattr(intern!(py, "thought"))?;
            if !thought.is_none() {
                let Some(s) = exact_str(&thought) else {
                    return Ok(None);
                };
                text_blocks(c, &mut gathered, &s, &mut blocks)?;
            }
            for (j, call) in calls.iter().enumerate() {
                let Some(block) = tool_use(k, c, &mut gathered, &call, i, j)? else {
                    return Ok(None);
                };
                blocks.push(block);
            }
        } else {
            return Ok(None);
        }
        (Role::Assistant, intern!(py, "assistant"))
    } else if ty.is(&k.results) {
        let content = content(msg)?;
        let Ok(results) = content.cast_exact::<PyList>() else {
            return Ok(None);
        };
        for (j, result) in results.iter().enumerate() {
            let Some(block) = tool_result(k, c, &mut gathered, &result, j)? else {
                return Ok(None);
            };
            blocks.push(block);
        }
        (Role::User, intern!(py, "user"))
    } else {
        return Ok(None);
    };
    let message = new_message(c, name, PyTuple::new(py, blocks)?)?;
    if facts {
        set_facts(&message, gathered.meta(role))?;
    }
    Ok(Some(message))
}

/// `ToolUseBlock(id, name or "?", {"arguments": arguments})` of an exact `FunctionCall`.
fn tool_use<'py>(
    k: &Kinds<'py>,
    c: &Classes,
    facts: &mut Gathered,
    call: &Bound<'py, PyAny>,
    i: isize,
    j: usize,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = call.py();
    if !call.get_type().is(&k.call) {
        return Ok(None);
    }
    let (Some(id), Some(name), Some(arguments)) = (
        exact_str(&call.getattr(intern!(py, "id"))?),
        exact_str(&call.getattr(intern!(py, "name"))?),
        exact_str(&call.getattr(intern!(py, "arguments"))?),
    ) else {
        return Ok(None);
    };
    let name = if name.to_str()?.is_empty() {
        intern!(py, "?").clone()
    } else {
        name
    };
    // The frozen copy the block's checks would make of `{"arguments": arguments}`, made
    // here at once: the checks find it frozen and copy nothing.
    let input = c.frozen_dict.bind(py).call0()?;
    input
        .cast::<PyDict>()?
        .set_item(intern!(py, "arguments"), &arguments)?;
    untrack(&input);
    let id = call_id(&id, i, j)?;
    if facts.on {
        let json = input_json(c, &input, arguments.to_str()?)?;
        facts.tool_use(id.to_str()?, name.to_str()?, &json);
    }
    checked_tool_use(c, &id, &name, &input).map(Some)
}

/// `ToolResultBlock(call_id, content, bool(is_error))` of an exact `FunctionExecutionResult`.
fn tool_result<'py>(
    k: &Kinds<'py>,
    c: &Classes,
    facts: &mut Gathered,
    result: &Bound<'py, PyAny>,
    j: usize,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = result.py();
    if !result.get_type().is(&k.result) {
        return Ok(None);
    }
    let (Some(id), Some(content)) = (
        exact_str(&result.getattr(intern!(py, "call_id"))?),
        exact_str(&result.getattr(intern!(py, "content"))?),
    ) else {
        return Ok(None);
    };
    let is_error = result.getattr(intern!(py, "is_error"))?;
    let is_error = if is_error.is_none() {
        false
    } else if let Ok(flag) = is_error.cast_exact::<PyBool>() {
        flag.is_true()
    } else {
        return Ok(None);
    };
    // Results are named with the index -1, as `to_skeleton` names them.
    let id = call_id(&id, -1, j)?;
    facts.tool_result(id.to_str()?, content.to_str()?);
    text_tool_result(c, &id, &content, is_error).map(Some)
}

/// The skeletons of `items[start:]` up to the first message not in a shape read here (see
/// the module docs): `to_skeleton(items[j], base + j)` for each `j` read. `kinds` is
/// `(SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage,
/// FunctionCall, FunctionExecutionResult)`; `base` is the history index of `items[0]` (it
/// names tool calls that arrive without an id). With `facts`, each skeleton gets its facts
/// (what a `MessageLog` indexes) from the values it is made of, as `meta_of` would read them
/// back: no second walk over every skeleton.
#[pyfunction]
#[pyo3(signature = (kinds, items, start, base, *, facts = false))]
pub fn autogen_skeletons<'py>(
    kinds: &Bound<'py, PyTuple>,
    items: &Bound<'py, PyList>,
    start: usize,
    base: isize,
    facts: bool,
) -> PyResult<Bound<'py, PyList>> {
    let py = items.py();
    let k = Kinds::of(kinds)?;
    let c = classes(py)?;
    let mut out = Vec::with_capacity(items.len().saturating_sub(start));
    for (j, item) in items.iter().enumerate().skip(start) {
        let read = read(&k, c, &item, base + j as isize, facts);
        let Some(skeleton) = stop_on_invalid(py, read)? else {
            break;
        };
        out.push(skeleton);
    }
    PyList::new(py, out)
}
