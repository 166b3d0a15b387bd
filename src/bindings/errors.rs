//! The errors the extension raises.
//!
//! Every ctxtrim exception class is defined in Python, in `ctxtrim/errors.py`; the extension
//! defines none. `import_exception!` looks each class up in that module the first time it
//! is raised (cached per interpreter), so importing `ctxtrim._core` imports nothing from
//! `ctxtrim` and `ctxtrim.errors` imports nothing from `_core`: no cycle.

use pyo3::exceptions::{PyIndexError, PyKeyError, PyOverflowError, PyValueError};
use pyo3::prelude::*;

use crate::log::LogError;
use crate::turn::TurnIdError;

pyo3::import_exception!(ctxtrim.errors, StaleGenerationError);
pyo3::import_exception!(ctxtrim.errors, InvalidMessage);
pyo3::import_exception!(ctxtrim.errors, InvalidTurnId);
pyo3::import_exception!(ctxtrim.errors, InvalidArgument);

/// `InvalidMessage(reason, path)`.
pub fn invalid_message(reason: impl Into<String>, path: impl Into<String>) -> PyErr {
    InvalidMessage::new_err((reason.into(), path.into()))
}

pub fn turn_error(err: TurnIdError) -> PyErr {
    InvalidTurnId::new_err(err.to_string())
}

/// The Python error for a core `LogError` (`_py`: proof the caller holds the interpreter).
pub fn log_error(_py: Python<'_>, err: LogError) -> PyErr {
    match err {
        LogError::StaleGeneration { expected, actual } => {
            StaleGenerationError::new_err((err.to_string(), expected, actual))
        }
        LogError::StaleLength { generation, .. } => {
            StaleGenerationError::new_err((err.to_string(), generation, generation))
        }
        LogError::OutOfRange { .. } => PyIndexError::new_err(err.to_string()),
        LogError::Full { .. } => PyOverflowError::new_err(err.to_string()),
        LogError::NoSuchTurn(_) | LogError::NoAssistantSide(_) => {
            PyKeyError::new_err(err.to_string())
        }
        LogError::TurnOutOfOrder { .. } => InvalidTurnId::new_err(err.to_string()),
        LogError::SplitsToolPair { .. } => PyValueError::new_err(err.to_string()),
    }
}
