//! `MessageFacts`: what the core needs of a message, read once per message object, ever.
//!
//! The facts (role, tool ids, whether it opens a turn, its token estimate) are read the first
//! time anything asks and kept on the message itself, in its `_ctxtrim_facts` slot (unset
//! until then). Every later call on any list, log, store, strategy or check reuses them: a
//! message is read once however many histories hold it.
//!
//! Neither the message nor its facts are tracked by Python's cyclic GC (`Message` is a
//! `gc=False` struct; the facts object is untracked when made): a server holding millions of
//! messages gives the collector nothing to walk. The facts refer to nothing but exact token
//! counters (to key their counts), so a cycle through them needs a counter that itself holds
//! the messages it counted; such a cycle would be kept until the counter is dropped by hand.
//!
//! Why on the message: it is the one place whose lifetime is the message's, so the cache is
//! bounded by the messages alive (no global table that grows with every message ever seen),
//! and `msgspec.structs.replace`, `copy` and decoding all make a new message with no facts.
//! It is correct because a message is immutable all the way down (its dicts are frozen copies).
//!
//! Token counts: the estimate under `cl100k_base` is read with the facts; under `o200k_base`
//! and `anthropic` on first use (images are priced by the size their header states, under the
//! table's rule, so an image's header is read once per table). An exact counter's count is kept per counter object (the facts hold a
//! reference to it), so `counter.count_message` runs once per message and counter.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use pyo3::{intern, Py};

use super::convert::{check_message_at, meta_of, tokens_of};
use super::slots::CacheSlot;
use super::tokens::PyBpeCounter;
use super::untrack::untrack;
use crate::log::Item;
use crate::meta::Meta;
use crate::tail::Facts;
use crate::tokens::Encoding;

/// Not counted yet.
const UNKNOWN: u32 = u32::MAX;

/// The facts about one message, cached on it.
#[pyclass(frozen, name = "MessageFacts", module = "ctxtrim._core")]
pub struct PyFacts {
    /// Role, tool ids, turn opening; `tokens` is the `cl100k_base` estimate.
    meta: Meta,
    /// The estimates under the other price tables (`o200k_base`, `anthropic`), each once
    /// asked for. Images are priced by their size within each, so their prices are here too.
    others: [AtomicU32; 2],
    /// Exact counters' counts, by counter object.
    counted: Mutex<Vec<(Py<PyAny>, u32)>>,
    /// The message and these facts as the core logs hold them, while any log does: every
    /// log holding the message shares this one item instead of a copy per entry. Weak, so
    /// the facts (kept by the message) never keep their message alive.
    item: Mutex<Weak<Item<Py<PyAny>>>>,
}

impl PyFacts {
    /// The facts.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The message `msg` (these facts' own) and its facts, shared with every log that holds
    /// it now; made (once per message, while logs hold it) if none does.
    pub fn shared_item(&self, msg: &Bound<'_, PyAny>) -> Arc<Item<Py<PyAny>>> {
        let held = self.item.lock().upgrade();
        match held {
            Some(item) if item.payload.is(msg) => item,
            other => {
                drop(other); // outside the lock: the last reference may release a message
                let item = Item::new(msg.clone().unbind(), self.meta.clone());
                *self.item.lock() = Arc::downgrade(&item);
                item
            }
        }
    }

    /// The message's tokens: `counter`'s count if given (called once per counter), else the
    /// estimate under `encoding`. `msg` is the message these facts belong to.
    pub fn tokens(
        &self,
        msg: &Bound<'_, PyAny>,
        encoding: Encoding,
        counter: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u32> {
        if let Some(counter) = counter {
            return self.counted(msg, counter);
        }
        let slot = match encoding {
            Encoding::Cl100k => return Ok(self.meta.tokens),
            Encoding::O200k => &self.others[0],
            Encoding::Anthropic => &self.others[1],
        };
        let known = slot.load(Ordering::Relaxed);
        if known != UNKNOWN {
            return Ok(known);
        }
        let tokens = tokens_of(msg, "message", encoding)?;
        slot.store(tokens, Ordering::Relaxed);
        Ok(tokens)
    }

    fn counted(&self, msg: &Bound<'_, PyAny>, counter: &Bound<'_, PyAny>) -> PyResult<u32> {
        let py = msg.py();
        let known = self
            .counted
            .lock()
            .iter()
            .find(|(c, _)| c.is(counter))
            .map(|&(_, n)| n);
        if let Some(n) = known {
            return Ok(n);
        }
        // Called without the lock held: the counter is Python code and may take its time.
        // An `ExactTokenCounter` that counts with the core is asked directly, without its
        // Python method in between.
        if let Some(core) = exact_core(counter)? {
            let n = core.get().message_tokens(msg)?;
            self.counted.lock().push((counter.clone().unbind(), n));
            return Ok(n);
        }
        let count = counter.call_method1(intern!(py, "count_message"), (msg,))?;
        let n: u32 = count.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "count_message must return an int between 0 and {}, got {count:?}",
                u32::MAX - 1
            ))
        })?;
        if n == UNKNOWN {
            return Err(PyValueError::new_err(
                "count_message returned a count too large",
            ));
        }
        self.counted.lock().push((counter.clone().unbind(), n));
        Ok(n)
    }
}

static EXACT: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The core tokenizer of `counter` if it is exactly a `ctxtrim.tokens.ExactTokenCounter`
/// counting with the core (a subclass may count its own way: it is called in Python).
fn exact_core<'py>(counter: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyBpeCounter>>> {
    let py = counter.py();
    let exact = EXACT.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        Ok(py
            .import("ctxtrim.tokens")?
            .getattr("ExactTokenCounter")?
            .cast_into::<PyType>()?
            .unbind())
    })?;
    if !counter.get_type().is(exact.bind(py)) {
        return Ok(None);
    }
    Ok(counter
        .getattr(intern!(py, "_core"))?
        .cast_into::<PyBpeCounter>()
        .ok())
}

/// The facts of `msg`, read now if no call read them before. `path` names the message in an
/// error (only built on error).
pub fn facts_of<'py>(
    msg: &Bound<'py, PyAny>,
    path: impl Fn() -> String,
) -> PyResult<Bound<'py, PyFacts>> {
    FactsReader::new(msg.py())?.facts(msg, path)
}

/// Reads the facts of many messages: what [`facts_of`] looks up per call (the `Message`
/// class, the facts slot) is looked up once.
pub struct FactsReader<'py> {
    slot: CacheSlot<'py>,
}

impl<'py> FactsReader<'py> {
    /// A reader for this interpreter's `Message` class.
    pub fn new(py: Python<'py>) -> PyResult<Self> {
        Ok(Self {
            slot: CacheSlot::facts(py)?,
        })
    }

    /// The facts of `msg`, as [`facts_of`].
    pub fn facts(
        &self,
        msg: &Bound<'py, PyAny>,
        path: impl Fn() -> String,
    ) -> PyResult<Bound<'py, PyFacts>> {
        check_message_at(msg, &path)?;
        if let Some(kept) = self.slot.get(msg)? {
            if let Ok(facts) = kept.cast_into_exact::<PyFacts>() {
                return Ok(facts);
            }
        }
        // The path is only worth formatting for an error: read again with it then.
        let meta = match meta_of(msg, None, "", Encoding::Cl100k) {
            Ok(meta) => meta,
            Err(_) => meta_of(msg, None, &path(), Encoding::Cl100k)?,
        };
        install(&self.slot, msg, meta)
    }

    /// `msg`'s facts and its tokens under the caller's pricing (`counter`'s, or the
    /// estimate under `encoding`), held for the core under `key`: the object the caller's
    /// list holds (`msg` itself, or the framework item `msg` was converted from).
    pub fn fetch_for(
        &self,
        key: Bound<'py, PyAny>,
        msg: &Bound<'py, PyAny>,
        encoding: Encoding,
        counter: Option<&Bound<'py, PyAny>>,
        path: impl Fn() -> String,
    ) -> PyResult<Held> {
        let facts = self.facts(msg, path)?;
        let tokens = facts.get().tokens(msg, encoding, counter)?;
        Ok(Held {
            key: key.unbind(),
            facts: facts.unbind(),
            tokens,
        })
    }
}

/// Keeps `meta` as the facts of `msg`, a `Message` the caller has just built and whose facts
/// it knows exactly as [`meta_of`] would read them (role, tool ids, `cl100k_base` estimate):
/// a reader in the core that makes messages spares the walk over what it just wrote.
pub fn set_facts<'py>(msg: &Bound<'py, PyAny>, meta: Meta) -> PyResult<Bound<'py, PyFacts>> {
    install(&CacheSlot::facts(msg.py())?, msg, meta)
}

fn install<'py>(
    slot: &CacheSlot<'py>,
    msg: &Bound<'py, PyAny>,
    meta: Meta,
) -> PyResult<Bound<'py, PyFacts>> {
    let facts = Bound::new(
        msg.py(),
        PyFacts {
            meta,
            others: [AtomicU32::new(UNKNOWN), AtomicU32::new(UNKNOWN)],
            counted: Mutex::new(Vec::new()),
            item: Mutex::new(Weak::new()),
        },
    )?;
    untrack(facts.as_any());
    // The slot of a frozen struct: set as msgspec's `force_setattr` sets it.
    slot.set(msg, facts.as_any())?;
    Ok(facts)
}

/// A message's facts and its tokens under the caller's pricing, as the core holds them, with
/// the object that names the message in the caller's list (a [`Tail`](crate::tail::Tail)
/// kept across calls checks that it is still at its position).
pub struct Held {
    pub key: Py<PyAny>,
    facts: Py<PyFacts>,
    tokens: u32,
}

impl Facts for Held {
    fn meta(&self) -> &Meta {
        &self.facts.get().meta
    }
    fn tokens(&self) -> u32 {
        self.tokens
    }
}
