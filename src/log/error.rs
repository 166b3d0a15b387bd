//! [`LogError`]: why a log operation was refused (the log is then unchanged).

use std::fmt;

use crate::cuts::MAX_MESSAGES;
use crate::turn::TurnId;

/// Why a log operation was refused. On error the log is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogError {
    /// The log changed (cleared, compacted, turn removed) since the caller read it.
    StaleGeneration {
        /// The generation the caller read.
        expected: u64,
        /// The log's generation now.
        actual: u64,
    },
    /// The log was appended to since the caller read it (a rewrite that asked for the exact
    /// length it read): the generation is unchanged, the length is not.
    StaleLength {
        /// The log's generation (the one the caller read).
        generation: u64,
        /// The length the caller read.
        expected: usize,
        /// The log's length now.
        actual: usize,
    },
    /// The log would hold more than [`MAX_MESSAGES`] messages.
    Full {
        /// The length the log would have.
        len: usize,
    },
    /// An index past the end of the log.
    OutOfRange {
        /// The index given.
        index: usize,
        /// The log's length.
        len: usize,
    },
    /// No message in the log has this turn number.
    NoSuchTurn(u32),
    /// Turn `number` has no assistant message (for removing the assistant side of a turn).
    NoAssistantSide(u32),
    /// A caller-given turn id is lower than the turn the log is at (turns never go back).
    TurnOutOfOrder {
        /// The id the caller gave.
        given: TurnId,
        /// The log's current turn number.
        current: u32,
    },
    /// Removing the turn would separate tool call `id` from its result.
    SplitsToolPair {
        /// The turn that was to be removed.
        turn: TurnId,
        /// The tool-use id whose call and result lie on both sides of the removal.
        id: Box<str>,
    },
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::StaleGeneration { expected, actual } => write!(
                f,
                "stale generation: expected {expected}, but the log is at generation {actual} (it was cleared or rewritten meanwhile)"
            ),
            Self::StaleLength {
                expected, actual, ..
            } => write!(
                f,
                "stale length: expected {expected} messages, but the history holds {actual} (it was appended to meanwhile)"
            ),
            Self::OutOfRange { index, len } => {
                write!(f, "index {index} out of range for a log of {len} messages")
            }
            Self::Full { len } => write!(
                f,
                "a log holds at most {MAX_MESSAGES} messages; this would make it {len}"
            ),
            Self::NoSuchTurn(n) => write!(f, "no message in the log belongs to turn {n}"),
            Self::NoAssistantSide(n) => {
                write!(f, "turn {n} has no assistant message (nothing to remove as a{n})")
            }
            Self::TurnOutOfOrder { given, current } => write!(
                f,
                "turn id {given} is out of order: the log is already at turn {current}, and turn numbers never go back"
            ),
            Self::SplitsToolPair { turn, id } => write!(
                f,
                "removing {turn} would separate tool call {id:?} from its result (the call and the result carry different turn ids); remove the turns together"
            ),
        }
    }
}

impl std::error::Error for LogError {}
