//! Conversion of Python `ctxtrim.messages.Message` objects into the core's `Meta`.
//!
//! This walks the message's blocks and feeds the core's `TokenTally`; it decides nothing.
//! Block classes are looked up once per interpreter (`PyOnceLock`, never a global lazy that
//! could deadlock with the GIL) and compared by identity, which is far cheaper than reading
//! each block's `type` tag.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple, PyType};
use pyo3::{intern, Py};

use super::errors::invalid_message;
use super::facts::facts_of;
use crate::meta::{Meta, Role};
use crate::tokens::{Encoding, TokenTally};

/// The message and block classes of `ctxtrim.messages`, and the functions used on them.
pub struct Classes {
    pub message: Py<PyType>,
    pub text: Py<PyType>,
    pub image: Py<PyType>,
    pub tool_use: Py<PyType>,
    pub tool_result: Py<PyType>,
    pub reasoning: Py<PyType>,
    pub usage: Py<PyType>,
    pub frozen_dict: Py<PyType>,
    pub frozen_list: Py<PyType>,
    pub json_encode: Py<PyAny>,
    pub force_setattr: Py<PyAny>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

pub fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let m = py.import("ctxtrim.messages")?;
        let class = |name: &str| -> PyResult<Py<PyType>> {
            Ok(m.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        Ok(Classes {
            message: class("Message")?,
            text: class("TextBlock")?,
            image: class("ImageBlock")?,
            tool_use: class("ToolUseBlock")?,
            tool_result: class("ToolResultBlock")?,
            reasoning: class("ReasoningBlock")?,
            usage: class("Usage")?,
            frozen_dict: class("FrozenDict")?,
            frozen_list: class("FrozenList")?,
            json_encode: py.import("msgspec.json")?.getattr("encode")?.unbind(),
            force_setattr: py
                .import("msgspec.structs")?
                .getattr("force_setattr")?
                .unbind(),
        })
    })
}

fn role_of(role: &Bound<'_, PyAny>) -> Option<Role> {
    let role = role.cast::<PyString>().ok()?;
    match role.to_str().ok()? {
        "system" => Some(Role::System),
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        _ => None,
    }
}

/// Feed the string attribute `field` of `obj` to `f` without copying it. `path` is only
/// called to build an error.
fn with_str<R>(
    obj: &Bound<'_, PyAny>,
    field: &Bound<'_, PyString>,
    path: impl Fn() -> String,
    f: impl FnOnce(&str) -> R,
) -> PyResult<R> {
    let value = obj.getattr(field)?;
    let s = value
        .cast::<PyString>()
        .map_err(|_| invalid_message("expected a string", format!("{}.{field}", path())))?;
    let text = s
        .to_str()
        .map_err(|_| invalid_message("string is not valid UTF-8", format!("{}.{field}", path())))?;
    Ok(f(text))
}

thread_local! {
    /// The buffer tool inputs are written into, kept between calls so that pricing a tool
    /// call allocates nothing once it has grown.
    static JSON: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Calls `f` with an empty string to write JSON into: the thread's buffer, or a new string
/// if that is in use (msgspec, called for odd values, could in principle call back here).
fn with_json<R>(f: impl FnOnce(&mut String) -> R) -> R {
    JSON.with(|buf| match buf.try_borrow_mut() {
        Ok(mut json) => {
            json.clear();
            let r = f(&mut json);
            if json.capacity() > 1 << 16 {
                // Do not keep a huge input's buffer for the life of the thread.
                *json = String::new();
            }
            r
        }
        Err(_) => f(&mut String::new()),
    })
}

/// Nesting below which [`write_json`] recurses; deeper values (and cycles) go to msgspec.
const JSON_DEPTH: u32 = 32;

/// Appends `value` to `out` as the compact JSON `msgspec.json.encode` writes, so that a tool
/// call's input is priced without a round trip through Python for the common types (strings,
/// integers, booleans, None, str-keyed dicts, lists, tuples). Anything else — floats (whose
/// shortest form msgspec spells its own way), structs, dates, non-string keys, very deep
/// nesting — is encoded by msgspec, whose error (a cycle, an
/// unsupported type) is the caller's "not JSON-encodable".
fn write_json(c: &Classes, value: &Bound<'_, PyAny>, out: &mut String, depth: u32) -> PyResult<()> {
    if depth < JSON_DEPTH {
        if let Ok(s) = value.cast_exact::<PyString>() {
            write_json_str(s.to_str()?, out);
            return Ok(());
        }
        if value.is_none() {
            out.push_str("null");
            return Ok(());
        }
        if let Ok(b) = value.cast_exact::<PyBool>() {
            out.push_str(if b.is_true() { "true" } else { "false" });
            return Ok(());
        }
        if let Ok(i) = value.cast_exact::<PyInt>() {
            if let Ok(v) = i.extract::<i64>() {
                write_int(v, out);
                return Ok(());
            }
        }
        if let Ok(d) = value.cast_exact::<PyDict>() {
            let start = out.len();
            out.push('{');
            let mut str_keys = true;
            for (i, (k, v)) in d.iter().enumerate() {
                let Ok(k) = k.cast_exact::<PyString>() else {
                    str_keys = false;
                    break;
                };
                if i > 0 {
                    out.push(',');
                }
                write_json_str(k.to_str()?, out);
                out.push(':');
                write_json(c, &v, out, depth + 1)?;
            }
            if str_keys {
                out.push('}');
                return Ok(());
            }
            // A key that is not a string: the whole dict goes to msgspec.
            out.truncate(start);
        }
        if value.is_exact_instance_of::<PyList>() || value.is_exact_instance_of::<PyTuple>() {
            out.push('[');
            for_each_item(value, &mut |i, item| {
                if i > 0 {
                    out.push(',');
                }
                write_json(c, &item, out, depth + 1)
            })?;
            out.push(']');
            return Ok(());
        }
    }
    let encoded = c.json_encode.bind(value.py()).call1((value,))?;
    out.push_str(std::str::from_utf8(encoded.extract::<&[u8]>()?).unwrap_or_default());
    Ok(())
}

/// Appends `v` in decimal (what `write!` does, without the formatting machinery).
fn write_int(v: i64, out: &mut String) {
    let mut digits = [0u8; 20];
    let mut n = v.unsigned_abs();
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.push('-');
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// Appends `s` as a JSON string: quotes, backslashes and control characters escaped, the rest
/// (non-ASCII included) as is.
fn write_json_str(s: &str, out: &mut String) {
    use std::fmt::Write;
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Calls `f` with each item of `items` and its index: a tuple or list is indexed directly
/// (message contents are tuples), anything else iterated.
fn for_each_item<'py>(
    items: &Bound<'py, PyAny>,
    f: &mut dyn FnMut(usize, Bound<'py, PyAny>) -> PyResult<()>,
) -> PyResult<()> {
    if let Ok(tuple) = items.cast::<PyTuple>() {
        tuple
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| f(i, item))
    } else if let Ok(list) = items.cast::<PyList>() {
        list.iter().enumerate().try_for_each(|(i, item)| f(i, item))
    } else {
        for (i, item) in items.try_iter()?.enumerate() {
            f(i, item?)?;
        }
        Ok(())
    }
}

/// Count an image block: priced by the size its header states (the flat price if its `data`
/// is not bytes or its header cannot be read).
fn tally_image(py: Python<'_>, block: &Bound<'_, PyAny>, tally: &mut TokenTally) -> PyResult<()> {
    let data = block.getattr(intern!(py, "data"))?;
    match data.cast::<PyBytes>() {
        Ok(bytes) => tally.image_data(bytes.as_bytes()),
        Err(_) => tally.image(),
    }
    Ok(())
}

/// Count a tool result's `content` (a string, or a sequence of text and image blocks).
fn tally_result_content(
    py: Python<'_>,
    c: &Classes,
    content: &Bound<'_, PyAny>,
    path: &dyn Fn() -> String,
    tally: &mut TokenTally,
) -> PyResult<()> {
    if let Ok(s) = content.cast::<PyString>() {
        tally.text(s.to_str()?);
        return Ok(());
    }
    for_each_item(content, &mut |j, part| {
        let ty = part.get_type();
        if ty.is(c.text.bind(py)) {
            with_str(
                &part,
                intern!(py, "text"),
                || format!("{}.content[{j}]", path()),
                |t| tally.text(t),
            )?;
        } else if ty.is(c.image.bind(py)) {
            tally_image(py, &part, tally)?;
        } else {
            return Err(invalid_message(
                "a tool result holds only text and image blocks",
                format!("{}.content[{j}]", path()),
            ));
        }
        Ok(())
    })
}

/// Check that `msg` is a `ctxtrim.Message` (the exact class: messages validate themselves at
/// construction, so this is all a log needs to check before accepting one).
///
/// Inlined, with the error built out of line: this runs on every append, where a call and
/// the stack frame of the error's formatting cost as much as the check itself.
#[inline]
pub fn check_message<'py>(msg: &Bound<'py, PyAny>, path: &str) -> PyResult<&'py Classes> {
    let c = classes(msg.py())?;
    if msg.get_type_ptr() == c.message.as_ptr().cast() {
        Ok(c)
    } else {
        Err(not_a_message(msg, path))
    }
}

#[cold]
#[inline(never)]
fn not_a_message(msg: &Bound<'_, PyAny>, path: &str) -> PyErr {
    match msg.get_type().name() {
        Ok(name) => invalid_message(format!("expected a ctxtrim.Message, got {name}"), path),
        Err(e) => e,
    }
}

/// The facts about a message already accepted by [`check_message`], from its cache (read
/// now if nothing read them before), with `tokens` (an exact count) or the estimate under
/// `encoding`. Reading a validated, frozen message cannot fail; if its fields were forced to
/// garbage behind the API's back, it is indexed as an opaque user message of
/// `MESSAGE_OVERHEAD` tokens rather than poisoning every later query.
pub fn indexed_meta(msg: &Bound<'_, PyAny>, tokens: Option<u32>, encoding: Encoding) -> Meta {
    let read = || -> PyResult<Meta> {
        let facts = facts_of(msg, || "message".to_owned())?;
        let mut meta = facts.get().meta().clone();
        meta.tokens = match tokens {
            Some(t) => t,
            None => facts.get().tokens(msg, encoding, None)?,
        };
        Ok(meta)
    };
    read().unwrap_or_else(|_| {
        Meta::new(
            Role::User,
            tokens.unwrap_or(crate::tokens::MESSAGE_OVERHEAD),
        )
    })
}

/// The facts the core needs about one message. `tokens` overrides the estimate (an exact
/// counter's count); `path` prefixes error paths (e.g. `"messages[3]"`).
pub fn meta_of(
    msg: &Bound<'_, PyAny>,
    tokens: Option<u32>,
    path: &str,
    encoding: Encoding,
) -> PyResult<Meta> {
    let py = msg.py();
    let c = check_message(msg, path)?;
    let role = role_of(&msg.getattr(intern!(py, "role"))?)
        .ok_or_else(|| invalid_message("unknown role", format!("{path}.role")))?;
    let mut tally = TokenTally::with_encoding(encoding);
    let mut ids = ToolIds::default();
    let other_content = walk_content(c, msg, path, &mut tally, Some(&mut ids))?;
    let mut meta = Meta::new(role, tokens.unwrap_or_else(|| tally.total()));
    meta.tool_uses = ids.uses.into();
    meta.tool_results = ids.results.into();
    meta.real_user = role == Role::User && other_content;
    let turn = msg.getattr(intern!(py, "turn"))?;
    if !turn.is_none() {
        let text: &str = turn.extract()?;
        meta.turn = Some(
            text.parse::<crate::turn::TurnId>()
                .map_err(super::errors::turn_error)?,
        );
    }
    Ok(meta)
}

/// The estimated tokens of one message: [`meta_of`]'s count without reading the role or the
/// tool ids (each id would be an allocation nobody reads).
pub fn tokens_of(msg: &Bound<'_, PyAny>, path: &str, encoding: Encoding) -> PyResult<u32> {
    let c = check_message(msg, path)?;
    let mut tally = TokenTally::with_encoding(encoding);
    walk_content(c, msg, path, &mut tally, None)?;
    Ok(tally.total())
}

/// The ids a message's tool calls issue and its tool results answer.
#[derive(Default)]
struct ToolIds {
    uses: Vec<Arc<str>>,
    results: Vec<Arc<str>>,
}

/// Walks the blocks of a checked message: adds their tokens to `tally` and, given `ids`,
/// collects the tool ids. Returns whether the message holds anything besides tool results.
fn walk_content(
    c: &Classes,
    msg: &Bound<'_, PyAny>,
    path: &str,
    tally: &mut TokenTally,
    mut ids: Option<&mut ToolIds>,
) -> PyResult<bool> {
    let py = msg.py();
    let mut other_content = false;
    let content = msg.getattr(intern!(py, "content"))?;
    let mut add_block = |i: usize, block: Bound<'_, PyAny>| -> PyResult<()> {
        let bpath = || format!("{path}.content[{i}]");
        let ty = block.get_type();
        if ty.is(c.tool_result.bind(py)) {
            if let Some(ids) = ids.as_deref_mut() {
                let id = with_str(&block, intern!(py, "tool_use_id"), bpath, |s: &str| {
                    Arc::<str>::from(s)
                })?;
                ids.results.push(id);
            }
            tally.tool_result();
            let content = block.getattr(intern!(py, "content"))?;
            tally_result_content(py, c, &content, &bpath, tally)?;
            return Ok(());
        }
        other_content = true;
        if ty.is(c.text.bind(py)) {
            with_str(&block, intern!(py, "text"), bpath, |t| tally.text(t))?;
        } else if ty.is(c.tool_use.bind(py)) {
            with_json(|json| {
                write_json(c, &block.getattr(intern!(py, "input"))?, json, 0).map_err(|e| {
                    invalid_message(
                        format!("not JSON-encodable: {e}"),
                        format!("{}.input", bpath()),
                    )
                })?;
                with_str(&block, intern!(py, "name"), bpath, |name| {
                    tally.tool_use(name, json);
                })
            })?;
            if let Some(ids) = ids.as_deref_mut() {
                ids.uses
                    .push(with_str(&block, intern!(py, "id"), bpath, |s: &str| {
                        Arc::<str>::from(s)
                    })?);
            }
        } else if ty.is(c.image.bind(py)) {
            tally_image(py, &block, tally)?;
        } else if ty.is(c.reasoning.bind(py)) {
            with_str(&block, intern!(py, "text"), bpath, |t| tally.text(t))?;
        } else {
            return Err(invalid_message("not a content block", bpath()));
        }
        Ok(())
    };
    for_each_item(&content, &mut add_block)?;
    Ok(other_content)
}

/// A sequence of messages (list, tuple or iterable), each checked with [`check_message`],
/// with their optional per-message token counts. Either all pass, or an error naming
/// `messages[i]` is returned.
pub fn messages_of(
    messages: &Bound<'_, PyAny>,
    tokens: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<(Py<PyAny>, Option<u32>)>> {
    let items = items_of(messages)?;
    let counts = counts_of(tokens, items.len())?;
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            check_message(&item, &format!("messages[{i}]"))?;
            Ok((
                item.unbind(),
                counts.as_ref().and_then(|c| c.get(i).copied()),
            ))
        })
        .collect()
}

fn items_of<'py>(messages: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = messages.cast::<PyList>() {
        Ok(list.iter().collect())
    } else if let Ok(tuple) = messages.cast::<PyTuple>() {
        Ok(tuple.iter().collect())
    } else {
        messages.try_iter()?.collect()
    }
}

fn counts_of(tokens: Option<&Bound<'_, PyAny>>, n: usize) -> PyResult<Option<Vec<u32>>> {
    let counts: Option<Vec<u32>> = tokens.map(PyAnyMethods::extract).transpose()?;
    if let Some(counts) = &counts {
        if counts.len() != n {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "tokens has {} counts for {} messages",
                counts.len(),
                n
            )));
        }
    }
    Ok(counts)
}

/// Metas of a sequence of messages (a list or tuple), with optional per-message token counts.
/// Paths are `messages[i]…`. Either all convert, or an error is returned and nothing is used.
pub fn metas_of(
    messages: &Bound<'_, PyAny>,
    tokens: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Vec<Py<PyAny>>, Vec<Meta>)> {
    let items = items_of(messages)?;
    let counts = counts_of(tokens, items.len())?;
    let mut metas = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        // Only the pair structure matters to these callers: the cached facts as they are.
        let mut meta = facts_of(item, || format!("messages[{i}]"))?
            .get()
            .meta()
            .clone();
        if let Some(count) = counts.as_ref().and_then(|c| c.get(i).copied()) {
            meta.tokens = count;
        }
        metas.push(meta);
    }
    Ok((items.into_iter().map(Bound::unbind).collect(), metas))
}
