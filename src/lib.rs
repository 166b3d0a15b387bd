//! ctxtrim's core: a pair-safe, copy-on-write conversation log for LLM agents.
//!
//! The crate keeps an agent's message history in a persistent append log ([`log::MessageLog`])
//! whose snapshots and forks are O(1), prices messages in tokens without a tokenizer
//! ([`tokens`]), finds cuts that never separate a tool call from its result ([`cuts`]), and
//! checks and repairs the pairing of a plain list of messages ([`validate`]). It is generic
//! over the message payload and knows nothing of Python: the PyO3 bindings (feature
//! `python`) wrap it for the `ctxtrim` Python package.
//!
//! ```
//! use ctxtrim::log::MessageLog;
//! use ctxtrim::meta::{Meta, Role};
//!
//! let mut log: MessageLog<&str> = MessageLog::new();
//! log.push("system prompt", Meta::system(50));
//! log.push("fix the bug", Meta::user(10));
//! log.push("call read_file", Meta::assistant(30).with_tool_uses(["t1"]));
//! log.push("file contents", Meta::new(Role::User, 900).with_tool_results(["t1"]));
//! log.push("done", Meta::assistant(20));
//!
//! let snapshot = log.snapshot(); // O(1); never sees later changes
//! // Keep at most 100 tokens after the 2-message pinned head: the call and its result
//! // are dropped together, never split.
//! let cut = log.fit_budget(100, 2);
//! assert_eq!(cut.index, 4);
//! assert!(!log.is_safe_cut(3));
//! assert_eq!(snapshot.len(), 5);
//! ```

#![deny(unsafe_code)]

pub mod anthropic_json;
pub mod chat_json;
pub mod column;
pub mod cuts;
pub mod head;
pub mod json_read;
pub mod json_write;
pub mod log;
pub mod meta;
pub mod queue;
pub mod responses_json;
mod search;
pub mod tail;
pub mod text;
pub mod tokens;
pub mod turn;
pub mod validate;
pub mod window;

#[cfg(feature = "python")]
mod bindings;
