//! Turn ids and the turn counter.
//!
//! A user turn starts at a real user message (user text, not only tool results); the assistant
//! replies, tool calls and tool results that follow share its number. Messages before the first
//! real user message (a system prompt, say) belong to turn 0.
//!
//! Invariants:
//! - [`TurnId`]'s text form is exactly `u<n>` or `a<n>` with `n` a decimal `u32` without sign,
//!   spaces or other characters; [`TurnId::from_str`] accepts nothing else, and
//!   `id.to_string().parse() == Ok(id)` for every id.
//! - [`TurnCounter`] only moves forward; it never hands out a number twice (it saturates at
//!   `u32::MAX` rather than wrapping, four billion turns being out of reach of any session).

use std::fmt;
use std::str::FromStr;

/// Which side of a turn a message is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    /// The user's messages (text and tool results), and system messages.
    User,
    /// The assistant's messages.
    Assistant,
}

/// A turn number and the side of it a message is on; displays as `"u3"` / `"a3"`.
///
/// Ids order chronologically: by number, then the user side before the assistant side
/// (`u3 < a3 < u4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TurnId {
    /// Which side spoke.
    pub owner: Owner,
    /// The user turn the message belongs to (0 before the first real user message).
    pub number: u32,
}

impl TurnId {
    /// The user side of turn `number`.
    #[must_use]
    pub fn user(number: u32) -> Self {
        Self {
            owner: Owner::User,
            number,
        }
    }

    /// The assistant side of turn `number`.
    #[must_use]
    pub fn assistant(number: u32) -> Self {
        Self {
            owner: Owner::Assistant,
            number,
        }
    }
}

impl PartialOrd for TurnId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TurnId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.number, self.owner).cmp(&(other.number, other.owner))
    }
}

impl fmt::Display for TurnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self.owner {
            Owner::User => 'u',
            Owner::Assistant => 'a',
        };
        write!(f, "{prefix}{}", self.number)
    }
}

/// Why a string is not a turn id. Each variant carries the rejected input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnIdError {
    /// The string was empty.
    Empty,
    /// The first character was not `u` or `a`.
    BadOwner(String),
    /// The part after the owner was missing, not all ASCII digits, or too large for a `u32`.
    BadNumber(String),
}

impl fmt::Display for TurnIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("invalid turn id \"\": expected 'u' or 'a' and a number"),
            Self::BadOwner(s) => write!(
                f,
                "invalid turn id {s:?}: must start with 'u' (user) or 'a' (assistant)"
            ),
            Self::BadNumber(s) => write!(
                f,
                "invalid turn id {s:?}: expected a turn number of decimal digits (0..=4294967295) after the owner"
            ),
        }
    }
}

impl std::error::Error for TurnIdError {}

impl FromStr for TurnId {
    type Err = TurnIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut chars = s.chars();
        let owner = match chars.next() {
            None => return Err(TurnIdError::Empty),
            Some('u') => Owner::User,
            Some('a') => Owner::Assistant,
            Some(_) => return Err(TurnIdError::BadOwner(s.to_owned())),
        };
        let digits = chars.as_str();
        // `u32::from_str` alone would accept a leading '+'; insist on digits only.
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(TurnIdError::BadNumber(s.to_owned()));
        }
        let number = digits
            .parse::<u32>()
            .map_err(|_| TurnIdError::BadNumber(s.to_owned()))?;
        Ok(Self { owner, number })
    }
}

/// Hands out user turn numbers.
///
/// agent-air used an `AtomicI64`; here the counter lives inside the `MessageLog`, which is only
/// ever changed through `&mut self` (the bindings hold it under their own lock), so a plain
/// `u32` is enough and keeps the log `Clone` as a cheap value copy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TurnCounter(u32);

impl TurnCounter {
    /// A counter at 0 (the turn of messages before the first real user message).
    #[must_use]
    pub fn new() -> Self {
        Self(0)
    }

    /// A counter that continues after `number`.
    #[must_use]
    pub fn starting_at(number: u32) -> Self {
        Self(number)
    }

    /// The current turn number.
    #[must_use]
    pub fn current(&self) -> u32 {
        self.0
    }

    /// Moves the counter forward to `number` (never back).
    pub fn raise_to(&mut self, number: u32) {
        self.0 = self.0.max(number);
    }

    /// Starts the next turn and returns its number (saturating at `u32::MAX`).
    pub fn advance(&mut self) -> u32 {
        self.0 = self.0.saturating_add(1);
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_parse_round_trip() {
        for id in [
            TurnId::user(0),
            TurnId::user(3),
            TurnId::assistant(3),
            TurnId::assistant(u32::MAX),
        ] {
            assert_eq!(id.to_string().parse::<TurnId>(), Ok(id));
        }
        assert_eq!(TurnId::user(3).to_string(), "u3");
        assert_eq!(TurnId::assistant(12).to_string(), "a12");
        assert_eq!("u007".parse::<TurnId>(), Ok(TurnId::user(7)));
    }

    #[test]
    fn parse_rejects_malformed() {
        for bad in [
            "",
            "x3",
            "u",
            "a",
            "u-1",
            "u3x",
            "u 3",
            " u3",
            "u3 ",
            "u+3",
            "+u3",
            "U3",
            "u4294967296",
            "u99999999999999999999",
            "é3",
            "u٣",
        ] {
            let err = bad.parse::<TurnId>().unwrap_err();
            if !bad.is_empty() {
                assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
            }
        }
        assert_eq!("".parse::<TurnId>(), Err(TurnIdError::Empty));
        assert!(matches!(
            "x3".parse::<TurnId>(),
            Err(TurnIdError::BadOwner(_))
        ));
        assert!(matches!(
            "u+3".parse::<TurnId>(),
            Err(TurnIdError::BadNumber(_))
        ));
    }

    #[test]
    fn counter_advances_and_saturates() {
        let mut c = TurnCounter::new();
        assert_eq!(c.current(), 0);
        assert_eq!(c.advance(), 1);
        assert_eq!(c.current(), 1);
        let mut top = TurnCounter::starting_at(u32::MAX);
        assert_eq!(top.advance(), u32::MAX);
    }

    #[test]
    fn ids_order_chronologically() {
        assert!(TurnId::user(3) < TurnId::assistant(3));
        assert!(TurnId::assistant(3) < TurnId::user(4));
        assert!(TurnId::user(1) < TurnId::user(2));
    }
}
