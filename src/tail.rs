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
//! depends on an uncertain cut, or on a message not read, answers [`NeedMore`]: the tail
//! reads twice as far back and asks again, up to the head (then it holds the whole history,
//! where nothing is uncertain, and decides on a [`MessageLog`] of it).
//!
//! The head is read from the front by [`HeadReader`] (`crate::head`) until the task (the
//! first real user message) or, without a pinned task, the first message after the leading
//! system messages; a head that issues a tool call sends the caller to the whole history.
//!
//! A [`Tail`] is kept from one decision to the next (a strategy keeps one for the list it is
//! called on): each message it holds is the caller's item, which names it (in the bindings,
//! the message object, or the framework object it was converted from), and an item that no
//! longer names the message at its position cuts what it holds back to there (it starts
//! afresh when that is in the head or the first message it holds, or the history is
//! shorter). Then it reads only the messages appended since, folding them into its safe cuts
//! as it goes (a result splits the cuts back to its call), and reads further back only when
//! a question needs it.

use std::collections::VecDeque;

use crate::cuts::PinnedHead;
pub use crate::head::{HeadReader, HeadStep};
use crate::log::{Cut, MessageLog};
use crate::meta::{Meta, Role};
use crate::window::{decide, keep_all, Answer, CutIndex, NeedMore, Options, Rule, Window};

/// Messages read past what a rule surely needs before the first try: a tool round.
const SLACK: usize = 4;

/// How many of the last messages a cold [`Tail::decide`] reads first by default (a window of
/// a few dozen rounds); it doubles from there. A warm one keeps at least this many.
pub const FIRST_REGION: usize = 64;

/// A region longer than this is not kept after a decision (a window of tens of thousands of
/// messages): keeping it would keep that much of the history alive between calls.
pub const KEEP_LIMIT: usize = 1 << 14;

/// The head and the last messages of a history as a [`Tail::decide`] last read them (the
/// caller's items, each the facts of a message and whatever names it), answering
/// [`CutIndex`] questions about the whole history where those parts suffice (see the module
/// docs).
///
/// Kept from one decision to the next, it reads only what changed: the items at the positions
/// it holds are checked against the history (a difference cuts what it holds back to there;
/// one in the head or a shorter history, and it starts afresh), messages appended since are
/// added at the end, and it reads further back only when a question needs it. So an agent
/// that appends a round and trims again pays for the new messages and one comparison per
/// message held, not for re-reading its window.
///
/// Invariants, for the history of `len` messages last decided on:
/// - `head.read` holds messages `[0, head.read.len())` as its reader read them (the head, and
///   without a pinned task the message after it); `region` holds messages `[base, len)`,
///   `base > head.len()` once a decision is done.
/// - `region[p - base].before` is the tokens of `[base, p)` plus a constant (`end_before` for
///   `p = len`), so `tokens(a, b) = before(b) - before(a)` inside the region.
/// - `cover` of message `p` counts the pairs (call at `c`, result at `r`) both in the region
///   with `c < p <= r`: cut `p` is safe exactly when it is 0 and no result still `open` (in
///   the region, its call not) lies at or after `p`.
/// - Every result in the region either has its call in the region (the pair counted in
///   `cover`, the call's position in the result's `call`) or is `open`: the front is never
///   dropped past a call whose result is still held, so a message read again at the front is
///   split only by pairs whose results are open.
/// - `round` of message `p` is exact for `p > base` (it depends on message `p - 1`).
#[derive(Debug)]
pub struct Tail<F> {
    head: Option<Head<F>>,
    region: VecDeque<Entry<F>>,
    base: usize,
    len: usize,
    end_before: i64,
    /// The results the region holds without their calls: (position, index among the
    /// message's results).
    open: Vec<(usize, usize)>,
}

/// The head as read from the front.
#[derive(Debug)]
struct Head<F> {
    reader: HeadReader,
    pinned: PinnedHead,
    /// The messages read from the front: the head, and without a pinned task the message
    /// after it (whose role ends the head).
    read: Vec<F>,
    /// `before[i]`: the tokens of messages `[0, i)`, for `i` in the head.
    before: Vec<u64>,
    total: u64,
}

/// One message of the region.
#[derive(Debug)]
struct Entry<F> {
    item: F,
    before: i64,
    cover: u32,
    /// The earliest call, among those its results answer, that the region holds (`usize::MAX`
    /// for none).
    call: usize,
    round: bool,
}

impl<F> Default for Tail<F> {
    fn default() -> Self {
        Self {
            head: None,
            region: VecDeque::new(),
            base: 0,
            len: 0,
            end_before: 0,
            open: Vec::new(),
        }
    }
}

impl<F: Facts> Tail<F> {
    /// An empty tail: the first decision reads the head and the end.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets everything read.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Number of messages kept.
    #[must_use]
    pub fn kept(&self) -> usize {
        self.head.as_ref().map_or(0, |h| h.read.len()) + self.region.len()
    }

    /// The window `rule` keeps of a history of `len` messages, where `fetch(i)` reads message
    /// `i` (its facts, tokens as priced, and whatever names it) and `same(i, item)` tells
    /// whether message `i` is still the one read as `item`. What this tail holds and still
    /// stands is not fetched again; it then holds the head and the end of this history, about
    /// the window.
    ///
    /// Only a history whose head holds a tool call is read whole (then decided on a
    /// [`MessageLog`]), and then nothing is kept.
    ///
    /// # Errors
    /// The first error `fetch` returns (the tail is then empty).
    pub fn decide<E>(
        &mut self,
        len: usize,
        rule: Rule,
        options: Options,
        first: usize,
        same: impl Fn(usize, &F) -> bool,
        mut fetch: impl FnMut(usize) -> Result<F, E>,
    ) -> Result<Window, E> {
        let first = first.max(1);
        self.sync(len, options.pin_task, &same);
        let result = self.decide_held(len, rule, options, first, &mut fetch);
        if result.is_err() {
            self.clear();
        }
        result
    }

    /// [`Tail::decide`] once what is held is known to stand.
    fn decide_held<E>(
        &mut self,
        len: usize,
        rule: Rule,
        options: Options,
        first: usize,
        fetch: &mut impl FnMut(usize) -> Result<F, E>,
    ) -> Result<Window, E> {
        let head_len = match &self.head {
            Some(head) => head.reader.len(),
            None => match self.read_head_and_end(len, rule, options, first, fetch)? {
                Ok(head_len) => head_len,
                Err(window) => return Ok(window),
            },
        };
        for i in self.len..len {
            let item = fetch(i)?;
            self.push_back(item);
        }
        loop {
            if self.base <= head_len {
                // The region reaches the head: what is held is the whole history. Most
                // questions are answered from it as it is (a history within the budget
                // says so from its total); the rest on a log of it.
                if let Ok(window) = decide(&*self, rule, options) {
                    self.keep_for_next(&window, first, head_len);
                    return Ok(window);
                }
                let log = self.whole_log();
                let window = decide(&log, rule, options).unwrap_or_else(|NeedMore| keep_all(len));
                self.keep_for_next(&window, first, head_len);
                return Ok(window);
            }
            if let Ok(window) = decide(&*self, rule, options) {
                self.keep_for_next(&window, first, head_len);
                return Ok(window);
            }
            let target = self.base.saturating_sub(self.region.len().max(first));
            while self.base > target.max(head_len) {
                let item = fetch(self.base - 1)?;
                self.push_front(item);
            }
        }
    }

    /// Keeps what still stands of a history of `len` messages (read for `pin_task`): all of
    /// it when every item held still names the message at its position; the region up to
    /// the first one that does not (an edit in place near the end: a clearing strategy's
    /// stand-in, a replaced last message), as if the history had been cut back there and
    /// the rest appended since; nothing when the head changed, the history is shorter, or
    /// the edit reaches the region's first message.
    fn sync(&mut self, len: usize, pin_task: bool, same: &impl Fn(usize, &F) -> bool) {
        let Some(head) = &self.head else {
            return;
        };
        if len < self.len
            || head.reader.pin_task != pin_task
            || !head.read.iter().enumerate().all(|(i, f)| same(i, f))
        {
            self.clear();
            return;
        }
        let base = self.base;
        match self
            .region
            .iter()
            .enumerate()
            .position(|(j, e)| !same(base + j, &e.item))
        {
            None => {}
            Some(0) => self.clear(),
            Some(j) => {
                while self.region.len() > j {
                    self.pop_back();
                }
            }
        }
    }

    /// Removes message `len - 1` from the end, undoing [`Tail::push_back`] and whatever a
    /// later [`Tail::push_front`] added for it: the pairs its results make with calls the
    /// region holds (the latest earlier message issuing the id, as when it was added) no
    /// longer split the cuts between them, and its results without a call are no longer
    /// open. Its own calls answer only later messages, which are gone already.
    fn pop_back(&mut self) {
        let Some(entry) = self.region.pop_back() else {
            return;
        };
        let p = self.base + self.region.len();
        for (k, id) in entry.item.meta().tool_results.iter().enumerate() {
            let call = self
                .region
                .iter()
                .rposition(|e| e.item.meta().tool_uses.iter().any(|u| u == id));
            match call {
                Some(j) => {
                    for e in self.region.range_mut(j + 1..) {
                        e.cover -= 1;
                    }
                }
                None => self.open.retain(|&o| o != (p, k)),
            }
        }
        self.end_before = entry.before;
        self.len = p;
    }

    /// A cold start: reads the head, then the end as far back as the rule surely needs.
    /// Returns the head's length, or the window of a history whose head cannot be judged
    /// from the front (then nothing is held).
    fn read_head_and_end<E>(
        &mut self,
        len: usize,
        rule: Rule,
        options: Options,
        first: usize,
        fetch: &mut impl FnMut(usize) -> Result<F, E>,
    ) -> Result<Result<usize, Window>, E> {
        let mut reader = HeadReader::new(options.pin_task);
        let mut read: Vec<F> = Vec::new();
        let mut step = reader.first_step(len);
        while step == HeadStep::More {
            let item = fetch(read.len())?;
            step = reader.push(item.meta(), len);
            read.push(item);
        }
        if step == HeadStep::Whole {
            return whole_history(len, rule, options, read, fetch).map(Err);
        }
        let head_len = reader.len();
        let mut before = Vec::with_capacity(head_len);
        let mut total = 0u64;
        for item in &read[..head_len] {
            before.push(total);
            total += u64::from(item.tokens());
        }
        let pinned = PinnedHead {
            system_end: reader.system_end,
            task: reader.task,
            floor: reader.task.map_or(reader.system_end, |t| t + 1),
            contiguous: false,
        };
        self.head = Some(Head {
            reader,
            pinned,
            read,
            before,
            total,
        });
        self.base = len;
        self.len = len;
        // As far back as the rule surely needs (past its budget, its k-th turn or round start,
        // its n messages), then a round's worth more for the safe cut before that, and at least
        // `first` messages (and the one before them).
        let mut reach = Reach::default();
        while !reach.enough(rule) && self.base > head_len {
            let item = fetch(self.base - 1)?;
            reach.add(
                item.meta(),
                item.tokens(),
                self.region.front().map(|e| e.item.meta()),
            );
            self.push_front(item);
        }
        let target = len.saturating_sub(first.max(self.region.len() + SLACK) + 1);
        while self.base > target.max(head_len) {
            let item = fetch(self.base - 1)?;
            self.push_front(item);
        }
        Ok(Ok(head_len))
    }

    /// Adds message `len` at the end.
    fn push_back(&mut self, item: F) {
        let p = self.len;
        let before = self.end_before;
        self.end_before += i64::from(item.tokens());
        let meta = item.meta();
        let round = match self.region.back() {
            Some(prev) => opens_round(meta, Some(prev.item.meta())),
            None => false, // the message at `base`, whose round is never asked
        };
        // Each result splits the cuts between it and its call (the latest earlier one), its
        // own included; a call the region does not hold leaves the result open.
        let mut cover = 0u32;
        let mut earliest = usize::MAX;
        for (k, id) in meta.tool_results.iter().enumerate() {
            let call = self
                .region
                .iter()
                .rposition(|e| e.item.meta().tool_uses.iter().any(|u| u == id));
            match call {
                Some(j) => {
                    for e in self.region.range_mut(j + 1..) {
                        e.cover += 1;
                    }
                    cover += 1;
                    earliest = earliest.min(self.base + j);
                }
                None => self.open.push((p, k)),
            }
        }
        self.region.push_back(Entry {
            item,
            before,
            cover,
            call: earliest,
            round,
        });
        self.len = p + 1;
    }

    /// Adds message `base - 1` at the front.
    fn push_front(&mut self, item: F) {
        let p = self.base - 1;
        let before =
            self.region.front().map_or(self.end_before, |e| e.before) - i64::from(item.tokens());
        let meta = item.meta();
        if let Some(next) = self.region.front_mut() {
            next.round = opens_round(next.item.meta(), Some(meta));
        }
        // Its calls close the open results with their ids (the latest earlier call, walking
        // back the first one met); then its own results open.
        if !meta.tool_uses.is_empty() {
            let mut k = 0;
            while k < self.open.len() {
                let (r, j) = self.open[k];
                let answer = &self.region[r - self.base];
                if meta.tool_uses.contains(&answer.item.meta().tool_results[j]) {
                    self.open.swap_remove(k);
                    // Cuts p+1 ..= r split the pair (indices from the current base, p + 1).
                    for e in self.region.range_mut(..r - p) {
                        e.cover += 1;
                    }
                    let answer = &mut self.region[r - p - 1];
                    answer.call = answer.call.min(p);
                } else {
                    k += 1;
                }
            }
        }
        self.open
            .extend((0..meta.tool_results.len()).map(|j| (p, j)));
        self.region.push_front(Entry {
            item,
            before,
            cover: 0,
            call: usize::MAX,
            round: false,
        });
        self.base = p;
    }

    /// Drops what the next decision will likely not need: keeps the messages from a little
    /// before the kept suffix (at least `first`), or nothing if that is too many.
    fn keep_for_next(&mut self, window: &Window, first: usize, head_len: usize) {
        if self.region.len() > KEEP_LIMIT {
            self.clear();
            return;
        }
        let cut = match window.ranges.last() {
            Some(&(start, _)) if !window.unchanged => start,
            _ => return,
        };
        let keep_from = cut
            .min(self.len.saturating_sub(first))
            .saturating_sub(SLACK);
        // One more than kept: the message before the first one held, for the round rule.
        let mut new_base = keep_from.saturating_sub(1).max(head_len + 1);
        if new_base <= self.base || new_base >= self.len {
            return;
        }
        // Not past a call whose result is kept (see the invariants), nor past the calls of
        // the results that this keeps in turn: one walk back from the end.
        let mut p = self.len;
        while p > new_base {
            p -= 1;
            new_base = new_base.min(self.entry(p).call);
        }
        while self.base < new_base {
            self.region.pop_front();
            self.base += 1;
        }
        let base = self.base;
        self.open.retain(|&(r, _)| r >= base);
    }

    /// The head and the region as one log: the whole history, when the region reaches the head.
    fn whole_log(&self) -> MessageLog<()> {
        let mut log = MessageLog::new();
        if let Some(head) = &self.head {
            for item in &head.read[..head.reader.len()] {
                log.push((), with_tokens(item));
            }
        }
        for e in &self.region {
            log.push((), with_tokens(&e.item));
        }
        log
    }

    /// The head as read (a tail answers questions only after reading it).
    fn head(&self) -> Answer<&Head<F>> {
        self.head.as_ref().ok_or(NeedMore)
    }

    /// The first message whose facts are all known (the one before it is held too).
    fn lo(&self) -> usize {
        self.base + 1
    }

    /// Cuts from here on are exact: no open result at or after them is unknown.
    fn exact_from(&self) -> usize {
        let open = self.open.iter().map(|&(r, _)| r + 1).max();
        open.map_or(self.lo(), |o| o.max(self.lo()))
    }

    fn entry(&self, p: usize) -> &Entry<F> {
        &self.region[p - self.base]
    }

    /// `before` of position `p` in `[base, len]`.
    fn before(&self, p: usize) -> i64 {
        if p == self.len {
            self.end_before
        } else {
            self.entry(p).before
        }
    }

    /// Tokens of `[p, len)`, for `p` in `[base, len]`.
    fn suffix_tokens(&self, p: usize) -> u64 {
        u64::try_from(self.end_before - self.before(p)).unwrap_or(0)
    }

    /// Whether cut `p` (in `[lo, len]`, at or after `exact_from`) is safe.
    fn is_safe(&self, p: usize) -> bool {
        p == self.len || self.entry(p).cover == 0
    }

    fn is_real(&self, p: usize) -> bool {
        self.entry(p).item.meta().is_real_user()
    }

    /// The `k`-th last position of `[lo, len)` where `flag` holds (`k >= 1`).
    fn kth_last(&self, flag: impl Fn(&Entry<F>) -> bool, k: usize) -> Answer<Option<usize>> {
        if k == 0 {
            return Ok(None);
        }
        self.region
            .iter()
            .enumerate()
            .skip(1)
            .rev()
            .filter(|(_, e)| flag(e))
            .nth(k - 1)
            .map(|(j, _)| Some(self.base + j))
            .ok_or(NeedMore)
    }
}

/// Whether `meta` opens a round after `prev` (see [`crate::cuts`]).
fn opens_round(meta: &Meta, prev: Option<&Meta>) -> bool {
    meta.is_real_user()
        || (meta.role == Role::Assistant
            && prev.is_none_or(|p| {
                (p.role != Role::Assistant && !p.is_real_user())
                    || (p.role == Role::Assistant && p.tool_uses.is_empty())
            }))
}

impl<F: Facts> CutIndex for Tail<F> {
    fn len(&self) -> usize {
        self.len
    }

    fn pinned_head(&self, _pin_task: bool) -> Answer<PinnedHead> {
        Ok(self.head()?.pinned)
    }

    fn tokens(&self, start: usize, end: usize) -> Answer<u64> {
        let end = end.min(self.len);
        if start >= end {
            return Ok(0);
        }
        let head = self.head()?;
        if end <= head.before.len() {
            let at = |i: usize| head.before.get(i).copied().unwrap_or(head.total);
            return Ok(at(end) - at(start));
        }
        if start >= self.base {
            return Ok(self.suffix_tokens(start) - self.suffix_tokens(end));
        }
        Err(NeedMore)
    }

    fn total_exceeds(&self, budget: u64) -> Answer<bool> {
        let head = self.head()?;
        if head.total + self.suffix_tokens(self.base) > budget {
            Ok(true)
        } else if self.base <= head.before.len() {
            Ok(false) // the region reaches the head: that is the whole history's total
        } else {
            Err(NeedMore)
        }
    }

    fn role(&self, i: usize) -> Answer<Role> {
        if i >= self.base && i < self.len {
            return Ok(self.entry(i).item.meta().role);
        }
        let head = self.head()?;
        match head.read.get(i) {
            Some(item) if i < head.before.len() => Ok(item.meta().role),
            _ => Err(NeedMore),
        }
    }

    fn safe_cut_at_or_before(&self, i: usize) -> Answer<usize> {
        let i = i.min(self.len);
        let exact_from = self.exact_from();
        if i < exact_from {
            return Err(NeedMore);
        }
        (exact_from..=i)
            .rev()
            .find(|&p| self.is_safe(p))
            .ok_or(NeedMore)
    }

    fn safe_cut_at_or_after(&self, i: usize) -> Answer<usize> {
        let i = i.min(self.len);
        if i < self.exact_from() {
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
        let exact_from = self.exact_from();
        if i < exact_from {
            return Err(NeedMore);
        }
        (exact_from..=i)
            .rev()
            .find(|&p| self.is_safe(p) && self.is_real(p))
            .map(Some)
            .ok_or(NeedMore)
    }

    fn user_cut_at_or_after(&self, i: usize) -> Answer<Option<usize>> {
        if i >= self.len {
            return Ok(None);
        }
        if i < self.exact_from() {
            return Err(NeedMore);
        }
        Ok((i..self.len).find(|&p| self.is_safe(p) && self.is_real(p)))
    }

    fn kth_last_turn_start(&self, k: usize) -> Answer<Option<usize>> {
        self.kth_last(|e| e.item.meta().is_real_user(), k)
    }

    fn kth_last_round_start(&self, k: usize) -> Answer<Option<usize>> {
        self.kth_last(|e| e.round, k)
    }

    fn compaction_at_or_after(&self, i: usize) -> Answer<Option<usize>> {
        if i < self.base {
            return Err(NeedMore);
        }
        Ok((i..self.len)
            .rev()
            .find(|&p| self.entry(p).item.meta().compaction))
    }

    fn fit_budget(&self, budget: u64, floor: usize) -> Answer<Cut> {
        let lo = self.lo();
        if floor > lo {
            return Err(NeedMore);
        }
        // `floor` is a safe cut (the pinned head's), so it is the lowest cut allowed.
        // No round at all (only system, empty or result messages): the newest message is the
        // minimum, so a window never drops every message.
        let newest_round = self
            .kth_last_round_start(1)?
            .unwrap_or(self.len.saturating_sub(1));
        let limit = self.safe_cut_at_or_before(newest_round)?.max(floor);
        // The suffix only shrinks as p grows: the first p whose suffix fits.
        let first_fitting = if self.suffix_tokens(lo) <= budget {
            if floor < lo {
                return Err(NeedMore);
            }
            floor
        } else {
            let end = self.end_before;
            let over = |e: &Entry<F>| u64::try_from(end - e.before).unwrap_or(0) > budget;
            // The message at `base` is over too (its suffix holds `lo`'s).
            self.base + self.region.partition_point(over)
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
        if let Some(newer) = newer {
            self.rounds += usize::from(opens_round(newer, Some(meta)));
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

/// The window of a history whose head cannot be judged from the front: every message read
/// (those `read` from the front already, the rest fetched), decided on a [`MessageLog`].
fn whole_history<F: Facts, E>(
    len: usize,
    rule: Rule,
    options: Options,
    read: Vec<F>,
    fetch: &mut impl FnMut(usize) -> Result<F, E>,
) -> Result<Window, E> {
    let mut log: MessageLog<()> = MessageLog::new();
    let from_front = read.len();
    for item in &read {
        log.push((), with_tokens(item));
    }
    for i in from_front..len {
        log.push((), with_tokens(&fetch(i)?));
    }
    // A log answers every question; should it ever not, keeping everything is safe.
    Ok(decide(&log, rule, options).unwrap_or_else(|NeedMore| keep_all(len)))
}

/// A message's facts with its tokens as priced.
fn with_tokens(item: &impl Facts) -> Meta {
    let mut meta = item.meta().clone();
    meta.tokens = item.tokens();
    meta
}

/// A message's facts as a caller holds them (e.g. a cached Python object, with the message
/// that names it), for a [`Tail`].
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

/// An item named by a key: a message of a list, by its position's content.
impl<K, F: Facts> Facts for (K, F) {
    fn meta(&self) -> &Meta {
        self.1.meta()
    }
    fn tokens(&self) -> u32 {
        self.1.tokens()
    }
}

/// The window `rule` keeps of a history of `len` messages whose facts (tokens as priced)
/// `fetch(i)` gives, read from its two ends: a [`Tail`] used once.
///
/// # Errors
/// The first error `fetch` returns.
pub fn decide_from_end<F: Facts, E>(
    len: usize,
    rule: Rule,
    options: Options,
    first: usize,
    fetch: impl FnMut(usize) -> Result<F, E>,
) -> Result<Window, E> {
    Tail::new().decide(len, rule, options, first, |_, _| true, fetch)
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
        let mut fetched = Vec::new();
        let w = decide_from_end(
            metas.len(),
            Rule::Budget(2_000),
            OPTIONS,
            FIRST_REGION,
            |i| {
                fetched.push(i);
                Ok::<_, ()>(&metas[i])
            },
        )
        .unwrap();
        assert!(!w.unchanged);
        assert!(
            fetched.len() < 200,
            "read {} of {}",
            fetched.len(),
            metas.len()
        );
        fetched.sort_unstable();
        fetched.dedup();
        let all = fetched.len();
        fetched.dedup();
        assert_eq!(fetched.len(), all, "each message fetched once");
    }

    #[test]
    fn a_kept_tail_reads_only_what_was_appended() {
        let metas = agent_history(3_000);
        let mut tail: Tail<(usize, &Meta)> = Tail::new();
        let same = |i: usize, item: &(usize, &Meta)| item.0 == i;
        let mut len = 2_000;
        let mut fetched = Vec::new();
        let fetch = |fetched: &mut Vec<usize>, i: usize| {
            fetched.push(i);
            Ok::<_, ()>((i, &metas[i]))
        };
        tail.decide(len, Rule::Budget(2_000), OPTIONS, FIRST_REGION, same, |i| {
            fetch(&mut fetched, i)
        })
        .unwrap();
        for _ in 0..50 {
            len += 3;
            fetched.clear();
            let w = tail
                .decide(len, Rule::Budget(2_000), OPTIONS, FIRST_REGION, same, |i| {
                    fetch(&mut fetched, i)
                })
                .unwrap();
            assert_eq!(fetched, [len - 3, len - 2, len - 1]);
            let prefix: MessageLog<()> = metas[..len].iter().map(|m| ((), m.clone())).collect();
            assert_eq!(w, decide(&prefix, Rule::Budget(2_000), OPTIONS).unwrap());
            assert!(tail.kept() < 200, "keeps {}", tail.kept());
        }
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
        // The call at 2 is answered at 5: holding [3, 6) cannot tell whether cut 4 is safe.
        let metas = [
            Meta::system(1),
            Meta::user(1),
            Meta::assistant(1).with_tool_uses(["a"]),
            Meta::assistant(1),
            Meta::user(1),
            Meta::new(Role::User, 1).with_tool_results(["a"]),
        ];
        let mut tail: Tail<&Meta> = Tail::new();
        tail.decide(
            6,
            Rule::LastMessages(1),
            OPTIONS,
            1,
            |_, _| true,
            |i| Ok::<_, ()>(&metas[i]),
        )
        .unwrap();
        // The same head, and only [3, 6) held.
        let mut held: Tail<&Meta> = Tail::new();
        held.head = tail.head.take();
        (held.base, held.len) = (6, 6);
        for meta in metas[3..].iter().rev() {
            held.push_front(meta);
        }
        assert_eq!(held.safe_cut_at_or_before(5), Err(NeedMore));
        assert_eq!(held.safe_cut_at_or_after(6), Ok(6));
    }
}
