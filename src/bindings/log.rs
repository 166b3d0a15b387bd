//! `MessageLog`: the Python class over the core's persistent `MessageLog`.
//!
//! The core log is a persistent structure whose clone is O(1), so every method takes the
//! lock only long enough to clone or to push, then works on its own copy with the lock
//! released: a reader never blocks a writer for longer than an O(1) step, and no lock is
//! held while Python code runs. A snapshot is a read-only `MessageLog` sharing the entries.

use std::sync::Arc;

use parking_lot::RwLock;
use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyList;

use super::convert::{meta_of, metas_of};
use super::errors::{log_error, turn_error};
use crate::log::{LogError, MessageLog};
use crate::turn::TurnId;

/// A Python message object held by the log; `Arc` so that sharing entries between forks and
/// snapshots never needs the interpreter.
type Payload = Arc<Py<PyAny>>;
type Log = MessageLog<Payload>;

/// An append-only, copy-on-write log of messages with the facts trimming needs.
#[pyclass(frozen, name = "MessageLog", module = "ctxtrim._core")]
pub struct PyMessageLog {
    inner: RwLock<Log>,
    read_only: bool,
}

impl PyMessageLog {
    fn new_from(log: Log, read_only: bool) -> Self {
        Self {
            inner: RwLock::new(log),
            read_only,
        }
    }

    /// An O(1) copy of the current state.
    fn current(&self) -> Log {
        self.inner.read().clone()
    }

    /// Apply an O(n) rewrite (replace_prefix, remove_turn) without holding the lock or the
    /// GIL while it runs, then install it under the lock in O(appends since).
    ///
    /// Holding a Rust lock across `detach` would deadlock with a thread that waits for the
    /// lock while attached (../shared/style.md, pitfall 8), hence the optimistic scheme: the
    /// rewrite runs on a clone; if only appends happened meanwhile, the core replays them
    /// onto the result; if another rewrite won, the rewrite is run again on the new state.
    fn rewrite<T: Send>(
        &self,
        py: Python<'_>,
        f: impl Fn(&mut Log) -> Result<T, LogError> + Send + Sync,
    ) -> PyResult<T> {
        loop {
            let base = self.current();
            let mut next = base.clone();
            let out = py.detach(|| f(&mut next)).map_err(|e| log_error(py, e))?;
            let mut guard = self.inner.write();
            if next.catch_up(&base, &guard) {
                let old = std::mem::replace(&mut *guard, next);
                drop(guard);
                drop(old);
                return Ok(out);
            }
        }
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

fn turn_number(turn: &Bound<'_, PyAny>) -> PyResult<u32> {
    if let Ok(n) = turn.extract::<u32>() {
        return Ok(n);
    }
    if let Ok(t) = turn.extract::<PyRef<'_, super::turn::PyTurnId>>() {
        return Ok(t.0.number);
    }
    let text: &str = turn.extract()?;
    text.parse::<TurnId>().map(|t| t.number).map_err(turn_error)
}

#[pymethods]
impl PyMessageLog {
    #[new]
    #[pyo3(signature = (messages = None, *, tokens = None))]
    fn py_new(
        messages: Option<&Bound<'_, PyAny>>,
        tokens: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let log = Self::new_from(Log::new(), false);
        if let Some(messages) = messages {
            log.extend(messages, tokens)?;
        }
        Ok(log)
    }

    /// Append one message; `tokens` overrides the estimate. Returns its index.
    #[pyo3(signature = (message, *, tokens = None))]
    fn append(&self, message: &Bound<'_, PyAny>, tokens: Option<u32>) -> PyResult<usize> {
        self.writable()?;
        let meta = meta_of(message, tokens, "message")?;
        let payload = Arc::new(message.clone().unbind());
        Ok(self.inner.write().push(payload, meta))
    }

    /// Append several messages atomically: all are checked first, then all are added.
    #[pyo3(signature = (messages, *, tokens = None))]
    fn extend(
        &self,
        messages: &Bound<'_, PyAny>,
        tokens: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.writable()?;
        let (objects, metas) = metas_of(messages, tokens)?;
        self.inner
            .write()
            .extend(objects.into_iter().map(Arc::new).zip(metas));
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.inner.read().len()
    }

    fn __getitem__(&self, py: Python<'_>, i: isize) -> PyResult<Py<PyAny>> {
        let log = self.inner.read();
        let at = index(i, log.len())?;
        log.get(at)
            .map(|e| e.payload.clone_ref(py))
            .ok_or_else(|| PyIndexError::new_err("message index out of range"))
    }

    /// The messages `[start, end)` as a new list (reference copies only).
    #[pyo3(signature = (start = 0, end = None))]
    fn to_list<'py>(
        &self,
        py: Python<'py>,
        start: usize,
        end: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let log = self.current();
        let end = end.unwrap_or(log.len()).min(log.len());
        PyList::new(py, log.range(start, end).map(|e| e.payload.bind(py)))
    }

    /// The last `limit` messages, or all of them when `limit` is None.
    #[pyo3(signature = (limit = None))]
    fn tail<'py>(&self, py: Python<'py>, limit: Option<usize>) -> PyResult<Bound<'py, PyList>> {
        let log = self.current();
        let start = limit.map_or(0, |n| log.len().saturating_sub(n));
        PyList::new(py, log.range(start, log.len()).map(|e| e.payload.bind(py)))
    }

    /// An O(1), read-only view of the log as it is now; later writes never show in it.
    fn snapshot(&self) -> Self {
        Self::new_from(self.current(), true)
    }

    /// An O(1), independent, writable copy sharing the current entries.
    fn fork(&self) -> Self {
        Self::new_from(self.current(), false)
    }

    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
    }

    #[getter]
    fn generation(&self) -> u64 {
        self.inner.read().generation()
    }

    /// Remove every message and bump the generation.
    fn clear(&self) -> PyResult<()> {
        self.writable()?;
        // Keep the old entries alive past the lock and drop them here, attached, so their
        // Python references are released now instead of being queued.
        let old = {
            let mut guard = self.inner.write();
            let old = guard.clone();
            guard.clear();
            old
        };
        drop(old);
        Ok(())
    }

    /// Replace messages `[0, upto)` by `messages` if the generation is still `expected_generation`.
    /// Messages at and after `upto` are kept. Raises `StaleGenerationError` otherwise.
    #[pyo3(signature = (upto, messages, expected_generation, *, tokens = None))]
    fn replace_prefix(
        &self,
        py: Python<'_>,
        upto: usize,
        messages: &Bound<'_, PyAny>,
        expected_generation: u64,
        tokens: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.writable()?;
        let (objects, metas) = metas_of(messages, tokens)?;
        let entries: Vec<(Payload, _)> = objects.into_iter().map(Arc::new).zip(metas).collect();
        self.rewrite(py, move |log| {
            log.replace_prefix(upto, entries.clone(), expected_generation)
        })
    }

    /// Drop every message of one turn (an int, `"u3"`, or a `TurnId`); returns how many.
    fn remove_turn(&self, py: Python<'_>, turn: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.writable()?;
        let number = turn_number(turn)?;
        self.rewrite(py, move |log| log.remove_turn(number))
    }

    // ---- tokens -------------------------------------------------------------------------

    /// Estimated tokens of messages `[start, end)` (all by default), from prefix sums.
    #[pyo3(signature = (start = 0, end = None))]
    fn tokens(&self, start: usize, end: Option<usize>) -> u64 {
        let log = self.inner.read();
        log.tokens(start, end.unwrap_or(log.len()))
    }

    /// The per-message token counts, in order.
    fn token_counts(&self) -> Vec<u32> {
        self.current().iter().map(|e| e.meta.tokens).collect()
    }

    #[getter]
    fn total_tokens(&self) -> u64 {
        self.inner.read().total_tokens()
    }

    /// Anchor the estimate to the input tokens the provider reported for the current history.
    fn calibrate(&self, reported_input_tokens: u64) -> PyResult<()> {
        self.writable()?;
        self.inner.write().calibrate(reported_input_tokens);
        Ok(())
    }

    /// Reported tokens at the last calibration plus the estimate of what came after.
    fn estimated_context_tokens(&self) -> u64 {
        self.inner.read().estimated_context_tokens()
    }

    // ---- turns --------------------------------------------------------------------------

    /// The turn id of message `i`.
    fn turn_of(&self, i: isize) -> PyResult<super::turn::PyTurnId> {
        let log = self.inner.read();
        let at = index(i, log.len())?;
        log.get(at)
            .map(|e| super::turn::PyTurnId(e.turn))
            .ok_or_else(|| PyIndexError::new_err("message index out of range"))
    }

    #[getter]
    fn turn_count(&self) -> u32 {
        self.inner.read().turn_count()
    }

    #[getter]
    fn current_turn(&self) -> u32 {
        self.inner.read().current_turn()
    }

    #[getter]
    fn round_count(&self) -> usize {
        self.inner.read().round_count()
    }

    // ---- pair-safe boundary ---------------------------------------------------------------

    /// Whether keeping `messages[i:]` separates no tool use from its result.
    fn is_safe_cut(&self, i: usize) -> bool {
        self.inner.read().is_safe_cut(i)
    }

    /// The safe cut nearest `i` at or before it (0 is always safe).
    fn safe_cut_at_or_before(&self, i: usize) -> usize {
        self.inner.read().safe_cut_at_or_before(i)
    }

    /// The safe cut nearest `i` at or after it (`len` is always safe).
    fn safe_cut_at_or_after(&self, i: usize) -> usize {
        self.inner.read().safe_cut_at_or_after(i)
    }

    /// `(index, kept_tokens, fits)`: the smallest safe cut at or after `floor` whose kept
    /// messages fit `budget`, or the minimum kept (the newest round) with `fits=False`.
    /// With `end`, as if the log ended there.
    #[pyo3(signature = (budget, *, floor = 0, end = None))]
    fn fit_budget(&self, budget: u64, floor: usize, end: Option<usize>) -> (usize, u64, bool) {
        let log = self.inner.read();
        let cut = log.fit_budget_within(budget, floor, end.unwrap_or(usize::MAX));
        (cut.index, cut.kept_tokens, cut.fits)
    }

    /// `(index, kept_tokens, trims)`: the cut of a cache-stable window (`fixed` head tokens
    /// plus the suffix) that moves only past `high` and then down to `low`.
    /// With `user_start`, every cut it moves to opens with a real user message.
    #[pyo3(signature = (fixed, high, low, *, floor = 0, user_start = false))]
    fn stable_cut(
        &self,
        fixed: u64,
        high: u64,
        low: u64,
        floor: usize,
        user_start: bool,
    ) -> (usize, u64, usize) {
        let cut = self
            .inner
            .read()
            .stable_cut(fixed, high, low, floor, user_start);
        (cut.index, cut.kept_tokens, cut.trims)
    }

    /// `(system_end, task, floor, contiguous)`: the pinned head (leading system messages and,
    /// if `pin_task`, the first real user message) and the first index a suffix may start at.
    #[pyo3(signature = (pin_task = true))]
    fn pinned_head(&self, pin_task: bool) -> (usize, Option<usize>, usize, bool) {
        let head = self.inner.read().pinned_head(pin_task);
        (head.system_end, head.task, head.floor, head.contiguous)
    }

    /// The largest safe cut at or before `i` whose message is a real user message, or None.
    fn user_cut_at_or_before(&self, i: usize) -> Option<usize> {
        self.inner.read().user_cut_at_or_before(i)
    }

    /// The smallest safe cut at or after `i` whose message is a real user message, or None.
    fn user_cut_at_or_after(&self, i: usize) -> Option<usize> {
        self.inner.read().user_cut_at_or_after(i)
    }

    /// Index where the k-th last user turn starts (k >= 1), or None.
    fn kth_last_turn_start(&self, k: usize) -> Option<usize> {
        self.inner.read().kth_last_turn_start(k)
    }

    /// Index where the k-th last round starts (k >= 1), or None.
    fn kth_last_round_start(&self, k: usize) -> Option<usize> {
        self.inner.read().kth_last_round_start(k)
    }

    fn __repr__(&self) -> String {
        let log = self.inner.read();
        format!(
            "MessageLog(len={}, tokens={}, generation={}{})",
            log.len(),
            log.total_tokens(),
            log.generation(),
            if self.read_only { ", read_only" } else { "" }
        )
    }
}
