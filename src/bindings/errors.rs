//! The exception hierarchy.
//!
//! `CtxtrimError` (base of every error ctxtrim raises on purpose) and `StaleGenerationError`
//! are made here with `create_exception!`. `InvalidMessage` and `InvalidTurnId` must also be
//! `ValueError`s, which a `create_exception!` class (one base only) cannot be, so
//! `ctxtrim/errors.py` defines them on top of `CtxtrimError` and they are raised from here
//! through `import_exception!`: one hierarchy, rooted in the extension.

use pyo3::exceptions::{PyException, PyIndexError, PyKeyError};
use pyo3::prelude::*;

use crate::log::LogError;
use crate::turn::TurnIdError;

pyo3::create_exception!(
    ctxtrim._core,
    CtxtrimError,
    PyException,
    "Base class of every error ctxtrim raises on purpose."
);
pyo3::create_exception!(
    ctxtrim._core,
    StaleGenerationError,
    CtxtrimError,
    "The history was rewritten (cleared, compacted, a turn removed) since the caller's \
     snapshot, so a replace_prefix was refused and nothing changed. `expected` and `actual` \
     hold the two generations."
);
pyo3::import_exception!(ctxtrim.errors, InvalidMessage);
pyo3::import_exception!(ctxtrim.errors, InvalidTurnId);

/// `InvalidMessage(reason, path)`.
pub fn invalid_message(reason: impl Into<String>, path: impl Into<String>) -> PyErr {
    InvalidMessage::new_err((reason.into(), path.into()))
}

pub fn turn_error(err: TurnIdError) -> PyErr {
    InvalidTurnId::new_err(err.to_string())
}

/// `StaleGenerationError` with `expected` and `actual` set.
fn stale_generation(py: Python<'_>, expected: u64, actual: u64, text: String) -> PyErr {
    let err = StaleGenerationError::new_err(text);
    let value = err.value(py);
    match (
        value.setattr("expected", expected),
        value.setattr("actual", actual),
    ) {
        (Ok(()), Ok(())) => err,
        (Err(e), _) | (_, Err(e)) => e,
    }
}

pub fn log_error(py: Python<'_>, err: LogError) -> PyErr {
    match err {
        LogError::StaleGeneration { expected, actual } => {
            stale_generation(py, expected, actual, err.to_string())
        }
        LogError::OutOfRange { .. } => PyIndexError::new_err(err.to_string()),
        LogError::NoSuchTurn(_) => PyKeyError::new_err(err.to_string()),
    }
}
