//! PyO3 bindings: the Python face of the core, and nothing else.
//!
//! Rules: every class is `frozen` with interior locking, so no
//! Python thread ever sees "Already borrowed"; locks guard only O(1) pure-Rust work (clone
//! the persistent log under the lock, then work on the clone); the GIL is released around
//! O(n) pure-Rust work; no input reaching these functions can panic. Conversions between
//! Python objects and core types live in `convert`; all algorithms live in the core.

mod anthropic;
mod anthropic_json;
mod args;
mod autogen;
mod chat;
mod chat_json;
mod convert;
mod errors;
mod facts;
mod fresh;
mod gemini;
mod json;
mod lists;
mod log;
mod log_json;
mod message;
mod render;
mod responses;
mod responses_json;
mod shapes;
mod slots;
mod text;
mod tokens;
mod turn;
mod untrack;
mod validate;
mod window;

use pyo3::prelude::*;

/// The compiled core of ctxtrim. Use the `ctxtrim` package, not this module.
#[pymodule(gil_used = false)]
#[pyo3(name = "_core")]
mod core_module {
    #[pymodule_export]
    use super::anthropic::{anthropic_fast_prefix, anthropic_render, anthropic_render_json};
    #[pymodule_export]
    use super::anthropic_json::anthropic_json_fast;
    #[pymodule_export]
    use super::autogen::autogen_skeletons;
    #[pymodule_export]
    use super::chat::{chat_fast, chat_fast_prefix, chat_render, chat_render_json};
    #[pymodule_export]
    use super::chat_json::chat_json_fast;
    #[pymodule_export]
    use super::facts::PyFacts;
    #[pymodule_export]
    use super::gemini::gemini_fast_prefix;
    #[pymodule_export]
    use super::json::{compact_json, json_loads};
    #[pymodule_export]
    use super::lists::differing;
    #[pymodule_export]
    use super::log::PyMessageLog;
    #[pymodule_export]
    use super::log_json::PyLogJson;
    #[pymodule_export]
    use super::message::{
        frozen_json, message_assistant, message_post_init, message_tool_results, message_user,
        text_post_init, tool_result_post_init, tool_use_post_init,
    };
    #[pymodule_export]
    use super::render::{copy_renderings, join_renderings, kept_rendering};
    #[pymodule_export]
    use super::responses::{responses_fast_prefix, responses_render, responses_render_json};
    #[pymodule_export]
    use super::responses_json::responses_json_fast;
    #[pymodule_export]
    use super::text::grapheme_floor;
    #[pymodule_export]
    use super::tokens::{
        estimate_tokens, image_size, image_tokens, message_tokens, price_table, PyBpeCounter,
    };
    #[pymodule_export]
    use super::turn::{PyTurnCounter, PyTurnId};
    #[pymodule_export]
    use super::validate::{repair_plan, validate};
    #[pymodule_export]
    use super::window::{cut_list, cut_log, cut_window, PyTail};

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("MESSAGE_OVERHEAD", crate::tokens::MESSAGE_OVERHEAD)?;
        m.add("IMAGE_TOKENS", crate::tokens::IMAGE_TOKENS)?;
        Ok(())
    }
}
