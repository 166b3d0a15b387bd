//! Validation and repair plans for tool-call pairing over a plain list of messages.
//!
//! [`validate`] lists every [`Violation`] a provider would reject in a list of messages a
//! user passes in, independent of any log; [`repair_plan`] gives the steps ([`RepairOp`])
//! that make it valid. Both pair calls and results by the rule [`crate::cuts`] defines: a
//! result answers the latest earlier message that issues its id.
//!
//! Invariants: `repair_plan` is empty exactly when `validate` is; it is deterministic: its
//! synthetic ids derive only from the input (`{id}__dup{k}`, never an id the input holds), so
//! the same input always gives the same output and provider prompt caches stay warm.
//! Applying the plan yields a list `validate` accepts (property-tested in
//! `test_repair_always_yields_a_valid_history` in `tests/core/test_validate.py`).

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use crate::meta::{Meta, Role};

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
    let mut first_call: HashMap<&str, usize> = HashMap::new();
    for (i, m) in metas.iter().enumerate() {
        for id in m.tool_uses.iter() {
            first_call.entry(&**id).or_insert(i);
        }
    }
    let mut calls: Vec<CallOcc<'_>> = Vec::new();
    // id → (latest issuing message, its call occurrences with that id).
    let mut latest: HashMap<&str, (usize, Vec<usize>)> = HashMap::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
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
    use crate::meta::examples::{call, results, user};

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
}
