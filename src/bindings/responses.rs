//! OpenAI Responses' most common shapes, read and rendered without the general Python code.
//!
//! `responses_fast_prefix` reads the longest prefix of a list of input items in which each
//! item has a common shape: a `message` item (or its short `{"role", "content"}` form) of
//! role `user`, `system` or `assistant` whose content is a string or a list of text parts
//! (`input_text`, `output_text` for the assistant) with exactly `type` and `text`; a
//! `function_call` whose `arguments` are the compact JSON of an object (parsed and re-encoded
//! with the general reader's own JSON functions, as in `chat.rs`); a `function_call_output`
//! whose output is a string. Items are grouped as the general reader in
//! `ctxtrim.formats.openai_responses` groups them (consecutive assistant-side items into one
//! assistant message, consecutive outputs into one user message), and a message gets the
//! record that reader writes (the short form, a string or one-part list content, a
//! segmentation the canonical one would not give), so it is exactly what that reader makes.
//! The first item in any other shape ends the prefix, at the start of the message it would
//! belong to, and the general reader goes on from there.
//!
//! `responses_render` is the other direction: a message with no recorded fields whose blocks
//! are text, tool calls, string tool results or reasoning (or a message of one text block
//! recorded as the short form only) becomes the input items the general renderer makes for
//! it, in the same key order, so the kept JSON bytes are the same; anything else is `None`.
//! `responses_render_json` writes those items' JSON straight from the message (`json_write`),
//! the bytes msgspec writes for the dicts; both follow one plan of the message (`plan`).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};

use super::convert::{classes, Classes};
use super::json::compact_json;
use super::message::{new_message, text_block, text_tool_result, tool_use_block};
use super::shapes::{arguments, get, is_tag, nonempty, plain, stop_on_invalid, tag, text};
use crate::json_write::{write_responses_item, ResponsesContent, ResponsesItem};

/// The `Message.meta` key of the general reader's record.
const KEY: &str = "openai_responses";

/// Which message an item joins.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// A user or system message item: a message of its own.
    Own,
    /// Reasoning, an assistant message, a function call: the assistant message of the run.
    Assistant,
    /// A function call output: the user message of the run.
    Results,
}

/// One item's record, as the general reader writes it (`{"t", "n", "short"?, "form"?}`).
struct Unit {
    kind: &'static str,
    n: usize,
    short: bool,
    form: Option<&'static str>,
}

impl Unit {
    fn new(kind: &'static str) -> Self {
        Self {
            kind,
            n: 1,
            short: false,
            form: None,
        }
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item(intern!(py, "t"), self.kind)?;
        d.set_item(intern!(py, "n"), self.n)?;
        if self.short {
            d.set_item(intern!(py, "short"), true)?;
        }
        if let Some(form) = self.form {
            d.set_item(intern!(py, "form"), form)?;
        }
        Ok(d)
    }
}

/// One item read: which message it joins, its role (for an `Own` item), blocks and record.
/// Made by [`message_item`], [`call_item`] and [`output_item`], from a dict here and from
/// JSON in `responses_json.rs`.
pub(super) struct Item<'py> {
    side: Side,
    role: Option<Bound<'py, PyString>>,
    blocks: Vec<Bound<'py, PyAny>>,
    unit: Unit,
}

/// The message being gathered: its role, blocks and records.
struct Group<'py> {
    role: Bound<'py, PyString>,
    blocks: Vec<Bound<'py, PyAny>>,
    units: Vec<Unit>,
}

impl<'py> Group<'py> {
    /// The message, with the record the general reader keeps when the canonical rendering
    /// would lose something: a unit with a field besides `t` and `n`, or two text runs in a
    /// row (the canonical segmentation joins them).
    fn message(self, c: &Classes) -> PyResult<Bound<'py, PyAny>> {
        let py = self.role.py();
        let needed = self.units.iter().any(|u| u.short || u.form.is_some())
            || self
                .units
                .windows(2)
                .any(|w| w[0].kind == "message" && w[1].kind == "message");
        let blocks = PyTuple::new(py, self.blocks)?;
        if !needed {
            return new_message(c, &self.role, blocks);
        }
        let units = PyList::empty(py);
        for unit in &self.units {
            units.append(unit.to_dict(py)?)?;
        }
        let meta = PyDict::new(py);
        meta.set_item(KEY, units)?;
        let options = PyDict::new(py);
        options.set_item(intern!(py, "meta"), meta)?;
        c.message.bind(py).call((self.role, blocks), Some(&options))
    }
}

/// Items gathered into messages in order, as the general reader groups them: a user or
/// system message item is a message of its own, a run of assistant-side items one assistant
/// message, a run of outputs one user message.
pub(super) struct Gather<'py> {
    /// The messages made so far.
    pub out: Bound<'py, PyList>,
    /// The open message (`Side::Assistant` or `Side::Results`) and the index of its first item.
    open: Option<(Side, usize, Group<'py>)>,
}

impl<'py> Gather<'py> {
    pub fn new(py: Python<'py>) -> Self {
        Self {
            out: PyList::empty(py),
            open: None,
        }
    }

    /// The index of the open message's first item, if one is open.
    fn open_start(&self) -> Option<usize> {
        self.open.as_ref().map(|(_, start, _)| *start)
    }

    /// Adds item number `i`. `Some(index)` when a message's constructor refused it: the index
    /// of its first item, where the general reader must start again.
    pub fn push(&mut self, c: &Classes, i: usize, item: Item<'py>) -> PyResult<Option<usize>> {
        let py = self.out.py();
        if self
            .open
            .as_ref()
            .is_some_and(|(side, _, _)| *side != item.side)
        {
            if let Some(start) = self.finish(c)? {
                return Ok(Some(start));
            }
        }
        if item.side == Side::Own {
            let role = item.role.unwrap_or_else(|| intern!(py, "user").clone());
            let group = Group {
                role,
                blocks: item.blocks,
                units: vec![item.unit],
            };
            if !emit(c, &self.out, group)? {
                return Ok(Some(i));
            }
        } else {
            let (_, _, group) = self.open.get_or_insert_with(|| {
                let role = match item.side {
                    Side::Assistant => intern!(py, "assistant"),
                    _ => intern!(py, "user"),
                };
                let group = Group {
                    role: role.clone(),
                    blocks: Vec::with_capacity(2),
                    units: Vec::with_capacity(2),
                };
                (item.side, i, group)
            });
            group.blocks.extend(item.blocks);
            group.units.push(item.unit);
        }
        Ok(None)
    }

    /// Closes the open message, if any; `Some(index)` as for [`Gather::push`].
    pub fn finish(&mut self, c: &Classes) -> PyResult<Option<usize>> {
        if let Some((_, start, group)) = self.open.take() {
            if !emit(c, &self.out, group)? {
                return Ok(Some(start));
            }
        }
        Ok(None)
    }
}

/// The longest prefix of `items` in common shapes (see the module docs), as messages, and the
/// index of the first item left for the general reader: `(messages, next)`, `next` the first
/// item of the message that item belongs to. `raw_key` is the general reader's marker for
/// arguments kept as text (first, so that `functools.partial` binds it).
#[pyfunction]
pub fn responses_fast_prefix<'py>(
    raw_key: &Bound<'py, PyString>,
    items: &Bound<'py, PyList>,
) -> PyResult<(Bound<'py, PyList>, usize)> {
    let py = items.py();
    let c = classes(py)?;
    let mut gather = Gather::new(py);
    let mut i = 0;
    while i < items.len() {
        let read = stop_on_invalid(py, read_item(c, &items.get_item(i)?, raw_key))?;
        let Some(item) = read else {
            // The general reader takes this item, and reads the open message again from its
            // first item (this one may belong to it).
            let next = gather.open_start().unwrap_or(i);
            return Ok((gather.out, next));
        };
        if let Some(start) = gather.push(c, i, item)? {
            return Ok((gather.out, start));
        }
        i += 1;
    }
    if let Some(start) = gather.finish(c)? {
        return Ok((gather.out, start));
    }
    Ok((gather.out, i))
}

/// Appends `group`'s message to `out`; false if its constructor refused it (the general
/// reader then reads it again and names the problem).
fn emit<'py>(c: &Classes, out: &Bound<'py, PyList>, group: Group<'py>) -> PyResult<bool> {
    let py = out.py();
    match stop_on_invalid(py, group.message(c).map(Some))? {
        Some(message) => out.append(message).map(|()| true),
        None => Ok(false),
    }
}

fn read_item<'py>(
    c: &Classes,
    item: &Bound<'py, PyAny>,
    raw_key: &Bound<'py, PyString>,
) -> PyResult<Option<Item<'py>>> {
    let py = item.py();
    let Ok(item) = item.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    let kind = get(item, intern!(py, "type"))?;
    let Some(kind) = kind else {
        // The short form: exactly `role` and `content`.
        if item.len() != 2 {
            return Ok(None);
        }
        return read_message(c, item, true);
    };
    let Some(kind) = tag(Some(&kind)) else {
        return Ok(None);
    };
    match kind.to_str() {
        Ok("message") if item.len() == 3 => read_message(c, item, false),
        Ok("function_call") if item.len() == 4 => {
            let call_id = get(item, intern!(py, "call_id"))?;
            let name = get(item, intern!(py, "name"))?;
            let Some(raw) = text(get(item, intern!(py, "arguments"))?.as_ref()).cloned() else {
                return Ok(None);
            };
            if !nonempty(call_id.as_ref()) || !nonempty(name.as_ref()) {
                return Ok(None);
            }
            let (Some(call_id), Some(name)) = (call_id, name) else {
                return Ok(None);
            };
            call_item(c, &call_id, &name, &raw, raw_key)
        }
        Ok("function_call_output") if item.len() == 3 => {
            let call_id = get(item, intern!(py, "call_id"))?;
            let output = get(item, intern!(py, "output"))?;
            let Some(output) = text(output.as_ref()) else {
                return Ok(None);
            };
            if !nonempty(call_id.as_ref()) {
                return Ok(None);
            }
            let Some(call_id) = call_id else {
                return Ok(None);
            };
            output_item(c, &call_id, output).map(Some)
        }
        _ => Ok(None),
    }
}

/// A `message` item (`short`: its `{"role", "content"}` form), its keys already counted.
fn read_message<'py>(
    c: &Classes,
    item: &Bound<'py, PyDict>,
    short: bool,
) -> PyResult<Option<Item<'py>>> {
    let py = item.py();
    let Some(role) = tag(get(item, intern!(py, "role"))?.as_ref()) else {
        return Ok(None);
    };
    let assistant = match role.to_str() {
        Ok("assistant") => true,
        Ok("user" | "system") => false,
        _ => return Ok(None), // `developer` is recorded: the general reader's
    };
    let Some(content) = get(item, intern!(py, "content"))? else {
        return Ok(None);
    };
    if let Some(content) = text(Some(&content)) {
        let blocks = vec![text_block(c, content)?];
        return Ok(message_item(role, assistant, short, true, blocks));
    }
    let Ok(parts) = content.cast_exact::<PyList>() else {
        return Ok(None);
    };
    let part_type = if assistant {
        "output_text"
    } else {
        "input_text"
    };
    let mut blocks = Vec::with_capacity(parts.len());
    for part in parts.iter() {
        let Ok(part) = part.cast_exact::<PyDict>() else {
            return Ok(None);
        };
        if part.len() != 2 || !is_tag(get(part, intern!(py, "type"))?.as_ref(), part_type) {
            return Ok(None);
        }
        let Some(t) = text(get(part, intern!(py, "text"))?.as_ref()).cloned() else {
            return Ok(None);
        };
        blocks.push(text_block(c, &t)?);
    }
    Ok(message_item(role, assistant, short, false, blocks))
}

/// A message item of `role` (`assistant`, or `user`/`system`) whose content was a string
/// (`from_str`, one block) or text parts of the role's type, as `blocks`, with the record the
/// general reader writes for it; `None` for no parts (an empty run of text: the general
/// reader's).
pub(super) fn message_item<'py>(
    role: Bound<'py, PyString>,
    assistant: bool,
    short: bool,
    from_str: bool,
    blocks: Vec<Bound<'py, PyAny>>,
) -> Option<Item<'py>> {
    let mut unit = Unit::new("message");
    unit.short = short;
    if from_str {
        if assistant {
            unit.form = Some("str");
        }
    } else {
        match blocks.len() {
            0 => return None,
            1 if !assistant => unit.form = Some("list"),
            _ => {}
        }
    }
    unit.n = blocks.len();
    Some(Item {
        side: if assistant {
            Side::Assistant
        } else {
            Side::Own
        },
        role: (!assistant).then_some(role),
        blocks,
        unit,
    })
}

/// A `function_call` item whose `arguments` text is `raw`, or `None` when that is not the
/// compact JSON of an object (see [`arguments`]; `raw_key` marks arguments kept as text).
pub(super) fn call_item<'py>(
    c: &Classes,
    call_id: &Bound<'py, PyAny>,
    name: &Bound<'py, PyAny>,
    raw: &Bound<'py, PyString>,
    raw_key: &Bound<'py, PyString>,
) -> PyResult<Option<Item<'py>>> {
    let Some(args) = arguments(raw, raw_key)? else {
        return Ok(None);
    };
    let block = tool_use_block(c, call_id, name, args.as_any())?;
    Ok(Some(Item {
        side: Side::Assistant,
        role: None,
        blocks: vec![block],
        unit: Unit::new("call"),
    }))
}

/// A `function_call_output` item with a string output.
pub(super) fn output_item<'py>(
    c: &Classes,
    call_id: &Bound<'py, PyAny>,
    output: &Bound<'py, PyString>,
) -> PyResult<Item<'py>> {
    let block = text_tool_result(c, call_id, output, false)?;
    Ok(Item {
        side: Side::Results,
        role: None,
        blocks: vec![block],
        unit: Unit::new("output"),
    })
}

/// The Responses input items of `message` in a common shape (see the module docs), or `None`
/// for the general renderer. `raw_key` is its marker for arguments kept as text, and
/// `short_user`/`short_assistant` the records of the
/// short form of a user/assistant message of one text (first, for `functools.partial`).
#[pyfunction]
pub fn responses_render<'py>(
    raw_key: &Bound<'py, PyString>,
    short_user: &Bound<'py, PyAny>,
    short_assistant: &Bound<'py, PyAny>,
    message: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let py = message.py();
    let Some(rendering) = plan(raw_key, short_user, short_assistant, message)? else {
        return Ok(None);
    };
    let out = PyList::empty(py);
    for item in &rendering.items {
        out.append(rendering.dict(py, item)?)?;
    }
    Ok(Some(out))
}

/// `responses_render`'s items as the JSON the request holds (comma-joined objects, no
/// brackets), written straight from the message: the bytes msgspec writes for those dicts.
/// `None` for the general path: not a common shape, or a string that is not valid UTF-8 or
/// not an exact `str` (the encoder decides what becomes of those).
#[pyfunction]
pub fn responses_render_json<'py>(
    raw_key: &Bound<'py, PyString>,
    short_user: &Bound<'py, PyAny>,
    short_assistant: &Bound<'py, PyAny>,
    message: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let py = message.py();
    let Some(rendering) = plan(raw_key, short_user, short_assistant, message)? else {
        return Ok(None);
    };
    let Some(role) = plain(&rendering.role) else {
        return Ok(None);
    };
    let mut out: Vec<u8> = Vec::with_capacity(160);
    let mut texts: Vec<&str> = Vec::new();
    for (i, item) in rendering.items.iter().enumerate() {
        let item = match item {
            Planned::Short(text) => match plain(text) {
                Some(text) => ResponsesItem::Short { role, text },
                None => return Ok(None),
            },
            Planned::Message(parts) => {
                texts.clear();
                for text in parts {
                    let Some(text) = plain(text) else {
                        return Ok(None);
                    };
                    texts.push(text);
                }
                let content = match texts[..] {
                    [text] if !rendering.assistant => ResponsesContent::Text(text),
                    _ => ResponsesContent::Parts {
                        kind: rendering.part_type(),
                        texts: &texts,
                    },
                };
                ResponsesItem::Message { role, content }
            }
            Planned::Call {
                id,
                name,
                arguments,
            } => match (plain(id), plain(name)) {
                (Some(call_id), Some(name)) => ResponsesItem::Call {
                    call_id,
                    name,
                    arguments: arguments.to_str()?,
                },
                _ => return Ok(None),
            },
            Planned::Output { id, output } => match (plain(id), plain(output)) {
                (Some(call_id), Some(output)) => ResponsesItem::Output { call_id, output },
                _ => return Ok(None),
            },
            Planned::Reasoning { text, signature } => match (plain(text), plain(signature)) {
                (Some(text), Some(signature)) => ResponsesItem::Reasoning { text, signature },
                _ => return Ok(None),
            },
        };
        if i > 0 {
            out.push(b',');
        }
        write_responses_item(&mut out, &item);
    }
    Ok(Some(PyBytes::new(py, &out)))
}

/// A message's input items in a common shape, their values held (`plan`'s answer).
struct Rendering<'py> {
    role: Bound<'py, PyAny>,
    assistant: bool,
    items: Vec<Planned<'py>>,
}

/// One input item of a message.
enum Planned<'py> {
    /// The short form `{"role", "content"}` of the message's one text.
    Short(Bound<'py, PyAny>),
    /// A `message` item of these texts: one string, unless the message is the assistant's,
    /// else text parts.
    Message(Vec<Bound<'py, PyAny>>),
    /// A `function_call`, its arguments the compact JSON of the call's input.
    Call {
        id: Bound<'py, PyAny>,
        name: Bound<'py, PyAny>,
        arguments: Bound<'py, PyString>,
    },
    /// A `function_call_output` of a string.
    Output {
        id: Bound<'py, PyAny>,
        output: Bound<'py, PyAny>,
    },
    /// A `reasoning` item (a redacted one renders as nothing).
    Reasoning {
        text: Bound<'py, PyAny>,
        signature: Bound<'py, PyAny>,
    },
}

impl<'py> Rendering<'py> {
    /// The type of the message's text parts.
    fn part_type(&self) -> &'static str {
        if self.assistant {
            "output_text"
        } else {
            "input_text"
        }
    }

    /// `item` as the general renderer's dict, keys in its order.
    fn dict(&self, py: Python<'py>, item: &Planned<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        match item {
            Planned::Short(text) => {
                dict.set_item(intern!(py, "role"), &self.role)?;
                dict.set_item(intern!(py, "content"), text)?;
            }
            Planned::Message(texts) => {
                let content = match &texts[..] {
                    [text] if !self.assistant => text.clone(),
                    _ => {
                        let part_type = PyString::intern(py, self.part_type());
                        let parts = PyList::empty(py);
                        for text in texts {
                            let part = PyDict::new(py);
                            part.set_item(intern!(py, "type"), &part_type)?;
                            part.set_item(intern!(py, "text"), text)?;
                            parts.append(part)?;
                        }
                        parts.into_any()
                    }
                };
                dict.set_item(intern!(py, "type"), intern!(py, "message"))?;
                dict.set_item(intern!(py, "role"), &self.role)?;
                dict.set_item(intern!(py, "content"), content)?;
            }
            Planned::Call {
                id,
                name,
                arguments,
            } => {
                dict.set_item(intern!(py, "type"), intern!(py, "function_call"))?;
                dict.set_item(intern!(py, "call_id"), id)?;
                dict.set_item(intern!(py, "name"), name)?;
                dict.set_item(intern!(py, "arguments"), arguments)?;
            }
            Planned::Output { id, output } => {
                dict.set_item(intern!(py, "type"), intern!(py, "function_call_output"))?;
                dict.set_item(intern!(py, "call_id"), id)?;
                dict.set_item(intern!(py, "output"), output)?;
            }
            Planned::Reasoning { text, signature } => {
                let summary = PyList::empty(py);
                if !text.cast_exact::<PyString>()?.to_str()?.is_empty() {
                    let part = PyDict::new(py);
                    part.set_item(intern!(py, "type"), intern!(py, "summary_text"))?;
                    part.set_item(intern!(py, "text"), text)?;
                    summary.append(part)?;
                }
                dict.set_item(intern!(py, "type"), intern!(py, "reasoning"))?;
                dict.set_item(intern!(py, "summary"), summary)?;
                if !signature.cast_exact::<PyString>()?.to_str()?.is_empty() {
                    dict.set_item(intern!(py, "encrypted_content"), signature)?;
                }
            }
        }
        Ok(dict)
    }
}

/// The input items `message` renders as, if it has a common shape (see `responses_render`).
fn plan<'py>(
    raw_key: &Bound<'py, PyString>,
    short_user: &Bound<'py, PyAny>,
    short_assistant: &Bound<'py, PyAny>,
    message: &Bound<'py, PyAny>,
) -> PyResult<Option<Rendering<'py>>> {
    let py = message.py();
    let c = classes(py)?;
    if !message.get_type().is(c.message.bind(py)) {
        return Ok(None);
    }
    let role = message.getattr(intern!(py, "role"))?;
    let role_str = role.cast_exact::<PyString>()?.to_str()?;
    let assistant = role_str == "assistant";
    let content = message.getattr(intern!(py, "content"))?;
    let blocks = content.cast_exact::<PyTuple>()?;
    let is =
        |block: &Bound<'py, PyAny>, ty: &Py<pyo3::types::PyType>| block.get_type().is(ty.bind(py));
    let meta = message.getattr(intern!(py, "meta"))?;
    let mut items = Vec::with_capacity(blocks.len().max(1));
    if !meta.is_none() {
        // Only the short form of one text, as the general reader records it.
        let short = match role_str {
            "user" => short_user,
            "assistant" => short_assistant,
            _ => return Ok(None),
        };
        if blocks.len() != 1 || !is(&blocks.get_item(0)?, &c.text) || !meta.eq(short)? {
            return Ok(None);
        }
        items.push(Planned::Short(
            blocks.get_item(0)?.getattr(intern!(py, "text"))?,
        ));
        return Ok(Some(Rendering {
            role,
            assistant,
            items,
        }));
    }
    if blocks.is_empty() {
        // The canonical rendering of no blocks: one empty message.
        items.push(Planned::Message(Vec::new()));
    }
    let mut texts: Vec<Bound<'py, PyAny>> = Vec::new();
    for block in blocks.iter() {
        if is(&block, &c.text) {
            texts.push(block.getattr(intern!(py, "text"))?);
            continue;
        }
        if !texts.is_empty() {
            items.push(Planned::Message(std::mem::take(&mut texts)));
        }
        match plan_block(c, &block, raw_key)? {
            Rendered::Item(item) => items.push(item),
            Rendered::Nothing => {}
            Rendered::General => return Ok(None),
        }
    }
    if !texts.is_empty() {
        items.push(Planned::Message(texts));
    }
    Ok(Some(Rendering {
        role,
        assistant,
        items,
    }))
}

/// What one non-text block renders as.
enum Rendered<'py> {
    Item(Planned<'py>),
    /// A redacted reasoning block: the Responses format cannot carry it.
    Nothing,
    /// Not a common shape: the general renderer.
    General,
}

/// The input item of a tool call, a string tool result or a reasoning block.
fn plan_block<'py>(
    c: &Classes,
    block: &Bound<'py, PyAny>,
    raw_key: &Bound<'py, PyString>,
) -> PyResult<Rendered<'py>> {
    let py = block.py();
    let ty = block.get_type();
    let item = if ty.is(c.tool_use.bind(py)) {
        let input = block.getattr(intern!(py, "input"))?;
        if input.cast::<PyDict>()?.contains(raw_key)? {
            return Ok(Rendered::General); // arguments kept as text
        }
        Planned::Call {
            id: block.getattr(intern!(py, "id"))?,
            name: block.getattr(intern!(py, "name"))?,
            arguments: compact_json(&input)?,
        }
    } else if ty.is(c.tool_result.bind(py)) {
        let output = block.getattr(intern!(py, "content"))?;
        if output.cast_exact::<PyString>().is_err() {
            return Ok(Rendered::General); // text and image parts
        }
        Planned::Output {
            id: block.getattr(intern!(py, "tool_use_id"))?,
            output,
        }
    } else if ty.is(c.reasoning.bind(py)) {
        let redacted = block.getattr(intern!(py, "redacted"))?;
        if redacted.cast_exact::<PyBool>()?.is_true() {
            return Ok(Rendered::Nothing);
        }
        Planned::Reasoning {
            text: block.getattr(intern!(py, "text"))?,
            signature: block.getattr(intern!(py, "signature"))?,
        }
    } else {
        return Ok(Rendered::General); // images
    };
    Ok(Rendered::Item(item))
}
