//! `TurnId`: which user turn a message belongs to, and who spoke.

use pyo3::prelude::*;

use super::errors::turn_error;
use crate::turn::{Owner, TurnId};

/// A turn id: `"u3"` (user turn 3) or `"a3"` (the assistant's part of turn 3).
#[pyclass(frozen, eq, ord, hash, name = "TurnId", module = "ctxtrim._core")]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyTurnId(pub TurnId);

#[pymethods]
impl PyTurnId {
    #[new]
    fn new(owner: &str, number: u32) -> PyResult<Self> {
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
