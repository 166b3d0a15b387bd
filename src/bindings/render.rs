//! A window's provider request from its messages' kept renderings: as fresh dicts
//! (`copy_renderings`) or as JSON bytes (`join_renderings`; its way to one message's JSON,
//! `Joiner`, also writes a log's window, `log_json`).
//!
//! Each message keeps its provider rendering in its slots for that format
//! (`ctxtrim.messages.CACHE_SLOTS`): the objects it becomes, as a tuple of private plain-JSON
//! copies made by `kept_rendering`, and, once the bytes path asked for them, their JSON. A
//! request for a window then reads those slots in one pass here; a message not rendered yet is
//! rendered by the format's core renderer of common shapes (`fast`, on the dicts path) or
//! handed to its Python `render(message, index)`, which renders it, keeps the result and
//! returns it.
//!
//! Invariants: a kept rendering holds only exact `dict`, `list`, `str` (valid UTF-8), `int`,
//! finite `float`, `bool` and `None`, is never handed out and never changes, so it
//! is untracked by the cyclic GC; every call returns new dicts and lists all the way down
//! (strings and numbers are immutable and shared), so nothing a caller does to them reaches
//! a message or a later request. Copying a dict is CPython's `dict.copy` (a memcpy of its
//! table for the small dicts of a rendering), so a request costs a fraction of decoding its
//! JSON.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PySequence, PyString, PyTuple};

use super::convert::{classes, Classes};
use super::message::{plain_leaf, plain_str};
use super::slots::CacheSlot;
use super::untrack::untrack;

/// Deeper than any provider object; a deeper value goes to the encoder, which says why.
const MAX_DEPTH: u32 = 64;

/// The messages of `messages` as a list (a list itself, or any sequence copied once).
fn as_list<'py>(messages: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    match messages.cast::<PyList>() {
        Ok(list) => Ok(list.clone()),
        Err(_) => messages.cast::<PySequence>()?.to_list(),
    }
}

/// The JSON array of the renderings of `messages` kept under `attr`, rendering those that
/// have none with `render(message, index) -> bytes` (an empty rendering adds no item).
///
/// With `fast`, `kept_attr` and `encode` (the format's core renderer of common shapes, the
/// slot of its kept objects and the request's JSON encoder), a message with no bytes yet is
/// rendered here when it can be, with no Python frame: its kept objects (or `fast`'s, kept
/// under `kept_attr` as the dicts path keeps them) encoded, the array's brackets dropped,
/// kept under `attr`; or, with `fast_json` (the format's JSON writer of common shapes) and no
/// kept objects, the bytes it writes straight from the message, the same bytes with no
/// objects made. That is what `render` does for such a message; the rest go to `render`.
#[pyfunction]
#[pyo3(signature = (messages, attr, render, fast=None, kept_attr=None, encode=None, fast_json=None))]
#[allow(clippy::too_many_arguments)] // the format's renderers and slots, as the Python side keeps them
pub fn join_renderings<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    attr: &Bound<'py, PyString>,
    render: &Bound<'py, PyAny>,
    fast: Option<&Bound<'py, PyAny>>,
    kept_attr: Option<&Bound<'py, PyString>>,
    encode: Option<&Bound<'py, PyAny>>,
    fast_json: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let list = as_list(messages)?;
    let joiner = Joiner::new(py, attr, render, fast, kept_attr, encode, fast_json)?;
    let mut out: Vec<u8> = Vec::with_capacity(64 * list.len() + 2);
    out.push(b'[');
    for (i, message) in list.iter().enumerate() {
        let item = joiner.item(&message, i)?;
        if !item.as_bytes().is_empty() {
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(item.as_bytes()); // an empty rendering adds no item
        }
    }
    out.push(b']');
    Ok(PyBytes::new(py, &out))
}

/// A format's way to a message's JSON rendering (`join_renderings`'s arguments): the bytes
/// kept under its slot, else made in the core (`First`), else by its Python `render`.
pub(super) struct Joiner<'py> {
    slot: CacheSlot<'py>,
    first: Option<First<'py>>,
    render: &'py Bound<'py, PyAny>,
}

impl<'py> Joiner<'py> {
    #[allow(clippy::too_many_arguments)] // `join_renderings`'s arguments, passed on
    pub(super) fn new(
        py: Python<'py>,
        attr: &Bound<'py, PyString>,
        render: &'py Bound<'py, PyAny>,
        fast: Option<&'py Bound<'py, PyAny>>,
        kept_attr: Option<&Bound<'py, PyString>>,
        encode: Option<&'py Bound<'py, PyAny>>,
        fast_json: Option<&'py Bound<'py, PyAny>>,
    ) -> PyResult<Self> {
        let first = match (fast, kept_attr, encode) {
            (Some(fast), Some(kept_attr), Some(encode)) => Some(First {
                c: classes(py)?,
                fast,
                kept_slot: CacheSlot::named(kept_attr)?,
                encode,
                fast_json,
            }),
            _ => None,
        };
        Ok(Self {
            slot: CacheSlot::named(attr)?,
            first,
            render,
        })
    }

    /// The JSON rendering of `message`, item `i` of the request (made and kept if it had
    /// none): its objects' JSON without the array's brackets, empty for none.
    pub(super) fn item(
        &self,
        message: &Bound<'py, PyAny>,
        i: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let kept = self.slot.get(message)?;
        if let Some(bytes) = kept.as_ref().and_then(|k| k.cast::<PyBytes>().ok()) {
            return Ok(bytes.clone());
        }
        if let Some(first) = &self.first {
            if let Some(bytes) = first_bytes(first, message, &self.slot)? {
                return Ok(bytes);
            }
        }
        Ok(self.render.call1((message, i))?.cast_into::<PyBytes>()?)
    }
}

/// A format's core renderers of common shapes, for a message's first JSON rendering.
struct First<'py> {
    c: &'py Classes,
    /// The objects renderer; its objects are kept under `kept_slot`.
    fast: &'py Bound<'py, PyAny>,
    kept_slot: CacheSlot<'py>,
    /// The request's JSON encoder.
    encode: &'py Bound<'py, PyAny>,
    /// The JSON renderer (the objects' bytes, written from the message), if the format has one.
    fast_json: Option<&'py Bound<'py, PyAny>>,
}

/// A message's first JSON rendering, made and kept under `slot` without the Python
/// renderer: the encoding of its kept objects when it has them (what the dicts path made),
/// else `fast_json`'s bytes (no objects made or kept), else the encoding of `fast`'s objects
/// (kept under `kept_slot`), the array's brackets dropped. None when the Python renderer
/// must make it (not a message, or not a common shape).
fn first_bytes<'py>(
    first: &First<'py>,
    message: &Bound<'py, PyAny>,
    slot: &CacheSlot<'py>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let py = message.py();
    if !message.get_type().is(first.c.message.bind(py)) {
        return Ok(None);
    }
    let kept = match first.kept_slot.get(message)? {
        Some(kept) => match kept.cast_into_exact::<PyTuple>() {
            Ok(tuple) => tuple,
            Err(_) => return Ok(None),
        },
        None => {
            if let Some(fast_json) = first.fast_json {
                if let Ok(bytes) = fast_json.call1((message,))?.cast_into_exact::<PyBytes>() {
                    slot.set(message, bytes.as_any())?;
                    return Ok(Some(bytes));
                }
            }
            match render_fast(first.c, message, &first.kept_slot, first.fast)? {
                Some(tuple) => tuple,
                None => return Ok(None),
            }
        }
    };
    let encoded = first.encode.call1((&kept,))?.cast_into::<PyBytes>()?;
    let array = encoded.as_bytes();
    let [b'[', inner @ .., b']'] = array else {
        return Ok(None);
    };
    let bytes = PyBytes::new(py, inner);
    slot.set(message, bytes.as_any())?;
    Ok(Some(bytes))
}

/// Fresh copies of the renderings of `messages` kept under `attr`, in one list. A message
/// with none is rendered by `fast(message)` (the format's core renderer of common shapes)
/// when it gives a list of plain JSON, kept under `attr` here, else by `render(message,
/// index) -> tuple` (the format's Python path, which renders, keeps and returns a
/// `kept_rendering`, or names what is wrong).
#[pyfunction]
pub fn copy_renderings<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    attr: &Bound<'py, PyString>,
    fast: &Bound<'py, PyAny>,
    render: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let c = classes(py)?;
    let list = as_list(messages)?;
    let slot = CacheSlot::named(attr)?;
    let out = PyList::empty(py);
    for (i, message) in list.iter().enumerate() {
        let kept = match slot.get(&message)? {
            Some(kept) => kept.cast_into_exact::<PyTuple>().ok(),
            None => None,
        };
        let rendering = match kept {
            Some(tuple) => tuple,
            None => match render_fast(c, &message, &slot, fast)? {
                Some(tuple) => tuple,
                None => render
                    .call1((&message, i))?
                    .cast_into_exact::<PyTuple>()
                    .map_err(|_| PyTypeError::new_err("render() must return a kept rendering"))?,
            },
        };
        for item in rendering.iter() {
            out.append(copy_out(&item)?)?;
        }
    }
    Ok(out)
}

/// `message`'s rendering by `fast`, kept in `slot`; None when `fast` leaves it to the
/// general renderer (or it is not a message at all: the general path names that).
fn render_fast<'py>(
    c: &Classes,
    message: &Bound<'py, PyAny>,
    slot: &CacheSlot<'py>,
    fast: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let py = message.py();
    if !message.get_type().is(c.message.bind(py)) {
        return Ok(None);
    }
    let rendered = fast.call1((message,))?;
    if rendered.is_none() {
        return Ok(None);
    }
    let Some(kept) = kept_rendering(&rendered)? else {
        return Ok(None);
    };
    slot.set(message, kept.as_any())?;
    Ok(Some(kept))
}

/// A new copy of a kept value: its dicts and lists new, its leaves shared.
fn copy_out<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(dict) = value.cast_exact::<PyDict>() {
        let copy = dict.copy()?;
        for (k, v) in dict.iter() {
            if v.is_exact_instance_of::<PyDict>() || v.is_exact_instance_of::<PyList>() {
                copy.set_item(k, copy_out(&v)?)?;
            }
        }
        return Ok(copy.into_any());
    }
    if let Ok(list) = value.cast_exact::<PyList>() {
        let items = list
            .iter()
            .map(|v| {
                if v.is_exact_instance_of::<PyDict>() || v.is_exact_instance_of::<PyList>() {
                    copy_out(&v)
                } else {
                    Ok(v)
                }
            })
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(PyList::new(value.py(), items)?.into_any());
    }
    Ok(value.clone())
}

/// `rendering` (a message's provider objects, a list) as it is kept: a tuple of private
/// plain-JSON copies, untracked. None if it holds anything a JSON round trip would change
/// or refuse (another type, a non-`str` key, a lone surrogate, a NaN): the
/// caller then round-trips it through the encoder, which raises or normalises as a
/// request's JSON would.
#[pyfunction]
pub fn kept_rendering<'py>(rendering: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let c = classes(rendering.py())?;
    let Ok(items) = rendering.cast::<PyList>() else {
        return Ok(None);
    };
    let mut kept = Vec::with_capacity(items.len());
    for item in items.iter() {
        match private_copy(c, &item, 0)? {
            Some(copy) => kept.push(copy),
            None => return Ok(None),
        }
    }
    let tuple = PyTuple::new(rendering.py(), kept)?;
    Ok(Some(tuple))
}

/// A private copy of plain JSON (dicts and lists new and untracked, leaves shared), or None.
fn private_copy<'py>(
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
    if value.is_exact_instance_of::<PyDict>() || ty.is(c.frozen_dict.bind(py)) {
        let dict = value.cast::<PyDict>()?;
        let copy = PyDict::new(py);
        for (k, v) in dict.iter() {
            let Ok(key) = k.cast_exact::<PyString>() else {
                return Ok(None);
            };
            if !plain_str(key) {
                return Ok(None);
            }
            let Some(v) = private_copy(c, &v, depth + 1)? else {
                return Ok(None);
            };
            copy.set_item(key, v)?;
        }
        untrack(copy.as_any());
        return Ok(Some(copy.into_any()));
    }
    let is_list = value.is_exact_instance_of::<PyList>() || ty.is(c.frozen_list.bind(py));
    if is_list || value.is_exact_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for v in value.try_iter()? {
            let Some(v) = private_copy(c, &v?, depth + 1)? else {
                return Ok(None);
            };
            items.push(v);
        }
        let copy = PyList::new(py, items)?;
        untrack(copy.as_any());
        return Ok(Some(copy.into_any()));
    }
    Ok(None)
}
