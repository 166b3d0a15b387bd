//! `MessageLog`: the Python class over the core's persistent `MessageLog`.
//!
//! Appends are the hot path of an agent server, so `append` does only what must happen at
//! once: check that the object is a `ctxtrim.Message` (messages validate themselves at
//! construction) and queue it in the core's `IndexQueue`. The next call that needs the index
//! (`flush`) has the queue pushed into the log in one batch, converting each message into its
//! facts (read once per message object, from its cache): the bindings only convert.
//!
//! `to_list`/`tail`/`[i]` do not need the index. A log of `MIRROR_FROM` messages or more
//! reads a Python list that mirrors its newer part (append-only while installed, replaced —
//! never mutated — by rewrites), so a read is one list-slice copy; a shorter log builds each read's
//! list from its entries and its queue, and keeps no second list of its messages. The mirror lags behind: appends only queue, and a read first appends
//! the messages the mirror lacks (each message once, as before, but off the append path).
//! Snapshots and forks share their parent's mirror up to their length; a fork's first own
//! write copies only the part of it that reads reach (a window), so it is O(window), not O(n).
//!
//! Locking: one `parking_lot` mutex per log, taken with `lock_py_attached` (a thread that
//! must wait for it detaches first, so a GIL holder never blocks on a lock whose owner
//! needs the GIL). Under the lock run only O(1)/O(log n) core steps, the batch indexing of
//! queued messages (plain attribute reads), and list appends; O(n) rewrites run on a clone
//! with the lock released and the GIL detached, then install under the lock.

use std::sync::Arc;

use parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
use pyo3::exceptions::{PyIndexError, PyOverflowError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyInt, PyList};

use super::args;
use super::convert::{check_message, indexed_meta, messages_of};
use super::errors::{log_error, turn_error};
use super::facts::facts_of;
use super::log_json::Joined;
use super::slots::release_caches;
use super::tokens::encoding_of;
use crate::cuts::MAX_MESSAGES;
use crate::log::{Item, LogError, MessageLog};
use crate::queue::IndexQueue;
use crate::tokens::Encoding;
use crate::turn::TurnId;

/// The log of Python message objects. The core holds each as a shared [`Item`] (the object
/// and its facts in one `Arc`), so sharing entries between forks, snapshots and sessions,
/// and rebuilding them, never needs the interpreter.
pub type Log = MessageLog<Py<PyAny>>;

/// A shared message.
type Shared = Arc<Item<Py<PyAny>>>;

/// A message as the core log holds it: the item shared by every log holding the message
/// (kept with its facts), and its tokens (`tokens` if given, else the estimate under
/// `encoding`).
fn entry(
    py: Python<'_>,
    message: Py<PyAny>,
    tokens: Option<u32>,
    encoding: Encoding,
) -> (Shared, u32) {
    let bound = message.bind(py);
    let read = || -> PyResult<(Shared, u32)> {
        let facts = facts_of(bound, || "message".to_owned())?;
        let count = match tokens {
            Some(t) => t,
            None => facts.get().tokens(bound, encoding, None)?,
        };
        Ok((facts.get().shared_item(bound), count))
    };
    read().unwrap_or_else(|_| {
        // Not readable (checked at append, so not expected): indexed as the fallback facts.
        let meta = indexed_meta(bound, tokens, encoding);
        let count = meta.tokens;
        (Item::new(message.clone_ref(py), meta), count)
    })
}

/// Logs this long or longer are read through a mirror; shorter ones build each read's list
/// from their entries. Below one column chunk the entries are one contiguous slice and a
/// read costs little more than a list slice (a 50-message `to_list` 154 ns against 67 ns,
/// `tail(20)` 107 ns against 85 ns), while the mirror would add 8 bytes per entry plus a
/// list to every short session; a longer log's reads grow with it (10,000 messages: 41 µs
/// against 11 µs), and there the mirror pays.
const MIRROR_FROM: usize = crate::column::CHUNK;

/// The Python list that mirrors a stretch of the messages ending at the newest, for cheap
/// reads. It starts at `offset`, not at 0: a fork or a long log read for the first time
/// copies only what reads reach (a window), never the whole history, so the first trim of a
/// fork of 100k messages costs what a window costs. A read from before `offset` that is
/// longer than the mirror (all the messages, say) rebuilds it from there, at the cost of the
/// read itself; a shorter one (a window's pinned head) reads the entries instead.
enum Mirror {
    /// Not built yet (or dropped by a rewrite): the next read builds it from the log.
    None,
    /// Ours: its items are our messages `[offset, offset + len(list))`. Appends do not touch
    /// it (they only queue); the next read appends what it lacks, so each message is
    /// appended to it once.
    Own { list: Py<PyList>, offset: usize },
    /// Another log's mirror whose first `n - offset` items are our messages `[offset, n)` (a
    /// snapshot or fork before its first own write). Valid forever: a mirror is only ever
    /// appended to.
    Shared {
        list: Py<PyList>,
        offset: usize,
        n: usize,
    },
}

/// How far before the first message a read asks for a new mirror starts: a window's start
/// moves back a little when newer messages are short, and should still be in the mirror
/// (one that moves back further rebuilds it from there, at the cost of the read itself).
const MIRROR_SLACK: usize = 2 * MIRROR_FROM;

/// How far behind a window's newest start a message must be before its caches are
/// released: a window's start moves back a little when newer messages are short, and a
/// message it reaches again would be rendered again.
const RELEASE_SLACK: usize = 64;

struct State {
    log: Log,
    /// How texts are priced when messages are indexed.
    encoding: Encoding,
    /// Accepted but not yet indexed messages, with their exact token counts if given.
    queued: IndexQueue<(Py<PyAny>, Option<u32>)>,
    mirror: Mirror,
    /// `(generation, n)`: in that generation, the messages before `n` outside a window's
    /// pinned head have had their caches released (see `PyMessageLog::release`). Shared
    /// with our read-only copies (their messages are ours, at the same positions), so a
    /// snapshot taken and trimmed every turn releases only what is new; a fork gets its own.
    released: Arc<Mutex<(u64, usize)>>,
    /// The request JSON last written of a window of ours (`cut_log_json`), which the next
    /// one copies the messages they share from. Shared with our read-only copies, as
    /// `released` is (a persistent store hands out a snapshot of its log per load); a
    /// writable copy (a fork, which may rewrite) starts without.
    joined: Arc<Mutex<Option<Arc<Joined>>>>,
}

impl State {
    fn new(log: Log, mirror: Mirror, encoding: Encoding) -> Self {
        Self {
            released: Arc::new(Mutex::new((log.generation(), 0))),
            joined: Arc::new(Mutex::new(None)),
            log,
            encoding,
            queued: IndexQueue::new(),
            mirror,
        }
    }

    fn len(&self) -> usize {
        self.log.len() + self.queued.len()
    }

    /// Whether `more` messages fit (a log holds at most `MAX_MESSAGES`, counting the queue).
    fn room(&self, py: Python<'_>, more: usize) -> PyResult<()> {
        let len = self.len().saturating_add(more);
        if len > MAX_MESSAGES {
            return Err(log_error(py, LogError::Full { len }));
        }
        Ok(())
    }

    /// Index the queued messages (read their facts, push them into the core log).
    fn flush(&mut self, py: Python<'_>) {
        let encoding = self.encoding;
        self.queued.flush_into(&mut self.log, |(message, tokens)| {
            entry(py, message, tokens, encoding)
        });
    }

    /// Our messages `[start, end)` (clamped) as a new list, read from the entries.
    fn list<'py>(&self, py: Python<'py>, start: usize, end: usize) -> PyResult<Bound<'py, PyList>> {
        let end = end.min(self.len());
        let indexed = self.log.len();
        if end <= indexed {
            // One pass over the records (an exact-size iterator: no intermediate buffer).
            let payloads = self.log.payloads(start, end).map(|p| p.bind(py));
            return PyList::new(py, payloads);
        }
        let payloads: Vec<&Py<PyAny>> = self
            .payloads_from(start)
            .take(end.saturating_sub(start))
            .collect();
        PyList::new(py, payloads.into_iter().map(|p| p.bind(py)))
    }

    /// Our messages from index `from` on: indexed ones, then queued ones.
    fn payloads_from(&self, from: usize) -> impl Iterator<Item = &Py<PyAny>> {
        let indexed = self.log.payloads(from, self.log.len());
        let queued = self.queued.from_position(from, self.log.len());
        indexed.chain(queued.map(|(p, _)| p))
    }

    /// Our mirror, built, un-shared or caught up as needed, holding our messages from its
    /// offset (at most `from`) to the newest: `(list, offset)`.
    fn own_mirror(&mut self, py: Python<'_>, from: usize) -> PyResult<(Py<PyList>, usize)> {
        let len = self.len();
        let from = from.min(len);
        let (list, offset) = match std::mem::replace(&mut self.mirror, Mirror::None) {
            Mirror::Own { list, offset } if offset <= from => (list.into_bound(py), offset),
            Mirror::Shared { list, offset, n } if offset <= from => {
                // Only the part a read can reach is copied, not the parent's whole history.
                let start = from.min(n).saturating_sub(MIRROR_SLACK).max(offset);
                (list.bind(py).get_slice(start - offset, n - offset), start)
            }
            _ => {
                let start = from.saturating_sub(MIRROR_SLACK);
                let payloads = self.payloads_from(start).map(|p| p.bind(py));
                (PyList::new(py, payloads)?, start)
            }
        };
        for p in self.payloads_from(offset + list.len()) {
            list.append(p.bind(py))?;
        }
        let list = list.unbind();
        self.mirror = Mirror::Own {
            list: list.clone_ref(py),
            offset,
        };
        Ok((list, offset))
    }

    /// A list whose items from index 0 are our messages from `offset` (at most `from`) to
    /// the newest, at least: `(list, offset)`, for slicing.
    fn readable_mirror(&mut self, py: Python<'_>, from: usize) -> PyResult<(Py<PyList>, usize)> {
        let len = self.len();
        let from = from.min(len);
        match &self.mirror {
            Mirror::Own { list, offset }
                if *offset <= from && offset + list.bind(py).len() == len =>
            {
                Ok((list.clone_ref(py), *offset))
            }
            Mirror::Shared { list, offset, n } if *offset <= from && *n == len => {
                Ok((list.clone_ref(py), *offset))
            }
            _ => self.own_mirror(py, from),
        }
    }

    /// Where the mirror starts, if there is one.
    fn mirror_offset(&self) -> Option<usize> {
        match &self.mirror {
            Mirror::None => None,
            Mirror::Own { offset, .. } | Mirror::Shared { offset, .. } => Some(*offset),
        }
    }

    /// The mirror a snapshot or fork of the current (flushed) state may share.
    fn shareable_mirror(&self, py: Python<'_>) -> Mirror {
        let len = self.len();
        match &self.mirror {
            Mirror::Own { list, offset } if offset + list.bind(py).len() == len => Mirror::Shared {
                list: list.clone_ref(py),
                offset: *offset,
                n: len,
            },
            Mirror::Shared { list, offset, n } if *n == len => Mirror::Shared {
                list: list.clone_ref(py),
                offset: *offset,
                n: len,
            },
            _ => Mirror::None,
        }
    }
}

/// An append-only, copy-on-write log of messages with the facts trimming needs.
#[pyclass(frozen, name = "MessageLog", module = "ctxtrim._core")]
pub struct PyMessageLog {
    inner: Mutex<State>,
    read_only: bool,
}

impl PyMessageLog {
    fn new_from(state: State, read_only: bool) -> Self {
        Self {
            inner: Mutex::new(state),
            read_only,
        }
    }

    fn state(&self, py: Python<'_>) -> MutexGuard<'_, State> {
        self.inner.lock_py_attached(py)
    }

    /// The core log with every queued message indexed, under the lock.
    fn indexed(&self, py: Python<'_>) -> MappedMutexGuard<'_, Log> {
        let mut state = self.state(py);
        state.flush(py);
        MutexGuard::map(state, |s| &mut s.log)
    }

    /// An O(1) clone of the core log with every queued message indexed.
    pub fn indexed_clone(&self, py: Python<'_>) -> Log {
        self.indexed(py).clone()
    }

    /// The request JSON last written of a window of ours, if any (see `Joined`).
    pub fn joined(&self, py: Python<'_>) -> Option<Arc<Joined>> {
        let cell = Arc::clone(&self.state(py).joined);
        let joined = cell.lock().clone();
        joined
    }

    /// Keeps `joined` as the request JSON last written of a window of ours.
    pub fn set_joined(&self, py: Python<'_>, joined: Arc<Joined>) {
        let cell = Arc::clone(&self.state(py).joined);
        *cell.lock() = Some(joined);
    }

    /// Releases the caches (`ctxtrim.messages.RELEASABLE_SLOTS`: facts, renderings) of the
    /// messages of `log` (a clone of ours) that a window starting at `start` with the pinned
    /// `head` ranges left behind, `RELEASE_SLACK` messages back, and that no earlier call
    /// released: a server keeps each message's request JSON while windows can reach it, not
    /// for the session's life (the log keeps its own copy of the facts). O(messages left
    /// behind since the last call). A message a later window reaches again is read and
    /// rendered again; a rewrite (new generation) starts over.
    pub fn release(&self, py: Python<'_>, log: &Log, head: &[(usize, usize)], start: usize) {
        let upto = start.saturating_sub(RELEASE_SLACK);
        let released = Arc::clone(&self.state(py).released);
        let from = {
            let mut released = released.lock();
            let (generation, done) = *released;
            let from = if generation == log.generation() {
                done
            } else {
                0
            };
            if upto <= from {
                return;
            }
            *released = (log.generation(), upto);
            from
        };
        let mut at = from;
        for &(a, b) in head.iter().chain(std::iter::once(&(upto, upto))) {
            let end = a.min(upto);
            if at < end {
                for p in log.payloads(at, end) {
                    release_caches(p.bind(py));
                }
            }
            at = at.max(b);
        }
    }

    /// A read-only or writable O(1) copy of the current state, sharing the mirror (built
    /// once here if needed, so that repeated snapshots never rebuild one each).
    fn copy(&self, py: Python<'_>, read_only: bool) -> PyResult<Self> {
        let mut state = self.state(py);
        state.flush(py);
        let len = state.len();
        if len >= MIRROR_FROM {
            state.readable_mirror(py, len)?;
        }
        let mut copy = State::new(
            state.log.clone(),
            state.shareable_mirror(py),
            state.encoding,
        );
        // The messages are shared: what was released for them is released for the copy.
        copy.released = if read_only {
            Arc::clone(&state.released)
        } else {
            Arc::new(Mutex::new(*state.released.lock()))
        };
        if read_only {
            copy.joined = Arc::clone(&state.joined);
        }
        Ok(Self::new_from(copy, read_only))
    }

    /// `[start, end)` of the messages as a new list: one slice of the mirror.
    fn slice<'py>(
        &self,
        py: Python<'py>,
        start: usize,
        end: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        Ok(self
            .slice_of(py, None, start, end)?
            .unwrap_or_else(|| PyList::empty(py)))
    }

    /// The messages `[a, b)` of each of `ranges` of `log` (an indexed clone of ours; adjacent
    /// ranges joined, as `Window::slices` gives them) as one new list. The last range (a
    /// window's suffix) is a slice of the mirror while we are still at `log`'s generation
    /// (then our messages below `log.len()` are `log`'s, appends alone having come since),
    /// else read from `log`'s entries; the ranges before it (a window's pinned head, a
    /// few messages) are read from the entries, so that the mirror never has to reach back
    /// to them (a mirror from the first message would cost a fork's first read O(n)). A
    /// window read this way costs a list slice, not a pass over the entries.
    pub fn read_ranges<'py>(
        &self,
        py: Python<'py>,
        log: &Log,
        ranges: &[(usize, usize)],
    ) -> PyResult<Bound<'py, PyList>> {
        let entries = |ranges: &[(usize, usize)]| {
            let payloads = ranges.iter().flat_map(|&(a, b)| log.payloads(a, b));
            PyList::new(py, payloads.map(|p| p.bind(py)))
        };
        let Some((&(a, b), head)) = ranges.split_last() else {
            return Ok(PyList::empty(py));
        };
        let Some(kept) = self.slice_of(py, Some(log.generation()), a, Some(b))? else {
            return entries(ranges);
        };
        if !head.is_empty() {
            kept.set_slice(0, 0, entries(head)?.as_any())?;
        }
        Ok(kept)
    }

    /// [`Self::slice`], or None when `generation` is given and we are no longer at it.
    fn slice_of<'py>(
        &self,
        py: Python<'py>,
        generation: Option<u64>,
        start: usize,
        end: Option<usize>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let (list, offset, start, end) = {
            let mut state = self.state(py);
            if generation.is_some_and(|g| g != state.log.generation()) {
                return Ok(None);
            }
            let len = state.len();
            if len < MIRROR_FROM {
                return state.list(py, start, end.unwrap_or(len)).map(Some);
            }
            let end = end.unwrap_or(len).min(len);
            let start = start.min(end);
            if state
                .mirror_offset()
                .is_some_and(|o| start < o && end - start < len - o)
            {
                // Shorter than the mirror and before it (the pinned head of a window, say):
                // read from the entries rather than rebuild the mirror from there, which
                // would cost every snapshot taken per turn O(n).
                return state.list(py, start, end).map(Some);
            }
            let (list, offset) = state.readable_mirror(py, start)?;
            (list, offset, start, end)
        };
        // Sliced outside the lock: the list is only ever appended to, so its items up to
        // `end - offset` stay what they were when the lock was held; `offset <= start`.
        Ok(Some(list.bind(py).get_slice(start - offset, end - offset)))
    }

    /// Apply an O(n) rewrite (replace_prefix, remove_turn) without holding the lock or the
    /// GIL while it runs, then install it under the lock in O(messages appended since).
    ///
    /// The rewrite runs on a clone; messages appended meanwhile wait in the queue, and are
    /// replayed by the core if they were indexed meanwhile (`catch_up`); if another rewrite
    /// won, this one runs again on the new state (where a stale `replace_prefix` fails).
    ///
    /// `exact`: the rewrite covers the whole log as `f` saw it, so a message appended
    /// meanwhile (indexed or still queued) refuses it with [`LogError::StaleLength`] instead
    /// of being replayed after it.
    fn rewrite<T: Send>(
        &self,
        py: Python<'_>,
        exact: bool,
        f: impl Fn(&mut Log) -> Result<T, LogError> + Send + Sync,
    ) -> PyResult<T> {
        loop {
            let base = self.indexed(py).clone();
            let mut next = base.clone();
            let out = py.detach(|| f(&mut next)).map_err(|e| log_error(py, e))?;
            let mut state = self.state(py);
            if exact && state.log.generation() == base.generation() && state.len() != base.len() {
                let err = LogError::StaleLength {
                    generation: base.generation(),
                    expected: base.len(),
                    actual: state.len(),
                };
                drop(state);
                return Err(log_error(py, err));
            }
            if next.catch_up(&base, &state.log) {
                let old = std::mem::replace(&mut state.log, next);
                let old_mirror = std::mem::replace(&mut state.mirror, Mirror::None);
                drop(state);
                drop((old, old_mirror)); // attached: the references are released now
                return Ok(out);
            }
        }
    }

    /// Appends messages of which some carry a caller-given turn id: checked against the
    /// turn the log is at (an id may not go back; `InvalidTurnId` and nothing appended),
    /// then indexed at once.
    fn push_with_turns(
        &self,
        py: Python<'_>,
        items: Vec<(Py<PyAny>, Option<u32>)>,
    ) -> PyResult<()> {
        let mut state = self.state(py);
        state.flush(py);
        state.room(py, items.len())?;
        let mut shared = Vec::with_capacity(items.len());
        for (i, (message, tokens)) in items.iter().enumerate() {
            let message = message.bind(py);
            let facts = facts_of(message, || format!("messages[{i}]"))?;
            let count = match tokens {
                Some(t) => *t,
                None => indexed_meta(message, None, state.encoding).tokens,
            };
            shared.push((facts.get().shared_item(message), count));
        }
        state
            .log
            .check_turns(shared.iter().map(|(item, _)| &item.meta))
            .map_err(|e| log_error(py, e))?;
        state.log.extend_items(shared);
        Ok(())
    }

    fn writable(&self) -> PyResult<()> {
        if self.read_only {
            Err(PyTypeError::new_err("a snapshot is read-only"))
        } else {
            Ok(())
        }
    }
}

/// Resolve a Python-style index (negative counts from the end).
fn index(i: isize, len: usize) -> PyResult<usize> {
    let j = if i < 0 { len as isize + i } else { i };
    if j < 0 || j as usize >= len {
        Err(PyIndexError::new_err(format!(
            "message index {i} out of range for {len} messages"
        )))
    } else {
        Ok(j as usize)
    }
}

/// A message index past `isize` (either way): no log holds it, so the `IndexError` an
/// index past the end gets, not an `OverflowError`.
fn position(i: &Bound<'_, PyAny>) -> PyResult<isize> {
    match i.extract::<isize>() {
        Err(e) if e.is_instance_of::<PyOverflowError>(i.py()) => Err(PyIndexError::new_err(
            format!("message index {} out of range", args::shown(i)),
        )),
        other => other,
    }
}

/// A turn given as an int (the whole turn), `"u3"` / `"a3"`, or a `TurnId`.
fn turn_id(turn: &Bound<'_, PyAny>) -> PyResult<TurnId> {
    if turn.is_instance_of::<PyInt>() {
        return match turn.extract::<u32>() {
            Ok(n) => Ok(TurnId::user(n)),
            Err(_) => Err(args::out_of_range("turn", 0, u32::MAX, turn)),
        };
    }
    if let Ok(t) = turn.extract::<PyRef<'_, super::turn::PyTurnId>>() {
        return Ok(t.0);
    }
    let text: &str = turn.extract()?;
    text.parse::<TurnId>().map_err(turn_error)
}

#[pymethods]
impl PyMessageLog {
    #[new]
    #[pyo3(signature = (messages = None, *, tokens = None, encoding = "cl100k_base"))]
    fn py_new(
        py: Python<'_>,
        messages: Option<&Bound<'_, PyAny>>,
        tokens: Option<&Bound<'_, PyAny>>,
        encoding: &str,
    ) -> PyResult<Self> {
        let state = State::new(Log::new(), Mirror::None, encoding_of(encoding)?);
        let log = Self::new_from(state, false);
        if let Some(messages) = messages {
            log.extend(py, messages, tokens)?;
        }
        Ok(log)
    }

    /// Append one message; `tokens` overrides the estimate.
    ///
    /// Returns None, like `list.append`: an index would be a new Python int from the 257th
    /// message on, allocated and freed on every call, ~18 of the ~55 ns an append cost.
    #[pyo3(signature = (message, *, tokens = None))]
    fn append(
        &self,
        py: Python<'_>,
        message: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = args::tokens)] tokens: Option<u32>,
    ) -> PyResult<()> {
        self.writable()?;
        check_message(message, "message")?;
        if !message.getattr(intern!(py, "turn"))?.is_none() {
            return self.push_with_turns(py, vec![(message.clone().unbind(), tokens)]);
        }
        let mut state = self.state(py);
        state.room(py, 1)?;
        state.queued.push((message.clone().unbind(), tokens));
        Ok(())
    }

    /// Append several messages atomically: all are checked first, then all are added.
    #[pyo3(signature = (messages, *, tokens = None))]
    fn extend(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        tokens: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.writable()?;
        let items = messages_of(messages, tokens)?;
        for (message, _) in &items {
            if !message.bind(py).getattr(intern!(py, "turn"))?.is_none() {
                return self.push_with_turns(py, items);
            }
        }
        let mut state = self.state(py);
        state.room(py, items.len())?;
        state.queued.extend(items);
        Ok(())
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.state(py).len()
    }

    fn __getitem__(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = position)] i: isize,
    ) -> PyResult<Py<PyAny>> {
        let state = self.state(py);
        let at = index(i, state.len())?;
        let payload = match state.log.get(at) {
            Some(entry) => Some(entry.payload),
            None => state.queued.get(at, state.log.len()).map(|(m, _)| m),
        };
        payload
            .map(|p| p.clone_ref(py))
            .ok_or_else(|| PyIndexError::new_err("message index out of range"))
    }

    /// The messages `[start, end)` as a new list (one list-slice copy).
    #[pyo3(signature = (start = 0, end = None))]
    fn to_list<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = args::start)] start: usize,
        #[pyo3(from_py_with = args::end)] end: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.slice(py, start, end)
    }

    /// The last `limit` messages, or all of them when `limit` is None.
    #[pyo3(signature = (limit = None))]
    fn tail<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = args::limit)] limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let len = self.state(py).len();
        self.slice(py, limit.map_or(0, |n| len.saturating_sub(n)), None)
    }

    /// An O(1), read-only view of the log as it is now; later writes never show in it.
    fn snapshot(&self, py: Python<'_>) -> PyResult<Self> {
        self.copy(py, true)
    }

    /// An O(1), independent, writable copy sharing the current entries.
    fn fork(&self, py: Python<'_>) -> PyResult<Self> {
        self.copy(py, false)
    }

    /// The encoding whose prices the token estimates follow (`"cl100k_base"`, `"o200k_base"`).
    #[getter]
    fn encoding(&self, py: Python<'_>) -> &'static str {
        self.state(py).encoding.name()
    }

    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
    }

    #[getter]
    fn generation(&self, py: Python<'_>) -> u64 {
        self.indexed(py).generation()
    }

    /// Remove every message and bump the generation.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.writable()?;
        // Keep the old entries alive past the lock and drop them here, attached, so their
        // Python references are released now instead of being queued.
        let old = {
            let mut state = self.state(py);
            state.flush(py);
            let old = state.log.clone();
            state.log.clear();
            (old, std::mem::replace(&mut state.mirror, Mirror::None))
        };
        drop(old);
        Ok(())
    }

    /// Replace messages `[0, upto)` by `messages` if the generation is still `expected_generation`.
    /// Messages at and after `upto` are kept. Raises `StaleGenerationError` otherwise.
    /// With `expected_length`, the log must also still hold exactly that many messages (no
    /// append since the caller read it), else `StaleGenerationError` and nothing changes.
    #[pyo3(signature = (upto, messages, expected_generation, *, tokens = None, expected_length = None))]
    fn replace_prefix(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::upto)] upto: usize,
        messages: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = args::expected_generation)] expected_generation: u64,
        tokens: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = args::expected_length)] expected_length: Option<usize>,
    ) -> PyResult<()> {
        self.writable()?;
        let encoding = self.state(py).encoding;
        let entries: Vec<(Shared, u32)> = messages_of(messages, tokens)?
            .into_iter()
            .map(|(message, tokens)| entry(py, message, tokens, encoding))
            .collect();
        self.rewrite(py, expected_length.is_some(), move |log| {
            if let Some(expected) = expected_length {
                log.check_length(expected_generation, expected)?;
            }
            log.replace_prefix_items(upto, entries.clone(), expected_generation)
        })
    }

    /// Drop one turn and return how many messages went: an int or `"u3"` (or a user
    /// `TurnId`) drops the whole turn 3; `"a3"` (or an assistant `TurnId`) only its assistant
    /// side (from the first assistant message of turn 3 on), keeping the user's message.
    fn remove_turn(&self, py: Python<'_>, turn: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.writable()?;
        let turn = turn_id(turn)?;
        self.rewrite(py, false, move |log| {
            if turn.owner == crate::turn::Owner::Assistant {
                log.remove_assistant_turn(turn.number)
            } else {
                log.remove_turn(turn.number)
            }
        })
    }

    /// Replace message `index` by `message` (its turn id is kept) if the generation is still
    /// `expected_generation`; bumps the generation. `tokens` overrides the estimate.
    #[pyo3(signature = (index, message, expected_generation, *, tokens = None))]
    fn replace_at(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::index)] index: usize,
        message: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = args::expected_generation)] expected_generation: u64,
        #[pyo3(from_py_with = args::tokens)] tokens: Option<u32>,
    ) -> PyResult<()> {
        self.writable()?;
        check_message(message, "message")?;
        let encoding = self.state(py).encoding;
        let (item, count) = entry(py, message.clone().unbind(), tokens, encoding);
        self.rewrite(py, false, move |log| {
            log.replace_at_item(index, Arc::clone(&item), count, expected_generation)
        })
    }

    /// `[start, end)`: the messages `remove_turn(turn)` would drop (nothing changes).
    fn turn_range(&self, py: Python<'_>, turn: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
        let turn = turn_id(turn)?;
        self.indexed(py)
            .turn_range(turn)
            .map_err(|e| log_error(py, e))
    }

    // ---- tokens -------------------------------------------------------------------------

    /// Estimated tokens of messages `[start, end)` (all by default), from prefix sums.
    #[pyo3(signature = (start = 0, end = None))]
    fn tokens(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::start)] start: usize,
        #[pyo3(from_py_with = args::end)] end: Option<usize>,
    ) -> u64 {
        let log = self.indexed(py);
        log.tokens(start, end.unwrap_or(log.len()))
    }

    /// The per-message token counts, in order.
    fn token_counts(&self, py: Python<'_>) -> Vec<u32> {
        self.indexed(py).clone().iter().map(|e| e.tokens).collect()
    }

    #[getter]
    fn total_tokens(&self, py: Python<'_>) -> u64 {
        self.indexed(py).total_tokens()
    }

    /// The index of the newest message holding a provider's compaction, or None.
    #[getter]
    fn newest_compaction(&self, py: Python<'_>) -> Option<usize> {
        self.indexed(py).newest_compaction()
    }

    /// Anchor the estimate to the input tokens the provider reported for the current history.
    fn calibrate(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::reported_input_tokens)] reported_input_tokens: u64,
    ) -> PyResult<()> {
        self.writable()?;
        self.indexed(py).calibrate(reported_input_tokens);
        Ok(())
    }

    /// Reported tokens at the last calibration plus the estimate of what came after.
    fn estimated_context_tokens(&self, py: Python<'_>) -> u64 {
        self.indexed(py).estimated_context_tokens()
    }

    // ---- turns --------------------------------------------------------------------------

    /// The turn id of message `i`.
    fn turn_of(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = position)] i: isize,
    ) -> PyResult<super::turn::PyTurnId> {
        let log = self.indexed(py);
        let at = index(i, log.len())?;
        log.get(at)
            .map(|e| super::turn::PyTurnId(e.turn))
            .ok_or_else(|| PyIndexError::new_err("message index out of range"))
    }

    #[getter]
    fn turn_count(&self, py: Python<'_>) -> u32 {
        self.indexed(py).turn_count()
    }

    #[getter]
    fn current_turn(&self, py: Python<'_>) -> u32 {
        self.indexed(py).current_turn()
    }

    #[getter]
    fn round_count(&self, py: Python<'_>) -> usize {
        self.indexed(py).round_count()
    }

    // ---- pair-safe cuts -------------------------------------------------------------------

    /// Whether keeping `messages[i:]` separates no tool use from its result.
    fn is_safe_cut(&self, py: Python<'_>, #[pyo3(from_py_with = args::i)] i: usize) -> bool {
        self.indexed(py).is_safe_cut(i)
    }

    /// The safe cut nearest `i` at or before it (0 is always safe).
    fn safe_cut_at_or_before(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::i)] i: usize,
    ) -> usize {
        self.indexed(py).safe_cut_at_or_before(i)
    }

    /// The safe cut nearest `i` at or after it (`len` is always safe).
    fn safe_cut_at_or_after(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::i)] i: usize,
    ) -> usize {
        self.indexed(py).safe_cut_at_or_after(i)
    }

    /// `(index, kept_tokens, fits)`: the smallest safe cut at or after `floor` whose kept
    /// messages fit `budget`, or the minimum kept (the newest round) with `fits=False`.
    /// With `end`, as if the log ended there.
    #[pyo3(signature = (budget, *, floor = 0, end = None))]
    fn fit_budget(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::budget)] budget: u64,
        #[pyo3(from_py_with = args::floor)] floor: usize,
        #[pyo3(from_py_with = args::end)] end: Option<usize>,
    ) -> (usize, u64, bool) {
        let log = self.indexed(py);
        let cut = log.fit_budget_within(budget, floor, end.unwrap_or(usize::MAX));
        (cut.index, cut.kept_tokens, cut.fits)
    }

    /// `(index, kept_tokens, trims)`: the cut of a cache-stable window (`fixed` head tokens
    /// plus the suffix) that moves only past `high` and then down to `low`.
    /// With `user_start`, every cut it moves to opens with a real user message.
    #[pyo3(signature = (fixed, high, low, *, floor = 0, user_start = false))]
    fn stable_cut(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::fixed)] fixed: u64,
        #[pyo3(from_py_with = args::high)] high: u64,
        #[pyo3(from_py_with = args::low)] low: u64,
        #[pyo3(from_py_with = args::floor)] floor: usize,
        user_start: bool,
    ) -> (usize, u64, usize) {
        let cut = self
            .indexed(py)
            .stable_cut(fixed, high, low, floor, user_start);
        (cut.index, cut.kept_tokens, cut.trims)
    }

    /// `(system_end, task, floor, contiguous)`: the pinned head (leading system messages and,
    /// if `pin_task`, the first real user message) and the first index a suffix may start at.
    #[pyo3(signature = (pin_task = true))]
    fn pinned_head(&self, py: Python<'_>, pin_task: bool) -> (usize, Option<usize>, usize, bool) {
        let head = self.indexed(py).pinned_head(pin_task);
        (head.system_end, head.task, head.floor, head.contiguous)
    }

    /// The largest safe cut at or before `i` whose message is a real user message, or None.
    fn user_cut_at_or_before(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::i)] i: usize,
    ) -> Option<usize> {
        self.indexed(py).user_cut_at_or_before(i)
    }

    /// The smallest safe cut at or after `i` whose message is a real user message, or None.
    fn user_cut_at_or_after(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::i)] i: usize,
    ) -> Option<usize> {
        self.indexed(py).user_cut_at_or_after(i)
    }

    /// Index where the k-th last user turn starts (k >= 1), or None.
    fn kth_last_turn_start(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::k)] k: usize,
    ) -> Option<usize> {
        self.indexed(py).kth_last_turn_start(k)
    }

    /// Index where the k-th last round starts (k >= 1), or None.
    fn kth_last_round_start(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::k)] k: usize,
    ) -> Option<usize> {
        self.indexed(py).kth_last_round_start(k)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let log = self.indexed(py);
        format!(
            "MessageLog(len={}, tokens={}, generation={}{})",
            log.len(),
            log.total_tokens(),
            log.generation(),
            if self.read_only { ", read_only" } else { "" }
        )
    }
}
