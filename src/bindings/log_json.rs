//! `cut_log_json`: a cut strategy's window of a `MessageLog` as the provider request's JSON
//! array, written from the one the log wrote last.
//!
//! A server writes a request every turn, and a turn's window is mostly the last one's: the
//! pinned head, the messages still in reach, a few new ones. The log keeps the JSON it wrote
//! last ([`Joined`]: the bytes, where each message's item lies in them, and the log positions
//! they are of); the next window copies each run of positions the two share from it, one
//! copy a run, and renders only the rest (its new messages) as `join_renderings` does. No
//! message object is read for a copied run: reading a window's messages and their kept
//! bytes is what a turn costs when a session is out of the CPU's caches, as it is in a
//! server holding many sessions.
//!
//! Invariants: the bytes are exactly `join_renderings`' of the same window, because within
//! one generation a log position holds one message for good (appends never bump the
//! generation, every other write does), a message's item in a format is made once from the
//! frozen message (and made the same again after its caches are released), and an item does
//! not depend on its neighbours. A [`Joined`] belongs to one log object and its read-only
//! copies (the same messages at the same positions) and is used only at its generation and
//! for its format (the slot its items are kept under); a writable copy (a fork, which may
//! rewrite) starts without one.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use super::log::PyMessageLog;
use super::render::{push_item, Joiner};
use super::window::log_window;
use crate::meta::Role;

/// The request JSON a log last wrote of one of its windows.
pub struct Joined {
    generation: u64,
    /// The slot the format keeps its items under: which format the bytes are in.
    format: String,
    /// The window's log positions, `[start, end)` runs in request order.
    ranges: Vec<(usize, usize)>,
    /// The JSON array (`[`, the items, `]`).
    bytes: Py<PyBytes>,
    /// Each position's item in `bytes`, in request order: `[start, end)`, empty for a
    /// message that has none.
    spans: Vec<(usize, usize)>,
}

impl Joined {
    /// Where position `p` is among the spans and how many positions from it on are too, in
    /// one run: `(index, len)`; else how many positions from `p` on are not.
    fn run(&self, p: usize) -> Result<(usize, usize), usize> {
        let mut index = 0;
        let mut next = usize::MAX;
        for &(a, b) in &self.ranges {
            if (a..b).contains(&p) {
                return Ok((index + p - a, b - p));
            }
            if a > p {
                next = next.min(a);
            }
            index += b - a;
        }
        Err(next - p)
    }
}

/// `cut_log`'s window of `log` as the request's JSON array in the format whose items are
/// kept under `attr` (the rest of the arguments as for `join_renderings`), and whether it
/// is over the budget. The messages the log's last written window holds too are copied from
/// it; the others are rendered (see the module docs).
///
/// With `split_system` (Anthropic's request, whose leading system messages go to `system`),
/// the window's leading system messages are left out of the array and returned apart, for
/// the caller to write; items are numbered from the first message of the array's window
/// (as `to_anthropic_json` numbers them). `(bytes, over_budget, system messages)`.
#[pyfunction]
#[pyo3(signature = (log, rule, value, pin_task, start_with_user, attr, render, fast=None, kept_attr=None, encode=None, fast_json=None, split_system=false))]
#[allow(clippy::too_many_arguments)] // cut_log's and join_renderings' arguments
pub fn cut_log_json<'py>(
    py: Python<'py>,
    log: &Bound<'py, PyMessageLog>,
    rule: &str,
    #[pyo3(from_py_with = super::args::value)] value: u64,
    pin_task: bool,
    start_with_user: bool,
    attr: &Bound<'py, PyString>,
    render: &Bound<'py, PyAny>,
    fast: Option<&Bound<'py, PyAny>>,
    kept_attr: Option<&Bound<'py, PyString>>,
    encode: Option<&Bound<'py, PyAny>>,
    fast_json: Option<&Bound<'py, PyAny>>,
    split_system: bool,
) -> PyResult<(Bound<'py, PyBytes>, bool, Bound<'py, PyList>)> {
    let owner = log.get();
    let (log, window) = log_window(py, owner, rule, value, pin_task, start_with_user)?;
    let mut ranges = window.slices();
    let system = PyList::empty(py);
    if split_system {
        // The window's leading system messages, across ranges (as `to_anthropic_json`
        // counts them in the window's list).
        'ranges: for range in &mut ranges {
            while range.0 < range.1 {
                match log.get(range.0) {
                    Some(entry) if entry.meta.role == Role::System => {
                        system.append(entry.payload.bind(py))?;
                        range.0 += 1;
                    }
                    _ => break 'ranges,
                }
            }
        }
        ranges.retain(|&(a, b)| a < b);
    }
    let base = system.len();
    let format = attr.to_str()?;
    let last = owner
        .joined(py)
        .filter(|j| j.generation == log.generation() && j.format == format);
    let last = last.as_deref();
    let joiner = Joiner::new(py, attr, render, fast, kept_attr, encode, fast_json)?;
    let n: usize = ranges.iter().map(|&(a, b)| b - a).sum();
    let room = last.map_or(64 * n, |j| j.bytes.bind(py).as_bytes().len() + 64 * 16);
    let mut out = Vec::with_capacity(room + 2);
    out.push(b'[');
    let mut spans = Vec::with_capacity(n);
    for &(a, b) in &ranges {
        let mut p = a;
        while p < b {
            let run = last.map_or(Err(usize::MAX), |j| j.run(p));
            if let (Some(j), Ok((index, len))) = (last, run) {
                let len = len.min(b - p);
                let bytes = j.bytes.bind(py).as_bytes();
                copy_run(&mut out, &mut spans, bytes, &j.spans[index..index + len]);
                p += len;
            } else {
                let len = run.err().unwrap_or(1).min(b - p);
                for message in log.payloads(p, p + len) {
                    let item = joiner.item(message.bind(py), base + spans.len())?;
                    spans.push(push_item(&mut out, item.as_bytes()));
                }
                p += len;
            }
        }
    }
    out.push(b']');
    let bytes = PyBytes::new(py, &out);
    let written = Joined {
        generation: log.generation(),
        format: format.to_owned(),
        ranges,
        bytes: bytes.clone().unbind(),
        spans,
    };
    owner.set_joined(py, Arc::new(written));
    Ok((bytes, window.over_budget, system))
}

/// Appends the items at `run` (consecutive spans of `bytes`, the last request written) to
/// the array being written in `out`, in one copy: between its first and its last non-empty
/// item, `bytes` holds them joined by commas, as this array wants them.
fn copy_run(
    out: &mut Vec<u8>,
    spans: &mut Vec<(usize, usize)>,
    bytes: &[u8],
    run: &[(usize, usize)],
) {
    let filled = |&&(a, b): &&(usize, usize)| a < b;
    let (Some(first), Some(last)) = (run.iter().find(filled), run.iter().rev().find(filled)) else {
        spans.extend(run.iter().map(|_| (out.len(), out.len())));
        return;
    };
    if out.len() > 1 {
        out.push(b',');
    }
    let (from, base) = (first.0, out.len());
    out.extend_from_slice(&bytes[from..last.1]);
    spans.extend(run.iter().map(|&(a, b)| {
        if a < b {
            (a - from + base, b - from + base)
        } else {
            (base, base)
        }
    }));
}
