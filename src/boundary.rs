//! Pair-safe cuts, turns and rounds; validation and repair plans for tool call pairing.
//!
//! # Definitions
//!
//! - A **cut** at index `i` (`0 ..= len`) keeps `messages[i..]`. Cut 0 keeps everything and cut
//!   `len` keeps nothing.
//! - A tool result in message `r` with id `x` **answers** the latest message `u < r` that issues
//!   a tool use with id `x` (within that message, the first call with `x` not yet answered).
//!   A result with no such message is an *orphan* and constrains nothing; a call that no later
//!   message answers is *pending* and constrains nothing either (dropping it drops nothing else).
//!   "Latest" rather than "first" because some providers and local models reuse ids such as
//!   `call_0` in every turn; pairing each result with the nearest call keeps those histories
//!   trimmable.
//! - A cut `i` is **safe** when no tool use in a message before `i` is answered by a message at
//!   or after `i`: for every answered pair `(u, r)`, `i` is not in `u+1 ..= r`. Cut 0 and cut
//!   `len` are always safe. So the kept suffix of a safe cut never starts with, or contains, a
//!   tool result whose call was cut, and never holds half of a parallel call's results.
//! - A **turn start** is the index of a real user message ([`Meta::is_real_user`]).
//! - A **round start** is `i` such that message `i` is a real user message, or message `i` is an
//!   assistant message and `i == 0` or message `i - 1` is neither an assistant message nor a
//!   real user message. So an assistant message after tool results or a system message opens a
//!   round, consecutive assistant messages share one, and an assistant reply right after a user
//!   question belongs to the question's round.
//! - A **user cut** is a safe cut whose message is a real user message: a kept suffix starting
//!   there opens with a user turn (what Anthropic and Gemini require when no task is pinned).
//! - The **pinned head** is the leading system messages plus, optionally, the task (the first
//!   real user message, wherever it is); see [`BoundaryIndex::pinned_head`].
//!
//! # The incremental index
//!
//! [`BoundaryIndex`] keeps these facts for a growing log in persistent (`imbl`) structures, so a
//! clone is O(1) and a clone never sees later pushes. Appending message `n` whose results answer
//! messages `u₁, u₂, …` makes every cut in `min(u)+1 ..= n` unsafe, forever: appends only add
//! pairs, so a cut never becomes safe again. The sorted set of safe cuts therefore behaves like
//! a stack: pop every safe cut above `min(u)`, push `n + 1`. Each cut is pushed once and popped
//! at most once (amortised O(1) per append); queries are searches that gallop from where the
//! answer should be (O(log n) at worst, O(log d) for an answer d places from that guess).
//!
//! # Plain slices
//!
//! [`validate`] and [`repair_plan`] check a list of messages a user passes in, independent of
//! any log. They use the same pairing rule. `repair_plan` is deterministic: its synthetic ids
//! derive only from the input (`{id}__dup{k}`), so the same input always gives the same output
//! and provider prompt caches stay warm.

use std::collections::{BTreeSet, HashMap as StdHashMap};
use std::fmt;
use std::sync::Arc;

use imbl::{HashMap, Vector};

use crate::meta::{Meta, Role};

/// [`partition_point`] that starts at `hint` and gallops away from it (1, 2, 4, … steps)
/// before bisecting: O(log d) probes, where d is how far the answer is from `hint`. The log's
/// queries land near the newest messages (a budget keeps the end of the history), so with a
/// good hint they cost the same at 100k messages as at 1k — and probes of an `imbl` vector
/// near one place stay in the same few cached chunks, where a plain bisection touches a new
/// chunk with every probe.
pub(crate) fn partition_point_near(
    len: usize,
    hint: usize,
    mut pred: impl FnMut(usize) -> bool,
) -> usize {
    let hint = hint.min(len);
    // Invariant: `pred` is false below `lo` and true from `hi` on.
    let (lo, hi) = if hint < len && !pred(hint) {
        let (mut lo, mut step) = (hint + 1, 1usize);
        loop {
            let probe = hint.saturating_add(step);
            if probe >= len {
                break (lo, len);
            }
            if pred(probe) {
                break (lo, probe);
            }
            lo = probe + 1;
            step = step.saturating_mul(2);
        }
    } else {
        let (mut hi, mut step) = (hint, 1usize);
        loop {
            let Some(probe) = hint.checked_sub(step) else {
                break (0, hi);
            };
            if !pred(probe) {
                break (probe + 1, hi);
            }
            hi = probe;
            step = step.saturating_mul(2);
        }
    };
    lo + partition_point(hi - lo, |i| pred(lo + i))
}

/// The position of the first element `>= value` in `sorted` (ascending positions in
/// `0..=len`), searched from where it would be if the positions were spread evenly.
fn first_at_least(sorted: &Vector<usize>, value: usize, len: usize) -> usize {
    let n = sorted.len();
    let hint = (value.min(len) as u128 * n as u128 / (len as u128 + 1)) as usize;
    partition_point_near(n, hint, |p| sorted.get(p).is_some_and(|&c| c >= value))
}

/// The largest `i` in `0..len` with `pred(i)` false, plus one: the first index where `pred`
/// turns true, for a `pred` that is false then true. `len` if it never does.
pub(crate) fn partition_point(len: usize, mut pred: impl FnMut(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Incrementally maintained safe cuts, turn starts and round starts of a growing list of
/// messages. Clone is O(1) (persistent structures) and clones are independent.
#[derive(Clone, Debug)]
pub struct BoundaryIndex {
    /// Number of messages pushed.
    len: usize,
    /// Every safe cut, ascending. Always holds 0 and `len`.
    safe_cuts: Vector<usize>,
    /// Tool use id → index of the latest message issuing it. `Arc<str>` keys because a push
    /// while a clone is alive copies the HAMT nodes on the path, cloning every key in them: a
    /// refcount bump instead of an allocation each.
    calls: HashMap<Arc<str>, usize>,
    /// Indices of real user messages, ascending.
    turn_starts: Vector<usize>,
    /// Round starts, ascending.
    round_starts: Vector<usize>,
    /// Role and realness of the last message, for the round rule.
    last: Option<(Role, bool)>,
    /// Number of leading system messages.
    leading_system: usize,
    /// Real user messages that are safe cuts (user cuts), ascending. Popped together with
    /// `safe_cuts`, so it stays the intersection of the two.
    user_cuts: Vector<usize>,
    /// The earliest message the first real user message's results answer, if any.
    task_answers_from: Option<usize>,
}

/// The always-kept head of a history (see [`BoundaryIndex::pinned_head`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinnedHead {
    /// Messages `0..system_end` are the leading system messages.
    pub system_end: usize,
    /// The pinned task (the first real user message), if pinned and present.
    pub task: Option<usize>,
    /// The first index a kept suffix may start at; always a safe cut.
    pub floor: usize,
    /// True when the whole prefix `0..floor` must be kept (the task answers a tool call made
    /// before it, so dropping what lies between would orphan its result).
    pub contiguous: bool,
}

impl Default for BoundaryIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl BoundaryIndex {
    /// The index of an empty list: the only cut is 0, and it is safe.
    #[must_use]
    pub fn new() -> Self {
        let mut safe_cuts = Vector::new();
        safe_cuts.push_back(0);
        Self {
            len: 0,
            safe_cuts,
            calls: HashMap::new(),
            turn_starts: Vector::new(),
            round_starts: Vector::new(),
            last: None,
            leading_system: 0,
            user_cuts: Vector::new(),
            task_answers_from: None,
        }
    }

    /// The index of `metas`, built by pushing each in order (O(n)).
    #[must_use]
    pub fn from_metas<'a>(metas: impl IntoIterator<Item = &'a Meta>) -> Self {
        let mut index = Self::new();
        for meta in metas {
            index.push(meta);
        }
        index
    }

    /// Number of messages indexed.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if no message was indexed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Indexes the next message. Amortised O(1) (plus O(log n) per tool block for the id map),
    /// also while clones are alive.
    pub fn push(&mut self, meta: &Meta) {
        let n = self.len;
        // The earliest message any of this message's results answers: every cut after it, up
        // to and including n, now separates a call from its result.
        let earliest = meta
            .tool_results
            .iter()
            .filter_map(|id| self.calls.get(&**id).copied())
            .min();
        if let Some(lo) = earliest {
            while self.safe_cuts.back().is_some_and(|&cut| cut > lo) {
                self.safe_cuts.pop_back();
            }
            while self.user_cuts.back().is_some_and(|&cut| cut > lo) {
                self.user_cuts.pop_back();
            }
        }
        // Cut n was safe before this message (n is always safe at the end); it stays safe
        // iff nothing popped it, and it is a user cut iff this message is a real user one.
        if meta.is_real_user() && self.safe_cuts.back() == Some(&n) {
            self.user_cuts.push_back(n);
        }
        if meta.role == Role::System && self.leading_system == n {
            self.leading_system = n + 1;
        }
        if meta.is_real_user() && self.turn_starts.is_empty() {
            self.task_answers_from = earliest;
        }
        self.safe_cuts.push_back(n + 1);
        // Calls register after the results: a message's results never answer its own calls.
        for id in meta.tool_uses.iter() {
            self.calls.insert(Arc::clone(id), n); // the message's own id, shared
        }
        let real = meta.is_real_user();
        if real {
            self.turn_starts.push_back(n);
            self.round_starts.push_back(n);
        } else if meta.role == Role::Assistant
            && self
                .last
                .is_none_or(|(role, last_real)| role != Role::Assistant && !last_real)
        {
            self.round_starts.push_back(n);
        }
        self.last = Some((meta.role, real));
        self.len = n + 1;
    }

    /// Whether cut `i` is safe; false for `i > len`.
    #[must_use]
    pub fn is_safe_cut(&self, i: usize) -> bool {
        i <= self.len && self.safe_cuts.binary_search(&i).is_ok()
    }

    /// The largest safe cut `<= i` (`i` clamped to `len`). Never fails: 0 is always safe.
    #[must_use]
    pub fn safe_cut_at_or_before(&self, i: usize) -> usize {
        let i = i.min(self.len);
        first_at_least(&self.safe_cuts, i + 1, self.len)
            .checked_sub(1)
            .and_then(|p| self.safe_cuts.get(p).copied())
            .unwrap_or(0)
    }

    /// The smallest safe cut `>= i` (`i` clamped to `len`). Never fails: `len` is always safe.
    #[must_use]
    pub fn safe_cut_at_or_after(&self, i: usize) -> usize {
        let i = i.min(self.len);
        let pos = first_at_least(&self.safe_cuts, i, self.len);
        self.safe_cuts.get(pos).copied().unwrap_or(self.len)
    }

    /// Number of safe cuts (including 0 and `len`).
    #[must_use]
    pub fn safe_cut_count(&self) -> usize {
        self.safe_cuts.len()
    }

    /// All safe cuts, ascending.
    pub fn safe_cuts(&self) -> impl Iterator<Item = usize> + '_ {
        self.safe_cuts.iter().copied()
    }

    /// Number of real user messages (turn starts).
    #[must_use]
    pub fn turn_count(&self) -> usize {
        self.turn_starts.len()
    }

    /// Number of rounds.
    #[must_use]
    pub fn round_count(&self) -> usize {
        self.round_starts.len()
    }

    /// Turn starts, ascending.
    pub fn turn_starts(&self) -> impl Iterator<Item = usize> + '_ {
        self.turn_starts.iter().copied()
    }

    /// Round starts, ascending.
    pub fn round_starts(&self) -> impl Iterator<Item = usize> + '_ {
        self.round_starts.iter().copied()
    }

    /// The start of the `k`-th last turn (`k = 1` is the newest); `None` if `k == 0` or there
    /// are fewer than `k` turns.
    #[must_use]
    pub fn kth_last_turn_start(&self, k: usize) -> Option<usize> {
        kth_last(&self.turn_starts, k)
    }

    /// The start of the `k`-th last round (`k = 1` is the newest); `None` if `k == 0` or there
    /// are fewer than `k` rounds.
    #[must_use]
    pub fn kth_last_round_start(&self, k: usize) -> Option<usize> {
        kth_last(&self.round_starts, k)
    }
}

impl BoundaryIndex {
    /// Number of leading system messages.
    #[must_use]
    pub fn leading_system_count(&self) -> usize {
        self.leading_system
    }

    /// The first real user message (the task), if any.
    #[must_use]
    pub fn first_turn_start(&self) -> Option<usize> {
        self.turn_starts.front().copied()
    }

    /// The largest user cut `<= i`, if any. O(log n).
    #[must_use]
    pub fn user_cut_at_or_before(&self, i: usize) -> Option<usize> {
        let pos = first_at_least(&self.user_cuts, i.saturating_add(1), self.len);
        pos.checked_sub(1)
            .and_then(|p| self.user_cuts.get(p).copied())
    }

    /// The smallest user cut `>= i`, if any. O(log n).
    #[must_use]
    pub fn user_cut_at_or_after(&self, i: usize) -> Option<usize> {
        let pos = first_at_least(&self.user_cuts, i, self.len);
        self.user_cuts.get(pos).copied()
    }

    /// The first round start `>= i`, if any. O(log n).
    #[must_use]
    pub fn round_start_at_or_after(&self, i: usize) -> Option<usize> {
        let pos = first_at_least(&self.round_starts, i, self.len);
        self.round_starts.get(pos).copied()
    }

    /// The last round start `< end`, if any. O(log n).
    #[must_use]
    pub fn round_start_before(&self, end: usize) -> Option<usize> {
        let pos = first_at_least(&self.round_starts, end, self.len);
        pos.checked_sub(1)
            .and_then(|p| self.round_starts.get(p).copied())
    }

    /// The pinned head: the leading system messages and, if `pin_task`, the first real user
    /// message, whoever spoke first (an assistant greeting before the task is not pinned).
    ///
    /// A kept suffix may start at `floor` or later, where `floor` is the first safe cut
    /// after the head. If the task answers tool calls made between the system messages and
    /// itself, the head is the whole prefix `0..floor` (`contiguous`), so its results keep
    /// their calls. O(log n).
    #[must_use]
    pub fn pinned_head(&self, pin_task: bool) -> PinnedHead {
        let system_end = self.leading_system;
        let task = if pin_task {
            self.first_turn_start()
        } else {
            None
        };
        match task {
            None => PinnedHead {
                system_end,
                task: None,
                floor: self.safe_cut_at_or_after(system_end),
                contiguous: false,
            },
            Some(k) => PinnedHead {
                system_end,
                task,
                floor: self.safe_cut_at_or_after(k + 1),
                contiguous: self.task_answers_from.is_some_and(|u| u >= system_end),
            },
        }
    }
}

fn kth_last(starts: &Vector<usize>, k: usize) -> Option<usize> {
    if k == 0 {
        return None;
    }
    starts
        .len()
        .checked_sub(k)
        .and_then(|p| starts.get(p).copied())
}

// ====================================================================================
// Validation and repair over plain slices
// ====================================================================================

/// One thing a provider would reject in a list of messages. Every variant names the index of
/// the message it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// A tool result with no call of that id anywhere in the list.
    OrphanResult {
        /// The message holding the result.
        index: usize,
        /// The id it answers.
        tool_use_id: Box<str>,
    },
    /// A tool result whose call only comes later (at `call_index`, the first later call).
    ResultBeforeCall {
        /// The message holding the result.
        index: usize,
        /// The id it answers.
        tool_use_id: Box<str>,
        /// The first message at or after `index` issuing that id.
        call_index: usize,
    },
    /// A tool call no later message answers (at the end of a history too: providers reject a
    /// request whose last assistant call has no result).
    DanglingCall {
        /// The message issuing the call.
        index: usize,
        /// The call's id.
        tool_use_id: Box<str>,
    },
    /// A tool use id already issued earlier (in this or an earlier message).
    DuplicateToolUseId {
        /// The message repeating the id.
        index: usize,
        /// The repeated id.
        tool_use_id: Box<str>,
        /// The message that issued it first.
        first_index: usize,
    },
    /// A second result for a call that was already answered.
    DuplicateResult {
        /// The message holding the extra result.
        index: usize,
        /// The id it answers.
        tool_use_id: Box<str>,
        /// The message holding the first result for that call.
        first_index: usize,
    },
    /// The first non-system message is not a user message.
    NonUserFirstTurn {
        /// That message.
        index: usize,
    },
}

impl Violation {
    /// The index of the message the violation is about.
    #[must_use]
    pub fn index(&self) -> usize {
        match self {
            Self::OrphanResult { index, .. }
            | Self::ResultBeforeCall { index, .. }
            | Self::DanglingCall { index, .. }
            | Self::DuplicateToolUseId { index, .. }
            | Self::DuplicateResult { index, .. }
            | Self::NonUserFirstTurn { index } => *index,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OrphanResult { index, tool_use_id } => write!(
                f,
                "message {index}: tool result for {tool_use_id:?} has no matching tool call"
            ),
            Self::ResultBeforeCall {
                index,
                tool_use_id,
                call_index,
            } => write!(
                f,
                "message {index}: tool result for {tool_use_id:?} comes before its call in message {call_index}"
            ),
            Self::DanglingCall { index, tool_use_id } => write!(
                f,
                "message {index}: tool call {tool_use_id:?} has no result"
            ),
            Self::DuplicateToolUseId {
                index,
                tool_use_id,
                first_index,
            } => write!(
                f,
                "message {index}: tool call id {tool_use_id:?} was already used in message {first_index}"
            ),
            Self::DuplicateResult {
                index,
                tool_use_id,
                first_index,
            } => write!(
                f,
                "message {index}: tool call {tool_use_id:?} was already answered in message {first_index}"
            ),
            Self::NonUserFirstTurn { index } => write!(
                f,
                "message {index}: the first non-system message must be a user message"
            ),
        }
    }
}

/// One step of a repair plan. Indices and positions refer to the *input* list; the Python layer
/// applies all steps to it at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepairOp {
    /// Drop the `result_pos`-th tool_result block of message `index` (an orphan, a result
    /// before its call, or a duplicate result).
    DropResult {
        /// The message.
        index: usize,
        /// Position among the message's tool_result blocks.
        result_pos: usize,
    },
    /// Give the `use_pos`-th tool_use block of message `index` a new id (a duplicate id).
    RenameToolUse {
        /// The message.
        index: usize,
        /// Position among the message's tool_use blocks.
        use_pos: usize,
        /// The deterministic new id.
        new_id: Box<str>,
    },
    /// Give the `result_pos`-th tool_result block of message `index` the new id of the call it
    /// answers.
    RenameResult {
        /// The message.
        index: usize,
        /// Position among the message's tool_result blocks.
        result_pos: usize,
        /// The renamed call's new id.
        new_id: Box<str>,
    },
    /// Insert synthetic error results for dangling calls, in one user message right after
    /// message `after` (or merged into the tool-result message that already follows it).
    InsertResults {
        /// The message issuing the calls.
        after: usize,
        /// The (possibly renamed) ids to answer, in block order.
        tool_use_ids: Vec<Box<str>>,
    },
    /// Insert a placeholder user message before message `index` (an assistant-first history).
    InsertUserBefore {
        /// The first non-system message kept.
        index: usize,
    },
    /// Drop message `index`: a user message left with no content once its results are dropped.
    DropMessage {
        /// The message.
        index: usize,
    },
}

impl RepairOp {
    /// Sort key: by message, an inserted user message first, the inserted results last.
    fn key(&self) -> (usize, u8, usize) {
        match self {
            Self::InsertUserBefore { index } => (*index, 0, 0),
            Self::DropResult { index, result_pos }
            | Self::RenameResult {
                index, result_pos, ..
            } => (*index, 1, *result_pos),
            Self::RenameToolUse { index, use_pos, .. } => (*index, 2, *use_pos),
            Self::DropMessage { index } => (*index, 3, 0),
            Self::InsertResults { after, .. } => (*after, 4, 0),
        }
    }
}

/// What became of one tool_result block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ResultFate {
    /// Answers call occurrence `call` (an index into `Analysis::calls`).
    Answers {
        call: usize,
    },
    Orphan,
    BeforeCall {
        call_index: usize,
    },
    Duplicate {
        first_index: usize,
    },
}

/// One tool_use block.
#[derive(Clone, Debug)]
struct CallOcc<'a> {
    index: usize,
    pos: usize,
    id: &'a str,
    /// For a repeated id: the message that issued it first, and how many times it was issued
    /// before (1 for the first repeat).
    dup_of: Option<(usize, usize)>,
    /// The result blocks answering it: (message, position). Only the first is kept.
    answered_by: Option<(usize, usize)>,
}

/// Pairing of every tool block in a list of messages, shared by `validate` and `repair_plan`.
struct Analysis<'a> {
    calls: Vec<CallOcc<'a>>,
    /// Per message, the fate of each result block in block order.
    results: Vec<Vec<ResultFate>>,
    /// The first non-system message, if it is not a user message.
    non_user_first: Option<usize>,
}

fn analyze(metas: &[Meta]) -> Analysis<'_> {
    // First message issuing each id, for "result before call" and duplicate ids.
    let mut first_call: StdHashMap<&str, usize> = StdHashMap::new();
    for (i, m) in metas.iter().enumerate() {
        for id in m.tool_uses.iter() {
            first_call.entry(&**id).or_insert(i);
        }
    }
    let mut calls: Vec<CallOcc<'_>> = Vec::new();
    // id → (latest issuing message, its call occurrences with that id).
    let mut latest: StdHashMap<&str, (usize, Vec<usize>)> = StdHashMap::new();
    let mut seen: StdHashMap<&str, usize> = StdHashMap::new();
    let mut results = Vec::with_capacity(metas.len());
    for (i, m) in metas.iter().enumerate() {
        let mut fates = Vec::with_capacity(m.tool_results.len());
        for (rpos, id) in m.tool_results.iter().enumerate() {
            let id: &str = id;
            let fate = match latest.get(id) {
                Some((_, occs)) => {
                    let open = occs
                        .iter()
                        .copied()
                        .find(|&c| calls.get(c).is_some_and(|o| o.answered_by.is_none()));
                    match open {
                        Some(c) => {
                            if let Some(o) = calls.get_mut(c) {
                                o.answered_by = Some((i, rpos));
                            }
                            ResultFate::Answers { call: c }
                        }
                        None => {
                            let first_index = occs
                                .first()
                                .and_then(|&c| calls.get(c))
                                .and_then(|o| o.answered_by)
                                .map_or(i, |(r, _)| r);
                            ResultFate::Duplicate { first_index }
                        }
                    }
                }
                None => match first_call.get(id) {
                    Some(&call_index) => ResultFate::BeforeCall { call_index },
                    None => ResultFate::Orphan,
                },
            };
            fates.push(fate);
        }
        results.push(fates);
        // Calls register after the results: a message never answers its own calls.
        for (pos, id) in m.tool_uses.iter().enumerate() {
            let id: &str = id;
            let count = seen.entry(id).or_insert(0);
            let dup_of = if *count > 0 {
                first_call.get(id).map(|&f| (f, *count))
            } else {
                None
            };
            *count += 1;
            let occ = calls.len();
            calls.push(CallOcc {
                index: i,
                pos,
                id,
                dup_of,
                answered_by: None,
            });
            let slot = latest.entry(id).or_insert((i, Vec::new()));
            if slot.0 != i {
                *slot = (i, Vec::new());
            }
            slot.1.push(occ);
        }
    }
    let non_user_first = metas
        .iter()
        .position(|m| m.role != Role::System)
        .filter(|&i| metas.get(i).is_some_and(|m| m.role != Role::User));
    Analysis {
        calls,
        results,
        non_user_first,
    }
}

/// Every violation in `metas`, ordered by message index (within a message: first-turn, then
/// results in block order, then duplicate call ids, then dangling calls). Pure.
#[must_use]
pub fn validate(metas: &[Meta]) -> Vec<Violation> {
    let a = analyze(metas);
    let mut out: Vec<((usize, u8, usize), Violation)> = Vec::new();
    if let Some(index) = a.non_user_first {
        out.push(((index, 0, 0), Violation::NonUserFirstTurn { index }));
    }
    for (index, (meta, fates)) in metas.iter().zip(&a.results).enumerate() {
        for (pos, (id, fate)) in meta.tool_results.iter().zip(fates).enumerate() {
            let tool_use_id = Box::<str>::from(&**id);
            let v = match *fate {
                ResultFate::Answers { .. } => continue,
                ResultFate::Orphan => Violation::OrphanResult { index, tool_use_id },
                ResultFate::BeforeCall { call_index } => Violation::ResultBeforeCall {
                    index,
                    tool_use_id,
                    call_index,
                },
                ResultFate::Duplicate { first_index } => Violation::DuplicateResult {
                    index,
                    tool_use_id,
                    first_index,
                },
            };
            out.push(((index, 1, pos), v));
        }
    }
    for c in &a.calls {
        if let Some((first_index, _)) = c.dup_of {
            out.push((
                (c.index, 2, c.pos),
                Violation::DuplicateToolUseId {
                    index: c.index,
                    tool_use_id: c.id.into(),
                    first_index,
                },
            ));
        }
        if c.answered_by.is_none() {
            out.push((
                (c.index, 3, c.pos),
                Violation::DanglingCall {
                    index: c.index,
                    tool_use_id: c.id.into(),
                },
            ));
        }
    }
    out.sort_by_key(|(k, _)| *k);
    out.into_iter().map(|(_, v)| v).collect()
}

/// A deterministic plan that makes `metas` valid (see [`RepairOp`]); empty when
/// [`validate`] finds nothing. Ops are ordered by message index.
///
/// Fixes: orphan, early and duplicate results are dropped; a repeated call id `x` becomes
/// `x__dup{k}` (k-th repeat; bumped further if that id is taken anywhere in the input) and the
/// result answering that call follows; dangling calls get synthetic results right after their
/// message; a user message left without content is dropped; a placeholder user message goes
/// before a first non-system message that is not a user message (judged after the drops).
#[must_use]
pub fn repair_plan(metas: &[Meta]) -> Vec<RepairOp> {
    let a = analyze(metas);
    let mut ops: Vec<RepairOp> = Vec::new();

    // Every id in the input, so a synthetic id never collides with one.
    let mut taken: BTreeSet<&str> = BTreeSet::new();
    for m in metas {
        taken.extend(m.tool_uses.iter().map(|s| &**s));
        taken.extend(m.tool_results.iter().map(|s| &**s));
    }
    let mut fresh: BTreeSet<String> = BTreeSet::new();
    // Final id of each call occurrence.
    let mut final_ids: Vec<Box<str>> = Vec::with_capacity(a.calls.len());
    for c in &a.calls {
        let id: Box<str> = match c.dup_of {
            None => c.id.into(),
            Some((_, mut k)) => loop {
                let candidate = format!("{}__dup{k}", c.id);
                if !taken.contains(candidate.as_str()) && !fresh.contains(&candidate) {
                    fresh.insert(candidate.clone());
                    ops.push(RepairOp::RenameToolUse {
                        index: c.index,
                        use_pos: c.pos,
                        new_id: candidate.as_str().into(),
                    });
                    break candidate.into_boxed_str();
                }
                k += 1;
            },
        };
        final_ids.push(id);
    }

    // Results: drop the unpaired ones, rename the ones whose call was renamed.
    let mut emptied: Vec<bool> = vec![false; metas.len()];
    for (index, (meta, fates)) in metas.iter().zip(&a.results).enumerate() {
        let mut kept = 0usize;
        for (result_pos, fate) in fates.iter().enumerate() {
            match *fate {
                ResultFate::Answers { call } => {
                    kept += 1;
                    if let (Some(c), Some(new_id)) = (a.calls.get(call), final_ids.get(call)) {
                        if c.dup_of.is_some() {
                            ops.push(RepairOp::RenameResult {
                                index,
                                result_pos,
                                new_id: new_id.clone(),
                            });
                        }
                    }
                }
                _ => ops.push(RepairOp::DropResult { index, result_pos }),
            }
        }
        let only_results = meta.role == Role::User && !meta.real_user && meta.tool_uses.is_empty();
        if !fates.is_empty() && kept == 0 && only_results {
            ops.push(RepairOp::DropMessage { index });
            if let Some(e) = emptied.get_mut(index) {
                *e = true;
            }
        }
    }

    // Dangling calls: one synthetic result message per issuing message, in block order.
    let mut dangling: Vec<(usize, Box<str>)> = a
        .calls
        .iter()
        .zip(&final_ids)
        .filter(|(c, _)| c.answered_by.is_none())
        .map(|(c, id)| (c.index, id.clone()))
        .collect();
    dangling.sort_by_key(|(i, _)| *i);
    let mut grouped: Vec<RepairOp> = Vec::new();
    for (after, id) in dangling {
        match grouped.last_mut() {
            Some(RepairOp::InsertResults {
                after: a,
                tool_use_ids,
            }) if *a == after => tool_use_ids.push(id),
            _ => grouped.push(RepairOp::InsertResults {
                after,
                tool_use_ids: vec![id],
            }),
        }
    }
    ops.extend(grouped);

    // First turn, judged on what survives the drops.
    let first = metas
        .iter()
        .enumerate()
        .find(|(i, m)| m.role != Role::System && !emptied.get(*i).copied().unwrap_or(false));
    if let Some((index, m)) = first {
        if m.role != Role::User {
            ops.push(RepairOp::InsertUserBefore { index });
        }
    }

    ops.sort_by_key(RepairOp::key);
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> Meta {
        Meta::user(10)
    }
    fn call(ids: &[&str]) -> Meta {
        Meta::assistant(10).with_tool_uses(ids.iter().copied())
    }
    fn results(ids: &[&str]) -> Meta {
        Meta::new(Role::User, 10).with_tool_results(ids.iter().copied())
    }
    fn safe(metas: &[Meta]) -> Vec<usize> {
        BoundaryIndex::from_metas(metas).safe_cuts().collect()
    }

    #[test]
    fn pinned_head_skips_an_assistant_greeting_but_keeps_the_task() {
        // 0 system, 1 assistant greeting, 2 user task, 3 call a, 4 result a, 5 assistant
        let m = [
            Meta::system(5),
            Meta::assistant(5),
            user(),
            call(&["a"]),
            results(&["a"]),
            Meta::assistant(5),
        ];
        let idx = BoundaryIndex::from_metas(&m);
        let head = idx.pinned_head(true);
        assert_eq!(
            head,
            PinnedHead {
                system_end: 1,
                task: Some(2),
                floor: 3,
                contiguous: false
            }
        );
        assert_eq!(idx.pinned_head(false).task, None);
        assert_eq!(idx.pinned_head(false).floor, 1);
    }

    #[test]
    fn a_task_answering_an_earlier_call_pins_the_whole_prefix() {
        // 0 assistant call a, 1 user: result a + text (the task), 2 assistant
        let m = [
            call(&["a"]),
            Meta::user(10).with_tool_results(["a"]),
            Meta::assistant(5),
        ];
        let head = BoundaryIndex::from_metas(&m).pinned_head(true);
        assert!(head.contiguous);
        assert_eq!((head.task, head.floor), (Some(1), 2));
    }

    #[test]
    fn user_cuts_are_safe_real_user_messages() {
        // 0 user, 1 call a, 2 user text (unsafe: a's result comes later), 3 result a, 4 user
        let m = [user(), call(&["a"]), user(), results(&["a"]), user()];
        let idx = BoundaryIndex::from_metas(&m);
        assert_eq!(idx.user_cut_at_or_before(3), Some(0));
        assert_eq!(idx.user_cut_at_or_after(1), Some(4));
        assert_eq!(idx.user_cut_at_or_after(5), None);
    }

    #[test]
    fn empty_index() {
        let idx = BoundaryIndex::new();
        assert!(idx.is_safe_cut(0));
        assert!(!idx.is_safe_cut(1));
        assert_eq!(idx.safe_cut_at_or_before(5), 0);
        assert_eq!(idx.safe_cut_at_or_after(5), 0);
        assert_eq!(idx.kth_last_turn_start(1), None);
    }

    #[test]
    fn simple_pair_blocks_the_cut_between() {
        // 0 user, 1 call a, 2 result a, 3 assistant
        let m = [user(), call(&["a"]), results(&["a"]), Meta::assistant(5)];
        assert_eq!(safe(&m), vec![0, 1, 3, 4]);
    }

    #[test]
    fn parallel_calls_answered_over_several_messages() {
        // 1 calls a,b; 2 answers a; 3 answers b: cuts 2 and 3 unsafe.
        let m = [user(), call(&["a", "b"]), results(&["a"]), results(&["b"])];
        assert_eq!(safe(&m), vec![0, 1, 4]);
    }

    #[test]
    fn late_result_and_pending_call_and_orphan() {
        // 1 calls a; 2 user text; 3 calls b (pending); 4 answers a late; 5 orphan z.
        let m = [
            user(),
            call(&["a"]),
            user(),
            call(&["b"]),
            results(&["a"]),
            results(&["z"]),
        ];
        assert_eq!(safe(&m), vec![0, 1, 5, 6]);
        let idx = BoundaryIndex::from_metas(&m);
        assert_eq!(idx.safe_cut_at_or_before(3), 1);
        assert_eq!(idx.safe_cut_at_or_after(2), 5);
        assert_eq!(idx.safe_cut_at_or_after(100), 6);
        assert!(!idx.is_safe_cut(7));
    }

    #[test]
    fn reused_ids_pair_with_the_latest_call() {
        // Local models that number calls per turn: "0" in every turn.
        let m = [
            user(),
            call(&["0"]),
            results(&["0"]),
            call(&["0"]),
            results(&["0"]),
        ];
        assert_eq!(safe(&m), vec![0, 1, 3, 5]);
    }

    #[test]
    fn turns_and_rounds() {
        let m = [
            Meta::system(5),    // 0
            user(),             // 1 turn, round
            call(&["a"]),       // 2 same round as the question
            results(&["a"]),    // 3
            call(&["b"]),       // 4 round
            Meta::assistant(1), // 5 same round
            results(&["b"]),    // 6
            Meta::assistant(1), // 7 round
            user(),             // 8 turn, round
        ];
        let idx = BoundaryIndex::from_metas(&m);
        assert_eq!(idx.turn_starts().collect::<Vec<_>>(), vec![1, 8]);
        assert_eq!(idx.round_starts().collect::<Vec<_>>(), vec![1, 4, 7, 8]);
        assert_eq!(idx.kth_last_round_start(2), Some(7));
        assert_eq!(idx.kth_last_round_start(5), None);
        assert_eq!(idx.kth_last_turn_start(0), None);
        assert_eq!(idx.kth_last_turn_start(2), Some(1));
        // An assistant after a system message opens a round; one at index 0 does too.
        let idx = BoundaryIndex::from_metas(&[Meta::assistant(1), Meta::system(1), call(&[])]);
        assert_eq!(idx.round_starts().collect::<Vec<_>>(), vec![0, 2]);
    }

    #[test]
    fn clones_are_independent() {
        let mut a = BoundaryIndex::from_metas(&[user(), call(&["x"])]);
        let b = a.clone();
        a.push(&results(&["x"]));
        assert!(b.is_safe_cut(2));
        assert!(!a.is_safe_cut(2));
    }

    #[test]
    fn validate_valid_history_is_empty() {
        let m = [
            Meta::system(1),
            user(),
            call(&["a", "b"]),
            results(&["a", "b"]),
            Meta::assistant(1),
        ];
        assert!(validate(&m).is_empty());
        assert!(repair_plan(&m).is_empty());
    }

    #[test]
    fn validate_finds_everything() {
        let m = [
            call(&["a"]),      // 0 non-user first; a dangling
            results(&["z"]),   // 1 orphan
            results(&["b"]),   // 2 before its call at 3
            call(&["b", "b"]), // 3 duplicate id b (pos 1); both dangling
            results(&["b"]),   // 4 answers 3/0
            results(&["b"]),   // 5 answers 3/1
            results(&["b"]),   // 6 duplicate result
            call(&["c"]),      // 7
            results(&["c"]),   // 8
        ];
        let v = validate(&m);
        let expected = vec![
            Violation::NonUserFirstTurn { index: 0 },
            Violation::DanglingCall {
                index: 0,
                tool_use_id: "a".into(),
            },
            Violation::OrphanResult {
                index: 1,
                tool_use_id: "z".into(),
            },
            Violation::ResultBeforeCall {
                index: 2,
                tool_use_id: "b".into(),
                call_index: 3,
            },
            Violation::DuplicateToolUseId {
                index: 3,
                tool_use_id: "b".into(),
                first_index: 3,
            },
            Violation::DuplicateResult {
                index: 6,
                tool_use_id: "b".into(),
                first_index: 4,
            },
        ];
        assert_eq!(v, expected);
        for x in &v {
            let s = x.to_string();
            assert!(s.contains(&format!("message {}", x.index())), "{s}");
        }
    }

    #[test]
    fn repair_plan_for_the_mess() {
        let m = [
            call(&["a"]),      // 0
            results(&["z"]),   // 1
            call(&["b", "b"]), // 2
            results(&["b"]),   // 3
            results(&["b"]),   // 4
        ];
        let plan = repair_plan(&m);
        assert_eq!(
            plan,
            vec![
                RepairOp::InsertUserBefore { index: 0 },
                RepairOp::InsertResults {
                    after: 0,
                    tool_use_ids: vec!["a".into()],
                },
                RepairOp::DropResult {
                    index: 1,
                    result_pos: 0,
                },
                RepairOp::DropMessage { index: 1 },
                RepairOp::RenameToolUse {
                    index: 2,
                    use_pos: 1,
                    new_id: "b__dup1".into(),
                },
                RepairOp::RenameResult {
                    index: 4,
                    result_pos: 0,
                    new_id: "b__dup1".into(),
                },
            ]
        );
        assert_eq!(plan, repair_plan(&m));
    }

    #[test]
    fn synthetic_ids_avoid_existing_ones() {
        let m = [
            user(),
            call(&["x", "x__dup1"]),
            results(&["x", "x__dup1"]),
            call(&["x"]),
            results(&["x"]),
        ];
        let plan = repair_plan(&m);
        assert!(plan.contains(&RepairOp::RenameToolUse {
            index: 3,
            use_pos: 0,
            new_id: "x__dup2".into(),
        }));
    }

    #[test]
    fn first_turn_judged_after_drops() {
        let m = [Meta::system(1), results(&["q"]), Meta::assistant(1)];
        let plan = repair_plan(&m);
        assert_eq!(
            plan,
            vec![
                RepairOp::DropResult {
                    index: 1,
                    result_pos: 0
                },
                RepairOp::DropMessage { index: 1 },
                RepairOp::InsertUserBefore { index: 2 },
            ]
        );
    }

    #[test]
    fn partition_point_bounds() {
        assert_eq!(partition_point(0, |_| true), 0);
        assert_eq!(partition_point(10, |i| i >= 4), 4);
        assert_eq!(partition_point(10, |_| false), 10);
        for len in 0..40 {
            for answer in 0..=len {
                for hint in 0..=len + 2 {
                    assert_eq!(partition_point_near(len, hint, |i| i >= answer), answer);
                }
            }
        }
    }
}
