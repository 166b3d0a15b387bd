//! OpenAI Responses JSON bytes → messages, for input whose items all have a common shape (the
//! core's `responses_json::read_responses_json`): each item becomes the same item record the
//! dict reader (`responses.rs`) makes of the same values, with its helpers, and the items are
//! grouped by its `Gather`, so both paths make equal messages, records included.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::responses_json::{read_responses_json, Content, Item, Role};

use super::convert::{classes, Classes};
use super::message::text_block;
use super::responses::{self, call_item, message_item, output_item, Gather};
use super::shapes::stop_on_invalid;

/// Bodies longer than this are parsed with the GIL released (a whole history, say).
const DETACH_ABOVE: usize = 64 * 1024;

/// The messages of the JSON `data` (input items, a string, or a request body with `"input"`),
/// or `None` when the general reader must read it: an item in another shape, text
/// `serde_json` refuses, arguments that are not the compact JSON of an object (checked as
/// `responses_fast_prefix` checks them; `raw_key` is the marker of arguments kept as text), a
/// value a constructor refuses.
#[pyfunction]
pub fn responses_json_fast<'py>(
    py: Python<'py>,
    raw_key: &Bound<'py, PyString>,
    data: &[u8],
) -> PyResult<Option<Bound<'py, PyList>>> {
    // A turn's few items parse in about a microsecond, less than releasing the GIL costs.
    let read = if data.len() > DETACH_ABOVE {
        py.detach(|| read_responses_json(data))
    } else {
        read_responses_json(data)
    };
    let Some(read) = read else {
        return Ok(None);
    };
    stop_on_invalid(py, build(py, raw_key, read))
}

fn build<'py>(
    py: Python<'py>,
    raw_key: &Bound<'py, PyString>,
    items: Vec<Item>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let c = classes(py)?;
    let mut gather = Gather::new(py);
    for (i, item) in items.into_iter().enumerate() {
        let Some(item) = item_of(py, c, raw_key, item)? else {
            return Ok(None);
        };
        if gather.push(c, i, item)?.is_some() {
            return Ok(None);
        }
    }
    if gather.finish(c)?.is_some() {
        return Ok(None);
    }
    Ok(Some(gather.out))
}

/// The item record of one item read, or `None` where the dict reader would stop.
fn item_of<'py>(
    py: Python<'py>,
    c: &Classes,
    raw_key: &Bound<'py, PyString>,
    item: Item,
) -> PyResult<Option<responses::Item<'py>>> {
    match item {
        Item::Message {
            short,
            role,
            content,
        } => {
            let assistant = role == Role::Assistant;
            let role = match role {
                Role::User => intern!(py, "user"),
                Role::System => intern!(py, "system"),
                Role::Assistant => intern!(py, "assistant"),
            };
            let text = |t: &str| text_block(c, &PyString::new(py, t));
            let (from_str, blocks) = match content {
                Content::Text(t) => (true, vec![text(&t)?]),
                Content::Parts(texts) => (
                    false,
                    texts
                        .iter()
                        .map(|t| text(t))
                        .collect::<PyResult<Vec<_>>>()?,
                ),
            };
            Ok(message_item(
                role.clone(),
                assistant,
                short,
                from_str,
                blocks,
            ))
        }
        Item::Call {
            call_id,
            name,
            arguments,
        } => {
            let call_id = PyString::new(py, &call_id);
            let name = PyString::new(py, &name);
            let arguments = PyString::new(py, &arguments);
            call_item(c, call_id.as_any(), name.as_any(), &arguments, raw_key)
        }
        Item::Output { call_id, output } => {
            let call_id = PyString::new(py, &call_id);
            output_item(c, call_id.as_any(), &PyString::new(py, &output)).map(Some)
        }
    }
}
