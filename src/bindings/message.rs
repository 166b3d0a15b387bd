//! Fast paths of message construction: field checks and frozen copies of JSON values.
//!
//! `ctxtrim.messages` validates every message and block in `__post_init__`. For the structs
//! built most often (`Message`, `TextBlock`, `ToolUseBlock`, `ToolResultBlock`) the
//! `__post_init__` *is* one of the `*_post_init` functions here: msgspec calls it with the new
//! struct and no Python frame runs. They check the common forms in one call; on anything they
//! do not accept they call the struct's `_check` method, the Python checks, which name the
//! problem (or accept a rarer form, e.g. a list of blocks, and normalise it). So these
//! functions decide nothing the Python checks would not: they may only say yes to what those
//! accept.
//!
//! The convenience constructors `Message.user`, `Message.assistant` and
//! `Message.tool_results` are `message_user`, `message_assistant` and `message_tool_results`:
//! the common forms (text as a `str`, tool calls and results as tuples, the documented
//! keyword options) are built here; anything else — and any error — is handed to the Python
//! constructor (`_user`, `_assistant`, `_tool_results`), which takes every form and raises
//! the error with its path. Constructors have no side effects, so running one again is safe.
//! What they build from parts they checked themselves (and the readers in the core, which
//! use the same `new_message`, `text_block`, `checked_tool_use`, `text_tool_result`) is made
//! by writing the struct's fields (`fresh`), without a call into the class or its
//! `__post_init__`: about half a message's construction time.
//!
//! `frozen_json` makes a message immutable all the way down: a tool call's `input` and a
//! message's `meta` are stored as `FrozenDict`/`FrozenList` copies (dict and list subclasses
//! whose mutators raise), built here in one walk that also checks the value is plain JSON.
//! A value that is already frozen throughout is returned as is, so a message built from
//! another message's values copies nothing. The copies are untracked by Python's cyclic GC:
//! they hold only plain JSON and other such copies, and never change, so no cycle can run
//! through them (a server holding millions of messages gives the collector nothing to walk).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use pyo3::{intern, Py};

use super::convert::{
    classes, field, read_fields, Classes, CONTENT, MESSAGE_FIELDS, META, TEXT, TOOL_RESULT_FIELDS,
    TOOL_USE_FIELDS, USE_INPUT,
};
use super::fresh::{layouts, Layout};
use super::untrack::untrack;

/// Nesting beyond which a value is left to the Python checks (which also find cycles).
const MAX_DEPTH: u32 = 200;

/// A string the encoder accepts: valid UTF-8 (no lone surrogates).
pub(super) fn plain_str(s: &Bound<'_, PyString>) -> bool {
    s.to_str().is_ok()
}

/// What `value` is to plain JSON, as a leaf: `Some(true)` for one JSON holds as it is (an
/// exact `str` of valid UTF-8, `None`, `bool`, `int`, finite `float`), `Some(false)` for one
/// it cannot hold (a lone surrogate, NaN, an infinity), `None` for anything else (a
/// container, another type).
pub(super) fn plain_leaf(value: &Bound<'_, PyAny>) -> Option<bool> {
    if let Ok(s) = value.cast_exact::<PyString>() {
        return Some(plain_str(s));
    }
    if value.is_none()
        || value.is_exact_instance_of::<PyBool>()
        || value.is_exact_instance_of::<PyInt>()
    {
        return Some(true);
    }
    if let Ok(f) = value.cast_exact::<PyFloat>() {
        return Some(f.value().is_finite());
    }
    None
}

/// `value` as frozen plain JSON (exact types only), or `None` if it is anything else.
fn freeze<'py>(
    c: &Classes,
    value: &Bound<'py, PyAny>,
    depth: u32,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = value.py();
    if let Some(plain) = plain_leaf(value) {
        return Ok(plain.then(|| value.clone()));
    }
    if depth >= MAX_DEPTH {
        return Ok(None);
    }
    let ty = value.get_type();
    let frozen_dict = ty.is(c.frozen_dict.bind(py));
    if frozen_dict || value.is_exact_instance_of::<PyDict>() {
        let dict = value.cast::<PyDict>()?;
        let mut items = Vec::with_capacity(dict.len());
        let mut same = frozen_dict;
        for (k, v) in dict.iter() {
            let Ok(key) = k.cast_exact::<PyString>() else {
                return Ok(None);
            };
            if !plain_str(key) {
                return Ok(None);
            }
            let Some(f) = freeze(c, &v, depth + 1)? else {
                return Ok(None);
            };
            same &= f.is(&v);
            items.push((k, f));
        }
        if same {
            return Ok(Some(value.clone()));
        }
        let out = c.frozen_dict.bind(py).call0()?;
        let out_dict = out.cast::<PyDict>()?;
        for (k, v) in items {
            out_dict.set_item(k, v)?;
        }
        // Immutable plain JSON of fresh copies: no cycle can run through it.
        untrack(&out);
        return Ok(Some(out));
    }
    let frozen_list = ty.is(c.frozen_list.bind(py));
    if frozen_list || value.is_exact_instance_of::<PyList>() {
        let list = value.cast::<PyList>()?;
        let mut items = Vec::with_capacity(list.len());
        let mut same = frozen_list;
        for v in list.iter() {
            let Some(f) = freeze(c, &v, depth + 1)? else {
                return Ok(None);
            };
            same &= f.is(&v);
            items.push(f);
        }
        if same {
            return Ok(Some(value.clone()));
        }
        let out = c.frozen_list.bind(py).call1((PyTuple::new(py, items)?,))?;
        untrack(&out);
        return Ok(Some(out));
    }
    Ok(None)
}

/// A frozen copy of `value` if it is a dict of plain JSON (exact types: str keys; dict, list,
/// str, int, finite float, bool, None values), `value` itself if it is one already
/// frozen throughout, else None (the Python checks then say what is wrong, or copy it).
#[pyfunction]
pub fn frozen_json<'py>(value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let c = classes(value.py())?;
    if !value.is_instance_of::<PyDict>() {
        return Ok(None);
    }
    freeze(c, value, 0)
}

/// A non-empty exact `str` that is valid UTF-8 (an id, a name).
pub(super) fn nonempty_str(value: &Bound<'_, PyAny>) -> bool {
    plain_text(value).is_some()
}

fn opt_nonempty_str(value: &Bound<'_, PyAny>) -> bool {
    value.is_none() || nonempty_str(value)
}

fn opt_str(value: &Bound<'_, PyAny>) -> bool {
    value.is_none() || value.cast_exact::<PyString>().is_ok_and(plain_str)
}

/// Replaces the frozen struct's field `i`, named `name`, by `value`: at its offset when
/// `obj` is exactly `layout`'s class, else through msgspec's `force_setattr`.
fn force_set(
    c: &Classes,
    obj: &Bound<'_, PyAny>,
    (layout, i, name): (Option<&Layout>, usize, &Bound<'_, PyString>),
    value: Bound<'_, PyAny>,
) -> PyResult<()> {
    if !layout.is_some_and(|layout| layout.set(obj, i, &value)) {
        c.force_setattr.bind(obj.py()).call1((obj, name, value))?;
    }
    Ok(())
}

/// Whether a `ToolUseBlock` passes every construction check; its `input` is replaced by its
/// frozen copy. False means: let the Python checks decide.
fn tool_use_ok(block: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = block.py();
    let c = classes(py)?;
    let layout = layouts(py)?.tool_use.as_ref();
    let [id, name, input] = read_fields(c, block, (&c.tool_use, layout), &TOOL_USE_FIELDS)?;
    if !nonempty_str(&id) || !nonempty_str(&name) {
        return Ok(false);
    }
    let Some(frozen) = frozen_json(&input)? else {
        return Ok(false);
    };
    if !frozen.is(&input) {
        let field = (layout, USE_INPUT, intern!(py, "input"));
        force_set(c, block, field, frozen)?;
    }
    Ok(true)
}

/// Whether a `ToolResultBlock` passes every construction check (its content a string or a
/// tuple of text and image blocks). False means: let the Python checks decide.
fn tool_result_ok(block: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = block.py();
    let c = classes(py)?;
    let [tool_use_id, content, is_error, compact_summary] = read_fields(
        c,
        block,
        (&c.tool_result, layouts(py)?.tool_result.as_ref()),
        &TOOL_RESULT_FIELDS,
    )?;
    if !nonempty_str(&tool_use_id) {
        return Ok(false);
    }
    let content_ok = if let Ok(s) = content.cast_exact::<PyString>() {
        plain_str(s)
    } else if let Ok(items) = content.cast_exact::<PyTuple>() {
        items.iter().all(|item| {
            let ty = item.get_type();
            ty.is(c.text.bind(py)) || ty.is(c.image.bind(py))
        })
    } else {
        false
    };
    Ok(content_ok && is_error.is_exact_instance_of::<PyBool>() && opt_str(&compact_summary))
}

/// `u<n>` or `a<n>` with `n` a decimal `u32`.
fn turn_id(value: &Bound<'_, PyAny>) -> bool {
    value.is_none()
        || value.cast_exact::<PyString>().is_ok_and(|s| {
            s.to_str().is_ok_and(|t| {
                let digits = t.get(1..).unwrap_or("");
                matches!(t.as_bytes().first(), Some(b'u' | b'a'))
                    && !digits.is_empty()
                    && digits.bytes().all(|b| b.is_ascii_digit())
                    && digits.parse::<u32>().is_ok()
            })
        })
}

/// Whether a `Message`'s fields pass every construction check; its `meta` (when set) is
/// replaced by its frozen copy. False means: let the Python checks decide.
fn message_ok(message: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = message.py();
    let c = classes(py)?;
    let layout = layouts(py)?.message.as_ref();
    let [role, content, id, turn, name, usage, meta] =
        read_fields(c, message, (&c.message, layout), &MESSAGE_FIELDS)?;
    let Ok(role) = role.cast_exact::<PyString>() else {
        return Ok(false);
    };
    // A list of blocks (`Message("user", [TextBlock(...)])`, as most agent code writes it)
    // is stored as its tuple, as the Python checks store it.
    let listed = content
        .cast_exact::<PyList>()
        .ok()
        .map(PyListMethods::to_tuple);
    let Ok(content) = listed.as_ref().map_or(content.cast_exact::<PyTuple>(), Ok) else {
        return Ok(false);
    };
    if !blocks_allowed(c, role, content) {
        return Ok(false);
    }
    if !opt_nonempty_str(&id) || !turn_id(&turn) || !opt_nonempty_str(&name) {
        return Ok(false);
    }
    if !usage.is_none() && !usage.get_type().is(c.usage.bind(py)) {
        return Ok(false);
    }
    if listed.is_some() {
        untrack(content); // `gc=False` blocks only (as in `new_message`)
        let field = (layout, CONTENT, intern!(py, "content"));
        force_set(c, message, field, content.clone().into_any())?;
    }
    if !meta.is_none() {
        let Some(frozen) = frozen_json(&meta)? else {
            return Ok(false);
        };
        if !frozen.is(&meta) {
            force_set(c, message, (layout, META, intern!(py, "meta")), frozen)?;
        }
    }
    Ok(true)
}

/// Runs the struct's Python checks (`_check`) unless the fast checks said yes.
fn checked(obj: &Bound<'_, PyAny>, fast_ok: bool) -> PyResult<()> {
    if !fast_ok {
        obj.call_method0(intern!(obj.py(), "_check"))?;
    }
    Ok(())
}

/// `TextBlock.__post_init__`.
#[pyfunction]
pub fn text_post_init(block: &Bound<'_, PyAny>) -> PyResult<()> {
    let name = intern!(block.py(), "text");
    let text = field(layouts(block.py())?.text.as_ref(), block, TEXT, name)?;
    checked(block, text.cast_exact::<PyString>().is_ok_and(plain_str))
}

/// `ToolUseBlock.__post_init__` (its `input` replaced by its frozen copy).
#[pyfunction]
pub fn tool_use_post_init(block: &Bound<'_, PyAny>) -> PyResult<()> {
    checked(block, tool_use_ok(block)?)
}

/// `ToolResultBlock.__post_init__`.
#[pyfunction]
pub fn tool_result_post_init(block: &Bound<'_, PyAny>) -> PyResult<()> {
    checked(block, tool_result_ok(block)?)
}

/// `ToolUseBlock(id, name, input)` for a caller in the core that made `input` (a `FrozenDict`
/// of plain JSON): built without its checks (`fresh`) when `id` and `name` are non-empty
/// `str`s of valid UTF-8, else through the class, whose checks raise.
pub(super) fn checked_tool_use<'py>(
    c: &Classes,
    id: &Bound<'py, PyString>,
    name: &Bound<'py, PyString>,
    input: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = input.py();
    if nonempty_str(id.as_any()) && nonempty_str(name.as_any()) {
        if let Some(layout) = &layouts(py)?.tool_use {
            return layout.build(py, &[id, name, input]);
        }
    }
    c.tool_use.bind(py).call1((id, name, input))
}

/// `ToolResultBlock(tool_use_id, content, is_error)` with text content: built without its
/// checks (`fresh`) when the id is a non-empty `str` and the content a `str`, both of valid
/// UTF-8 (all they check of these fields), else through the class.
pub(super) fn text_tool_result<'py>(
    c: &Classes,
    id: &Bound<'py, PyAny>,
    content: &Bound<'py, PyString>,
    is_error: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let py = id.py();
    if nonempty_str(id) && plain_str(content) {
        if let Some(layout) = &layouts(py)?.tool_result {
            let is_error = PyBool::new(py, is_error).to_owned().into_any();
            let none = py.None().into_bound(py);
            return layout.build(py, &[id, content, &is_error, &none]);
        }
    }
    c.tool_result.bind(py).call1((id, content, is_error))
}

/// `Message.__post_init__` (its `meta` replaced by its frozen copy).
#[pyfunction]
pub fn message_post_init(message: &Bound<'_, PyAny>) -> PyResult<()> {
    checked(message, message_ok(message)?)
}

/// The keyword options every convenience constructor takes (`usage` too, except
/// `tool_results`): a call with any other keyword goes to the Python constructor, which raises
/// Python's own `TypeError`.
const OPTIONS: [&str; 5] = ["id", "turn", "name", "usage", "meta"];

fn known_options(options: Option<&Bound<'_, PyDict>>, usage: bool) -> bool {
    options.is_none_or(|o| {
        o.keys().iter().all(|k| {
            k.cast_exact::<PyString>().is_ok_and(|k| {
                k.to_str()
                    .is_ok_and(|k| OPTIONS.contains(&k) && (usage || k != "usage"))
            })
        })
    })
}

/// A non-empty `str` that is valid UTF-8: one `TextBlock` that cannot fail its checks.
fn plain_text<'a, 'py>(value: &'a Bound<'py, PyAny>) -> Option<&'a Bound<'py, PyString>> {
    value
        .cast_exact::<PyString>()
        .ok()
        .filter(|s| s.to_str().is_ok_and(|t| !t.is_empty()))
}

/// `cls(role, blocks, **options)`: the same call the Python constructor ends with, so it
/// raises what that would (the blocks are of exact classes allowed for `role`: the callers
/// build or pick them so).
fn build<'py>(
    cls: &Bound<'py, PyType>,
    role: &Bound<'py, PyString>,
    blocks: Vec<Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    let c = classes(py)?;
    let blocks = PyTuple::new(py, blocks)?;
    if options.is_none_or(PyDictMethods::is_empty) && cls.is(c.message.bind(py)) {
        return new_message(c, role, blocks);
    }
    cls.call((role, blocks), options)
}

/// Whether `role` is a role and every block in `blocks` is of an exact block class allowed
/// for it: all a `Message`'s checks look at when it has no options.
fn blocks_allowed(c: &Classes, role: &Bound<'_, PyString>, blocks: &Bound<'_, PyTuple>) -> bool {
    let py = role.py();
    let allowed: &[&Py<PyType>] = match role.to_str() {
        Ok("user") => &[&c.text, &c.image, &c.tool_result],
        Ok("assistant") => &[&c.text, &c.image, &c.tool_use, &c.reasoning],
        Ok("system") => &[&c.text],
        _ => return false,
    };
    blocks.iter().all(|block| {
        let ty = block.get_type();
        allowed.iter().any(|t| ty.is(t.bind(py)))
    })
}

/// `Message(role, blocks)` with no options, for the core's constructors and readers: built
/// without its checks (`fresh`) when `blocks_allowed` says they would pass, else through the
/// class (they run, and raise).
pub(super) fn new_message<'py>(
    c: &Classes,
    role: &Bound<'py, PyString>,
    blocks: Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = role.py();
    let class = c.message.bind(py);
    if blocks_allowed(c, role, &blocks) {
        if let Some(layout) = &layouts(py)?.message {
            // The blocks are `gc=False` structs, so no cycle can run through their tuple:
            // untracked now, as the collector would untrack it at its next pass, a message
            // leaves nothing for the cyclic GC to count or walk.
            untrack(&blocks);
            let none = py.None().into_bound(py);
            return layout.build(py, &[role, &blocks, &none, &none, &none, &none, &none]);
        }
    }
    class.call1((role, &blocks))
}

/// `TextBlock(text)`, built without its checks (`fresh`) when `text` is valid UTF-8 (all they
/// check).
pub(super) fn text_block<'py>(
    c: &Classes,
    text: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = text.py();
    if plain_str(text) {
        if let Some(layout) = &layouts(py)?.text {
            return layout.build(py, &[text]);
        }
    }
    c.text.bind(py).call1((text,))
}

/// Calls the Python constructor `slow(cls, *args, **options)`.
fn slow<'py>(
    slow: &Py<PyAny>,
    cls: &Bound<'py, PyType>,
    args: Vec<Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut all = Vec::with_capacity(args.len() + 1);
    all.push(cls.clone().into_any());
    all.extend(args);
    slow.bind(cls.py())
        .call(PyTuple::new(cls.py(), all)?, options)
}

/// `Message.user(content, *, id=None, turn=None, name=None, usage=None, meta=None)`: a user
/// message from a string or a sequence of blocks (strings become text blocks).
#[pyfunction]
#[pyo3(signature = (cls, content, **options))]
#[pyo3(text_signature = "(cls, content, *, id=None, turn=None, name=None, usage=None, meta=None)")]
pub fn message_user<'py>(
    cls: &Bound<'py, PyType>,
    content: &Bound<'py, PyAny>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    let c = classes(py)?;
    if let Some(text) = plain_text(content) {
        if known_options(options, true) {
            let block = text_block(c, text)?;
            return build(cls, intern!(py, "user"), vec![block], options);
        }
    }
    slow(&c.user, cls, vec![content.clone()], options)
}

/// `Message.assistant(content="", *, tool_uses=(), id=None, turn=None, name=None, usage=None,
/// meta=None)`: an assistant message, its text (or blocks; `None` is no text) then the tool
/// calls in `tool_uses`, each a `ToolUseBlock` or an `(id, name, input)` tuple.
#[pyfunction]
#[pyo3(signature = (cls, content=None, *, tool_uses=None, **options))]
#[pyo3(
    text_signature = "(cls, content='', *, tool_uses=(), id=None, turn=None, name=None, usage=None, meta=None)"
)]
pub fn message_assistant<'py>(
    cls: &Bound<'py, PyType>,
    content: Option<&Bound<'py, PyAny>>,
    tool_uses: Option<&Bound<'py, PyAny>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    let c = classes(py)?;
    let content = content.map_or_else(|| PyString::new(py, "").into_any(), Clone::clone);
    if known_options(options, true) {
        if let Some(blocks) = assistant_blocks(c, &content, tool_uses) {
            return build(cls, intern!(py, "assistant"), blocks, options);
        }
    }
    let options = match tool_uses {
        Some(calls) => {
            let kwargs = options.map_or_else(|| Ok(PyDict::new(py)), PyDictMethods::copy)?;
            kwargs.set_item(intern!(py, "tool_uses"), calls)?;
            Some(kwargs)
        }
        None => options.cloned(),
    };
    slow(&c.assistant, cls, vec![content], options.as_ref())
}

/// The blocks of `Message.assistant` in its common forms, or `None` for the Python
/// constructor.
fn assistant_blocks<'py>(
    c: &Classes,
    content: &Bound<'py, PyAny>,
    tool_uses: Option<&Bound<'py, PyAny>>,
) -> Option<Vec<Bound<'py, PyAny>>> {
    let py = content.py();
    let mut blocks = Vec::with_capacity(2);
    if let Some(text) = plain_text(content) {
        blocks.push(text_block(c, text).ok()?);
    } else if !content
        .cast_exact::<PyString>()
        .is_ok_and(|s| s.to_str().is_ok_and(str::is_empty))
    {
        return None;
    }
    let Some(calls) = tool_uses.filter(|t| !t.is_none()) else {
        return Some(blocks);
    };
    let items = if let Ok(list) = calls.cast_exact::<PyList>() {
        list.to_tuple()
    } else {
        calls.cast_exact::<PyTuple>().ok()?.clone()
    };
    for call in items.iter() {
        if call.get_type().is(c.tool_use.bind(py)) {
            blocks.push(call);
        } else {
            let args = call.cast_exact::<PyTuple>().ok().filter(|t| t.len() == 3)?;
            blocks.push(tool_use_of(c, args).ok()?);
        }
    }
    Some(blocks)
}

/// `Message.tool_results(*results, id=None, turn=None, name=None, meta=None)`: a user message
/// carrying tool results, each a `ToolResultBlock` or a `(tool_use_id, content[, is_error])`
/// tuple (a single list of them is accepted too).
#[pyfunction]
#[pyo3(signature = (cls, *results, **options))]
#[pyo3(text_signature = "(cls, *results, id=None, turn=None, name=None, meta=None)")]
pub fn message_tool_results<'py>(
    cls: &Bound<'py, PyType>,
    results: &Bound<'py, PyTuple>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    let c = classes(py)?;
    if known_options(options, false) {
        if let Some(blocks) = result_blocks(c, results) {
            return build(cls, intern!(py, "user"), blocks, options);
        }
    }
    slow(&c.tool_results, cls, results.iter().collect(), options)
}

/// The blocks of `Message.tool_results` in its common forms, or `None` for the Python
/// constructor.
fn result_blocks<'py>(
    c: &Classes,
    results: &Bound<'py, PyTuple>,
) -> Option<Vec<Bound<'py, PyAny>>> {
    let py = results.py();
    let mut blocks = Vec::with_capacity(results.len());
    for result in results.iter() {
        if result.get_type().is(c.tool_result.bind(py)) {
            blocks.push(result);
        } else {
            let args = result
                .cast_exact::<PyTuple>()
                .ok()
                .filter(|t| t.len() == 2 || t.len() == 3)?;
            blocks.push(tool_result_of(c, args).ok()?);
        }
    }
    Some(blocks)
}

/// `ToolUseBlock(*args)` for an `(id, name, input)` tuple.
fn tool_use_of<'py>(c: &Classes, args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
    tool_use_block(
        c,
        &args.get_item(0)?,
        &args.get_item(1)?,
        &args.get_item(2)?,
    )
}

/// `ToolUseBlock(id, name, input)` from a caller's values (a constructor's tuple, a provider
/// payload): `input` frozen once here, and the block built without its checks (`fresh`)
/// when the ids are plain strings and the input froze; else through the class, whose
/// checks decide (and raise).
pub(super) fn tool_use_block<'py>(
    c: &Classes,
    id: &Bound<'py, PyAny>,
    name: &Bound<'py, PyAny>,
    input: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let frozen = frozen_json(input)?;
    if let (Some(frozen), Ok(id), Ok(name)) = (
        &frozen,
        id.cast_exact::<PyString>(),
        name.cast_exact::<PyString>(),
    ) {
        return checked_tool_use(c, id, name, frozen);
    }
    let input = frozen.unwrap_or_else(|| input.clone());
    c.tool_use.bind(input.py()).call1((id, name, input))
}

/// `ToolResultBlock(*args)` for a `(tool_use_id, content[, is_error])` tuple: its checks
/// skipped when the id and content are plain strings (and `is_error` a bool), else the class
/// checks everything.
fn tool_result_of<'py>(c: &Classes, args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
    let py = args.py();
    let id = args.get_item(0)?;
    let content = args.get_item(1)?;
    let is_error = if args.len() == 3 {
        args.get_item(2)?
            .cast_exact::<PyBool>()
            .ok()
            .map(PyBoolMethods::is_true)
    } else {
        Some(false)
    };
    if let (Ok(id), Ok(content), Some(is_error)) = (
        id.cast_exact::<PyString>(),
        content.cast_exact::<PyString>(),
        is_error,
    ) {
        return text_tool_result(c, id, content, is_error);
    }
    c.tool_result.bind(py).call1(args)
}
