//! The exception classes, defined once in `ctxtrim/errors.py` and raised from here.
//!
//! They live in Python because `InvalidMessage` is both a `CtxtrimError` and a `ValueError`,
//! which a `create_exception!` class (one base only) cannot be.

use pyo3::prelude::*;

use crate::log::LogError;
use crate::turn::TurnIdError;

pyo3::import_exception!(ctxtrim.errors, InvalidMessage);
pyo3::import_exception!(ctxtrim.errors, InvalidTurnId);
pyo3::import_exception!(ctxtrim.errors, StaleGenerationError);

/// `InvalidMessage(reason, path)`.
pub fn invalid_message(reason: impl Into<String>, path: impl Into<String>) -> PyErr {
    InvalidMessage::new_err((reason.into(), path.into()))
}

pub fn turn_error(err: TurnIdError) -> PyErr {
    InvalidTurnId::new_err(err.to_string())
}

pub fn log_error(err: LogError) -> PyErr {
    match err {
        LogError::StaleGeneration { expected, actual } => {
            StaleGenerationError::new_err((expected, actual))
        }
        LogError::OutOfRange { .. } => pyo3::exceptions::PyIndexError::new_err(err.to_string()),
        LogError::NoSuchTurn(_) => pyo3::exceptions::PyKeyError::new_err(err.to_string()),
    }
}
