//! The cut index: pair-safe cuts, turns and rounds of a growing log, kept up to date push by
//! push.
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
//!   assistant message and `i == 0`, or message `i - 1` is neither an assistant message nor a
//!   real user message, or message `i - 1` is an assistant message that issues no tool call.
//!   So an assistant message after tool results or a system message opens a round, an
//!   assistant reply right after a user question belongs to the question's round, and each of
//!   a run of plain assistant replies (a chat posting several, a model thinking out loud) is a
//!   round of its own, which a strategy may cut between.
//! - A **user cut** is a safe cut whose message is a real user message: a kept suffix starting
//!   there opens with a user turn (what Anthropic and Gemini require when no task is pinned).
//! - The **pinned head** is the leading system messages plus, optionally, the task (the first
//!   real user message, wherever it is); see [`Cuts::pinned_head`].
//!
//! # The incremental index
//!
//! [`Cuts`] keeps these facts for a growing log in persistent structures ([`Column`]s of
//! `u32` positions, an `imbl` B-tree of call-id hashes), so a clone is O(1) and a clone never sees later pushes. Appending message `n` whose results answer
//! messages `u₁, u₂, …` makes every cut in `min(u)+1 ..= n` unsafe, forever: appends only add
//! pairs, so a cut never becomes safe again. The sorted set of safe cuts therefore behaves like
//! a stack: pop every safe cut above `min(u)`, push `n + 1`. Each cut is pushed once and popped
//! at most once (amortised O(1) per append); queries are searches that gallop from where the
//! answer should be (O(log n) at worst, O(log d) for an answer d places from that guess).
//!
//! Invariants: `0` and `len` are always safe cuts; the safe cuts, user cuts, turn starts and
//! round starts are ascending and describe exactly the messages pushed; the user cuts are
//! the safe cuts whose message is a real user message; a clone never sees a later push.
//! Property-tested against a brute-force reading in `tests/core_props.rs`.
//!
//! The `validate` module checks a plain list of messages under the same pairing rule.

use imbl::OrdMap;

use crate::column::Column;
use crate::meta::{Meta, Role};
use crate::search::partition_point_near;

/// The most messages an index (and so a log) holds: positions are kept as `u32`, 4 bytes
/// instead of 8 each. A log that long would need ~64 GB for its records alone; appends and
/// rewrites past it are refused ([`crate::log::MessageLog::check_room`]).
pub const MAX_MESSAGES: usize = u32::MAX as usize - 1;

/// A position as stored (`MAX_MESSAGES` bounds every index, so it fits).
fn stored(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// The map key of a tool use id. Under `cfg(test)` a 2-bit hash, so that the unit tests
/// meet collisions all the time.
fn id_hash(id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = rustc_hash::FxHasher::default();
    id.hash(&mut hasher);
    let hash = hasher.finish();
    if cfg!(test) {
        hash % 4
    } else {
        hash
    }
}

/// A sorted position column, read back as `usize`.
type Positions = Column<u32>;

fn at(sorted: &Positions, p: usize) -> Option<usize> {
    sorted.get(p).map(|&c| c as usize)
}

/// The position of the first element `>= value` in `sorted` (ascending positions in
/// `0..=len`), searched from where it would be if the positions were spread evenly.
fn first_at_least(sorted: &Positions, value: usize, len: usize) -> usize {
    let n = sorted.len();
    let hint = (value.min(len) as u128 * n as u128 / (len as u128 + 1)) as usize;
    partition_point_near(n, hint, |p| at(sorted, p).is_some_and(|c| c >= value))
}

/// Incrementally maintained safe cuts, turn starts and round starts of a growing list of
/// messages. Clone is O(1) (persistent structures) and clones are independent.
#[derive(Clone, Debug)]
pub struct Cuts {
    /// Number of messages pushed.
    len: usize,
    /// Every safe cut, ascending. Always holds 0 and `len`.
    safe: Positions,
    /// Hash of a tool use id → index of the latest message issuing an id with that hash
    /// (see [`Cuts::issuer`]: a hit is checked against that message's ids). A B-tree
    /// (`OrdMap`, 16-key nodes) rather than a HAMT, whose nodes have 32 slots allocated
    /// whatever they hold (~2 KB for a short session's dozen calls); hashed keys take 8 bytes
    /// where the ids would take 16 (and a reference count each).
    calls: OrdMap<u64, u32>,
    /// Indices of real user messages, ascending.
    turn_starts: Positions,
    /// Round starts, ascending.
    round_starts: Positions,
    /// Role and realness of the last message, for the round rule.
    last: Option<(Role, bool, bool)>,
    /// Number of leading system messages.
    leading_system: usize,
    /// Real user messages that are safe cuts (user cuts), ascending. Popped together with
    /// `safe`, so it stays the intersection of the two.
    user: Positions,
    /// The earliest message the first real user message's results answer, if any.
    task_answers_from: Option<usize>,
    /// The newest message holding a provider's compaction, if any.
    newest_compaction: Option<usize>,
}

/// The always-kept head of a history (see [`Cuts::pinned_head`]).
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

impl Default for Cuts {
    fn default() -> Self {
        Self::new()
    }
}

impl Cuts {
    /// The index of an empty list: the only cut is 0, and it is safe.
    #[must_use]
    pub fn new() -> Self {
        let mut safe = Positions::new();
        safe.push(0);
        Self {
            len: 0,
            safe,
            calls: OrdMap::new(),
            turn_starts: Positions::new(),
            round_starts: Positions::new(),
            last: None,
            leading_system: 0,
            user: Positions::new(),
            task_answers_from: None,
            newest_compaction: None,
        }
    }

    /// The index of `metas`, built by pushing each in order (O(n)).
    #[must_use]
    pub fn from_metas<'a>(metas: impl IntoIterator<Item = &'a Meta>) -> Self {
        let mut index = Self::new();
        let mut seen: Vec<&Meta> = Vec::new();
        for meta in metas {
            index.push(meta, |u| seen.get(u).copied());
            seen.push(meta);
        }
        index
    }

    /// The latest message before this one that issues tool use `id`: the map's entry for
    /// its hash, if that message does issue `id`; otherwise (another id with the same hash
    /// was issued later, a 64-bit collision) a search back from there. `earlier(u)` is
    /// message `u`'s facts.
    fn issuer<'m>(&self, id: &str, earlier: &impl Fn(usize) -> Option<&'m Meta>) -> Option<usize> {
        let latest = *self.calls.get(&id_hash(id))? as usize;
        let issues = |u: usize| earlier(u).is_some_and(|m| m.tool_uses.iter().any(|t| &**t == id));
        if issues(latest) {
            return Some(latest);
        }
        (0..latest).rev().find(|&u| issues(u))
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

    /// Indexes the next message; `earlier(u)` gives the facts of message `u` already
    /// indexed. Amortised O(1) (plus O(log n) per tool block for the id map), also while
    /// clones are alive.
    pub fn push<'m>(&mut self, meta: &Meta, earlier: impl Fn(usize) -> Option<&'m Meta>) {
        let n = self.len;
        // The earliest message any of this message's results answers: every cut after it, up
        // to and including n, now separates a call from its result.
        let earliest = meta
            .tool_results
            .iter()
            .filter_map(|id| self.issuer(id, &earlier))
            .min();
        if let Some(lo) = earliest {
            while self.safe.last().is_some_and(|&cut| cut as usize > lo) {
                self.safe.pop();
            }
            while self.user.last().is_some_and(|&cut| cut as usize > lo) {
                self.user.pop();
            }
        }
        // Cut n was safe before this message (n is always safe at the end); it stays safe
        // iff nothing popped it, and it is a user cut iff this message is a real user one.
        if meta.is_real_user() && self.safe.last() == Some(&stored(n)) {
            self.user.push(stored(n));
        }
        if meta.role == Role::System && self.leading_system == n {
            self.leading_system = n + 1;
        }
        if meta.is_real_user() && self.turn_starts.is_empty() {
            self.task_answers_from = earliest;
        }
        self.safe.push(stored(n + 1));
        // Calls register after the results: a message's results never answer its own calls.
        for id in meta.tool_uses.iter() {
            self.calls.insert(id_hash(id), stored(n));
        }
        let real = meta.is_real_user();
        if real {
            self.turn_starts.push(stored(n));
            self.round_starts.push(stored(n));
        } else if meta.role == Role::Assistant
            && self.last.is_none_or(|(role, last_real, last_calls)| {
                (role != Role::Assistant && !last_real) || (role == Role::Assistant && !last_calls)
            })
        {
            self.round_starts.push(stored(n));
        }
        self.last = Some((meta.role, real, !meta.tool_uses.is_empty()));
        if meta.compaction {
            self.newest_compaction = Some(n);
        }
        self.len = n + 1;
    }

    /// The newest message holding a provider's compaction, if any. O(1).
    #[must_use]
    pub fn newest_compaction(&self) -> Option<usize> {
        self.newest_compaction
    }

    /// Whether cut `i` is safe; false for `i > len`.
    #[must_use]
    pub fn is_safe_cut(&self, i: usize) -> bool {
        i <= self.len && at(&self.safe, first_at_least(&self.safe, i, self.len)) == Some(i)
    }

    /// The largest safe cut `<= i` (`i` clamped to `len`). Never fails: 0 is always safe.
    #[must_use]
    pub fn safe_cut_at_or_before(&self, i: usize) -> usize {
        let i = i.min(self.len);
        first_at_least(&self.safe, i + 1, self.len)
            .checked_sub(1)
            .and_then(|p| at(&self.safe, p))
            .unwrap_or(0)
    }

    /// The smallest safe cut `>= i` (`i` clamped to `len`). Never fails: `len` is always safe.
    #[must_use]
    pub fn safe_cut_at_or_after(&self, i: usize) -> usize {
        let i = i.min(self.len);
        let pos = first_at_least(&self.safe, i, self.len);
        at(&self.safe, pos).unwrap_or(self.len)
    }

    /// Number of safe cuts (including 0 and `len`).
    #[must_use]
    pub fn safe_cut_count(&self) -> usize {
        self.safe.len()
    }

    /// All safe cuts, ascending.
    pub fn safe_cuts(&self) -> impl Iterator<Item = usize> + '_ {
        self.safe.iter().map(|&c| c as usize)
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
        self.turn_starts.iter().map(|&c| c as usize)
    }

    /// Round starts, ascending.
    pub fn round_starts(&self) -> impl Iterator<Item = usize> + '_ {
        self.round_starts.iter().map(|&c| c as usize)
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

impl Cuts {
    /// Number of leading system messages.
    #[must_use]
    pub fn leading_system_count(&self) -> usize {
        self.leading_system
    }

    /// The first real user message (the task), if any.
    #[must_use]
    pub fn first_turn_start(&self) -> Option<usize> {
        at(&self.turn_starts, 0)
    }

    /// The largest user cut `<= i`, if any. O(log n).
    #[must_use]
    pub fn user_cut_at_or_before(&self, i: usize) -> Option<usize> {
        let pos = first_at_least(&self.user, i.saturating_add(1), self.len);
        pos.checked_sub(1).and_then(|p| at(&self.user, p))
    }

    /// The smallest user cut `>= i`, if any. O(log n).
    #[must_use]
    pub fn user_cut_at_or_after(&self, i: usize) -> Option<usize> {
        let pos = first_at_least(&self.user, i, self.len);
        at(&self.user, pos)
    }

    /// The first round start `>= i`, if any. O(log n).
    #[must_use]
    pub fn round_start_at_or_after(&self, i: usize) -> Option<usize> {
        let pos = first_at_least(&self.round_starts, i, self.len);
        at(&self.round_starts, pos)
    }

    /// The last round start `< end`, if any. O(log n).
    #[must_use]
    pub fn round_start_before(&self, end: usize) -> Option<usize> {
        let pos = first_at_least(&self.round_starts, end, self.len);
        pos.checked_sub(1).and_then(|p| at(&self.round_starts, p))
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

fn kth_last(starts: &Positions, k: usize) -> Option<usize> {
    if k == 0 {
        return None;
    }
    starts.len().checked_sub(k).and_then(|p| at(starts, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::examples::{call, results, user};

    fn safe(metas: &[Meta]) -> Vec<usize> {
        Cuts::from_metas(metas).safe_cuts().collect()
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
        let idx = Cuts::from_metas(&m);
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
        let head = Cuts::from_metas(&m).pinned_head(true);
        assert!(head.contiguous);
        assert_eq!((head.task, head.floor), (Some(1), 2));
    }

    #[test]
    fn user_cuts_are_safe_real_user_messages() {
        // 0 user, 1 call a, 2 user text (unsafe: a's result comes later), 3 result a, 4 user
        let m = [user(), call(&["a"]), user(), results(&["a"]), user()];
        let idx = Cuts::from_metas(&m);
        assert_eq!(idx.user_cut_at_or_before(3), Some(0));
        assert_eq!(idx.user_cut_at_or_after(1), Some(4));
        assert_eq!(idx.user_cut_at_or_after(5), None);
    }

    #[test]
    fn empty_index() {
        let idx = Cuts::new();
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
        let idx = Cuts::from_metas(&m);
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
        let idx = Cuts::from_metas(&m);
        assert_eq!(idx.turn_starts().collect::<Vec<_>>(), vec![1, 8]);
        assert_eq!(idx.round_starts().collect::<Vec<_>>(), vec![1, 4, 7, 8]);
        assert_eq!(idx.kth_last_round_start(2), Some(7));
        assert_eq!(idx.kth_last_round_start(5), None);
        assert_eq!(idx.kth_last_turn_start(0), None);
        assert_eq!(idx.kth_last_turn_start(2), Some(1));
        // An assistant after a system message opens a round; one at index 0 does too.
        let idx = Cuts::from_metas(&[Meta::assistant(1), Meta::system(1), call(&[])]);
        assert_eq!(idx.round_starts().collect::<Vec<_>>(), vec![0, 2]);
    }

    proptest::proptest! {
        /// Safe cuts agree with the definition (every result answers the latest earlier
        /// message issuing its id) when ids collide in the call map: under `cfg(test)` the
        /// map's hash has 4 values, so most lookups check a colliding entry and search back.
        #[test]
        fn colliding_ids_pair_with_the_latest_call(
            steps in proptest::collection::vec((0u8..3, 0u8..9), 0..60)
        ) {
            let metas: Vec<Meta> = steps
                .iter()
                .map(|&(kind, id)| {
                    let id = format!("c{id}");
                    match kind {
                        0 => call(&[id.as_str()]),
                        1 => results(&[id.as_str()]),
                        _ => user(),
                    }
                })
                .collect();
            let latest = |id: &str, r: usize| {
                (0..r).rev().find(|&u| metas[u].tool_uses.iter().any(|t| &**t == id))
            };
            let pairs: Vec<(usize, usize)> = (0..metas.len())
                .flat_map(|r| {
                    metas[r].tool_results.iter().filter_map(move |id| latest(id, r).map(|u| (u, r)))
                })
                .collect();
            let expected: Vec<usize> = (0..=metas.len())
                .filter(|&i| !pairs.iter().any(|&(u, r)| u < i && i <= r))
                .collect();
            proptest::prop_assert_eq!(safe(&metas), expected);
        }
    }

    #[test]
    fn clones_are_independent() {
        let mut a = Cuts::from_metas(&[user(), call(&["x"])]);
        let b = a.clone();
        let x = call(&["x"]);
        a.push(&results(&["x"]), |u| (u == 1).then_some(&x));
        assert!(b.is_safe_cut(2));
        assert!(!a.is_safe_cut(2));
    }
}
