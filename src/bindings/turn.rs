//! `TurnId`: which user turn a message belongs to, and who spoke; `TurnCounter`: hands
//! them out.

use pyo3::prelude::*;

use super::errors::turn_error;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::turn::{Owner, TurnCounter, TurnId};

/// A turn id: `"u3"` (user turn 3) or `"a3"` (the assistant's part of turn 3).
#[pyclass(frozen, eq, ord, hash, name = "TurnId", module = "ctxtrim._core")]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyTurnId(pub TurnId);

#[pymethods]
impl PyTurnId {
    #[new]
    fn new(owner: &str, #[pyo3(from_py_with = super::args::number)] number: u32) -> PyResult<Self> {
        let owner = match owner {
            "u" | "user" => Owner::User,
            "a" | "assistant" => Owner::Assistant,
            other => {
                return Err(super::errors::InvalidTurnId::new_err(format!(
                    "turn owner must be \"u\" or \"a\", got {other:?}"
                )))
            }
        };
        Ok(Self(TurnId { owner, number }))
    }

    /// Parse `"u3"` / `"a3"`; anything else raises `InvalidTurnId`.
    #[staticmethod]
    fn parse(text: &str) -> PyResult<Self> {
        text.parse().map(Self).map_err(turn_error)
    }

    #[getter]
    fn owner(&self) -> &'static str {
        match self.0.owner {
            Owner::User => "u",
            Owner::Assistant => "a",
        }
    }

    #[getter]
    fn number(&self) -> u32 {
        self.0.number
    }

    fn is_user_turn(&self) -> bool {
        self.0.owner == Owner::User
    }

    fn is_assistant_turn(&self) -> bool {
        self.0.owner == Owner::Assistant
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __repr__(&self) -> String {
        format!("TurnId({:?})", self.0.to_string())
    }
}

/// Hands out turn ids for a conversation: `next_user()` starts the next turn (`"u1"`, `"u2"`,
/// ...), `next_assistant()` names the assistant's side of the current one (`"a1"` after
/// `"u1"`). Thread-safe; it only moves forward and never hands a number out twice.
///
/// Give the ids to messages (`Message.user("hi", turn=counter.next_user())`): a log or store
/// keeps them as given. `TurnCounter(start)` continues after turn `start`, e.g.
/// `TurnCounter(log.current_turn())` for an existing log.
#[pyclass(frozen, name = "TurnCounter", module = "ctxtrim._core")]
pub struct PyTurnCounter(AtomicU32);

#[pymethods]
impl PyTurnCounter {
    #[new]
    #[pyo3(signature = (start = 0))]
    fn new(#[pyo3(from_py_with = super::args::turn_start)] start: u32) -> Self {
        Self(AtomicU32::new(start))
    }

    /// Start the next user turn and return its id (`"u<n>"`).
    fn next_user(&self) -> String {
        // The core counter's step (saturating), applied atomically.
        let step = |n: u32| TurnCounter::starting_at(n).advance();
        let previous = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| Some(step(n)))
            .unwrap_or_else(|n| n);
        TurnId::user(step(previous)).to_string()
    }

    /// The id of the assistant's side of the current turn (`"a<n>"`). Before any user
    /// turn this starts turn 1 (a conversation the assistant opens).
    fn next_assistant(&self) -> String {
        let number = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n == 0).then_some(1)
            })
            .map_or_else(|n| n, |_| 1);
        TurnId::assistant(number).to_string()
    }

    /// The current turn number (0 before the first `next_user()`).
    fn current(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }

    fn __repr__(&self) -> String {
        format!("TurnCounter(current={})", self.0.load(Ordering::SeqCst))
    }
}
