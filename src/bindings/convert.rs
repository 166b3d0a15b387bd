//! Conversion of Python `ctxtrim.messages.Message` objects into the core's `Meta`.
//!
//! This walks the message's blocks and feeds the core's `TokenTally`; it decides nothing.
//! Block classes are looked up once per interpreter (`PyOnceLock`, never a global lazy that
//! could deadlock with the GIL) and compared by identity, which is far cheaper than reading
//! each block's `type` tag.

use std::sync::Arc;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple, PyType};
use pyo3::{intern, Py};

use super::errors::invalid_message;
use super::facts::facts_of;
use super::fresh::{layouts, Layout};
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
    /// `ProviderBlock`: a provider's dict kept verbatim; its `_facts()` say what it pairs
    /// and costs (from the format's table in `ctxtrim.provider`).
    pub provider: Py<PyType>,
    pub usage: Py<PyType>,
    pub frozen_dict: Py<PyType>,
    pub frozen_list: Py<PyType>,
    pub json_encode: Py<PyAny>,
    pub force_setattr: Py<PyAny>,
    /// `msgspec.structs.astuple`: every field of a struct in one call (see `read_fields`).
    pub astuple: Py<PyAny>,
    /// The Python constructors, which take every form and name every problem: the fast
    /// constructors in `message.rs` hand anything unusual to them.
    pub user: Py<PyAny>,
    pub assistant: Py<PyAny>,
    pub tool_results: Py<PyAny>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

pub fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let m = py.import("ctxtrim.messages")?;
        let class = |name: &str| -> PyResult<Py<PyType>> {
            Ok(m.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        let structs = py.import("msgspec.structs")?;
        for (name, fields) in [
            ("Message", &MESSAGE_FIELDS[..]),
            ("TextBlock", &TEXT_FIELDS[..]),
            ("ToolUseBlock", &TOOL_USE_FIELDS[..]),
            ("ToolResultBlock", &TOOL_RESULT_FIELDS[..]),
            ("ReasoningBlock", &REASONING_FIELDS[..]),
        ] {
            let actual: Vec<String> = m.getattr(name)?.getattr("__struct_fields__")?.extract()?;
            if actual != fields {
                return Err(PyRuntimeError::new_err(format!(
                    "ctxtrim.messages.{name} has fields {actual:?}; the core reads {fields:?}"
                )));
            }
        }
        Ok(Classes {
            message: class("Message")?,
            text: class("TextBlock")?,
            image: class("ImageBlock")?,
            tool_use: class("ToolUseBlock")?,
            tool_result: class("ToolResultBlock")?,
            reasoning: class("ReasoningBlock")?,
            provider: class("ProviderBlock")?,
            usage: class("Usage")?,
            frozen_dict: class("FrozenDict")?,
            frozen_list: class("FrozenList")?,
            json_encode: py.import("msgspec.json")?.getattr("encode")?.unbind(),
            force_setattr: structs.getattr("force_setattr")?.unbind(),
            astuple: structs.getattr("astuple")?.unbind(),
            user: m.getattr("_user")?.unbind(),
            assistant: m.getattr("_assistant")?.unbind(),
            tool_results: m.getattr("_tool_results")?.unbind(),
        })
    })
}

/// The fields of `Message`, `ToolUseBlock` and `ToolResultBlock`, in their declared order
/// (checked against `__struct_fields__` when the classes are loaded).
pub const MESSAGE_FIELDS: [&str; 7] = ["role", "content", "id", "turn", "name", "usage", "meta"];
pub const TEXT_FIELDS: [&str; 1] = ["text"];
pub const TOOL_USE_FIELDS: [&str; 3] = ["id", "name", "input"];
pub const TOOL_RESULT_FIELDS: [&str; 4] = ["tool_use_id", "content", "is_error", "compact_summary"];
pub const REASONING_FIELDS: [&str; 3] = ["text", "signature", "redacted"];

/// Where `name` is in `fields` (at compile time: a name not there does not compile).
const fn index_of(fields: &[&str], name: &str) -> usize {
    let mut i = 0;
    while i < fields.len() {
        if str_eq(fields[i], name) {
            return i;
        }
        i += 1;
    }
    panic!("not a field of the struct");
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The fields indexing reads, by their place in their struct (for [`field`]).
const ROLE: usize = index_of(&MESSAGE_FIELDS, "role");
pub(super) const CONTENT: usize = index_of(&MESSAGE_FIELDS, "content");
pub(super) const META: usize = index_of(&MESSAGE_FIELDS, "meta");
const TURN: usize = index_of(&MESSAGE_FIELDS, "turn");
pub(super) const TEXT: usize = index_of(&TEXT_FIELDS, "text");
const USE_ID: usize = index_of(&TOOL_USE_FIELDS, "id");
const USE_NAME: usize = index_of(&TOOL_USE_FIELDS, "name");
pub(super) const USE_INPUT: usize = index_of(&TOOL_USE_FIELDS, "input");
const RESULT_ID: usize = index_of(&TOOL_RESULT_FIELDS, "tool_use_id");
const RESULT_CONTENT: usize = index_of(&TOOL_RESULT_FIELDS, "content");
const REASONING_TEXT: usize = index_of(&REASONING_FIELDS, "text");

/// The fields `names` of `obj`: when `obj` is exactly `class` (whose fields are `names`, in
/// order), read at their offsets if `layout` (the class's) is given, else in one `astuple`
/// call; for a subclass (which may add fields), one attribute at a time. The structs' own
/// checks (`__post_init__`) read every field this way.
pub fn read_fields<'py, const N: usize>(
    c: &Classes,
    obj: &Bound<'py, PyAny>,
    (class, layout): (&Py<PyType>, Option<&Layout>),
    names: &[&str; N],
) -> PyResult<[Bound<'py, PyAny>; N]> {
    let py = obj.py();
    // No slot is empty once constructed; a call to `astuple` cost more than the checks.
    if let Some(layout) = layout {
        let read: [_; N] = std::array::from_fn(|i| layout.get(obj, i));
        if read.iter().all(Option::is_some) {
            return Ok(read.map(|value| value.unwrap_or_else(|| py.None().into_bound(py))));
        }
    }
    let values: Vec<Bound<'py, PyAny>> = if obj.get_type().is(class.bind(py)) {
        let tuple = c.astuple.bind(py).call1((obj,))?.cast_into::<PyTuple>()?;
        tuple.iter().take(N).collect()
    } else {
        names
            .iter()
            .map(|name| obj.getattr(*name))
            .collect::<PyResult<_>>()?
    };
    values
        .try_into()
        .map_err(|_| PyRuntimeError::new_err("a struct has fewer fields than declared"))
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
pub fn with_str<R>(
    obj: &Bound<'_, PyAny>,
    field: &Bound<'_, PyString>,
    path: impl Fn() -> String,
    f: impl FnOnce(&str) -> R,
) -> PyResult<R> {
    str_value(&obj.getattr(field)?, field, path, f)
}

/// Field `i` of `obj`, named `name`: read at its offset when `obj` is exactly the class of
/// `layout` (`Layout::get`), else through `getattr`. Indexing reads a few fields of every
/// new message, and an attribute lookup costs more than the rest of reading one.
pub fn field<'py>(
    layout: Option<&Layout>,
    obj: &Bound<'py, PyAny>,
    i: usize,
    name: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyAny>> {
    match layout.and_then(|layout| layout.get(obj, i)) {
        Some(value) => Ok(value),
        None => obj.getattr(name),
    }
}

/// [`with_str`] of field `i` of `obj` (see [`field`]).
fn with_field_str<R>(
    layout: Option<&Layout>,
    obj: &Bound<'_, PyAny>,
    (i, name): (usize, &Bound<'_, PyString>),
    path: impl Fn() -> String,
    f: impl FnOnce(&str) -> R,
) -> PyResult<R> {
    str_value(&field(layout, obj, i, name)?, name, path, f)
}

/// Feed `value`, the string attribute `field`, to `f` without copying it.
fn str_value<R>(
    value: &Bound<'_, PyAny>,
    field: &Bound<'_, PyString>,
    path: impl Fn() -> String,
    f: impl FnOnce(&str) -> R,
) -> PyResult<R> {
    let s = value
        .cast::<PyString>()
        .map_err(|_| invalid_message("expected a string", format!("{}.{field}", path())))?;
    let text = s
        .to_str()
        .map_err(|_| invalid_message("string is not valid UTF-8", format!("{}.{field}", path())))?;
    Ok(f(text))
}

/// A tool call's input as the JSON text msgspec writes (how the provider formats render it,
/// so what a tool call is priced on): the input is a frozen dict of plain JSON, so this fails
/// only for a value built around the checks, as "not JSON-encodable" at the block's path.
/// msgspec writes UTF-8, so reading the bytes as text cannot fail.
pub fn tool_input_json<'py>(
    c: &Classes,
    block: &Bound<'py, PyAny>,
    path: &dyn Fn() -> String,
) -> PyResult<Bound<'py, PyBytes>> {
    let py = block.py();
    let input = field(
        layouts(py)?.tool_use.as_ref(),
        block,
        USE_INPUT,
        intern!(py, "input"),
    )?;
    let encoded = c
        .json_encode
        .bind(block.py())
        .call1((input,))
        .map_err(|e| {
            invalid_message(
                format!("not JSON-encodable: {e}"),
                format!("{}.input", path()),
            )
        })?;
    Ok(encoded.cast_into::<PyBytes>()?)
}

/// Calls `f` with each item of `items` and its index: a tuple or list is indexed directly
/// (message contents are tuples), anything else iterated.
pub fn for_each_item<'py>(
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
        } else if ty.is(c.provider.bind(py)) {
            provider_facts(&part)?.tally(tally);
        } else {
            return Err(invalid_message(
                "a tool result holds only text, image and provider blocks",
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
    check_message_at(msg, || path.to_owned())
}

/// [`check_message`] with the error's path made only for the error: a batch's
/// `messages[i]` formatted for every message would be an allocation each.
#[inline]
pub fn check_message_at<'py>(
    msg: &Bound<'py, PyAny>,
    path: impl FnOnce() -> String,
) -> PyResult<&'py Classes> {
    let c = classes(msg.py())?;
    if msg.get_type_ptr() == c.message.as_ptr().cast() {
        Ok(c)
    } else {
        Err(not_a_message(msg, &path()))
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
    let layout = layouts(py)?.message.as_ref();
    let role = role_of(&field(layout, msg, ROLE, intern!(py, "role"))?)
        .ok_or_else(|| invalid_message("unknown role", format!("{path}.role")))?;
    let mut tally = TokenTally::with_encoding(encoding);
    let mut ids = ToolIds::default();
    let other_content = walk_content(c, msg, path, &mut tally, Some(&mut ids))?;
    drop_pairs_within(&mut ids);
    let mut meta = Meta::new(role, tokens.unwrap_or_else(|| tally.total()));
    // No ids stays the default (a shared static slice): `From<Vec>` would allocate for it.
    if !ids.uses.is_empty() {
        meta.tool_uses = ids.uses.into();
    }
    if !ids.results.is_empty() {
        meta.tool_results = ids.results.into();
    }
    meta.real_user = role == Role::User && other_content;
    meta.compaction = ids.compaction;
    let turn = field(layout, msg, TURN, intern!(py, "turn"))?;
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
    compaction: bool,
}

/// Walks the blocks of a checked message: adds their tokens to `tally` and, given `ids`,
/// collects the tool ids (and whether a provider's compaction is among the blocks). Returns
/// whether the message holds anything besides tool results.
fn walk_content(
    c: &Classes,
    msg: &Bound<'_, PyAny>,
    path: &str,
    tally: &mut TokenTally,
    mut ids: Option<&mut ToolIds>,
) -> PyResult<bool> {
    let py = msg.py();
    let l = layouts(py)?;
    let mut other_content = false;
    let content = field(l.message.as_ref(), msg, CONTENT, intern!(py, "content"))?;
    let mut add_block = |i: usize, block: Bound<'_, PyAny>| -> PyResult<()> {
        let bpath = || format!("{path}.content[{i}]");
        let ty = block.get_type();
        if ty.is(c.tool_result.bind(py)) {
            if let Some(ids) = ids.as_deref_mut() {
                let name = intern!(py, "tool_use_id");
                let id = with_field_str(
                    l.tool_result.as_ref(),
                    &block,
                    (RESULT_ID, name),
                    bpath,
                    |s| Arc::<str>::from(s),
                )?;
                ids.results.push(id);
            }
            tally.tool_result();
            let name = intern!(py, "content");
            let content = field(l.tool_result.as_ref(), &block, RESULT_CONTENT, name)?;
            tally_result_content(py, c, &content, &bpath, tally)?;
            return Ok(());
        }
        if ty.is(c.provider.bind(py)) {
            let facts = provider_facts(&block)?;
            facts.tally(tally);
            other_content |= facts.opens_turn;
            if let Some(ids) = ids.as_deref_mut() {
                ids.uses.extend(facts.uses.as_deref().map(Arc::<str>::from));
                ids.results
                    .extend(facts.answers.as_deref().map(Arc::<str>::from));
                ids.compaction |= facts.compaction;
            }
            return Ok(());
        }
        other_content = true;
        let text = (TEXT, intern!(py, "text"));
        if ty.is(c.text.bind(py)) {
            with_field_str(l.text.as_ref(), &block, text, bpath, |t| tally.text(t))?;
        } else if ty.is(c.tool_use.bind(py)) {
            let uses = l.tool_use.as_ref();
            let encoded = tool_input_json(c, &block, &bpath)?;
            let json = std::str::from_utf8(encoded.as_bytes()).unwrap_or_default();
            let name = (USE_NAME, intern!(py, "name"));
            with_field_str(uses, &block, name, bpath, |name| tally.tool_use(name, json))?;
            if let Some(ids) = ids.as_deref_mut() {
                let id = (USE_ID, intern!(py, "id"));
                ids.uses
                    .push(with_field_str(uses, &block, id, bpath, |s: &str| {
                        Arc::<str>::from(s)
                    })?);
            }
        } else if ty.is(c.image.bind(py)) {
            tally_image(py, &block, tally)?;
        } else if ty.is(c.reasoning.bind(py)) {
            let text = (REASONING_TEXT, text.1);
            with_field_str(l.reasoning.as_ref(), &block, text, bpath, |t| tally.text(t))?;
        } else {
            return Err(invalid_message("not a content block", bpath()));
        }
        Ok(())
    };
    for_each_item(&content, &mut add_block)?;
    Ok(other_content)
}

/// What a `ProviderBlock` pairs and costs, as its `_facts()` state them (its format's table
/// decides; see `ctxtrim.provider`).
pub struct ProviderFacts {
    /// The call id it issues, if it is a call.
    pub uses: Option<String>,
    /// The call id it answers, if it is a result.
    pub answers: Option<String>,
    /// Whether it makes a user message a real user turn (a document, not a tool output).
    pub opens_turn: bool,
    /// Whether it is a provider's compaction (a summary of everything before it).
    pub compaction: bool,
    text: String,
    extra: u32,
    images: u32,
}

impl ProviderFacts {
    /// The text it is priced by.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Its price beyond its text: fixed tokens and flat-priced images.
    pub fn fixed_tokens(&self) -> u32 {
        self.extra
            .saturating_add(self.images.saturating_mul(crate::tokens::IMAGE_TOKENS))
    }

    /// Adds its price to `tally`: its text, its fixed tokens and its flat-priced images.
    pub fn tally(&self, tally: &mut TokenTally) {
        tally.text(&self.text);
        tally.add(self.extra);
        for _ in 0..self.images {
            tally.image();
        }
    }
}

/// Reads a `ProviderBlock`'s `_facts()`.
pub fn provider_facts(block: &Bound<'_, PyAny>) -> PyResult<ProviderFacts> {
    type Read = (Option<String>, Option<String>, bool, bool, String, u32, u32);
    let (uses, answers, opens_turn, compaction, text, extra, images) = block
        .call_method0(intern!(block.py(), "_facts"))?
        .extract::<Read>()?;
    Ok(ProviderFacts {
        uses,
        answers,
        opens_turn,
        compaction,
        text,
        extra,
        images,
    })
}

/// A call and its result in one message (a server-side tool and its result, which the
/// provider returns together) pair within it: neither is for the cross-message index.
fn drop_pairs_within(ids: &mut ToolIds) {
    if ids.uses.is_empty() || ids.results.is_empty() {
        return;
    }
    let uses: std::collections::HashSet<Arc<str>> = ids.uses.iter().cloned().collect();
    let answered: std::collections::HashSet<Arc<str>> = ids
        .results
        .iter()
        .filter(|id| uses.contains(*id))
        .cloned()
        .collect();
    ids.uses.retain(|id| !answered.contains(id));
    ids.results.retain(|id| !answered.contains(id));
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
            check_message_at(&item, || format!("messages[{i}]"))?;
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
    let counts: Option<Vec<u32>> = match tokens {
        None => None,
        Some(tokens) => match tokens.extract::<Vec<u32>>() {
            Ok(counts) => Some(counts),
            Err(e) => {
                if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(tokens.py()) {
                    // Name the count past the range (the one-call extraction cannot).
                    for (i, item) in tokens.try_iter()?.enumerate() {
                        super::args::int_arg::<u32>(&item?, &format!("tokens[{i}]"))?;
                    }
                }
                return Err(e);
            }
        },
    };
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
