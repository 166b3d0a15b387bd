//! The compact per-message facts the core reasons about.
//!
//! The core never looks inside a message: the bindings read each message once, when the
//! appends queued since the last query are indexed (the next flush, not `append` itself),
//! and hand over a [`Meta`]: who spoke, how many tokens it costs, which tool calls it issues and
//! which it answers, and whether it opens a user turn. Everything the log, the cut index
//! and the validator decide is decided from these facts alone.
//!
//! Invariants:
//! - `tool_uses` and `tool_results` keep block order, so a position in them is the position of
//!   the block among the message's tool_use / tool_result blocks (repair plans address blocks
//!   this way).
//! - Only a [`Role::User`] message can open a user turn: [`Meta::is_real_user`] ignores
//!   `real_user` on other roles, so a mislabelled assistant or system message never starts a turn.

use std::sync::Arc;

use crate::turn::TurnId;

/// Tool-use ids of one message, in block order. Shared, not copied: every log holding a
/// message shares the ids read from it once (a clone is two reference-count bumps, and no
/// ids is a static empty slice, no allocation).
pub type Ids = Arc<[Arc<str>]>;

/// Who wrote a message. Tool results travel in user messages (Anthropic's model), so there is
/// no tool role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// A system prompt or instruction.
    System,
    /// The user, or tool results sent back on the user's behalf.
    User,
    /// The model.
    Assistant,
}

/// The compact facts about one message that trimming needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Who wrote the message.
    pub role: Role,
    /// Estimated (or exact, from a Python counter) tokens of the message, overhead included.
    pub tokens: u32,
    /// Ids of the tool_use blocks this (assistant) message issues, in block order.
    pub tool_uses: Ids,
    /// Tool use ids this (user) message answers, one per tool_result block, in block order.
    pub tool_results: Ids,
    /// A user message with content other than tool results (it starts a user turn).
    pub real_user: bool,
    /// The turn id the caller gave the message, if any (the log honours it).
    pub turn: Option<TurnId>,
    /// The message holds a provider's compaction (Anthropic's `compaction` block, a Responses
    /// `compaction` item): a summary standing for everything before it.
    pub compaction: bool,
}

impl Meta {
    /// A message of `role` costing `tokens`, with no tool blocks and not a real user turn.
    #[must_use]
    pub fn new(role: Role, tokens: u32) -> Self {
        Self {
            role,
            tokens,
            tool_uses: Ids::default(),
            tool_results: Ids::default(),
            real_user: false,
            turn: None,
            compaction: false,
        }
    }

    /// A user message with text (a real user turn).
    #[must_use]
    pub fn user(tokens: u32) -> Self {
        Self::new(Role::User, tokens).real_user(true)
    }

    /// An assistant message.
    #[must_use]
    pub fn assistant(tokens: u32) -> Self {
        Self::new(Role::Assistant, tokens)
    }

    /// A system message.
    #[must_use]
    pub fn system(tokens: u32) -> Self {
        Self::new(Role::System, tokens)
    }

    /// Sets the ids of the tool_use blocks this message issues.
    #[must_use]
    pub fn with_tool_uses<I, S>(mut self, ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Arc<str>>,
    {
        self.tool_uses = ids.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the tool use ids this message's tool_result blocks answer.
    #[must_use]
    pub fn with_tool_results<I, S>(mut self, ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<Arc<str>>,
    {
        self.tool_results = ids.into_iter().map(Into::into).collect();
        self
    }

    /// Sets whether this message has content other than tool results.
    #[must_use]
    pub fn real_user(mut self, real_user: bool) -> Self {
        self.real_user = real_user;
        self
    }

    /// True for a user message that opens a user turn. `real_user` on a system or assistant
    /// message is ignored: only the user speaks a user turn.
    /// Sets whether the message holds a provider's compaction.
    #[must_use]
    pub fn compaction(mut self, compaction: bool) -> Self {
        self.compaction = compaction;
        self
    }

    /// Sets the caller-given turn id.
    #[must_use]
    pub fn with_turn(mut self, turn: TurnId) -> Self {
        self.turn = Some(turn);
        self
    }

    #[must_use]
    pub fn is_real_user(&self) -> bool {
        self.role == Role::User && self.real_user
    }

    /// True if the message carries any tool_use or tool_result block.
    #[must_use]
    pub fn has_tool_blocks(&self) -> bool {
        !self.tool_uses.is_empty() || !self.tool_results.is_empty()
    }
}

/// The three kinds of message the cut index and validation tests build histories from.
#[cfg(test)]
pub(crate) mod examples {
    use super::{Meta, Role};

    /// A real user message (a turn start).
    pub(crate) fn user() -> Meta {
        Meta::user(10)
    }

    /// An assistant message issuing tool calls `ids`.
    pub(crate) fn call(ids: &[&str]) -> Meta {
        Meta::assistant(10).with_tool_uses(ids.iter().copied())
    }

    /// A user message holding only the results for `ids`.
    pub(crate) fn results(ids: &[&str]) -> Meta {
        Meta::new(Role::User, 10).with_tool_results(ids.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_set_fields() {
        let m = Meta::assistant(7).with_tool_uses(["a", "b"]);
        assert_eq!(m.role, Role::Assistant);
        assert_eq!(m.tokens, 7);
        assert_eq!(&*m.tool_uses, &[Arc::from("a"), Arc::from("b")]);
        assert!(m.tool_results.is_empty());
        assert!(!m.real_user);
        assert!(m.has_tool_blocks());

        let r = Meta::new(Role::User, 3).with_tool_results(vec![String::from("a")]);
        assert!(!r.is_real_user());
        assert!(Meta::user(1).is_real_user());
    }

    #[test]
    fn real_user_only_counts_for_user_role() {
        assert!(!Meta::assistant(1).real_user(true).is_real_user());
        assert!(!Meta::system(1).real_user(true).is_real_user());
    }
}
