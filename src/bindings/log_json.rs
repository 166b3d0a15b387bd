//! `LogJson`: a cut strategy's window of a `MessageLog` as the provider request's JSON,
//! written from the one the log wrote last.
//!
//! A server writes a request every turn, and a turn's window is mostly the last one's: the
//! pinned head, the messages still in reach, a few new ones. The log keeps the JSON it wrote
//! last ([`Joined`]: the bytes, where each message's item lies in them, and the log positions
//! they are of); the next window copies each run of positions the two share from it, one
//! copy a run, and renders only the rest (its new messages) as `join_renderings` does. No
//! message object is read for a copied run: reading a window's messages and their kept
//! bytes is what a turn costs when a session is out of the CPU's caches, as it is in a
//! server holding many sessions. The request is planned first (which bytes go where) and
//! written once, into the `bytes` object returned: one copy of each byte, one allocation
//! (`bytes_of`, this module's only `unsafe` code).
//!
//! Invariants: the bytes are exactly `join_renderings`' of the same window (wrapped in the
//! Anthropic body when asked), because within one generation a log position holds one
//! message for good (appends never bump the generation, every other write does), a
//! message's item in a format is made once from the frozen message (and made the same again
//! after its caches are released), and an item does not depend on its neighbours. A
//! [`Joined`] belongs to one log object and its read-only copies (the same messages at the
//! same positions) and is used only at its generation and for its format (the slot its
//! items are kept under); a writable copy (a fork, which may rewrite) starts without one.

use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyList, PyString};

use super::log::PyMessageLog;
use super::render::Joiner;
use super::window::log_window;
use crate::meta::Role;

/// The request JSON a log last wrote of one of its windows.
pub struct Joined {
    generation: u64,
    /// The slot the format keeps its items under: which format the bytes are in.
    format: String,
    /// The window's log positions, `[start, end)` runs in request order.
    ranges: Vec<(usize, usize)>,
    /// The request: the JSON array (`[`, the items, `]`), or the Anthropic body around it.
    bytes: Py<PyBytes>,
    /// Each position's item in `bytes`, in request order: `[start, end)`, empty for a
    /// message that has none.
    spans: Vec<(usize, usize)>,
    /// For an Anthropic body: the leading system messages its `system` was written from,
    /// and where the array starts (`bytes[..open]` is `{"system":…,"messages":`).
    system: Option<(Vec<Py<PyAny>>, usize)>,
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

    /// The start of its body (up to the array) if it was written for the same `system`
    /// messages (by identity), to be copied as it is.
    fn same_head(&self, system: &[Bound<'_, PyAny>]) -> Option<usize> {
        let (kept, open) = self.system.as_ref()?;
        let same = kept.len() == system.len()
            && kept
                .iter()
                .zip(system)
                .all(|(k, s)| k.as_ptr() == s.as_ptr());
        same.then_some(*open)
    }
}

/// A format's [`cut_log_json`], everything but the log and the cut rule given once (when the
/// format's module is imported): what a cut strategy's `apply_json` calls every turn of a
/// server, one call of two arguments (two Python frames and twelve arguments a call were a
/// third of an idle `apply_json`). `attr` is the slot of the format's kept JSON, `render`,
/// `fast`, `kept_attr`, `encode` and `fast_json` as for `join_renderings`, and `system` the
/// Anthropic body's (see [`cut_log_json`]).
#[pyclass(frozen, name = "LogJson", module = "ctxtrim._core")]
pub struct PyLogJson {
    attr: Py<PyString>,
    render: Py<PyAny>,
    fast: Option<Py<PyAny>>,
    kept_attr: Option<Py<PyString>>,
    encode: Option<Py<PyAny>>,
    fast_json: Option<Py<PyAny>>,
    system: Option<Py<PyAny>>,
}

#[pymethods]
impl PyLogJson {
    #[new]
    #[pyo3(signature = (attr, render, fast=None, kept_attr=None, encode=None, fast_json=None, system=None))]
    fn new(
        attr: Py<PyString>,
        render: Py<PyAny>,
        fast: Option<Py<PyAny>>,
        kept_attr: Option<Py<PyString>>,
        encode: Option<Py<PyAny>>,
        fast_json: Option<Py<PyAny>>,
        system: Option<Py<PyAny>>,
    ) -> Self {
        Self {
            attr,
            render,
            fast,
            kept_attr,
            encode,
            fast_json,
            system,
        }
    }

    /// The request of the window the cut rule `cut` (`(rule, value, pin_task,
    /// start_with_user)`, as a cut strategy's `_cut_rule()` gives it) keeps of `log`.
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        log: &Bound<'py, PyMessageLog>,
        cut: (PyBackedStr, Bound<'py, PyAny>, bool, bool),
    ) -> PyResult<Bound<'py, PyBytes>> {
        let (rule, value, pin_task, start_with_user) = cut;
        let value = super::args::value(&value)?;
        cut_log_json(py, log, (&rule, value, pin_task, start_with_user), self)
    }
}

/// `cut_log`'s window of `log` as the request's JSON array in the format whose items are
/// kept under `writer.attr`. The messages the log's last written window holds too are copied
/// from it; the others are rendered (see the module docs).
///
/// With `writer.system` (Anthropic's request, whose leading system messages go to its `system`
/// field), the request is the body `{"system":…,"messages":[…]}` (or `{"messages":[…]}`):
/// the window's leading system messages are left out of the array and written by
/// `system(messages) -> bytes` after the array's items (as `to_anthropic_json` does, so a
/// bad message of each raises the same error), or copied from the last request when it had
/// the same ones; items are numbered from the array's first message.
fn cut_log_json<'py>(
    py: Python<'py>,
    log: &Bound<'py, PyMessageLog>,
    (rule, value, pin_task, start_with_user): (&str, u64, bool, bool),
    writer: &PyLogJson,
) -> PyResult<Bound<'py, PyBytes>> {
    let (attr, render) = (writer.attr.bind(py), writer.render.bind(py));
    let kept_attr = writer.kept_attr.as_ref().map(|a| a.bind(py));
    let fast = writer.fast.as_ref().map(|o| o.bind(py));
    let encode = writer.encode.as_ref().map(|o| o.bind(py));
    let fast_json = writer.fast_json.as_ref().map(|o| o.bind(py));
    let system = writer.system.as_ref().map(|o| o.bind(py));
    let owner = log.get();
    let (log, window) = log_window(py, owner, rule, value, pin_task, start_with_user)?;
    let mut ranges = window.slices();
    let mut leading = Vec::new();
    if system.is_some() {
        // The window's leading system messages, across ranges (as `to_anthropic_json`
        // counts them in the window's list).
        'ranges: for range in &mut ranges {
            while range.0 < range.1 {
                match log.get(range.0) {
                    Some(entry) if entry.meta.role == Role::System => {
                        leading.push(entry.payload.bind(py).clone());
                        range.0 += 1;
                    }
                    _ => break 'ranges,
                }
            }
        }
        ranges.retain(|&(a, b)| a < b);
    }
    let format = attr.to_str()?;
    let last = owner
        .joined(py)
        .filter(|j| j.generation == log.generation() && j.format == format);
    let last = last.as_deref();
    let joiner = Joiner::new(py, attr, render, fast, kept_attr, encode, fast_json)?;
    let mut array = Plan::new(ranges.iter().map(|&(a, b)| b - a).sum());
    array.lit(b"[");
    for &(a, b) in &ranges {
        let mut p = a;
        while p < b {
            let run = last.map_or(Err(usize::MAX), |j| j.run(p));
            if let (Some(j), Ok((index, len))) = (last, run) {
                let len = len.min(b - p);
                array.copy_run(&j.spans[index..index + len]);
                p += len;
            } else {
                let len = run.err().unwrap_or(1).min(b - p);
                for message in log.payloads(p, p + len) {
                    let item = joiner.item(message.bind(py), leading.len() + array.items())?;
                    array.item(item);
                }
                p += len;
            }
        }
    }
    array.lit(b"]");
    if system.is_some() {
        array.lit(b"}"); // the body's end
    }
    // The body's start, up to the array: copied when the last request had the same system
    // messages, else written (after the items, as `to_anthropic_json` renders them).
    let mut head = Plan::new(0);
    let kept_head = last.and_then(|j| j.same_head(&leading));
    match (system, kept_head) {
        (None, _) => {}
        (Some(_), Some(open)) => head.last(0, open),
        (Some(_), None) if leading.is_empty() => head.lit(b"{\"messages\":"),
        (Some(write), None) => {
            let field = write.call1((PyList::new(py, &leading)?,))?;
            head.lit(b"{\"system\":");
            head.bytes(field.cast_into::<PyBytes>()?);
            head.lit(b",\"messages\":");
        }
    }
    let open = head.len;
    let last_bytes = last.map_or(&[][..], |j| j.bytes.bind(py).as_bytes());
    let pieces = head.pieces.iter().chain(&array.pieces);
    let bytes = bytes_of(
        py,
        open + array.len,
        pieces.map(|piece| match piece {
            Piece::Last(a, b) => &last_bytes[*a..*b],
            Piece::Bytes(bytes) => bytes.as_bytes(),
            Piece::Lit(bytes) => bytes,
        }),
    )?;
    let spans = array.spans.iter().map(|&(a, b)| (a + open, b + open));
    let written = Joined {
        generation: log.generation(),
        format: format.to_owned(),
        ranges,
        bytes: bytes.clone().unbind(),
        spans: spans.collect(),
        system: system.map(|_| (leading.into_iter().map(Bound::unbind).collect(), open)),
    };
    owner.set_joined(py, Arc::new(written));
    Ok(bytes)
}

/// One piece of a request being planned.
enum Piece<'py> {
    /// `[start, end)` of the last request's bytes.
    Last(usize, usize),
    /// A new item, or a field written for this request.
    Bytes(Bound<'py, PyBytes>),
    Lit(&'static [u8]),
}

/// A part of a request planned before it is written: its pieces, its length, and (for the
/// array, with the body's closing `}` after it when there is a body) where each of its
/// positions' items lies, counted from the array's `[`.
struct Plan<'py> {
    pieces: Vec<Piece<'py>>,
    len: usize,
    spans: Vec<(usize, usize)>,
}

impl<'py> Plan<'py> {
    /// An empty part (the body's start, or the array), with room for `n` positions.
    fn new(n: usize) -> Self {
        Self {
            pieces: Vec::with_capacity(n / 4 + 4),
            len: 0,
            spans: Vec::with_capacity(n),
        }
    }

    fn lit(&mut self, bytes: &'static [u8]) {
        self.len += bytes.len();
        self.pieces.push(Piece::Lit(bytes));
    }

    /// `[start, end)` of the last request's bytes.
    fn last(&mut self, start: usize, end: usize) {
        self.len += end - start;
        self.pieces.push(Piece::Last(start, end));
    }

    fn bytes(&mut self, bytes: Bound<'py, PyBytes>) {
        self.len += bytes.as_bytes().len();
        self.pieces.push(Piece::Bytes(bytes));
    }

    /// How many positions the array has so far.
    fn items(&self) -> usize {
        self.spans.len()
    }

    /// Before an item of the array (opened by `[`): the comma after the one before it.
    fn separate(&mut self) {
        if self.len > 1 {
            self.lit(b",");
        }
    }

    /// A position's item: an empty one adds nothing to the array.
    fn item(&mut self, bytes: Bound<'py, PyBytes>) {
        let n = bytes.as_bytes().len();
        if n == 0 {
            self.spans.push((self.len, self.len));
            return;
        }
        self.separate();
        self.spans.push((self.len, self.len + n));
        self.bytes(bytes);
    }

    /// The items at `run` (consecutive spans of the last request): between its first and
    /// its last non-empty item, the last request holds them joined by commas, as this array
    /// wants them, so they are one copy.
    fn copy_run(&mut self, run: &[(usize, usize)]) {
        let filled = |&&(a, b): &&(usize, usize)| a < b;
        let (Some(first), Some(last)) = (run.iter().find(filled), run.iter().rev().find(filled))
        else {
            let at = self.len;
            self.spans.extend(run.iter().map(|_| (at, at)));
            return;
        };
        self.separate();
        let (from, base) = (first.0, self.len);
        self.spans.extend(run.iter().map(|&(a, b)| {
            if a < b {
                (a - from + base, b - from + base)
            } else {
                (base, base)
            }
        }));
        self.last(from, last.1);
    }
}

/// A new `bytes` object of the `len` bytes of `parts`, written once: `PyBytes::new_with`
/// zeroes the object before it is written, a second pass over a request's ~30 KB that a
/// server holding many sessions pays from memory (3 µs a turn, measured in one).
#[allow(unsafe_code)]
fn bytes_of<'py, 'a>(
    py: Python<'py>,
    len: usize,
    parts: impl Iterator<Item = &'a [u8]>,
) -> PyResult<Bound<'py, PyBytes>> {
    let size = ffi::Py_ssize_t::try_from(len)?;
    // SAFETY: a new bytes object of `size` bytes (or the error) that nothing else sees yet;
    // each part is copied within its `len` bytes (checked), and all of them are written
    // before it is returned (checked: a shortfall panics, with the object dropped unseen).
    unsafe {
        let ptr = ffi::PyBytes_FromStringAndSize(std::ptr::null(), size);
        let bytes = Bound::from_owned_ptr_or_err(py, ptr)?.cast_into_unchecked::<PyBytes>();
        let out = ffi::PyBytes_AsString(ptr).cast::<u8>();
        let mut at = 0;
        for part in parts {
            assert!(
                part.len() <= len - at,
                "a request's parts overflow its length"
            );
            std::ptr::copy_nonoverlapping(part.as_ptr(), out.add(at), part.len());
            at += part.len();
        }
        assert_eq!(at, len, "a request's parts fill its length");
        Ok(bytes)
    }
}
