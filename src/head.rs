//! [`HeadReader`]: the pinned head of a history, read from its front one message at a time.
//!
//! The head is the leading system messages and, when the task is pinned, the first real user
//! message after them (without it, the reader reads the first message past the system ones
//! to see that it is not). A [`crate::tail::Tail`] decides a window from the head and the
//! end of a history only: a head in which some message issues a tool call cannot be judged
//! that way (its call may be answered anywhere), so the reader says [`HeadStep::Whole`] and
//! the caller uses the whole history. Well-formed agent histories (system, task, then
//! rounds) never do.

use crate::meta::{Meta, Role};

/// What [`HeadReader::push`] needs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadStep {
    /// Push the next message.
    More,
    /// The head is the messages pushed so far.
    Done,
    /// The head cannot be judged from the front: decide on the whole history.
    Whole,
}

/// Reads the pinned head from the front, one message at a time.
#[derive(Clone, Debug)]
pub struct HeadReader {
    pub(crate) pin_task: bool,
    pushed: usize,
    /// The end of the leading system messages.
    pub(crate) system_end: usize,
    /// The task (the first real user message after them), once read with `pin_task`.
    pub(crate) task: Option<usize>,
}

impl HeadReader {
    /// A reader for a head with (`pin_task`) or without the task.
    #[must_use]
    pub fn new(pin_task: bool) -> Self {
        Self {
            pin_task,
            pushed: 0,
            system_end: 0,
            task: None,
        }
    }

    /// The state before any message: an empty history is its own (empty) head.
    #[must_use]
    pub fn first_step(&self, len: usize) -> HeadStep {
        if len == 0 {
            HeadStep::Whole
        } else {
            HeadStep::More
        }
    }

    /// Reads the next message from the front; `len` is the history's length.
    pub fn push(&mut self, meta: &Meta, len: usize) -> HeadStep {
        let i = self.pushed;
        self.pushed += 1;
        if meta.role == Role::System && self.system_end == i {
            self.system_end = i + 1;
        } else if !self.pin_task {
            // The head is the leading system messages; this one is not part of it.
            self.pushed = i;
            return HeadStep::Done;
        }
        if !meta.tool_uses.is_empty() {
            return HeadStep::Whole;
        }
        if self.pin_task && meta.is_real_user() {
            self.task = Some(i);
            return HeadStep::Done;
        }
        if self.pushed >= len {
            HeadStep::Whole
        } else {
            HeadStep::More
        }
    }

    /// Number of messages the head spans (read so far).
    #[must_use]
    pub fn len(&self) -> usize {
        self.pushed
    }

    /// True if nothing was read.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pushed == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_in_the_head_means_the_whole_history() {
        let mut reader = HeadReader::new(true);
        assert_eq!(reader.push(&Meta::system(1), 5), HeadStep::More);
        assert_eq!(
            reader.push(&Meta::assistant(1).with_tool_uses(["x"]), 5),
            HeadStep::Whole
        );
    }
}
