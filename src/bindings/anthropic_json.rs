//! Anthropic JSON bytes → messages, for a body whose messages all have a common shape (the
//! core's `anthropic_json::read_anthropic_json`): the Python objects are built here as the
//! dict reader (`anthropic.rs`) builds them from the same values, so both paths make equal
//! messages (a string content's record included).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::anthropic_json::{read_anthropic_json, AnthropicBody, Block, Content, ResultContent};

use super::anthropic::str_form;
use super::convert::{classes, Classes};
use super::json::json_loads;
use super::message::{new_message, text_block, text_tool_result, tool_use_block};
use super::shapes::stop_on_invalid;

/// Bodies longer than this are parsed with the GIL released (a whole history, say).
const DETACH_ABOVE: usize = 64 * 1024;

/// The messages of the JSON `data` (a message array, or a request body with its string
/// `system` first), or `None` when the general reader must read it: a message in another
/// shape, text `serde_json` refuses, or a value a constructor refuses.
#[pyfunction]
pub fn anthropic_json_fast<'py>(
    py: Python<'py>,
    data: &[u8],
) -> PyResult<Option<Bound<'py, PyList>>> {
    let read = if data.len() > DETACH_ABOVE {
        py.detach(|| read_anthropic_json(data))
    } else {
        read_anthropic_json(data)
    };
    let Some(read) = read else {
        return Ok(None);
    };
    stop_on_invalid(py, build(py, read))
}

fn build<'py>(py: Python<'py>, body: AnthropicBody<'_>) -> PyResult<Option<Bound<'py, PyList>>> {
    let c = classes(py)?;
    let out = PyList::empty(py);
    if let Some(system) = body.system {
        let blocks = PyTuple::new(py, [text_block(c, &PyString::new(py, &system))?])?;
        out.append(new_message(c, intern!(py, "system"), blocks)?)?;
    }
    for m in body.messages {
        let role = if m.assistant {
            intern!(py, "assistant")
        } else {
            intern!(py, "user")
        };
        let message = match m.content {
            Content::Text(text) => {
                let blocks = PyTuple::new(py, [text_block(c, &PyString::new(py, &text))?])?;
                let options = PyDict::new(py);
                options.set_item(intern!(py, "meta"), str_form(py)?)?;
                c.message.bind(py).call((role, blocks), Some(&options))?
            }
            Content::Blocks(blocks) => {
                let mut built = Vec::with_capacity(blocks.len());
                for b in blocks {
                    let Some(block) = block_of(py, c, b)? else {
                        return Ok(None);
                    };
                    built.push(block);
                }
                new_message(c, role, PyTuple::new(py, built)?)?
            }
        };
        out.append(message)?;
    }
    Ok(Some(out))
}

/// A block's Python object, or `None` when a tool call's input does not load to a dict.
fn block_of<'py>(py: Python<'py>, c: &Classes, b: Block) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(Some(match b {
        Block::Text(text) => text_block(c, &PyString::new(py, &text))?,
        Block::ToolUse { id, name, input } => {
            let input = json_loads(PyString::new(py, input.get()).as_any())?;
            if !input.is_exact_instance_of::<PyDict>() {
                return Ok(None);
            }
            let id = PyString::new(py, &id);
            let name = PyString::new(py, &name);
            tool_use_block(c, id.as_any(), name.as_any(), &input)?
        }
        Block::ToolResult {
            id,
            content,
            is_error,
        } => {
            let id = PyString::new(py, &id);
            let content = match content {
                ResultContent::Text(text) => {
                    let (id, text) = (id.into_any(), PyString::new(py, &text));
                    return text_tool_result(c, &id, &text, is_error).map(Some);
                }
                ResultContent::Texts(texts) => {
                    let blocks = texts
                        .iter()
                        .map(|t| text_block(c, &PyString::new(py, t)))
                        .collect::<PyResult<Vec<_>>>()?;
                    PyTuple::new(py, blocks)?.into_any()
                }
            };
            c.tool_result.bind(py).call1((id, content, is_error))?
        }
    }))
}
