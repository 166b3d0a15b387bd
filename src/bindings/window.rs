//! `cut_window`, `cut_list` and `cut_log`: one call into the core decides a cut strategy's
//! window, on a list or a log; `Tail`, what a strategy keeps of the list it was last called on (the core's
//! [`Tail`](crate::tail::Tail), keyed by the message objects).

use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PySequence};

use super::facts::{FactsReader, Held};
use super::log::{Log, PyMessageLog};
use super::tokens::encoding_of;
use crate::tail::{decide_from_end, Tail, FIRST_REGION};
use crate::tokens::Encoding;
use crate::window::{decide, keep_all, Options, Rule, Window};

/// `(ranges, unchanged, over_budget)`: the `[start, end)` ranges a cut strategy keeps.
type WindowRow = (Vec<(usize, usize)>, bool, bool);

fn rule_of(rule: &str, value: u64) -> PyResult<Rule> {
    let count = || usize::try_from(value).unwrap_or(usize::MAX);
    Ok(match rule {
        "budget" => Rule::Budget(value),
        "turns" => Rule::LastTurns(count()),
        "rounds" => Rule::LastRounds(count()),
        "messages" => Rule::LastMessages(count()),
        _ => return Err(PyValueError::new_err(format!("unknown cut rule {rule:?}"))),
    })
}

/// The window a cut rule keeps of `source` (a list of messages, any sequence, or a
/// `MessageLog`): `rule` is `"budget"`, `"turns"`, `"rounds"` or `"messages"` with `value`
/// its budget or count.
///
/// On a list only the head and the end are read, as far back as the decision needs, and each
/// message's facts come from its cache (read once per message object, ever); `counter` (an
/// exact `TokenCounter`) is asked once per message. A log brings its own counts.
///
/// With `convert`, `source` is a framework's list (any sequence) and message `i` is
/// `convert(source[i], i)`, called only for the items the decision reads (the drop-ins pass
/// their skeleton cache): the same reader as for a list of messages, over another kind of
/// item.
///
/// With `tail` (the caller's own `Tail`, kept across calls on the same list), a list is
/// checked against what the last call read, by identity of its items, and only the items
/// appended since are read.
#[pyfunction]
#[pyo3(signature = (source, rule, value, *, pin_task = true, start_with_user = true, counter = None, encoding = None, convert = None, tail = None))]
#[allow(clippy::too_many_arguments)]
pub fn cut_window(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    rule: &str,
    #[pyo3(from_py_with = super::args::value)] value: u64,
    pin_task: bool,
    start_with_user: bool,
    counter: Option<&Bound<'_, PyAny>>,
    encoding: Option<&str>,
    convert: Option<&Bound<'_, PyAny>>,
    tail: Option<&Bound<'_, PyTail>>,
) -> PyResult<WindowRow> {
    let rule = rule_of(rule, value)?;
    let options = Options {
        pin_task,
        start_with_user,
    };
    let encoding = encoding.map_or(Ok(Encoding::Cl100k), encoding_of)?;
    let tail = tail.map(Bound::get);
    let window = if let Ok(log) = source.cast::<PyMessageLog>() {
        let log = log.get().indexed_clone(py);
        decide(&log, rule, options).unwrap_or_else(|_| keep_all(log.len()))
    } else if let Some(convert) = convert {
        let seq = source.cast::<PySequence>()?;
        let reader = FactsReader::new(py)?;
        let fetch = |i: usize| {
            let item = seq.get_item(i)?;
            let message = convert.call1((&item, i))?;
            let path = || format!("convert(source[{i}])");
            reader.fetch_for(item, &message, encoding, counter, path)
        };
        match source.cast::<PyList>() {
            Ok(list) => list_window(list, rule, options, counter, encoding, tail, fetch)?,
            Err(_) => decide_from_end(seq.len()?, rule, options, FIRST_REGION, fetch)?,
        }
    } else {
        let list = match source.cast::<PyList>() {
            Ok(list) => list.clone(),
            Err(_) => source.cast::<PySequence>()?.to_list()?,
        };
        messages_window(&list, rule, options, counter, encoding, tail)?
    };
    Ok((window.ranges, window.unchanged, window.over_budget))
}

/// The window `rule` keeps of a list of messages (see [`list_window`]).
fn messages_window(
    list: &Bound<'_, PyList>,
    rule: Rule,
    options: Options,
    counter: Option<&Bound<'_, PyAny>>,
    encoding: Encoding,
    tail: Option<&PyTail>,
) -> PyResult<Window> {
    let reader = FactsReader::new(list.py())?;
    let fetch = |i: usize| {
        let message = list.get_item(i)?;
        let path = || format!("messages[{i}]");
        reader.fetch_for(message.clone(), &message, encoding, counter, path)
    };
    list_window(list, rule, options, counter, encoding, tail, fetch)
}

/// The window `rule` keeps of a list whose item `i` `fetch(i)` reads, read from its ends
/// only; with `tail` (the caller's own, kept across calls), only what changed since its
/// last call is read: the items it holds are checked by identity.
fn list_window(
    list: &Bound<'_, PyList>,
    rule: Rule,
    options: Options,
    counter: Option<&Bound<'_, PyAny>>,
    encoding: Encoding,
    tail: Option<&PyTail>,
    fetch: impl FnMut(usize) -> PyResult<Held>,
) -> PyResult<Window> {
    // `try_lock`: a call already holding it (another thread, or a counter calling the
    // strategy back) goes without the kept tail rather than waiting for it.
    let Some(mut state) = tail.and_then(|t| t.state.try_lock()) else {
        return decide_from_end(list.len(), rule, options, FIRST_REGION, fetch);
    };
    state.price_with(counter, encoding);
    let same = |i: usize, held: &Held| list.get_item(i).is_ok_and(|item| item.is(&held.key));
    state
        .tail
        .decide(list.len(), rule, options, FIRST_REGION, same, fetch)
}

/// What a cut strategy keeps of the list it was last called on: the core's [`Tail`], keyed by
/// the message objects (held, so no address is reused while it is a key).
#[pyclass(frozen, name = "Tail", module = "ctxtrim._core")]
#[derive(Default)]
pub struct PyTail {
    state: Mutex<TailState>,
}

#[derive(Default)]
struct TailState {
    tail: Tail<Held>,
    /// How the kept tokens were priced: the counter (held) or the encoding.
    counter: Option<Py<PyAny>>,
    encoding: Option<Encoding>,
}

impl TailState {
    /// Forgets the tail unless its tokens were priced by `counter` (or `encoding`).
    fn price_with(&mut self, counter: Option<&Bound<'_, PyAny>>, encoding: Encoding) {
        let same = match (&self.counter, counter) {
            (Some(kept), Some(c)) => kept.is(c),
            (None, None) => self.encoding == Some(encoding),
            _ => false,
        };
        if !same {
            self.tail.clear();
            self.counter = counter.map(|c| c.clone().unbind());
            self.encoding = Some(encoding);
        }
    }
}

#[pymethods]
impl PyTail {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Number of messages kept.
    fn __len__(&self) -> usize {
        self.state.lock().tail.kept()
    }
}

/// What a cut strategy called on a list returns: the window `rule` (as in [`cut_window`])
/// keeps of `messages`, as a new list, or `messages` itself when it keeps everything.
///
/// The one call a strategy on a `MessageLog` (or a `MemoryContextStore`'s) makes: the log's
/// queued appends indexed and an O(1) clone of it taken under its lock, the window decided on
/// the clone with the cached counts, and the kept messages read as the clone holds them
/// (slices of the log's mirror, `PyMessageLog::read_ranges`), so the result is the window
/// of the log as it was at the call whatever is written to it meanwhile (what a snapshot
/// gives, without one). The caches kept on the messages the window left behind are
/// released (`PyMessageLog::release`). `(kept, over_budget)`.
#[pyfunction]
pub fn cut_log<'py>(
    py: Python<'py>,
    log: &Bound<'py, PyMessageLog>,
    rule: &str,
    #[pyo3(from_py_with = super::args::value)] value: u64,
    pin_task: bool,
    start_with_user: bool,
) -> PyResult<(Bound<'py, PyList>, bool)> {
    let owner = log.get();
    let (log, window) = log_window(py, owner, rule, value, pin_task, start_with_user)?;
    Ok((
        owner.read_ranges(py, &log, &window.slices())?,
        window.over_budget,
    ))
}

/// The window a cut rule keeps of `owner` now, decided on an O(1) clone of it with its
/// queued appends indexed (returned with it: the window's positions are the clone's); the
/// caches of the messages it left behind released. `cut_log`'s decision, shared with
/// `cut_log_json`.
pub(super) fn log_window(
    py: Python<'_>,
    owner: &PyMessageLog,
    rule: &str,
    value: u64,
    pin_task: bool,
    start_with_user: bool,
) -> PyResult<(Log, Window)> {
    let rule = rule_of(rule, value)?;
    let options = Options {
        pin_task,
        start_with_user,
    };
    let log = owner.indexed_clone(py);
    let window = decide(&log, rule, options).unwrap_or_else(|_| keep_all(log.len()));
    if let Some((&(start, _), head)) = window.ranges.split_last() {
        owner.release(py, &log, head, start);
    }
    Ok((log, window))
}

/// The one call a strategy on a plain list makes (`FitContextWindow(8000)(history)`): the
/// decision and the slicing happen here, with no ranges handed back to Python in between.
/// `tail` is the strategy's own: only what changed since its last call is read.
#[pyfunction]
#[pyo3(signature = (messages, rule, value, pin_task = true, start_with_user = true, counter = None, tail = None))]
#[allow(clippy::too_many_arguments)]
pub fn cut_list<'py>(
    messages: &Bound<'py, PyList>,
    rule: &str,
    #[pyo3(from_py_with = super::args::value)] value: u64,
    pin_task: bool,
    start_with_user: bool,
    counter: Option<&Bound<'py, PyAny>>,
    tail: Option<&Bound<'py, PyTail>>,
) -> PyResult<Bound<'py, PyList>> {
    let options = Options {
        pin_task,
        start_with_user,
    };
    let window = messages_window(
        messages,
        rule_of(rule, value)?,
        options,
        counter,
        Encoding::Cl100k,
        tail.map(Bound::get),
    )?;
    if window.unchanged {
        return Ok(messages.clone());
    }
    let ranges = window.slices();
    // A counter's Python code may have shortened the list meanwhile: slices clamp.
    let mut parts = ranges.iter().map(|&(a, b)| messages.get_slice(a, b));
    let kept = parts.next().unwrap_or_else(|| PyList::empty(messages.py()));
    for part in parts {
        let end = kept.len();
        kept.set_slice(end, end, &part)?;
    }
    Ok(kept)
}
