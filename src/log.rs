//! `MessageLog`: a persistent append log of messages with O(1) snapshots and forks.
//!
//! Invariants:
//! - Entries only change by `push`/`extend` (append), `clear`, `replace_prefix` and
//!   `remove_turn`; the last three bump the generation, appends do not.
//! - A clone (snapshot, fork) is a value: nothing done to the original afterwards is visible in
//!   it, and nothing done to it is visible in the original.
//! - Every entry's cumulative token count is the sum of `meta.tokens` of it and all entries
//!   before it; the cut index (safe cuts, turns, rounds, the call-id map) always describes
//!   exactly the entries present.
//! - Turn numbers never decrease along the log, so one turn's messages are contiguous.
//!
//! Design notes
//! ============
//!
//! Structural sharing
//! ------------------
//! The obvious `RwLock<Arc<Vec<Entry>>>` with `Arc::make_mut` makes a snapshot O(1), but the
//! first append after every snapshot copies the whole vector: an agent that snapshots before
//! each model call pays O(n) per step, which fails the "append stays flat while snapshots are
//! alive" requirement. The log is instead a [`Column`] of records: full chunks of 64 records,
//! immutable and shared, in an `imbl::Vector`, and a tail of fewer than 64 that grows by half
//! and is copied (at most 63 records) by the first push after a clone; clone is O(1) and
//! push amortised O(1) also while clones are alive. The safe cuts, turn and round starts
//! (`Cuts`: `Column`s of `u32` positions and a B-tree of call-id hashes) and the turn runs
//! live in the same value, and the whole state sits behind one more `Arc`: a snapshot is one
//! reference-count bump, and the first write after it copies the roots once.
//!
//! Memory per entry
//! ----------------
//! An agent server holds thousands of short sessions, so an entry and a short log's fixed
//! cost are both kept small (`tests/log_memory.rs` counts them: 45 bytes per entry for a
//! 50-message log, 37 at 1,000):
//! - A record is 16 bytes: an `Arc<Item>` (the message and its facts, shared: the bindings
//!   keep one item per Python message, so every session, snapshot and fork holding a message
//!   holds the same one) and the running token total with the turn's side in its low bit.
//!   The entry's own count is the difference of two totals, so a count given by an exact
//!   counter needs no copy of the facts. Turn numbers change once per turn: they are kept as
//!   runs (first entry, number), 8 bytes a turn.
//! - A `Column` allocates nothing while empty and its tail grows by half (4, 6, 9, 13, …), so
//!   a short sequence costs about its items; an `imbl::Vector` takes a whole 64-slot chunk
//!   as soon as it leaves its inline buffer.
//! - The cut index stores positions as `u32` (at most [`MAX_MESSAGES`] messages) and the
//!   call map as a B-tree of 64-bit id hashes (a HAMT allocates 32-slot nodes however few
//!   ids they hold).
//!
//! Generations
//! -----------
//! Compaction reads a snapshot, asks an LLM for a summary (seconds), then writes. Meanwhile the
//! agent may have appended. `replace_prefix(upto, new, expected_generation)` replaces only
//! `[0, upto)` and keeps what came after; if the log was cleared, compacted or had a turn
//! removed since the snapshot (the generation moved), it refuses and changes nothing. Appends
//! do not bump the generation: they never invalidate an index below the old length. A fork
//! keeps the generation of its parent (both start from the same history). `catch_up` lets a
//! caller run the O(n) rewrite outside its lock and then replay the appends that raced it.
//!
//! Costs
//! -----
//! `snapshot`/`fork`: O(1). `push`: amortised O(1) plus O(log n) per tool block (the call
//! map), also while clones are alive. `tokens(a, b)`: two lookups in the running totals, O(1)
//! in the tail and O(log₆₄ n) before it. Reading entry `i`'s turn: O(log t) over the t turn
//! runs, galloping from the newest; iterating entries steps through the runs in order.
//! Cut queries: searches that gallop from where the answer should be, O(log n) probes at
//! worst and O(log d) for an answer d places from that guess — a budget's cut lies near the
//! end, so `fit_budget` costs the same at 100k entries as at 1k.
//! `clear`: O(1). `replace_prefix` and `remove_turn` rebuild: O(n).
//!
//! Measured (`cargo bench --bench core`, release, the 2-core VM shared with other jobs; best
//! of 2 runs; 1k / 10k / 100k entries). In brackets, the `imbl`-vector log of `Arc<Entry>`s
//! this replaced, best of 3 runs interleaved with these:
//!
//! | operation | 1k | 10k | 100k |
//! |---|---|---|---|
//! | push, no live snapshot | 136 ns (194) | 129 ns (216) | 169 ns (294) |
//! | push, snapshot taken before each push and kept | 478 ns (754) | 486 ns (903) | 520 ns (714) |
//! | snapshot / fork | 9.8 ns (10.3) | 9.7 ns (11.5) | 9.6 ns (10.9) |
//! | fork, then push to it | 851 ns (1154) | 562 ns (773) | 804 ns (1161) |
//! | `fit_budget(8_000)` | 62 ns (85) | 57 ns (84) | 54 ns (83) |
//! | `tokens(a, b)` | 8.5 ns (15.4) | 11.2 ns (24.5) | 18.9 ns (28.7) |
//! | agent step: 4 pushes + snapshot + `fit_budget` | 0.61 µs (0.68) | 0.52 µs (0.61) | 0.64 µs (0.69) |

use std::fmt;
use std::sync::Arc;

mod entry;
mod error;

use entry::{turn_in, Entries, Record, Run};
pub use entry::{Entry, Item};
pub use error::LogError;

use crate::column::Column;
use crate::cuts::{Cuts, PinnedHead, MAX_MESSAGES};
use crate::meta::{Meta, Role};
use crate::search::{partition_point, partition_point_near};
use crate::turn::{Owner, TurnCounter, TurnId};

/// The answer of [`MessageLog::fit_budget`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    /// Keep `messages[index..]`; always a safe cut.
    pub index: usize,
    /// Tokens of the kept messages.
    pub kept_tokens: u64,
    /// Whether `kept_tokens` is within the budget. False when even the newest round alone is
    /// over budget: then `index` keeps that minimum anyway.
    pub fits: bool,
}

/// The answer of [`MessageLog::stable_cut`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StableCut {
    /// Keep `messages[index..]`; always a safe cut.
    pub index: usize,
    /// Tokens of the kept messages.
    pub kept_tokens: u64,
    /// How many trims the replay made (how often the window's prefix changed so far).
    pub trims: usize,
}

/// The provider's last reported input tokens and the log length when it was reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Anchor {
    at: usize,
    reported: u64,
}

/// A persistent append log of messages. `Clone` is the O(1) snapshot/fork.
pub struct MessageLog<P> {
    /// Everything behind one `Arc`, so a snapshot is a single reference-count bump (~5 ns)
    /// rather than one per tree root (~20 of them, ~150 ns); the first write after a snapshot
    /// pays that copy instead (`Arc::make_mut`), and later writes find the state unshared.
    s: Arc<State<P>>,
}

/// The log's state; every part is persistent, so copying it copies roots, not entries.
struct State<P> {
    entries: Column<Record<P>>,
    /// The turn numbers, one run per change.
    turns: Column<Run>,
    index: Cuts,
    counter: TurnCounter,
    generation: u64,
    anchor: Option<Anchor>,
}

// Manual impls: a derive would demand `P: Clone`/`P: Debug`, but cloning only copies `Arc`s
// and tree roots.
impl<P> Clone for MessageLog<P> {
    fn clone(&self) -> Self {
        Self {
            s: Arc::clone(&self.s),
        }
    }
}

impl<P> Clone for State<P> {
    fn clone(&self) -> Self {
        Self {
            entries: self.entries.clone(),
            turns: self.turns.clone(),
            index: self.index.clone(),
            counter: self.counter,
            generation: self.generation,
            anchor: self.anchor,
        }
    }
}

impl<P> fmt::Debug for MessageLog<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageLog")
            .field("len", &self.s.entries.len())
            .field("generation", &self.s.generation)
            .field("current_turn", &self.s.counter.current())
            .field("total_tokens", &self.total_tokens())
            .finish_non_exhaustive()
    }
}

impl<P> Default for MessageLog<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P> FromIterator<(P, Meta)> for MessageLog<P> {
    fn from_iter<I: IntoIterator<Item = (P, Meta)>>(iter: I) -> Self {
        let mut log = Self::new();
        log.extend(iter);
        log
    }
}

impl<P> MessageLog<P> {
    /// An empty log at generation 0.
    #[must_use]
    pub fn new() -> Self {
        Self {
            s: Arc::new(State {
                entries: Column::new(),
                turns: Column::new(),
                index: Cuts::new(),
                counter: TurnCounter::new(),
                generation: 0,
                anchor: None,
            }),
        }
    }

    /// The state, unshared first if a snapshot or fork holds it too.
    fn state_mut(&mut self) -> &mut State<P> {
        Arc::make_mut(&mut self.s)
    }

    /// Number of messages.
    #[must_use]
    pub fn len(&self) -> usize {
        self.s.entries.len()
    }

    /// True if the log holds no message.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.s.entries.is_empty()
    }

    /// The generation: bumped by `clear`, `replace_prefix` and `remove_turn`, not by appends.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.s.generation
    }

    /// Appends a message and returns its index. Amortised O(1), also while snapshots are alive.
    ///
    /// A message with a caller-given turn id ([`Meta::turn`]) gets exactly that id and moves
    /// the counter to its number; appends check first with [`MessageLog::check_turns`]. In a
    /// rewrite (`replace_prefix` puts new messages before kept ones) an id below the current
    /// turn is numbered at the current turn, keeping turns contiguous. Otherwise a real user
    /// message starts the next turn, and every message gets the current turn number.
    pub fn push(&mut self, payload: P, meta: Meta) -> usize {
        let tokens = meta.tokens;
        self.push_item(Item::new(payload, meta), tokens)
    }

    /// [`MessageLog::push`] of a shared message, counted as `tokens` (its `meta.tokens` is
    /// not read). At most [`MAX_MESSAGES`] messages (~64 GB of records, beyond any real
    /// process): callers check [`MessageLog::check_room`] first (the bindings refuse with an
    /// error); a push past it anyway is dropped rather than wrap a stored position.
    pub fn push_item(&mut self, item: Arc<Item<P>>, tokens: u32) -> usize {
        if self.len() >= MAX_MESSAGES {
            return self.len();
        }
        let s = self.state_mut();
        let meta = &item.meta;
        let turn = if let Some(given) = meta.turn {
            s.counter.raise_to(given.number);
            TurnId {
                owner: given.owner,
                number: s.counter.current(),
            }
        } else {
            if meta.is_real_user() {
                s.counter.advance();
            }
            TurnId {
                owner: owner_of(meta.role),
                number: s.counter.current(),
            }
        };
        self.push_entry(item, tokens, turn)
    }

    /// Checks that `more` messages can be appended (or that a rewrite may leave
    /// `len() + more`): the log holds at most [`MAX_MESSAGES`].
    ///
    /// # Errors
    /// [`LogError::Full`] otherwise.
    pub fn check_room(&self, more: usize) -> Result<(), LogError> {
        let len = self.len().saturating_add(more);
        if len > MAX_MESSAGES {
            return Err(LogError::Full { len });
        }
        Ok(())
    }

    /// Checks that appending messages with these facts, in order, keeps turn numbers from
    /// going back: every caller-given turn id must be at least the turn the log (or the
    /// message before it) is at.
    ///
    /// # Errors
    /// [`LogError::TurnOutOfOrder`] for the first id that goes back.
    pub fn check_turns<'a>(
        &self,
        metas: impl IntoIterator<Item = &'a Meta>,
    ) -> Result<(), LogError> {
        let mut current = self.s.counter;
        for meta in metas {
            match meta.turn {
                Some(given) if given.number < current.current() => {
                    return Err(LogError::TurnOutOfOrder {
                        given,
                        current: current.current(),
                    });
                }
                Some(given) => current.raise_to(given.number),
                None if meta.is_real_user() => {
                    current.advance();
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Appends a message with a turn id decided by the caller (rebuilds).
    fn push_entry(&mut self, item: Arc<Item<P>>, tokens: u32, turn: TurnId) -> usize {
        let s = self.state_mut();
        let n = s.entries.len();
        // No overflow: at most u32::MAX entries of at most u32::MAX tokens each.
        let cum_tokens = s
            .entries
            .last()
            .map_or(0, Record::cum_tokens)
            .saturating_add(u64::from(tokens));
        let entries = &s.entries;
        s.index
            .push(&item.meta, |u| entries.get(u).map(|r| &r.item.meta));
        s.entries.push(Record::new(item, cum_tokens, turn.owner));
        if s.turns.last().is_none_or(|run| run.number != turn.number) {
            s.turns.push(Run {
                start: n as u32, // n < MAX_MESSAGES
                number: turn.number,
            });
        }
        n
    }

    /// Appends shared messages with their token counts, in order.
    pub fn extend_items<I: IntoIterator<Item = (Arc<Item<P>>, u32)>>(&mut self, items: I) {
        for (item, tokens) in items {
            self.push_item(item, tokens);
        }
    }

    /// Appends every message in order.
    pub fn extend<I: IntoIterator<Item = (P, Meta)>>(&mut self, items: I) {
        for (payload, meta) in items {
            self.push(payload, meta);
        }
    }

    /// The entry at `i`, or `None` past the end.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<Entry<'_, P>> {
        let record = self.s.entries.get(i)?;
        Some(Entry::of(
            record,
            self.tokens_before(i),
            turn_in(&self.s.turns, i),
        ))
    }

    /// The last entry.
    #[must_use]
    pub fn last(&self) -> Option<Entry<'_, P>> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// All entries in order.
    #[must_use]
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Entry<'_, P>> + ExactSizeIterator + '_ {
        self.range(0, self.len())
    }

    /// Entries `start..end`, both clamped to the log (an empty range if `start >= end`).
    #[must_use]
    pub fn range(
        &self,
        start: usize,
        end: usize,
    ) -> impl DoubleEndedIterator<Item = Entry<'_, P>> + ExactSizeIterator + '_ {
        let end = end.min(self.len());
        let start = start.min(end);
        Entries::new(&self.s, start, end, self.tokens_before(start))
    }

    /// The payloads of entries `start..end`, both clamped (a cheaper walk than
    /// [`MessageLog::range`] when only the messages are wanted).
    #[must_use]
    pub fn payloads(
        &self,
        start: usize,
        end: usize,
    ) -> impl DoubleEndedIterator<Item = &P> + ExactSizeIterator + '_ {
        self.s.entries.range(start, end).map(|r| &r.item.payload)
    }

    /// An O(1) immutable copy: later changes to either side are invisible to the other.
    #[must_use]
    pub fn snapshot(&self) -> Self {
        self.clone()
    }

    /// An O(1) independent branch with the same history and generation.
    #[must_use]
    pub fn fork(&self) -> Self {
        self.clone()
    }

    /// Removes every message, restarts turn numbering at 0, drops the calibration and bumps
    /// the generation. Snapshots taken before keep their messages.
    pub fn clear(&mut self) {
        let generation = self.s.generation.wrapping_add(1);
        *self = Self::new();
        self.state_mut().generation = generation;
    }

    /// Replaces entries `[0, upto)` with `new` if the generation still equals
    /// `expected_generation`; entries at and after `upto` (appended after the caller's
    /// snapshot, say) are kept after `new`.
    ///
    /// Turn numbers are recomputed from 0 over the new history (as if it were built afresh),
    /// prefix sums and indexes are rebuilt (O(n)), the calibration anchor is dropped and the
    /// generation bumped. On error nothing changes.
    ///
    /// # Errors
    /// [`LogError::StaleGeneration`] if the generation moved; [`LogError::OutOfRange`] if
    /// `upto > len`.
    pub fn replace_prefix(
        &mut self,
        upto: usize,
        new: Vec<(P, Meta)>,
        expected_generation: u64,
    ) -> Result<(), LogError> {
        self.replace_prefix_items(upto, items_of(new), expected_generation)
    }

    /// [`MessageLog::replace_prefix`] with shared messages and their token counts.
    ///
    /// # Errors
    /// As [`MessageLog::replace_prefix`].
    pub fn replace_prefix_items(
        &mut self,
        upto: usize,
        new: Vec<(Arc<Item<P>>, u32)>,
        expected_generation: u64,
    ) -> Result<(), LogError> {
        self.check_generation(expected_generation)?;
        let len = self.len();
        if upto > len {
            return Err(LogError::OutOfRange { index: upto, len });
        }
        if new.len() > upto {
            self.check_room(new.len() - upto)?;
        }
        let kept = self
            .range(upto, len)
            .map(|e| (Arc::clone(e.item()), e.tokens));
        let mut fresh = Self::new();
        fresh.extend_items(new.into_iter().chain(kept));
        fresh.state_mut().generation = self.s.generation.wrapping_add(1);
        *self = fresh;
        Ok(())
    }

    /// Like [`MessageLog::replace_prefix`] without the generation check: for callers that hold
    /// the log's lock across their read and write.
    ///
    /// # Errors
    /// [`LogError::OutOfRange`] if `upto > len`.
    pub fn replace_prefix_unchecked(
        &mut self,
        upto: usize,
        new: Vec<(P, Meta)>,
    ) -> Result<(), LogError> {
        self.replace_prefix(upto, new, self.s.generation)
    }

    /// `Ok` if the log is at `expected_generation` and holds exactly `expected_length`
    /// messages (nothing appended since a caller read that length).
    ///
    /// # Errors
    /// [`LogError::StaleGeneration`] if the generation moved, else [`LogError::StaleLength`]
    /// if the length differs.
    pub fn check_length(
        &self,
        expected_generation: u64,
        expected_length: usize,
    ) -> Result<(), LogError> {
        self.check_generation(expected_generation)?;
        let len = self.len();
        if len == expected_length {
            Ok(())
        } else {
            Err(LogError::StaleLength {
                generation: expected_generation,
                expected: expected_length,
                actual: len,
            })
        }
    }

    fn check_generation(&self, expected: u64) -> Result<(), LogError> {
        if expected == self.s.generation {
            Ok(())
        } else {
            Err(LogError::StaleGeneration {
                expected,
                actual: self.s.generation,
            })
        }
    }

    /// Drops every message of turn `number` (they are contiguous) and returns how many.
    ///
    /// Later messages keep their turn numbers (a turn id stays a stable name). The counter
    /// is then the turn of the newest message kept (0 if none), as for a log built afresh
    /// from the same messages, which is what a persistent store reads back: a removed number
    /// below a kept turn is never handed out again; the number of a removed newest turn is.
    /// Indexes and prefix sums are rebuilt (O(n)), the calibration anchor is dropped and the
    /// generation bumped.
    ///
    /// # Errors
    /// [`LogError::NoSuchTurn`] if no message has that turn number (nothing changes).
    pub fn remove_turn(&mut self, number: u32) -> Result<usize, LogError> {
        self.remove_turn_part(TurnId::user(number))
    }

    /// Drops the assistant side of turn `number`: its messages from the first assistant
    /// message on (the reply, its tool calls, their results and any later messages of the
    /// turn), keeping the user's messages that opened the turn. Otherwise as
    /// [`MessageLog::remove_turn`].
    ///
    /// # Errors
    /// [`LogError::NoSuchTurn`] if no message has that turn number,
    /// [`LogError::NoAssistantSide`] if the turn has no assistant message (nothing changes).
    pub fn remove_assistant_turn(&mut self, number: u32) -> Result<usize, LogError> {
        self.remove_turn_part(TurnId::assistant(number))
    }

    /// The range `[start, end)` that removing `turn` drops (the whole turn for a user id, its
    /// assistant side for an assistant id).
    ///
    /// # Errors
    /// As [`MessageLog::remove_turn`] / [`MessageLog::remove_assistant_turn`], and
    /// [`LogError::SplitsToolPair`] if a tool call and its result would end up on different
    /// sides of the removal (possible only with caller-given turn ids).
    pub fn turn_range(&self, turn: TurnId) -> Result<(usize, usize), LogError> {
        let number = turn.number;
        let len = self.len();
        let mut start = partition_point(len, |i| self.turn_number(i) >= number);
        let end = partition_point(len, |i| self.turn_number(i) > number);
        if start >= end {
            return Err(LogError::NoSuchTurn(number));
        }
        if turn.owner == Owner::Assistant {
            start = self
                .range(start, end)
                .position(|e| e.turn.owner == Owner::Assistant)
                .map(|p| start + p)
                .ok_or(LogError::NoAssistantSide(number))?;
        }
        // Calls removed whose results are kept (after the range), and results removed whose
        // calls are kept (before it). Ids can be reused later, so a later call with the same
        // id ends the search for that id.
        let mut calls: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let mut results: Vec<&str> = Vec::new();
        for e in self.range(start, end) {
            for id in e.meta.tool_results.iter() {
                if !calls.contains(&**id) {
                    results.push(id);
                }
            }
            calls.extend(e.meta.tool_uses.iter().map(|id| &**id));
        }
        let split = |id: &str| LogError::SplitsToolPair {
            turn,
            id: id.into(),
        };
        for e in self.range(end, len) {
            if calls.is_empty() {
                break;
            }
            if let Some(id) = e.meta.tool_results.iter().find(|id| calls.contains(&***id)) {
                return Err(split(id));
            }
            for id in e.meta.tool_uses.iter() {
                calls.remove(&**id);
            }
        }
        for id in results {
            if self
                .range(0, start)
                .any(|e| e.meta.tool_uses.iter().any(|u| &**u == id))
            {
                return Err(split(id));
            }
        }
        Ok((start, end))
    }

    fn remove_turn_part(&mut self, turn: TurnId) -> Result<usize, LogError> {
        let len = self.len();
        let (start, end) = self.turn_range(turn)?;
        // Entries before the turn are unchanged (same turn, same cumulative tokens): share
        // them. Later ones need new cumulative counts, so they are rebuilt.
        let mut rebuilt = Self {
            s: Arc::new(State {
                entries: self.s.entries.take(start),
                turns: self.runs_before(start),
                index: Cuts::from_metas(self.range(0, start).map(|e| e.meta)),
                counter: self.s.counter,
                generation: self.s.generation.wrapping_add(1),
                anchor: None,
            }),
        };
        for e in self.range(end, len) {
            rebuilt.push_entry(Arc::clone(e.item()), e.tokens, e.turn);
        }
        let newest = rebuilt.s.turns.last().map_or(0, |run| run.number);
        let mut counter = TurnCounter::new();
        counter.raise_to(newest);
        rebuilt.state_mut().counter = counter;
        *self = rebuilt;
        Ok(end - start)
    }

    /// Replaces the message at `index` by `payload`/`meta`, keeping its turn id and every
    /// other entry (a stored message edited in place, e.g. a tool result given a summary).
    /// Prefix sums from `index` on are rebuilt (O(n)), the calibration anchor is dropped and
    /// the generation bumped (the history was rewritten, not appended to), if the generation
    /// still equals `expected_generation`.
    ///
    /// # Errors
    /// [`LogError::StaleGeneration`] if the generation moved; [`LogError::OutOfRange`] if
    /// `index >= len`. On error nothing changes.
    pub fn replace_at(
        &mut self,
        index: usize,
        payload: P,
        meta: Meta,
        expected_generation: u64,
    ) -> Result<(), LogError> {
        let tokens = meta.tokens;
        self.replace_at_item(index, Item::new(payload, meta), tokens, expected_generation)
    }

    /// [`MessageLog::replace_at`] with a shared message and its token count.
    ///
    /// # Errors
    /// As [`MessageLog::replace_at`].
    pub fn replace_at_item(
        &mut self,
        index: usize,
        item: Arc<Item<P>>,
        tokens: u32,
        expected_generation: u64,
    ) -> Result<(), LogError> {
        self.check_generation(expected_generation)?;
        let len = self.len();
        if index >= len {
            return Err(LogError::OutOfRange { index, len });
        }
        let Some(turn) = self.get(index).map(|e| e.turn) else {
            return Err(LogError::OutOfRange { index, len });
        };
        let mut rebuilt = Self {
            s: Arc::new(State {
                entries: self.s.entries.take(index),
                turns: self.runs_before(index),
                index: Cuts::from_metas(self.range(0, index).map(|e| e.meta)),
                counter: self.s.counter,
                generation: self.s.generation.wrapping_add(1),
                anchor: None,
            }),
        };
        rebuilt.push_entry(item, tokens, turn);
        for e in self.range(index + 1, len) {
            rebuilt.push_entry(Arc::clone(e.item()), e.tokens, e.turn);
        }
        *self = rebuilt;
        Ok(())
    }

    /// Finishes an optimistic rewrite: `self` is the result of rewriting `base` (by
    /// `replace_prefix` or `remove_turn`, run without holding the owner's lock), `current` is
    /// the owner's log now. If `current` is `base` plus appends only (same generation, not
    /// shorter), those appends are replayed onto `self` (turns assigned by `self`'s counter)
    /// and `true` is returned: install `self`. Otherwise another rewrite or a `clear` won the
    /// race; `self` is left as it was and `false` says to retry on `current`. O(appends since).
    ///
    /// A calibration made on `current` meanwhile is dropped, as every rewrite drops it: the
    /// reported count described the history before the rewrite.
    pub fn catch_up(&mut self, base: &Self, current: &Self) -> bool {
        if current.generation() != base.generation() || current.len() < base.len() {
            return false;
        }
        for e in current.range(base.len(), current.len()) {
            self.push_item(Arc::clone(e.item()), e.tokens);
        }
        true
    }

    /// Turn number of entry `i` (`u32::MAX` past the end, which sorts after every turn).
    fn turn_number(&self, i: usize) -> u32 {
        if i >= self.len() {
            return u32::MAX;
        }
        turn_in(&self.s.turns, i)
    }

    /// The turn runs of entries `0..i`.
    fn runs_before(&self, i: usize) -> Column<Run> {
        let runs = &self.s.turns;
        let kept = partition_point(runs.len(), |r| {
            runs.get(r).is_none_or(|run| run.start as usize >= i)
        });
        runs.take(kept)
    }

    /// Tokens of all entries before `i` (`i` clamped to the log).
    fn tokens_before(&self, i: usize) -> u64 {
        match i.min(self.len()).checked_sub(1) {
            None => 0,
            Some(last) => self.s.entries.get(last).map_or(0, Record::cum_tokens),
        }
    }

    /// Tokens of the whole log.
    #[must_use]
    pub fn total_tokens(&self) -> u64 {
        self.s.entries.last().map_or(0, Record::cum_tokens)
    }

    /// Tokens of entries `start..end`, both clamped (0 if `start >= end`). O(log₆₄ n).
    #[must_use]
    pub fn tokens(&self, start: usize, end: usize) -> u64 {
        let end = end.min(self.len());
        let start = start.min(end);
        self.tokens_before(end) - self.tokens_before(start)
    }

    /// Anchors the estimate to the provider's last reported input tokens, at the current
    /// length: [`MessageLog::estimated_context_tokens`] is then `reported` plus the tokens of
    /// what is appended afterwards.
    pub fn calibrate(&mut self, reported_input_tokens: u64) {
        let at = self.len();
        self.state_mut().anchor = Some(Anchor {
            at,
            reported: reported_input_tokens,
        });
    }

    /// The provider's last reported input tokens, if [`MessageLog::calibrate`] was called
    /// since the last `clear`, `replace_prefix` or `remove_turn`.
    #[must_use]
    pub fn reported_tokens(&self) -> Option<u64> {
        self.s.anchor.map(|a| a.reported)
    }

    /// The context size to expect: reported + tokens appended since the calibration, or
    /// [`MessageLog::total_tokens`] if never calibrated.
    #[must_use]
    pub fn estimated_context_tokens(&self) -> u64 {
        match self.s.anchor {
            Some(a) => a.reported.saturating_add(self.tokens(a.at, self.len())),
            None => self.total_tokens(),
        }
    }

    /// Number of user turns present (real user messages in the log).
    #[must_use]
    pub fn turn_count(&self) -> u32 {
        u32::try_from(self.s.index.turn_count()).unwrap_or(u32::MAX)
    }

    /// The current turn number (0 before the first real user message). After `remove_turn`
    /// it can exceed [`MessageLog::turn_count`]: a removed turn number below the newest kept turn is not reused.
    #[must_use]
    pub fn current_turn(&self) -> u32 {
        self.s.counter.current()
    }

    /// Number of rounds (see [`crate::cuts`]).
    #[must_use]
    pub fn round_count(&self) -> usize {
        self.s.index.round_count()
    }

    /// The cut index of the log (safe cuts, turn and round starts).
    #[must_use]
    pub fn cuts(&self) -> &Cuts {
        &self.s.index
    }

    /// Whether keeping `messages[i..]` separates no tool call from its result. False for
    /// `i > len`. O(log n).
    #[must_use]
    pub fn is_safe_cut(&self, i: usize) -> bool {
        self.s.index.is_safe_cut(i)
    }

    /// The largest safe cut `<= i` (`i` clamped to `len`; 0 is always safe). O(log n).
    #[must_use]
    pub fn safe_cut_at_or_before(&self, i: usize) -> usize {
        self.s.index.safe_cut_at_or_before(i)
    }

    /// The smallest safe cut `>= i` (`i` clamped to `len`; `len` is always safe: keeping
    /// nothing drops calls and results together). O(log n).
    #[must_use]
    pub fn safe_cut_at_or_after(&self, i: usize) -> usize {
        self.s.index.safe_cut_at_or_after(i)
    }

    /// The longest pair-safe suffix that fits `budget` tokens, never cutting below `floor`
    /// (the caller's pinned head) nor past the newest round.
    ///
    /// Returns the smallest safe cut `i` with `floor <= i <= limit` and
    /// `tokens(i, len) <= budget`, where `limit` is the safe cut at or before the start of the
    /// newest round (`len` if there is no round), raised to the first safe cut at or after
    /// `floor` if that is larger. If no such cut fits, returns `limit` with `fits = false`:
    /// the minimum worth keeping, over budget. O(log² n).
    #[must_use]
    pub fn fit_budget(&self, budget: u64, floor: usize) -> Cut {
        self.fit_budget_within(budget, floor, self.len())
    }

    /// [`MessageLog::fit_budget`] as if the log ended at `end` (clamped): the cut that keeps
    /// `messages[i..end]` within `budget`, with the newest round taken among the messages
    /// before `end`. Safe cuts are the whole log's, so the cut is safe for the log as it is.
    #[must_use]
    pub fn fit_budget_within(&self, budget: u64, floor: usize, end: usize) -> Cut {
        let end = end.min(self.len());
        let lowest = self.safe_cut_at_or_after(floor.min(end));
        let newest_round = self
            .s
            .index
            .round_start_before(end)
            .unwrap_or(end.saturating_sub(1));
        let limit = self.safe_cut_at_or_before(newest_round).max(lowest);
        // tokens(i, end) only shrinks as i grows: find the first i where it fits.
        let need = self.tokens_before(end).saturating_sub(budget);
        // The kept suffix is usually short: search back from the end.
        let first_fitting = partition_point_near(end + 1, end, |i| self.tokens_before(i) >= need);
        let candidate = self.safe_cut_at_or_after(first_fitting.max(lowest));
        let (index, fits) = if candidate <= limit {
            (candidate, true)
        } else {
            (limit, false)
        };
        Cut {
            index,
            kept_tokens: self.tokens(index, end),
            fits,
        }
    }

    /// The cut of a cache-stable window: the kept suffix starts at a cut that moves only when
    /// the window (`fixed` tokens of pinned head plus the suffix) grows past `high`, and then
    /// jumps to the longest safe suffix within `low`.
    ///
    /// Computed by replaying the history's growth from `floor`: find the first length at which
    /// the window exceeds `high`, trim it to `low` as of that length, repeat. So the cut is a
    /// function of the history alone, the window's prefix is identical between trims, and two
    /// trims are at least `high - low` tokens of new messages apart (every window is over
    /// `high` when `fixed` alone is). A trim that cannot move the cut (the newest round alone
    /// is over `low`) is retried at the next round start, or at the next message while no
    /// round has started.
    /// With `user_start`, a trim moves the cut back to the nearest user cut (a suffix opening
    /// with a user turn), or not at all if there is none after the current cut.
    ///
    /// Keeping the window only shrinks every later window of the replay, so replaying the
    /// window itself trims nothing: the strategy built on it is idempotent.
    /// O(trims · log² n).
    #[must_use]
    pub fn stable_cut(
        &self,
        fixed: u64,
        high: u64,
        low: u64,
        floor: usize,
        user_start: bool,
    ) -> StableCut {
        let len = self.len();
        let mut cut = self.safe_cut_at_or_after(floor);
        // None: the pinned head alone is over `high`, so every window is.
        let room = high.checked_sub(fixed);
        let target = low.saturating_sub(fixed);
        let mut trims = 0;
        let mut from = cut + 1;
        while from <= len {
            // The first length e >= from at which the window is over `high`.
            let base = self.tokens_before(cut);
            let over = partition_point(len + 1 - from, |d| {
                room.is_none_or(|room| self.tokens_before(from + d) - base > room)
            }) + from;
            if over > len {
                break;
            }
            let mut next = self.fit_budget_within(target, cut, over).index;
            if user_start {
                next = self
                    .user_cut_at_or_before(next)
                    .filter(|&u| u > cut)
                    .unwrap_or(cut);
            }
            if next > cut {
                cut = next;
                trims += 1;
                from = over + 1;
            } else if user_start {
                // Stuck until a trim reaches the next user cut `u`: the trim's target passes
                // `u` once the suffix from the safe cut before `u` is over `target`, and its
                // limit (the newest round) passes `u` once `u` is in the window.
                let Some(u) = self.user_cut_at_or_after(cut + 1) else {
                    break;
                };
                let p = self.safe_cut_at_or_before(u - 1);
                let base_p = self.tokens_before(p);
                let first = u + 1;
                if first > len {
                    break;
                }
                let reach = partition_point(len + 1 - first, |d| {
                    self.tokens_before(first + d) - base_p > target
                }) + first;
                from = reach.max(over + 1);
            } else if self.s.index.round_start_before(over).is_some() {
                // Stuck on one big round: nothing changes until a new round starts.
                match self.s.index.round_start_at_or_after(over) {
                    Some(r) => from = r + 1,
                    None => break,
                }
            } else {
                // No round has started yet: the trim keeps at least the window's last message,
                // which moves with every message until one does.
                from = over + 1;
            }
        }
        StableCut {
            index: cut,
            kept_tokens: self.tokens(cut, len),
            trims,
        }
    }

    /// The newest message holding a provider's compaction, if any. O(1).
    #[must_use]
    pub fn newest_compaction(&self) -> Option<usize> {
        self.s.index.newest_compaction()
    }

    /// The pinned head (see [`Cuts::pinned_head`]). O(log n).
    #[must_use]
    pub fn pinned_head(&self, pin_task: bool) -> PinnedHead {
        self.s.index.pinned_head(pin_task)
    }

    /// The largest safe cut `<= i` whose message is a real user message. O(log n).
    #[must_use]
    pub fn user_cut_at_or_before(&self, i: usize) -> Option<usize> {
        self.s.index.user_cut_at_or_before(i)
    }

    /// The smallest safe cut `>= i` whose message is a real user message. O(log n).
    #[must_use]
    pub fn user_cut_at_or_after(&self, i: usize) -> Option<usize> {
        self.s.index.user_cut_at_or_after(i)
    }

    /// The start of the `k`-th last user turn (`k = 1`: the newest); `None` if `k == 0` or
    /// there are fewer than `k` turns. O(log n).
    #[must_use]
    pub fn kth_last_turn_start(&self, k: usize) -> Option<usize> {
        self.s.index.kth_last_turn_start(k)
    }

    /// The start of the `k`-th last round (`k = 1`: the newest); `None` if `k == 0` or there
    /// are fewer than `k` rounds. O(log n).
    #[must_use]
    pub fn kth_last_round_start(&self, k: usize) -> Option<usize> {
        self.s.index.kth_last_round_start(k)
    }
}

/// Messages and their facts as shared items, counted as their facts say.
fn items_of<P>(new: Vec<(P, Meta)>) -> Vec<(Arc<Item<P>>, u32)> {
    new.into_iter()
        .map(|(payload, meta)| {
            let tokens = meta.tokens;
            (Item::new(payload, meta), tokens)
        })
        .collect()
}

fn owner_of(role: Role) -> Owner {
    match role {
        Role::Assistant => Owner::Assistant,
        Role::User | Role::System => Owner::User,
    }
}

#[cfg(test)]
mod tests;
