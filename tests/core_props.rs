//! Property tests of the core: every cut query agrees with a brute-force reading of its
//! definition, snapshots and forks never see each other's changes, `replace_prefix` is a
//! compare-and-swap, and applying a repair plan leaves nothing for `validate` to report.
#![allow(
    clippy::unwrap_used,
    reason = "the brute-force reference readings are test code: a failed unwrap fails the test"
)]

use ctxtrim::cuts::PinnedHead;
use ctxtrim::log::{Cut, Entry, LogError, MessageLog, StableCut};
use ctxtrim::meta::{Meta, Role};
use ctxtrim::tail::{decide_from_end, Tail};
use ctxtrim::turn::TurnId;
use ctxtrim::validate::{repair_plan, validate, RepairOp};
use ctxtrim::window::{decide, Options, Rule};
use proptest::prelude::*;
use std::sync::Arc;

type Log = MessageLog<u32>;

// ------------------------------------------------------------------------------------------
// Histories
// ------------------------------------------------------------------------------------------

/// One step of a generated agent history.
#[derive(Clone, Debug)]
enum Step {
    System(u32),
    User(u32),
    Assistant(u32),
    /// An assistant message issuing 1..=3 parallel calls; `reuse` re-issues an old id.
    Calls(u32, u8, bool),
    /// A user message answering up to `n` pending calls, starting at `offset`.
    Results(u32, u8, u8),
    /// A result for a call that does not exist.
    Orphan(u32),
    /// A result for a call that was already answered.
    Again(u32, u8),
}

fn step() -> impl Strategy<Value = Step> {
    let tokens = 0u32..400;
    prop_oneof![
        1 => tokens.clone().prop_map(Step::System),
        3 => tokens.clone().prop_map(Step::User),
        3 => tokens.clone().prop_map(Step::Assistant),
        4 => (tokens.clone(), 1u8..=3, proptest::bool::weighted(0.1))
            .prop_map(|(t, n, r)| Step::Calls(t, n, r)),
        4 => (tokens.clone(), 1u8..=3, any::<u8>()).prop_map(|(t, n, o)| Step::Results(t, n, o)),
        1 => tokens.clone().prop_map(Step::Orphan),
        1 => (tokens, any::<u8>()).prop_map(|(t, o)| Step::Again(t, o)),
    ]
}

/// Turns steps into metas: ids are unique unless a step reuses one on purpose; results may
/// arrive many messages after their call, and some calls are never answered.
fn build(steps: &[Step]) -> Vec<Meta> {
    let mut pending: Vec<String> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    let mut issued: Vec<String> = Vec::new();
    let mut next = 0u32;
    let mut out = Vec::new();
    for s in steps {
        let meta = match s {
            Step::System(t) => Meta::system(*t),
            Step::User(t) => Meta::user(*t),
            Step::Assistant(t) => Meta::assistant(*t),
            Step::Calls(t, n, reuse) => {
                let mut ids = Vec::new();
                for k in 0..*n {
                    let id = if *reuse && k == 0 && !issued.is_empty() {
                        issued[next as usize % issued.len()].clone()
                    } else {
                        next += 1;
                        format!("c{next}")
                    };
                    issued.push(id.clone());
                    pending.push(id.clone());
                    ids.push(id);
                }
                Meta::assistant(*t).with_tool_uses(ids)
            }
            Step::Results(t, n, offset) => {
                let mut ids = Vec::new();
                for _ in 0..*n {
                    if pending.is_empty() {
                        break;
                    }
                    let at = *offset as usize % pending.len();
                    let id = pending.remove(at);
                    answered.push(id.clone());
                    ids.push(id);
                }
                Meta::new(Role::User, *t).with_tool_results(ids)
            }
            Step::Orphan(t) => {
                next += 1;
                Meta::new(Role::User, *t).with_tool_results([format!("orphan{next}")])
            }
            Step::Again(t, o) => match answered.get(*o as usize % answered.len().max(1)) {
                Some(id) => Meta::new(Role::User, *t).with_tool_results([id.clone()]),
                None => Meta::user(*t),
            },
        };
        out.push(meta);
    }
    out
}

fn history() -> impl Strategy<Value = Vec<Meta>> {
    prop::collection::vec(step(), 0..60).prop_map(|s| build(&s))
}

/// Metas with random roles and ids from a tiny alphabet: duplicates, orphans, results before
/// calls and dangling calls everywhere.
fn chaos() -> impl Strategy<Value = Vec<Meta>> {
    let id = prop::sample::select(vec!["a", "b", "c", "d", "a__dup1"]);
    let role = prop::sample::select(vec![Role::System, Role::User, Role::Assistant]);
    let meta = (
        role,
        prop::collection::vec(id.clone(), 0..3),
        prop::collection::vec(id, 0..3),
        any::<bool>(),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(role, uses, results, real, compaction)| Meta {
            role,
            tokens: 1,
            tool_uses: uses.into_iter().map(Arc::from).collect(),
            tool_results: results.into_iter().map(Arc::from).collect(),
            real_user: real,
            turn: None,
            compaction,
        });
    prop::collection::vec(meta, 0..25)
}

fn log_of(metas: &[Meta]) -> Log {
    metas
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, m)| (i as u32, m))
        .collect()
}

// ------------------------------------------------------------------------------------------
// Brute force
// ------------------------------------------------------------------------------------------

/// Answered pairs (call message, result message) by the definition: a result answers the
/// latest earlier message issuing its id.
fn pairs(metas: &[Meta]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (r, m) in metas.iter().enumerate() {
        for id in m.tool_results.iter() {
            if let Some(u) = (0..r).rev().find(|&u| metas[u].tool_uses.contains(id)) {
                out.push((u, r));
            }
        }
    }
    out
}

fn brute_safe(metas: &[Meta]) -> Vec<bool> {
    let p = pairs(metas);
    (0..=metas.len())
        .map(|i| !p.iter().any(|&(u, r)| u < i && i <= r))
        .collect()
}

fn brute_round_starts(metas: &[Meta]) -> Vec<usize> {
    (0..metas.len())
        .filter(|&i| {
            let m = &metas[i];
            let prev = i.checked_sub(1).map(|p| &metas[p]);
            m.is_real_user()
                || (m.role == Role::Assistant
                    && prev.is_none_or(|p| {
                        (p.role != Role::Assistant && !p.is_real_user())
                            || (p.role == Role::Assistant && p.tool_uses.is_empty())
                    }))
        })
        .collect()
}

fn brute_turn_starts(metas: &[Meta]) -> Vec<usize> {
    (0..metas.len())
        .filter(|&i| metas[i].is_real_user())
        .collect()
}

fn suffix_tokens(metas: &[Meta], i: usize) -> u64 {
    metas[i..].iter().map(|m| u64::from(m.tokens)).sum()
}

fn brute_fit(metas: &[Meta], budget: u64, floor: usize) -> Cut {
    let len = metas.len();
    let safe = brute_safe(metas);
    let lowest = (floor.min(len)..=len).find(|&i| safe[i]).unwrap();
    // With no round at all, the newest message is the minimum kept.
    let newest_round = brute_round_starts(metas)
        .last()
        .copied()
        .unwrap_or(len.saturating_sub(1));
    let limit = (0..=newest_round)
        .rev()
        .find(|&i| safe[i])
        .unwrap()
        .max(lowest);
    match (lowest..=limit).find(|&i| safe[i] && suffix_tokens(metas, i) <= budget) {
        Some(index) => Cut {
            index,
            kept_tokens: suffix_tokens(metas, index),
            fits: true,
        },
        None => Cut {
            index: limit,
            kept_tokens: suffix_tokens(metas, limit),
            fits: false,
        },
    }
}

/// `fit_budget` as if the log ended at `end`, with the whole log's safe cuts.
fn brute_fit_within(metas: &[Meta], budget: u64, floor: usize, end: usize) -> Cut {
    let safe = brute_safe(metas);
    let tokens = |i: usize| -> u64 { metas[i..end].iter().map(|m| u64::from(m.tokens)).sum() };
    let lowest = (floor.min(end)..=metas.len()).find(|&i| safe[i]).unwrap();
    let newest_round = brute_round_starts(metas)
        .into_iter()
        .rev()
        .find(|&r| r < end)
        .unwrap_or(end.saturating_sub(1));
    let limit = (0..=newest_round)
        .rev()
        .find(|&i| safe[i])
        .unwrap()
        .max(lowest);
    match (lowest..=limit).find(|&i| safe[i] && tokens(i.min(end)) <= budget) {
        Some(index) => Cut {
            index,
            kept_tokens: tokens(index.min(end)),
            fits: true,
        },
        None => Cut {
            index: limit,
            kept_tokens: tokens(limit.min(end)),
            fits: false,
        },
    }
}

/// The cache-stable cut, replayed one message at a time.
fn brute_stable(
    metas: &[Meta],
    fixed: u64,
    high: u64,
    low: u64,
    floor: usize,
    user_start: bool,
) -> StableCut {
    let safe = brute_safe(metas);
    let mut cut = (floor.min(metas.len())..=metas.len())
        .find(|&i| safe[i])
        .unwrap();
    let mut trims = 0;
    for end in cut + 1..=metas.len() {
        let window: u64 = metas[cut..end].iter().map(|m| u64::from(m.tokens)).sum();
        if fixed + window > high {
            let mut next = brute_fit_within(metas, low.saturating_sub(fixed), cut, end).index;
            if user_start {
                next = (cut + 1..=next)
                    .rev()
                    .find(|&u| safe[u] && metas[u].is_real_user())
                    .unwrap_or(cut);
            }
            if next > cut {
                cut = next;
                trims += 1;
            }
        }
    }
    StableCut {
        index: cut,
        kept_tokens: suffix_tokens(metas, cut),
        trims,
    }
}

/// Everything observable about a log, to compare before and after.
#[derive(Debug, PartialEq, Eq)]
struct View {
    payloads: Vec<u32>,
    turns: Vec<String>,
    metas: Vec<Meta>,
    cum: Vec<u64>,
    safe: Vec<bool>,
    generation: u64,
    current_turn: u32,
    estimated: u64,
    rounds: usize,
}

fn view(log: &Log) -> View {
    View {
        payloads: log.iter().map(|e| *e.payload).collect(),
        turns: log.iter().map(|e| e.turn.to_string()).collect(),
        metas: log.iter().map(|e| e.meta.clone()).collect(),
        cum: log.iter().map(Entry::cumulative_tokens).collect(),
        safe: (0..=log.len() + 1).map(|i| log.is_safe_cut(i)).collect(),
        generation: log.generation(),
        current_turn: log.current_turn(),
        estimated: log.estimated_context_tokens(),
        rounds: log.round_count(),
    }
}

/// The log's indexes agree with brute force over its own metas.
fn check_consistent(log: &Log) -> Result<(), TestCaseError> {
    let metas: Vec<Meta> = log.iter().map(|e| e.meta.clone()).collect();
    let safe = brute_safe(&metas);
    for (i, &s) in safe.iter().enumerate() {
        prop_assert_eq!(log.is_safe_cut(i), s, "cut {}", i);
    }
    prop_assert!(!log.is_safe_cut(metas.len() + 1));
    let mut sum = 0u64;
    for e in log.iter() {
        sum += u64::from(e.meta.tokens);
        prop_assert_eq!(e.tokens, e.meta.tokens);
        prop_assert_eq!(e.cumulative_tokens(), sum);
    }
    // Read from the back, and one by one, the entries are the same.
    let counts = |e: Entry<'_, u32>| (*e.payload, e.tokens, e.cumulative_tokens(), e.turn);
    let forward: Vec<_> = log.iter().map(counts).collect();
    let mut backward: Vec<_> = log.iter().rev().map(counts).collect();
    backward.reverse();
    prop_assert_eq!(&backward, &forward);
    let one_by_one: Vec<_> = (0..log.len())
        .filter_map(|i| log.get(i))
        .map(counts)
        .collect();
    prop_assert_eq!(&one_by_one, &forward);
    let turns: Vec<u32> = log.iter().map(|e| e.turn.number).collect();
    prop_assert!(turns.windows(2).all(|w| w[0] <= w[1]), "{:?}", turns);
    let rounds = brute_round_starts(&metas);
    prop_assert_eq!(log.round_count(), rounds.len());
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Repair plans, applied the way the Python layer does
// ------------------------------------------------------------------------------------------

fn apply(metas: &[Meta], plan: &[RepairOp]) -> Vec<Meta> {
    let mut out = Vec::new();
    for (i, m) in metas.iter().enumerate() {
        if plan
            .iter()
            .any(|op| matches!(op, RepairOp::InsertUserBefore { index } if *index == i))
        {
            out.push(Meta::user(1));
        }
        if plan
            .iter()
            .any(|op| matches!(op, RepairOp::DropMessage { index } if *index == i))
        {
            // Only a user message whose every result was dropped may go.
            assert!(m.role == Role::User && !m.real_user && m.tool_uses.is_empty());
            let dropped = plan
                .iter()
                .filter(|op| matches!(op, RepairOp::DropResult { index, .. } if *index == i))
                .count();
            assert_eq!(dropped, m.tool_results.len());
        } else {
            let mut m = m.clone();
            let mut uses: Vec<Arc<str>> = m.tool_uses.to_vec();
            let mut results: Vec<Option<Arc<str>>> =
                m.tool_results.iter().cloned().map(Some).collect();
            for op in plan {
                match op {
                    RepairOp::RenameToolUse {
                        index,
                        use_pos,
                        new_id,
                    } if *index == i => uses[*use_pos] = Arc::from(&**new_id),
                    RepairOp::RenameResult {
                        index,
                        result_pos,
                        new_id,
                    } if *index == i => results[*result_pos] = Some(Arc::from(&**new_id)),
                    RepairOp::DropResult { index, result_pos } if *index == i => {
                        results[*result_pos] = None;
                    }
                    _ => {}
                }
            }
            m.tool_uses = uses.into();
            m.tool_results = results.into_iter().flatten().collect();
            out.push(m);
        }
        for op in plan {
            if let RepairOp::InsertResults {
                after,
                tool_use_ids,
            } = op
            {
                if *after == i {
                    out.push(Meta::new(Role::User, 1).with_tool_results(tool_use_ids.clone()));
                }
            }
        }
    }
    out
}

// ------------------------------------------------------------------------------------------
// Properties
// ------------------------------------------------------------------------------------------

/// Every cut rule, with a parameter drawn from `x`.
fn rules(x: u64) -> [Rule; 5] {
    [
        Rule::Budget(x * 37 % 3_000),
        Rule::Budget(x * 211 % 20_000),
        Rule::LastTurns(1 + x as usize % 4),
        Rule::LastRounds(1 + x as usize % 6),
        Rule::LastMessages(1 + x as usize % 30),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn safe_cuts_match_brute_force(metas in history()) {
        let log = log_of(&metas);
        check_consistent(&log)?;
        let safe = brute_safe(&metas);
        let len = metas.len();
        for i in 0..=len + 2 {
            let c = i.min(len);
            let before = (0..=c).rev().find(|&j| safe[j]).unwrap();
            let after = (c..=len).find(|&j| safe[j]).unwrap();
            prop_assert_eq!(log.safe_cut_at_or_before(i), before);
            prop_assert_eq!(log.safe_cut_at_or_after(i), after);
        }
    }

    #[test]
    fn fit_budget_matches_brute_force(
        metas in history(),
        budget in 0u64..6_000,
        floor in 0usize..70,
    ) {
        let log = log_of(&metas);
        prop_assert_eq!(log.fit_budget(budget, floor), brute_fit(&metas, budget, floor));
        prop_assert_eq!(log.fit_budget(u64::MAX, 0).index, 0);
    }

    #[test]
    fn fit_budget_within_matches_brute_force(
        metas in history(),
        budget in 0u64..4_000,
        floor in 0usize..40,
        end in 0usize..80,
    ) {
        let log = log_of(&metas);
        let end = end.min(metas.len());
        prop_assert_eq!(
            log.fit_budget_within(budget, floor, end),
            brute_fit_within(&metas, budget, floor, end)
        );
    }

    #[test]
    fn stable_cut_matches_replay(
        metas in history(),
        fixed in 0u64..300,
        low in 0u64..3_000,
        gap in 0u64..3_000,
        floor in 0usize..10,
        user_start: bool,
    ) {
        let log = log_of(&metas);
        let high = low + gap;
        prop_assert_eq!(
            log.stable_cut(fixed, high, low, floor, user_start),
            brute_stable(&metas, fixed, high, low, floor, user_start)
        );
    }

    #[test]
    fn user_cuts_and_pinned_head_match_brute_force(metas in history(), pin_task: bool) {
        let log = log_of(&metas);
        let safe = brute_safe(&metas);
        let len = metas.len();
        let user_cut = |i: usize| i < len && safe[i] && metas[i].is_real_user();
        for i in 0..=len + 1 {
            prop_assert_eq!(log.user_cut_at_or_before(i), (0..=i.min(len)).rev().find(|&j| user_cut(j)));
            prop_assert_eq!(log.user_cut_at_or_after(i), (i..=len).find(|&j| user_cut(j)));
        }
        let system_end = metas.iter().take_while(|m| m.role == Role::System).count();
        let task = if pin_task { metas.iter().position(Meta::is_real_user) } else { None };
        let start = task.map_or(system_end, |k| k + 1);
        let floor = (start..=len).find(|&i| safe[i]).unwrap();
        let contiguous = task.is_some_and(|k| {
            pairs(&metas).iter().any(|&(u, r)| r == k && u >= system_end)
        });
        prop_assert_eq!(
            log.pinned_head(pin_task),
            PinnedHead { system_end, task, floor, contiguous }
        );
    }

    #[test]
    fn turns_and_rounds_match_brute_force(metas in history()) {
        let log = log_of(&metas);
        let turns = brute_turn_starts(&metas);
        let rounds = brute_round_starts(&metas);
        prop_assert_eq!(log.turn_count() as usize, turns.len());
        for k in 0..=turns.len() + 1 {
            let expected = if k == 0 { None } else { turns.len().checked_sub(k).map(|p| turns[p]) };
            prop_assert_eq!(log.kth_last_turn_start(k), expected);
        }
        for k in 0..=rounds.len() + 1 {
            let expected = if k == 0 { None } else { rounds.len().checked_sub(k).map(|p| rounds[p]) };
            prop_assert_eq!(log.kth_last_round_start(k), expected);
        }
        // Turn numbers: a real user message advances the counter first.
        let mut n = 0;
        for (e, m) in log.iter().zip(&metas) {
            if m.is_real_user() { n += 1; }
            prop_assert_eq!(e.turn.number, n);
        }
    }

    #[test]
    fn snapshots_and_forks_are_isolated(
        metas in history(),
        more in history(),
        split in 0usize..60,
        op in 0u8..4,
        turn in 0u32..8,
    ) {
        let split = split.min(metas.len());
        let mut original = log_of(&metas[..split]);
        let snap = original.snapshot();
        let mut fork = original.fork();
        let frozen = view(&snap);
        let forked = view(&fork);

        // Change the original every way there is.
        for (i, m) in metas[split..].iter().enumerate() {
            original.push(1000 + i as u32, m.clone());
        }
        original.calibrate(77);
        match op {
            0 => original.clear(),
            1 => {
                let gen = original.generation();
                original.replace_prefix(split / 2, vec![(9, Meta::user(3))], gen).unwrap();
            }
            2 => { let _ = original.remove_turn(turn); }
            _ => {}
        }
        check_consistent(&original)?;
        prop_assert_eq!(&view(&snap), &frozen);
        prop_assert_eq!(&view(&fork), &forked);

        // And the fork: the original is not affected.
        let after = view(&original);
        for (i, m) in more.iter().enumerate() {
            fork.push(2000 + i as u32, m.clone());
        }
        let _ = fork.remove_turn(turn);
        fork.clear();
        prop_assert_eq!(&view(&original), &after);
        prop_assert_eq!(&view(&snap), &frozen);
    }

    #[test]
    fn replace_prefix_is_compare_and_swap(
        metas in history(),
        extra in history(),
        upto in 0usize..70,
        new_len in 0usize..4,
    ) {
        let mut log = log_of(&metas);
        let gen = log.generation();
        let seen = log.len();
        for (i, m) in extra.iter().enumerate() {
            log.push(500 + i as u32, m.clone());
        }
        let new: Vec<(u32, Meta)> = (0..new_len).map(|k| (900 + k as u32, Meta::user(7))).collect();
        let before = view(&log);

        // Stale generation: nothing changes.
        prop_assert!(log.replace_prefix(upto.min(seen), new.clone(), gen + 1).is_err());
        prop_assert_eq!(&view(&log), &before);
        // Out of range: nothing changes.
        prop_assert!(log.replace_prefix(log.len() + 1, new.clone(), gen).is_err());
        prop_assert_eq!(&view(&log), &before);

        // The right generation: later entries are kept after the new prefix.
        let upto = upto.min(seen);
        let mut expected: Vec<u32> = new.iter().map(|(p, _)| *p).collect();
        expected.extend(before.payloads[upto..].iter().copied());
        log.replace_prefix(upto, new, gen).unwrap();
        prop_assert_eq!(log.generation(), gen + 1);
        prop_assert_eq!(log.iter().map(|e| *e.payload).collect::<Vec<_>>(), expected);
        check_consistent(&log)?;
        // The old generation is now stale.
        prop_assert!(log.replace_prefix(0, vec![], gen).is_err());
    }

    #[test]
    fn remove_turn_drops_exactly_that_turn(metas in history(), turn in 0u32..8) {
        let mut log = log_of(&metas);
        let before: Vec<(u32, u32)> = log.iter().map(|e| (*e.payload, e.turn.number)).collect();
        let current = log.current_turn();
        match log.remove_turn(turn) {
            Ok(n) => {
                let kept: Vec<(u32, u32)> =
                    before.iter().copied().filter(|&(_, t)| t != turn).collect();
                prop_assert_eq!(n, before.len() - kept.len());
                // The counter is the newest kept turn, as a log built afresh would have.
                let newest = kept.last().map_or(0, |&(_, t)| t);
                prop_assert_eq!(log.iter().map(|e| (*e.payload, e.turn.number)).collect::<Vec<_>>(), kept);
                prop_assert!(newest <= current);
                prop_assert_eq!(log.current_turn(), newest);
                check_consistent(&log)?;
            }
            // A user message holding tool results and text opens the next turn, so a call and
            // its result can lie in different turns: such a removal is refused, unchanged.
            Err(LogError::SplitsToolPair { .. }) => {
                prop_assert!(before.iter().any(|&(_, t)| t == turn));
                prop_assert_eq!(log.iter().map(|e| (*e.payload, e.turn.number)).collect::<Vec<_>>(), before);
            }
            Err(_) => prop_assert!(before.iter().all(|&(_, t)| t != turn)),
        }
    }

    #[test]
    fn remove_assistant_turn_keeps_the_users_side(metas in history(), turn in 0u32..8) {
        let mut log = log_of(&metas);
        let before: Vec<(u32, TurnId)> = log.iter().map(|e| (*e.payload, e.turn)).collect();
        match log.remove_assistant_turn(turn) {
            Ok(n) => {
                let start = before.iter().position(|&(_, t)| t == TurnId::assistant(turn)).unwrap();
                let end = before.iter().rposition(|&(_, t)| t.number == turn).unwrap() + 1;
                prop_assert_eq!(n, end - start);
                let mut kept = before.clone();
                kept.drain(start..end);
                prop_assert_eq!(log.iter().map(|e| (*e.payload, e.turn)).collect::<Vec<_>>(), kept);
                check_consistent(&log)?;
            }
            Err(LogError::SplitsToolPair { .. }) => {
                prop_assert_eq!(log.iter().map(|e| (*e.payload, e.turn)).collect::<Vec<_>>(), before);
            }
            Err(_) => prop_assert!(!before.iter().any(|&(_, t)| t == TurnId::assistant(turn))),
        }
    }

    #[test]
    fn repair_leaves_nothing_to_validate(metas in chaos()) {
        let plan = repair_plan(&metas);
        prop_assert_eq!(&plan, &repair_plan(&metas));
        let fixed = apply(&metas, &plan);
        prop_assert_eq!(validate(&fixed), vec![]);
        prop_assert_eq!(plan.is_empty(), validate(&metas).is_empty());
        // Violations come ordered by index.
        let v = validate(&metas);
        prop_assert!(v.windows(2).all(|w| w[0].index() <= w[1].index()));
    }

    #[test]
    fn repair_generated_histories(metas in history()) {
        let plan = repair_plan(&metas);
        prop_assert_eq!(validate(&apply(&metas, &plan)), vec![]);
    }

    /// Deciding from the end of a history (reading back only as far as needed) keeps exactly
    /// what deciding on the whole log keeps, whatever the pairing (orphans, reused ids, late
    /// results, calls in the head) and wherever the first region ends.
    #[test]
    fn deciding_from_the_end_matches_the_whole_log(
        metas in prop_oneof![history(), chaos()],
        x in 0u64..10_000,
        first in 1usize..8,
        pin_task: bool,
        start_with_user: bool,
    ) {
        let log = log_of(&metas);
        let options = Options { pin_task, start_with_user };
        for rule in rules(x) {
            let whole = decide(&log, rule, options).unwrap();
            let mut fetched = Vec::new();
            let from_end = decide_from_end(metas.len(), rule, options, first, |i| {
                fetched.push(i);
                Ok::<_, ()>(&metas[i])
            })
            .unwrap();
            prop_assert_eq!(&from_end, &whole, "{:?} {:?}", rule, options);
            // Each message fetched once, but for the one after an unpinned head (read to end
            // the head, and again if the end reaches down to it).
            let all = fetched.len();
            fetched.sort_unstable();
            fetched.dedup();
            prop_assert!(all <= fetched.len() + 1);
        }
    }

    /// A list edited between calls (appends, inserts, deletes, replacements anywhere and near
    /// the end, swaps), decided each time by one kept [`Tail`] (which checks the keys it holds
    /// and reads only what changed), keeps what deciding it afresh keeps.
    #[test]
    fn a_kept_tail_matches_deciding_afresh(
        pool in prop_oneof![history(), chaos()],
        edits in proptest::collection::vec((0u8..8, any::<u16>()), 0..16),
        x in 0u64..10_000,
        pin_task: bool,
        start_with_user: bool,
    ) {
        prop_assume!(!pool.is_empty());
        // The list holds keys into `pool` (a key is a message's identity; a message may be
        // in the list twice). Appends are the likeliest edit, as in an agent's loop.
        let mut list: Vec<usize> = (0..pool.len()).collect();
        let options = Options { pin_task, start_with_user };
        let rule = rules(x)[x as usize % 5];
        let mut tail: Tail<(usize, &Meta)> = Tail::new();
        for (op, k) in std::iter::once((255, 0)).chain(edits) {
            let k = usize::from(k);
            let at = k % (list.len() + 1);
            match op {
                0 | 5 => list.push(k % pool.len()),
                1 => list.insert(at, k % pool.len()),
                2 if !list.is_empty() => { list.remove(at % list.len()); }
                3 if !list.is_empty() => { let n = list.len(); list[at % n] = k % pool.len(); }
                4 if list.len() > 1 => { let n = list.len(); list.swap(at % n, k / 7 % n); }
                // Replaced near the end (a clearing strategy's stand-in, an edited reply):
                // the tail keeps what it holds before it.
                6 | 7 if !list.is_empty() => {
                    let n = list.len();
                    list[n - 1 - k % n.min(12)] = k / 13 % pool.len();
                }
                _ => {}
            }
            let metas: Vec<Meta> = list.iter().map(|&key| pool[key].clone()).collect();
            let fresh = decide(&log_of(&metas), rule, options).unwrap();
            let window = tail
                .decide(
                    list.len(),
                    rule,
                    options,
                    4,
                    |i, item| list[i] == item.0,
                    |i| Ok::<_, ()>((list[i], &pool[list[i]])),
                )
                .unwrap();
            prop_assert_eq!(&window, &fresh, "{:?} {:?} {:?}", rule, options, list);
            prop_assert!(tail.kept() <= list.len() + 1);
        }
    }
}
