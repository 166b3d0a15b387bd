//! What the log stores per message and how it is read back: the shared [`Item`] (a message
//! and its facts), the 16-byte [`Record`] with its running token total, turn-number runs
//! ([`Run`]), and [`Entry`] / [`Entries`], a message as read with its own count and turn.
//!
//! Invariant: a record's running total is the sum of its own count and every count before
//! it (saturating at [`MAX_CUM`]), so an entry's own count is the difference of two totals.

use std::sync::Arc;

use super::State;
use crate::column::Column;
use crate::meta::Meta;
use crate::search::partition_point_near;
use crate::turn::{Owner, TurnId};

/// A message and its facts, shared: every log (and every snapshot, fork or session) holding
/// the message holds this one `Arc`. The bindings keep one per Python message object, so a
/// message held by 10,000 sessions is described once. `meta.tokens` is the message's own
/// estimate; a log may count it differently (an exact counter), and keeps its count itself.
#[derive(Debug, PartialEq, Eq)]
pub struct Item<P> {
    /// The caller's message (the bindings store the Python object).
    pub payload: P,
    /// The facts about the message.
    pub meta: Meta,
}

impl<P> Item<P> {
    /// A shared item.
    #[must_use]
    pub fn new(payload: P, meta: Meta) -> Arc<Self> {
        Arc::new(Self { payload, meta })
    }
}

/// What the log stores per message: 16 bytes, inline in its column. The turn number is
/// kept apart, once per run of entries sharing it ([`Run`]).
pub(super) struct Record<P> {
    pub(super) item: Arc<Item<P>>,
    /// Tokens of this entry and all before it (the entry's own count is the difference),
    /// shifted left by one; the low bit is the side of the turn (1: the assistant's).
    pub(super) cum_owner: u64,
}

/// The largest running token total a record holds (2⁶³ - 1; totals saturate there, far past
/// any real history).
const MAX_CUM: u64 = u64::MAX >> 1;

impl<P> Clone for Record<P> {
    fn clone(&self) -> Self {
        Self {
            item: Arc::clone(&self.item),
            cum_owner: self.cum_owner,
        }
    }
}

impl<P> Record<P> {
    pub(super) fn new(item: Arc<Item<P>>, cum_tokens: u64, owner: Owner) -> Self {
        let bit = u64::from(owner == Owner::Assistant);
        Self {
            item,
            cum_owner: (cum_tokens.min(MAX_CUM) << 1) | bit,
        }
    }

    pub(super) fn cum_tokens(&self) -> u64 {
        self.cum_owner >> 1
    }

    pub(super) fn owner(&self) -> Owner {
        if self.cum_owner & 1 == 1 {
            Owner::Assistant
        } else {
            Owner::User
        }
    }
}

/// Entries from `start` on have turn number `number` (until the next run). Turn numbers
/// change once per turn, so a run costs 8 bytes per turn instead of 4 per entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Run {
    pub(super) start: u32,
    pub(super) number: u32,
}

/// The turn number of entry `i` (`u32::MAX` if `i` is before every run: past the end of an
/// empty log). Galloping from the newest run: queries are mostly about recent entries.
pub(super) fn turn_in(runs: &Column<Run>, i: usize) -> u32 {
    let n = runs.len();
    let after = partition_point_near(n, n, |r| {
        runs.get(r).is_none_or(|run| run.start as usize > i)
    });
    after
        .checked_sub(1)
        .and_then(|r| runs.get(r))
        .map_or(u32::MAX, |run| run.number)
}

/// One message in the log, as read: the caller's payload plus what trimming knows about it.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry<'a, P> {
    /// The caller's message (the bindings store the Python object).
    pub payload: &'a P,
    /// The facts about the message (its `tokens` is the message's own estimate; the log's
    /// count is [`Entry::tokens`]).
    pub meta: &'a Meta,
    /// The turn it belongs to.
    pub turn: TurnId,
    /// The tokens the log counts for it.
    pub tokens: u32,
    /// Tokens of this entry and all before it.
    pub(super) cum_tokens: u64,
    pub(super) item: &'a Arc<Item<P>>,
}

impl<P> Clone for Entry<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Entry<'_, P> {}

impl<'a, P> Entry<'a, P> {
    pub(super) fn of(record: &'a Record<P>, before: u64, number: u32) -> Self {
        let cum_tokens = record.cum_tokens();
        Self {
            payload: &record.item.payload,
            meta: &record.item.meta,
            turn: TurnId {
                owner: record.owner(),
                number,
            },
            tokens: cum_tokens.saturating_sub(before) as u32,
            cum_tokens,
            item: &record.item,
        }
    }

    /// Tokens of this entry and every entry before it in the log.
    #[must_use]
    pub fn cumulative_tokens(self) -> u64 {
        self.cum_tokens
    }

    /// The shared message and facts (to put the same message in another log).
    #[must_use]
    pub fn item(self) -> &'a Arc<Item<P>> {
        self.item
    }
}

/// Entries `start..` of a column range, with their own token counts and turns.
pub(super) struct Entries<'a, P> {
    records: crate::column::Iter<'a, Record<P>>,
    runs: &'a Column<Run>,
    /// Index of the next entry from the front.
    front: usize,
    /// Cumulative tokens before the next entry from the front.
    before: u64,
    /// The turn number of the next entry from the front, and where the run after it starts.
    run: (u32, usize),
    /// The index of that next run.
    next_run: usize,
}

impl<'a, P> Entries<'a, P> {
    pub(super) fn new(state: &'a State<P>, start: usize, end: usize, before: u64) -> Self {
        let mut entries = Self {
            records: state.entries.range(start, end),
            runs: &state.turns,
            front: start,
            before,
            run: (0, 0),
            next_run: 0,
        };
        entries.seek_run();
        entries
    }

    /// Finds the run holding `front` (by search, once).
    fn seek_run(&mut self) {
        let n = self.runs.len();
        let front = self.front;
        let after = partition_point_near(n, n, |r| {
            self.runs
                .get(r)
                .is_none_or(|run| run.start as usize > front)
        });
        let number = after
            .checked_sub(1)
            .and_then(|r| self.runs.get(r))
            .map_or(u32::MAX, |run| run.number);
        let next = self
            .runs
            .get(after)
            .map_or(usize::MAX, |run| run.start as usize);
        self.run = (number, next);
        self.next_run = after;
    }
}

impl<'a, P> Iterator for Entries<'a, P> {
    type Item = Entry<'a, P>;
    fn next(&mut self) -> Option<Entry<'a, P>> {
        let record = self.records.next()?;
        while self.front >= self.run.1 {
            // The next run starts here: step to it (runs are visited in order).
            let run = self.runs.get(self.next_run).copied();
            self.next_run += 1;
            let next = self
                .runs
                .get(self.next_run)
                .map_or(usize::MAX, |r| r.start as usize);
            self.run = (run.map_or(u32::MAX, |r| r.number), next);
        }
        let entry = Entry::of(record, self.before, self.run.0);
        self.before = record.cum_tokens();
        self.front += 1;
        Some(entry)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.records.size_hint()
    }
}

impl<P> DoubleEndedIterator for Entries<'_, P> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let back = self.front + self.records.len();
        let record = self.records.next_back()?;
        // The record before it: the next from the back, or the front's running total when
        // none is left between.
        let before = match self.records.clone().next_back() {
            Some(prev) => prev.cum_tokens(),
            None => self.before,
        };
        Some(Entry::of(record, before, turn_in(self.runs, back - 1)))
    }
}

impl<P> ExactSizeIterator for Entries<'_, P> {}
