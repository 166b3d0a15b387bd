//! The window a cut strategy keeps: its decisions, written once over any [`CutIndex`].
//!
//! A cut strategy keeps the pinned head (leading system messages and, optionally, the task)
//! plus a suffix `messages[cut..]` that starts at a safe cut. Which cut is a rule:
//!
//! - [`Rule::Budget`]: the longest suffix whose tokens fit, with the head (`FitContextWindow`);
//! - [`Rule::LastTurns`] / [`Rule::LastRounds`]: from the start of the k-th last turn / round,
//!   moved back to a safe cut (`KeepLastTurns`, `TrimRounds`);
//! - [`Rule::LastMessages`]: the longest window with at most `n` messages besides the head,
//!   or, when none is valid, the shortest valid one (`KeepLastMessages`).
//!
//! Every rule then settles the cut: never below the head's floor, never past the start of the
//! newest round, and, when no task is pinned and `start_with_user` is set, on a real user
//! message (Anthropic and Gemini need a user turn first). A window that trims then moves its
//! cut up to the newest provider compaction it would keep (what that summarised goes first).
//!
//! The decisions only ask an index questions, so one implementation serves both kinds of
//! history: a [`MessageLog`], which answers every question in O(log n), and a
//! [`Tail`](crate::tail::Tail), which holds only the end of a history (and its head) and
//! answers [`NeedMore`] when a question reaches past what it holds. The tail then reads
//! further back and asks again, so a plain list is trimmed in O(window), not O(history) (and,
//! with a tail kept from the last call, in O(new messages) plus a check of those it holds).
//!
//! Invariants: a [`Window`] keeps whole ranges in order, the head's first; its suffix starts at
//! a safe cut at or after the head's floor; `unchanged` is true exactly when the ranges cover
//! every message.

use crate::cuts::PinnedHead;
use crate::log::{Cut, MessageLog};
use crate::meta::Role;

/// The index could not answer from what it holds: read further back and ask again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeedMore;

/// An index's answer, or [`NeedMore`].
pub type Answer<T> = Result<T, NeedMore>;

/// What the cut decisions need to know about a history. Cuts and indices are positions in the
/// whole history (`0..=len`), whatever part of it the index holds.
pub trait CutIndex {
    /// Number of messages in the history.
    fn len(&self) -> usize;
    /// True if the history is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The pinned head (see [`crate::cuts::Cuts::pinned_head`]).
    fn pinned_head(&self, pin_task: bool) -> Answer<PinnedHead>;
    /// Tokens of messages `[start, end)`.
    fn tokens(&self, start: usize, end: usize) -> Answer<u64>;
    /// Whether the whole history's tokens exceed `budget`.
    fn total_exceeds(&self, budget: u64) -> Answer<bool>;
    /// Who wrote message `i` (`i < len`).
    fn role(&self, i: usize) -> Answer<Role>;
    /// The largest safe cut `<= i`.
    fn safe_cut_at_or_before(&self, i: usize) -> Answer<usize>;
    /// The smallest safe cut `>= i`.
    fn safe_cut_at_or_after(&self, i: usize) -> Answer<usize>;
    /// The largest safe cut `<= i` whose message is a real user message.
    fn user_cut_at_or_before(&self, i: usize) -> Answer<Option<usize>>;
    /// The smallest safe cut `>= i` whose message is a real user message.
    fn user_cut_at_or_after(&self, i: usize) -> Answer<Option<usize>>;
    /// The start of the k-th last user turn (`k >= 1`).
    fn kth_last_turn_start(&self, k: usize) -> Answer<Option<usize>>;
    /// The start of the k-th last round (`k >= 1`).
    fn kth_last_round_start(&self, k: usize) -> Answer<Option<usize>>;
    /// [`MessageLog::fit_budget`]: the longest safe suffix from `floor` on within `budget`.
    fn fit_budget(&self, budget: u64, floor: usize) -> Answer<Cut>;
    /// The newest message at or after `i` that holds a provider's compaction, if any.
    fn compaction_at_or_after(&self, i: usize) -> Answer<Option<usize>>;
}

impl<P> CutIndex for MessageLog<P> {
    fn len(&self) -> usize {
        MessageLog::len(self)
    }
    fn pinned_head(&self, pin_task: bool) -> Answer<PinnedHead> {
        Ok(MessageLog::pinned_head(self, pin_task))
    }
    fn tokens(&self, start: usize, end: usize) -> Answer<u64> {
        Ok(MessageLog::tokens(self, start, end))
    }
    fn total_exceeds(&self, budget: u64) -> Answer<bool> {
        Ok(self.total_tokens() > budget)
    }
    fn role(&self, i: usize) -> Answer<Role> {
        Ok(self.get(i).map_or(Role::User, |e| e.meta.role))
    }
    fn safe_cut_at_or_before(&self, i: usize) -> Answer<usize> {
        Ok(MessageLog::safe_cut_at_or_before(self, i))
    }
    fn safe_cut_at_or_after(&self, i: usize) -> Answer<usize> {
        Ok(MessageLog::safe_cut_at_or_after(self, i))
    }
    fn user_cut_at_or_before(&self, i: usize) -> Answer<Option<usize>> {
        Ok(MessageLog::user_cut_at_or_before(self, i))
    }
    fn user_cut_at_or_after(&self, i: usize) -> Answer<Option<usize>> {
        Ok(MessageLog::user_cut_at_or_after(self, i))
    }
    fn kth_last_turn_start(&self, k: usize) -> Answer<Option<usize>> {
        Ok(MessageLog::kth_last_turn_start(self, k))
    }
    fn kth_last_round_start(&self, k: usize) -> Answer<Option<usize>> {
        Ok(MessageLog::kth_last_round_start(self, k))
    }
    fn fit_budget(&self, budget: u64, floor: usize) -> Answer<Cut> {
        Ok(MessageLog::fit_budget(self, budget, floor))
    }
    fn compaction_at_or_after(&self, i: usize) -> Answer<Option<usize>> {
        Ok(self.newest_compaction().filter(|&k| k >= i))
    }
}

/// Which cut a strategy wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The longest suffix that fits this many tokens together with the pinned head.
    Budget(u64),
    /// From the start of the k-th last user turn.
    LastTurns(usize),
    /// From the start of the k-th last round.
    LastRounds(usize),
    /// About the last `n` messages besides the head.
    LastMessages(usize),
}

/// The options every cut strategy shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Keep the task (the first real user message) with the leading system messages.
    pub pin_task: bool,
    /// When no task is pinned, start the kept suffix on a real user message.
    pub start_with_user: bool,
}

/// The kept ranges of a history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Kept `[start, end)` ranges, ascending and disjoint: the head's, then the suffix.
    pub ranges: Vec<(usize, usize)>,
    /// True when the ranges keep every message.
    pub unchanged: bool,
    /// True when a budget applies and even the minimum kept is over it.
    pub over_budget: bool,
}

impl Window {
    /// The kept ranges with adjacent ones joined (the pinned system prompt and task, and
    /// the suffix right after them): one slice each.
    #[must_use]
    pub fn slices(&self) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::with_capacity(self.ranges.len());
        for &(a, b) in &self.ranges {
            match out.last_mut() {
                Some(last) if last.1 == a => last.1 = b,
                _ => out.push((a, b)),
            }
        }
        out
    }
}

/// The pinned head as kept ranges.
struct Head {
    ranges: Vec<(usize, usize)>,
    floor: usize,
    has_user: bool,
}

fn head_of(index: &impl CutIndex, pin_task: bool) -> Answer<Head> {
    let PinnedHead {
        system_end,
        task,
        floor,
        contiguous,
    } = index.pinned_head(pin_task)?;
    let mut ranges = Vec::with_capacity(2);
    match task {
        None => {
            if system_end > 0 {
                ranges.push((0, system_end));
            }
        }
        Some(_) if contiguous => ranges.push((0, floor)),
        Some(t) => {
            if system_end > 0 {
                ranges.push((0, system_end));
            }
            ranges.push((t, t + 1));
        }
    }
    Ok(Head {
        ranges,
        floor,
        has_user: task.is_some(),
    })
}

fn unchanged(index: &impl CutIndex) -> Window {
    keep_all(index.len())
}

/// The window that keeps all `len` messages.
#[must_use]
pub fn keep_all(len: usize) -> Window {
    Window {
        ranges: vec![(0, len)],
        unchanged: true,
        over_budget: false,
    }
}

/// Keep the head's ranges and `[max(cut, floor), len)`.
fn keep(index: &impl CutIndex, head: Head, cut: usize, over_budget: bool) -> Window {
    let n = index.len();
    let start = cut.max(head.floor);
    let mut ranges = head.ranges;
    let mut kept: usize = ranges.iter().map(|(a, b)| b - a).sum();
    if start < n {
        ranges.push((start, n));
        kept += n - start;
    }
    if kept == n {
        return Window {
            over_budget,
            ..unchanged(index)
        };
    }
    Window {
        ranges,
        unchanged: false,
        over_budget,
    }
}

/// The latest cut any strategy makes: the safe cut at or before the newest round's start
/// (`floor` is always a safe cut).
fn newest_round_limit(index: &impl CutIndex, floor: usize) -> Answer<usize> {
    // With no round at all (only system, empty or result messages) the newest message is the
    // minimum: a window never drops every message.
    let newest = index
        .kth_last_round_start(1)?
        .unwrap_or(index.len().saturating_sub(1));
    Ok(index.safe_cut_at_or_before(newest)?.max(floor))
}

/// Move `cut` to a user cut, so the output does not open with an assistant message when no
/// task is pinned: forwards up to `limit` first when `forward_first` (fewer tokens), else
/// backwards down to `floor` (keeps more); then the other way; else leave it.
fn user_cut(
    index: &impl CutIndex,
    cut: usize,
    floor: usize,
    forward_first: bool,
    limit: usize,
) -> Answer<usize> {
    // A user cut opens the window on a user turn. Anything else moves: an assistant message,
    // and also an empty user message or a system message, which would leave the window's
    // first non-system message an assistant's or open it on no question at all.
    if cut >= index.len() || index.user_cut_at_or_after(cut)? == Some(cut) {
        return Ok(cut);
    }
    let forward = || -> Answer<Option<usize>> {
        Ok(index.user_cut_at_or_after(cut + 1)?.filter(|&c| c <= limit))
    };
    let backward = || -> Answer<Option<usize>> {
        if cut <= floor {
            return Ok(None);
        }
        if let Some(c) = index
            .user_cut_at_or_before(cut - 1)?
            .filter(|&c| c >= floor)
        {
            return Ok(Some(c));
        }
        // The history has a user turn to open on, but none between the floor and the cut (a
        // pair reaches back over them, or the first is past the cut): the window from the
        // floor keeps the history as it is, if that opens on a user message.
        if index.role(floor)? == Role::User && index.user_cut_at_or_after(floor)?.is_some() {
            return Ok(Some(floor));
        }
        Ok(None)
    };
    let choice = if forward_first {
        match forward()? {
            Some(c) => Some(c),
            None => backward()?,
        }
    } else {
        match backward()? {
            Some(c) => Some(c),
            None => forward()?,
        }
    };
    match choice {
        Some(c) => Ok(c),

        // No real user message to start on, but the history itself starts on a user
        // message after its head (an empty one): kept from there, the window stays
        // user-first, as the history was. A history that never had one (an autonomous
        // loop) is cut where the rule says.
        None if floor < index.len() && index.role(floor)? == Role::User => Ok(floor),
        None => Ok(cut),
    }
}

fn settle(
    index: &impl CutIndex,
    options: Options,
    head: &Head,
    cut: usize,
    forward_first: bool,
    limit: usize,
) -> Answer<usize> {
    let cut = cut.max(head.floor);
    if options.start_with_user && !head.has_user {
        return user_cut(index, cut, head.floor, forward_first, limit);
    }
    Ok(cut)
}

/// A provider's compaction stands for everything before it: a window that drops anything and
/// keeps the newest compaction moves its cut up to it (to the safe cut at or before it), so
/// what it summarised is dropped first. A window that keeps everything stays as it is (an
/// index holds its suffix only when it trims), unless `must_trim` (a budget the whole history
/// is over): then what the compaction summarised goes even when the rule's minimum would
/// keep every message.
///
/// When the window must open on a user turn (`start_with_user`, no task pinned), it moves to
/// the user cut at or before that safe cut instead, if there is one at or after `cut` (the
/// provider ignores what precedes the compaction; the window must not open on an assistant
/// message). A history with no user cut at all is moved to the safe cut, as the rule says,
/// unless the window opened on its own empty user message.
fn past_compaction(
    index: &impl CutIndex,
    options: Options,
    head: &Head,
    cut: usize,
    must_trim: bool,
) -> Answer<usize> {
    let from = cut.max(head.floor);
    let head_kept: usize = head.ranges.iter().map(|(a, b)| b - a).sum();
    if !must_trim && from == head.floor && head_kept == head.floor {
        return Ok(cut); // the whole history
    }
    let Some(k) = index.compaction_at_or_after(from)? else {
        return Ok(cut);
    };
    let target = index.safe_cut_at_or_before(k)?.max(from);
    if target == from || !options.start_with_user || head.has_user {
        return Ok(target);
    }
    Ok(match index.user_cut_at_or_before(target)? {
        Some(u) if u >= from => u,
        Some(_) => from,
        // No user turn to open on: a window that opens on the history's own (empty) user
        // message stays there; one that never had a user message goes to the safe cut.
        None if from == head.floor && index.role(from)? == Role::User => from,
        None => target,
    })
}

/// Keep the head and everything from `start` (a turn or round start), moved back to a safe cut.
fn keep_from(index: &impl CutIndex, options: Options, start: Option<usize>) -> Answer<Window> {
    let Some(start) = start else {
        return Ok(unchanged(index));
    };
    let head = head_of(index, options.pin_task)?;
    let limit = newest_round_limit(index, head.floor)?;
    let cut = index.safe_cut_at_or_before(start)?;
    let cut = settle(index, options, &head, cut, false, limit)?;
    let cut = past_compaction(index, options, &head, cut, false)?;
    Ok(keep(index, head, cut, false))
}

/// The window `rule` keeps of the history `index` describes.
///
/// # Errors
/// [`NeedMore`] when the index holds too little of the history to decide.
pub fn decide(index: &impl CutIndex, rule: Rule, options: Options) -> Answer<Window> {
    let n = index.len();
    match rule {
        Rule::Budget(budget) => {
            if !index.total_exceeds(budget)? {
                return Ok(unchanged(index));
            }
            let head = head_of(index, options.pin_task)?;
            let mut head_tokens = 0;
            for &(a, b) in &head.ranges {
                head_tokens += index.tokens(a, b)?;
            }
            let cut = index
                .fit_budget(budget.saturating_sub(head_tokens), head.floor)?
                .index;
            let limit = newest_round_limit(index, head.floor)?;
            let cut = settle(index, options, &head, cut, true, limit)?;
            let cut = past_compaction(index, options, &head, cut, true)?;
            let over = head_tokens + index.tokens(cut.max(head.floor), n)? > budget;
            Ok(keep(index, head, cut, over))
        }
        Rule::LastTurns(k) => keep_from(index, options, index.kth_last_turn_start(k)?),
        Rule::LastRounds(k) => keep_from(index, options, index.kth_last_round_start(k)?),
        Rule::LastMessages(k) => {
            // At most `k` messages besides the head: the longest window that keeps no more,
            // unless none is valid (the newest round alone is longer, or a pair reaches back):
            // then the shortest valid one, which keeps more.
            let head = head_of(index, options.pin_task)?;
            let head_kept: usize = head.ranges.iter().map(|(a, b)| b - a).sum();
            if n - head_kept <= k {
                return Ok(unchanged(index));
            }
            let wanted = (n - k).max(head.floor);
            let limit = newest_round_limit(index, head.floor)?;
            let cut = index.safe_cut_at_or_after(wanted)?.min(limit);
            let cut = settle(index, options, &head, cut, true, limit)?;
            let cut = past_compaction(index, options, &head, cut, false)?;
            Ok(keep(index, head, cut, false))
        }
    }
}
