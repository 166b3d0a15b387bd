//! Fast paths of message construction: field checks and frozen copies of JSON values.
//!
//! `ctxtrim.messages` validates every message and block in `__post_init__`. The checks that
//! run on every construction are done here in one call; on anything they do not accept they
//! answer "no" and the Python checks run, which name the problem (or accept a rarer form, e.g.
//! a list of blocks, and normalise it). So these functions decide nothing the Python checks
//! would not: they may only say yes to what those accept.
//!
//! `frozen_json` makes a message immutable all the way down: a tool call's `input` and a
//! message's `meta` are stored as `FrozenDict`/`FrozenList` copies (dict and list subclasses
//! whose mutators raise), built here in one walk that also checks the value is plain JSON.
//! A value that is already frozen throughout is returned as is, so a message built from
//! another message's values copies nothing. The copies are untracked by Python's cyclic GC:
//! they hold only plain JSON and other such copies, and never change, so no cycle can run
//! through them (a server holding millions of messages gives the collector nothing to walk).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{intern, Py};

use super::convert::{classes, Classes};
use super::untrack::untrack;

/// Nesting beyond which a value is left to the Python checks (which also find cycles).
const MAX_DEPTH: u32 = 200;

/// A string the encoder accepts: valid UTF-8 (no lone surrogates).
fn plain_str(s: &Bound<'_, PyString>) -> bool {
    s.to_str().is_ok()
}

/// `value` as frozen plain JSON (exact types only), or `None` if it is anything else.
fn freeze<'py>(
    c: &Classes,
    value: &Bound<'py, PyAny>,
    depth: u32,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = value.py();
    if let Ok(s) = value.cast_exact::<PyString>() {
        return Ok(plain_str(s).then(|| value.clone()));
    }
    if value.is_none() || value.is_exact_instance_of::<PyBool>() {
        return Ok(Some(value.clone()));
    }
    if value.is_exact_instance_of::<PyInt>() {
        return Ok(Some(value.clone()));
    }
    if let Ok(f) = value.cast_exact::<PyFloat>() {
        return Ok(f.value().is_finite().then(|| value.clone()));
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

fn nonempty_str(value: &Bound<'_, PyAny>) -> bool {
    value
        .cast_exact::<PyString>()
        .is_ok_and(|s| s.to_str().is_ok_and(|t| !t.is_empty()))
}

fn opt_nonempty_str(value: &Bound<'_, PyAny>) -> bool {
    value.is_none() || nonempty_str(value)
}

fn opt_str(value: &Bound<'_, PyAny>) -> bool {
    value.is_none() || value.cast_exact::<PyString>().is_ok_and(plain_str)
}

/// Replaces the frozen struct's field `name` by `value` (msgspec's `force_setattr`).
fn force_set(
    c: &Classes,
    obj: &Bound<'_, PyAny>,
    name: &Bound<'_, PyString>,
    value: Bound<'_, PyAny>,
) -> PyResult<()> {
    c.force_setattr.bind(obj.py()).call1((obj, name, value))?;
    Ok(())
}

/// Whether a `ToolUseBlock` passes every construction check; its `input` is replaced by its
/// frozen copy. False means: let the Python checks decide.
#[pyfunction]
pub fn tool_use_ok(block: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = block.py();
    let c = classes(py)?;
    if !nonempty_str(&block.getattr(intern!(py, "id"))?)
        || !nonempty_str(&block.getattr(intern!(py, "name"))?)
    {
        return Ok(false);
    }
    let input = block.getattr(intern!(py, "input"))?;
    let Some(frozen) = frozen_json(&input)? else {
        return Ok(false);
    };
    if !frozen.is(&input) {
        force_set(c, block, intern!(py, "input"), frozen)?;
    }
    Ok(true)
}

/// Whether a `ToolResultBlock` passes every construction check (its content a string or a
/// tuple of text and image blocks). False means: let the Python checks decide.
#[pyfunction]
pub fn tool_result_ok(block: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = block.py();
    let c = classes(py)?;
    if !nonempty_str(&block.getattr(intern!(py, "tool_use_id"))?) {
        return Ok(false);
    }
    let content = block.getattr(intern!(py, "content"))?;
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
    Ok(content_ok
        && block
            .getattr(intern!(py, "is_error"))?
            .is_exact_instance_of::<PyBool>()
        && opt_str(&block.getattr(intern!(py, "compact_summary"))?))
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
#[pyfunction]
pub fn message_ok(message: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = message.py();
    let c = classes(py)?;
    let role = message.getattr(intern!(py, "role"))?;
    let Ok(role) = role.cast_exact::<PyString>() else {
        return Ok(false);
    };
    let allowed: &[&Py<pyo3::types::PyType>] = match role.to_str() {
        Ok("user") => &[&c.text, &c.image, &c.tool_result],
        Ok("assistant") => &[&c.text, &c.image, &c.tool_use, &c.reasoning],
        Ok("system") => &[&c.text],
        _ => return Ok(false),
    };
    let content = message.getattr(intern!(py, "content"))?;
    let Ok(content) = content.cast_exact::<PyTuple>() else {
        return Ok(false);
    };
    for block in content.iter() {
        let ty = block.get_type();
        if !allowed.iter().any(|t| ty.is(t.bind(py))) {
            return Ok(false);
        }
    }
    if !opt_nonempty_str(&message.getattr(intern!(py, "id"))?)
        || !turn_id(&message.getattr(intern!(py, "turn"))?)
        || !opt_nonempty_str(&message.getattr(intern!(py, "name"))?)
    {
        return Ok(false);
    }
    let usage = message.getattr(intern!(py, "usage"))?;
    if !usage.is_none() && !usage.get_type().is(c.usage.bind(py)) {
        return Ok(false);
    }
    let meta = message.getattr(intern!(py, "meta"))?;
    if !meta.is_none() {
        let Some(frozen) = frozen_json(&meta)? else {
            return Ok(false);
        };
        if !frozen.is(&meta) {
            force_set(c, message, intern!(py, "meta"), frozen)?;
        }
    }
    Ok(true)
}
