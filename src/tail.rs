//! [`Tail`]: the end of a history and its head, enough to decide a window without the middle.
//!
//! A strategy on a plain list should cost O(window), not O(history): an agent appends a few
//! messages and trims again, and the window it keeps is a few hundred messages of a history
//! that may hold a hundred thousand. Every cut decision looks at the pinned head (the front)
//! and at cuts near the end, and a cut's safety can be read walking back from the end:
//!
//! Walking back from the last message, keep the set of *open* results: results already passed
//! whose call has not been met yet. Message `p`'s calls close the open results with their ids
//! (a result answers the latest earlier message issuing its id, and walking back that is the
//! first one met), then its own results open (a message's results never answer its own
//! calls). Cut `p` is safe exactly when no open result at `p` has a call before `p`. A result
//! still open at the start of the region read, `lo`, either has its call before `lo` or is an
//! orphan (no call at all, which constrains nothing); which one is unknown, so every cut up to
//! the latest such result is *uncertain*, and cuts above it are exact. A question whose answer
//! depends on an uncertain cut, or on a message not read, answers [`NeedMore`]: the caller
//! reads twice as far back and asks again, up to the whole history (where nothing is
//! uncertain and the caller uses a [`MessageLog`](crate::log::MessageLog) instead).
//!
//! The head is read from the front by [`HeadReader`] until the task (the first real user
//! message) or, without a pinned task, the first message after the leading system messages.
//! A head in which some message issues a tool call cannot be judged from the two ends (its
//! call may be answered anywhere), so [`HeadReader`] says [`HeadStep::Whole`] and the caller
//! uses the whole history. Well-formed agent histories (system, task, then rounds) never do.

use crate::cuts::PinnedHead;
use crate::log::{Cut, MessageLog};
use crate::meta::{Meta, Role};
use crate::window::{decide, keep_all, Answer, CutIndex, NeedMore, Options, Rule, Window};

/// One message as a [`Tail`] reads it: its facts and its token count (the facts' own, or an
/// exact counter's).
#[derive(Clone, Copy, Debug)]
pub struct Fact<'a> {
    /// Who wrote it, its tool ids, whether it opens a turn.
    pub meta: &'a Meta,
    /// Its tokens.
    pub tokens: u32,
}

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
    pin_task: bool,
    pushed: usize,
    system_end: usize,
    task: Option<usize>,
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

/// The head and the last messages `[lo, len)` of a history, answering [`CutIndex`] questions
/// about the whole history where those parts suffice (see the module docs).
#[derive(Clone, Debug)]
pub struct Tail {
    len: usize,
    head: PinnedHead,
    /// `head_cum[i]`: tokens of messages `[0, i)`, for `i` up to the head's length.
    head_cum: Vec<u64>,
    head_roles: Vec<Role>,
    lo: usize,
    /// Cuts from here on are exact (see the module docs).
    exact_from: usize,
    /// `suffix[p - lo]`: tokens of `[p, len)`, for `p` in `lo..=len`.
    suffix: Vec<u64>,
    /// `safe[p - lo]`: cut `p` is safe (meaningful from `exact_from` on).
    safe: Vec<bool>,
    roles: Vec<Role>,
    real: Vec<bool>,
    round: Vec<bool>,
}

impl Tail {
    /// The tail of a history of `len` messages: `head` as read by `reader` (its facts are
    /// `head`, messages `[0, reader.len())`), then `region`, the facts of messages
    /// `[len - region.len(), len)`, and `prev`, the message just before the region.
    ///
    /// Returns `None` when the region reaches into the head (or there is no message before it):
    /// then decide on the whole history.
    #[must_use]
    pub fn new(
        len: usize,
        reader: &HeadReader,
        head: &[Fact<'_>],
        prev: Option<&Meta>,
        region: &[Fact<'_>],
    ) -> Option<Self> {
        let lo = len - region.len();
        let prev = prev?;
        if lo <= reader.len() || head.len() != reader.len() {
            return None;
        }
        let mut head_cum = Vec::with_capacity(head.len() + 1);
        let mut total = 0u64;
        head_cum.push(0);
        for f in head {
            total += u64::from(f.tokens);
            head_cum.push(total);
        }
        let pinned = match reader.task {
            Some(t) => PinnedHead {
                system_end: reader.system_end,
                task: Some(t),
                floor: t + 1,
                contiguous: false,
            },
            None => PinnedHead {
                system_end: reader.system_end,
                task: None,
                floor: reader.system_end,
                contiguous: false,
            },
        };

        let m = region.len();
        let mut suffix = vec![0u64; m + 1];
        let mut safe = vec![false; m + 1];
        safe[m] = true;
        let mut open: Vec<(&str, usize)> = Vec::new();
        for (i, f) in region.iter().enumerate().rev() {
            suffix[i] = suffix[i + 1] + u64::from(f.tokens);
            for id in f.meta.tool_uses.iter() {
                if let Some(k) = open.iter().position(|(x, _)| *x == &**id) {
                    open.swap_remove(k);
                }
            }
            for id in f.meta.tool_results.iter() {
                if !open.iter().any(|(x, _)| *x == &**id) {
                    open.push((id, lo + i));
                }
            }
            safe[i] = open.is_empty();
        }
        let exact_from = open.iter().map(|&(_, r)| r + 1).max().unwrap_or(lo);

        let roles: Vec<Role> = region.iter().map(|f| f.meta.role).collect();
        let real: Vec<bool> = region.iter().map(|f| f.meta.is_real_user()).collect();
        let mut round = Vec::with_capacity(m);
        let mut last = (prev.role, prev.is_real_user());
        for f in region {
            let is_real = f.meta.is_real_user();
            round.push(
                is_real || (f.meta.role == Role::Assistant && last.0 != Role::Assistant && !last.1),
            );
            last = (f.meta.role, is_real);
        }
        Some(Self {
            len,
            head: pinned,
            head_cum,
            head_roles: head.iter().map(|f| f.meta.role).collect(),
            lo,
            exact_from,
            suffix,
            safe,
            roles,
            real,
            round,
        })
    }

    /// The first message of the region read.
    #[must_use]
    pub fn lo(&self) -> usize {
        self.lo
    }

    fn is_safe(&self, p: usize) -> bool {
        self.safe[p - self.lo]
    }

    fn suffix_tokens(&self, p: usize) -> u64 {
        self.suffix[p - self.lo]
    }

    /// The `k`-th last position of the region whose flag is set (`k >= 1`).
    fn kth_last(&self, flags: &[bool], k: usize) -> Answer<Option<usize>> {
        if k == 0 {
            return Ok(None);
        }
        flags
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, &f)| f)
            .nth(k - 1)
            .map(|(i, _)| Some(self.lo + i))
            .ok_or(NeedMore)
    }
}

impl CutIndex for Tail {
    fn len(&self) -> usize {
        self.len
    }

    fn pinned_head(&self, _pin_task: bool) -> Answer<PinnedHead> {
        Ok(self.head)
    }

    fn tokens(&self, start: usize, end: usize) -> Answer<u64> {
        let end = end.min(self.len);
        if start >= end {
            return Ok(0);
        }
        if end < self.head_cum.len() {
            return Ok(self.head_cum[end] - self.head_cum[start]);
        }
        if start >= self.lo {
            return Ok(self.suffix_tokens(start) - self.suffix_tokens(end));
        }
        Err(NeedMore)
    }

    fn total_exceeds(&self, budget: u64) -> Answer<bool> {
        let known = self.head_cum.last().copied().unwrap_or(0) + self.suffix[0];
        if known > budget {
            Ok(true)
        } else {
            Err(NeedMore)
        }
    }

    fn role(&self, i: usize) -> Answer<Role> {
        if i >= self.lo {
            self.roles.get(i - self.lo).copied().ok_or(NeedMore)
        } else {
            self.head_roles.get(i).copied().ok_or(NeedMore)
        }
    }

    fn safe_cut_at_or_before(&self, i: usize) -> Answer<usize> {
        let i = i.min(self.len);
        if i < self.exact_from {
            return Err(NeedMore);
        }
        (self.exact_from..=i)
            .rev()
            .find(|&p| self.is_safe(p))
            .ok_or(NeedMore)
    }

    fn safe_cut_at_or_after(&self, i: usize) -> Answer<usize> {
        let i = i.min(self.len);
        if i < self.exact_from {
            return Err(NeedMore);
        }
        Ok((i..=self.len)
            .find(|&p| self.is_safe(p))
            .unwrap_or(self.len))
    }

    fn user_cut_at_or_before(&self, i: usize) -> Answer<Option<usize>> {
        let Some(last) = self.len.checked_sub(1) else {
            return Ok(None);
        };
        let i = i.min(last);
        if i < self.exact_from {
            return Err(NeedMore);
        }
        (self.exact_from..=i)
            .rev()
            .find(|&p| self.is_safe(p) && self.real[p - self.lo])
            .map(Some)
            .ok_or(NeedMore)
    }

    fn user_cut_at_or_after(&self, i: usize) -> Answer<Option<usize>> {
        if i >= self.len {
            return Ok(None);
        }
        if i < self.exact_from {
            return Err(NeedMore);
        }
        Ok((i..self.len).find(|&p| self.is_safe(p) && self.real[p - self.lo]))
    }

    fn kth_last_turn_start(&self, k: usize) -> Answer<Option<usize>> {
        self.kth_last(&self.real, k)
    }

    fn kth_last_round_start(&self, k: usize) -> Answer<Option<usize>> {
        self.kth_last(&self.round, k)
    }

    fn fit_budget(&self, budget: u64, floor: usize) -> Answer<Cut> {
        if floor > self.lo {
            return Err(NeedMore);
        }
        // `floor` is a safe cut (the pinned head's), so it is the lowest cut allowed.
        let newest_round = self.kth_last_round_start(1)?.unwrap_or(self.len);
        let limit = self.safe_cut_at_or_before(newest_round)?.max(floor);
        // suffix only shrinks as p grows: the first p whose suffix fits.
        let first_fitting = if self.suffix[0] <= budget {
            if floor < self.lo {
                return Err(NeedMore);
            }
            floor
        } else {
            self.lo + self.suffix.partition_point(|&t| t > budget)
        };
        let candidate = self.safe_cut_at_or_after(first_fitting.max(floor))?;
        let (index, fits) = if candidate <= limit {
            (candidate, true)
        } else {
            (limit, false)
        };
        Ok(Cut {
            index,
            kept_tokens: self.tokens(index, self.len)?,
            fits,
        })
    }
}

/// Messages read past what a rule surely needs before the first try: a tool round.
const SLACK: usize = 4;

/// What the messages read back from the end hold, to tell when a rule may be decidable.
#[derive(Default)]
struct Reach {
    messages: usize,
    tokens: u64,
    turns: usize,
    rounds: usize,
}

impl Reach {
    /// Adds the next older message; `newer` is the one read just before it.
    fn add(&mut self, meta: &Meta, tokens: u32, newer: Option<&Meta>) {
        self.messages += 1;
        self.tokens += u64::from(tokens);
        if meta.is_real_user() {
            self.turns += 1;
        }
        // The newer message opens a round if it is a real user message, or an assistant one
        // that follows neither an assistant nor a real user message (this one).
        if let Some(newer) = newer {
            let opens = newer.is_real_user()
                || (newer.role == Role::Assistant
                    && meta.role != Role::Assistant
                    && !meta.is_real_user());
            self.rounds += usize::from(opens);
        }
    }

    fn enough(&self, rule: Rule) -> bool {
        match rule {
            Rule::Budget(budget) => self.tokens > budget,
            Rule::LastTurns(k) => self.turns >= k,
            Rule::LastRounds(k) => self.rounds >= k,
            Rule::LastMessages(k) => self.messages > k,
        }
    }
}

/// A message's facts as a caller holds them (e.g. a cached Python object), for
/// [`decide_from_end`].
pub trait Facts {
    /// Who wrote it, its tool ids, whether it opens a turn.
    fn meta(&self) -> &Meta;
    /// Its tokens (the meta's own, or an exact counter's).
    fn tokens(&self) -> u32 {
        self.meta().tokens
    }
}

impl Facts for &Meta {
    fn meta(&self) -> &Meta {
        self
    }
}

/// How many of the last messages [`decide_from_end`] reads first by default (a window of a
/// few dozen rounds); it doubles from there.
pub const FIRST_REGION: usize = 64;

/// The window `rule` keeps of a history of `len` messages whose facts `fetch(i)` gives,
/// reading the head and the last messages only: the region read from the end (`first`
/// messages at first, e.g. [`FIRST_REGION`]) doubles until
/// the [`Tail`] can decide, and only a history that needs it is read whole (then decided on a
/// [`MessageLog`]). Each message is fetched at most once.
///
/// # Errors
/// The first error `fetch` returns.
pub fn decide_from_end<F: Facts, E>(
    len: usize,
    rule: Rule,
    options: Options,
    first: usize,
    mut fetch: impl FnMut(usize) -> Result<F, E>,
) -> Result<Window, E> {
    let mut reader = HeadReader::new(options.pin_task);
    let mut head: Vec<F> = Vec::new();
    let mut step = reader.first_step(len);
    while step == HeadStep::More {
        let f = fetch(head.len())?;
        step = reader.push(f.meta(), len);
        head.push(f);
    }
    head.truncate(reader.len());
    // The region, newest message first; `region_rev[j]` is message `len - 1 - j`.
    let mut region_rev: Vec<F> = Vec::new();
    // First read as far back as the rule surely needs (past its budget, its k-th turn or round
    // start, its n messages), then a round's worth more for the safe cut before that.
    let mut reach = Reach::default();
    while step == HeadStep::Done && !reach.enough(rule) && region_rev.len() + head.len() < len {
        let f = fetch(len - 1 - region_rev.len())?;
        reach.add(f.meta(), f.tokens(), region_rev.last().map(F::meta));
        region_rev.push(f);
    }
    let mut size = first.max(region_rev.len() + SLACK);
    while step == HeadStep::Done && size + reader.len() < len {
        while region_rev.len() <= size {
            region_rev.push(fetch(len - 1 - region_rev.len())?);
        }
        // Fetched one more than the region: the message before it, for the round rule.
        let (region, prev) = region_rev.split_at(size);
        let facts: Vec<Fact<'_>> = region.iter().rev().map(Fact::of).collect();
        let head_facts: Vec<Fact<'_>> = head.iter().map(Fact::of).collect();
        if let Some(tail) = Tail::new(len, &reader, &head_facts, prev.first().map(F::meta), &facts)
        {
            if let Ok(window) = decide(&tail, rule, options) {
                return Ok(window);
            }
        }
        size *= 2;
    }
    // The whole history: reuse what was fetched, fetch the middle.
    let mut log: MessageLog<()> = MessageLog::new();
    let from_end = region_rev.len();
    for i in 0..len {
        let meta = if i < head.len() {
            with_tokens(&head[i])
        } else if i >= len - from_end {
            with_tokens(&region_rev[len - 1 - i])
        } else {
            with_tokens(&fetch(i)?)
        };
        log.push((), meta);
    }
    // A log answers every question; should it ever not, keeping everything is safe.
    Ok(decide(&log, rule, options).unwrap_or_else(|NeedMore| keep_all(len)))
}

fn with_tokens(f: &impl Facts) -> Meta {
    let mut meta = f.meta().clone();
    meta.tokens = f.tokens();
    meta
}

impl<'a> Fact<'a> {
    fn of(f: &'a impl Facts) -> Self {
        Self {
            meta: f.meta(),
            tokens: f.tokens(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_tail(metas: &[Meta], rule: Rule, options: Options) -> Window {
        decide_from_end(metas.len(), rule, options, 4, |i| Ok::<_, ()>(&metas[i])).unwrap()
    }

    #[test]
    fn a_budget_reads_about_the_window() {
        let metas = agent_history(3_000);
        let mut fetched = 0;
        let w = decide_from_end(
            metas.len(),
            Rule::Budget(2_000),
            OPTIONS,
            FIRST_REGION,
            |i| {
                fetched += 1;
                Ok::<_, ()>(&metas[i])
            },
        )
        .unwrap();
        assert!(!w.unchanged);
        assert!(fetched < 200, "read {fetched} of {} messages", metas.len());
    }

    const OPTIONS: Options = Options {
        pin_task: true,
        start_with_user: true,
    };

    fn agent_history(rounds: usize) -> Vec<Meta> {
        let mut metas = vec![Meta::system(50), Meta::user(20)];
        for r in 0..rounds {
            let id = format!("t{r}");
            metas.push(Meta::assistant(30).with_tool_uses([id.as_str()]));
            metas.push(Meta::new(Role::User, 200).with_tool_results([id.as_str()]));
            metas.push(Meta::assistant(40));
            if r % 3 == 2 {
                metas.push(Meta::user(15));
            }
        }
        metas
    }

    #[test]
    fn tail_and_log_agree_on_an_agent_history() {
        let metas = agent_history(300);
        let log: MessageLog<()> = metas.iter().map(|m| ((), m.clone())).collect();
        for options in [
            Options {
                pin_task: true,
                start_with_user: true,
            },
            Options {
                pin_task: false,
                start_with_user: true,
            },
        ] {
            for rule in [
                Rule::Budget(2_000),
                Rule::Budget(100),
                Rule::LastTurns(3),
                Rule::LastRounds(5),
                Rule::LastMessages(40),
            ] {
                assert_eq!(
                    on_tail(&metas, rule, options),
                    decide(&log, rule, options).unwrap(),
                    "{rule:?} {options:?}"
                );
            }
        }
    }

    #[test]
    fn an_open_result_at_the_region_start_asks_for_more() {
        // The call at 2 is answered at 5: the region [3, 6) cannot tell whether cut 3 is safe.
        let metas = [
            Meta::system(1),
            Meta::user(1),
            Meta::assistant(1).with_tool_uses(["a"]),
            Meta::assistant(1),
            Meta::user(1),
            Meta::new(Role::User, 1).with_tool_results(["a"]),
        ];
        let facts: Vec<Fact<'_>> = metas
            .iter()
            .map(|m| Fact {
                meta: m,
                tokens: m.tokens,
            })
            .collect();
        let mut reader = HeadReader::new(true);
        assert_eq!(reader.push(&metas[0], 6), HeadStep::More);
        assert_eq!(reader.push(&metas[1], 6), HeadStep::Done);
        let tail = Tail::new(6, &reader, &facts[..2], Some(&metas[2]), &facts[3..]).unwrap();
        assert_eq!(tail.safe_cut_at_or_before(5), Err(NeedMore));
        assert_eq!(tail.safe_cut_at_or_after(6), Ok(6));
    }

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
