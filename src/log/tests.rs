//! Unit tests of the message log (the property tests are `tests/core_props.rs`).

use super::*;

type Log = MessageLog<u32>;

#[test]
fn stable_cut_moves_only_past_the_high_water_mark() {
    // A task, then tool rounds of 100 tokens each (call 40 + result 60).
    let mut log = Log::new();
    log.push(0, Meta::user(10));
    let mut cuts = Vec::new();
    for r in 0..50u32 {
        let id = format!("t{r}");
        log.push(1, Meta::assistant(40).with_tool_uses([id.as_str()]));
        log.push(
            2,
            Meta::new(Role::User, 60).with_tool_results([id.as_str()]),
        );
        cuts.push(log.stable_cut(10, 1_000, 500, 1, false));
    }
    // Never over the high-water mark, and the cut only moves forward.
    assert!(cuts.iter().all(|c| 10 + c.kept_tokens <= 1_000));
    assert!(cuts.windows(2).all(|w| w[0].index <= w[1].index));
    // Between two trims more than high - low = 500 tokens (5 rounds) arrive: at most
    // 50 / 5 trims; and 5,000 tokens through a 1,000 window needs several.
    let last = cuts.last().map_or(0, |c| c.trims);
    assert!((5..=10).contains(&last), "{last} trims");
    let changes = cuts.windows(2).filter(|w| w[0].index != w[1].index).count();
    assert_eq!(changes, last);
}

fn agent_log() -> Log {
    let mut log = Log::new();
    log.push(0, Meta::system(100)); // 0, turn 0
    log.push(1, Meta::user(10)); // 1, u1
    log.push(2, Meta::assistant(20).with_tool_uses(["a"])); // 2, a1
    log.push(3, Meta::new(Role::User, 30).with_tool_results(["a"])); // 3, u1
    log.push(4, Meta::assistant(40)); // 4, a1
    log.push(5, Meta::user(50)); // 5, u2
    log.push(6, Meta::assistant(60)); // 6, a2
    log
}

#[test]
fn push_assigns_turns_and_sums() {
    let log = agent_log();
    assert_eq!(log.len(), 7);
    let turns: Vec<String> = log.iter().map(|e| e.turn.to_string()).collect();
    assert_eq!(turns, ["u0", "u1", "a1", "u1", "a1", "u2", "a2"]);
    assert_eq!(log.total_tokens(), 310);
    assert_eq!(log.tokens(1, 3), 30);
    assert_eq!(log.tokens(5, 100), 110);
    assert_eq!(log.tokens(4, 2), 0);
    assert_eq!(log.get(2).map(Entry::cumulative_tokens), Some(130));
    assert!(log.get(7).is_none());
    assert_eq!(log.turn_count(), 2);
    assert_eq!(log.current_turn(), 2);
    assert_eq!(
        log.range(2, 4).map(|e| *e.payload).collect::<Vec<_>>(),
        [2, 3]
    );
    assert_eq!(log.range(5, 1).count(), 0);
    assert_eq!(log.range(6, 99).count(), 1);
}

#[test]
fn safe_cuts_turns_and_rounds() {
    let log = agent_log();
    assert!(log.is_safe_cut(2));
    assert!(!log.is_safe_cut(3));
    assert_eq!(log.safe_cut_at_or_before(3), 2);
    assert_eq!(log.safe_cut_at_or_after(3), 4);
    assert_eq!(log.kth_last_turn_start(1), Some(5));
    assert_eq!(log.kth_last_turn_start(3), None);
    assert_eq!(log.round_count(), 3); // 1, 4, 5
    assert_eq!(log.kth_last_round_start(2), Some(4));
}

#[test]
fn fit_budget_cases() {
    let log = agent_log();
    // Everything fits.
    assert_eq!(
        log.fit_budget(1_000, 0),
        Cut {
            index: 0,
            kept_tokens: 310,
            fits: true
        }
    );
    // 200 tokens: suffix from 2 is 200 (cut 2 safe).
    assert_eq!(log.fit_budget(200, 1).index, 2);
    // 170: from 3 would be 180 > 170 and 3 is unsafe anyway; 4 keeps 150.
    assert_eq!(log.fit_budget(170, 1).index, 4);
    // Floor above the fitting point.
    assert_eq!(log.fit_budget(1_000, 5).index, 5);
    // Nothing fits: keep the newest round (starts at 5: user 50 + assistant 60).
    assert_eq!(
        log.fit_budget(10, 1),
        Cut {
            index: 5,
            kept_tokens: 110,
            fits: false
        }
    );
    // Empty log.
    assert_eq!(
        Log::new().fit_budget(0, 3),
        Cut {
            index: 0,
            kept_tokens: 0,
            fits: true
        }
    );
}

#[test]
fn snapshots_do_not_see_later_changes() {
    let mut log = agent_log();
    let snap = log.snapshot();
    log.push(7, Meta::user(1));
    log.clear();
    assert_eq!(snap.len(), 7);
    assert_eq!(snap.total_tokens(), 310);
    assert!(log.is_empty());
    assert_eq!(log.generation(), 1);
    assert_eq!(log.current_turn(), 0);
    let mut fork = snap.fork();
    fork.push(8, Meta::assistant(1));
    assert_eq!(snap.len(), 7);
    assert_eq!(fork.generation(), snap.generation());
}

#[test]
fn replace_prefix_keeps_later_entries() {
    let mut log = agent_log();
    let gen = log.generation();
    let seen = log.len();
    log.push(7, Meta::assistant(7)); // appended after the caller's snapshot
    log.calibrate(999);
    let summary = vec![(100, Meta::user(5))];
    assert_eq!(
        log.replace_prefix(seen + 5, summary.clone(), gen),
        Err(LogError::OutOfRange { index: 12, len: 8 })
    );
    log.replace_prefix(5, summary.clone(), gen).unwrap();
    assert_eq!(
        log.iter().map(|e| *e.payload).collect::<Vec<_>>(),
        [100, 5, 6, 7]
    );
    assert_eq!(log.generation(), gen + 1);
    assert_eq!(log.total_tokens(), 5 + 50 + 60 + 7);
    let turns: Vec<String> = log.iter().map(|e| e.turn.to_string()).collect();
    assert_eq!(turns, ["u1", "u2", "a2", "a2"]);
    assert_eq!(log.reported_tokens(), None);
    let before = log.clone();
    let err = log.replace_prefix(1, summary, gen).unwrap_err();
    assert_eq!(
        err,
        LogError::StaleGeneration {
            expected: gen,
            actual: gen + 1
        }
    );
    assert!(err.to_string().contains(&gen.to_string()));
    assert_eq!(log.len(), before.len());
    assert_eq!(log.generation(), before.generation());
}

#[test]
fn remove_turn_keeps_numbers() {
    let mut log = agent_log();
    assert_eq!(log.remove_turn(9), Err(LogError::NoSuchTurn(9)));
    assert_eq!(log.remove_turn(1), Ok(4));
    let turns: Vec<String> = log.iter().map(|e| e.turn.to_string()).collect();
    assert_eq!(turns, ["u0", "u2", "a2"]);
    assert_eq!(log.total_tokens(), 210);
    assert_eq!(log.generation(), 1);
    assert_eq!(log.turn_count(), 1);
    log.push(9, Meta::user(1));
    assert_eq!(log.last().map(|e| e.turn), Some(TurnId::user(3)));
    assert!(log.is_safe_cut(1));
    assert_eq!(log.round_count(), 2);
}

#[test]
fn check_room_refuses_a_log_past_max_messages() {
    let mut log: MessageLog<()> = MessageLog::new();
    assert_eq!(log.check_room(MAX_MESSAGES), Ok(()));
    assert_eq!(
        log.check_room(MAX_MESSAGES + 1),
        Err(LogError::Full {
            len: MAX_MESSAGES + 1
        })
    );
    log.push((), Meta::new(Role::User, 1));
    assert!(log.check_room(MAX_MESSAGES).is_err());
    assert_eq!(
        log.check_room(usize::MAX),
        Err(LogError::Full { len: usize::MAX })
    );
}

#[test]
fn check_length_refuses_an_append_or_a_rewrite() {
    let mut log = agent_log();
    let (gen, len) = (log.generation(), log.len());
    assert_eq!(log.check_length(gen, len), Ok(()));
    log.push(7, Meta::assistant(7));
    assert_eq!(
        log.check_length(gen, len),
        Err(LogError::StaleLength {
            generation: gen,
            expected: len,
            actual: len + 1
        })
    );
    log.clear();
    assert!(matches!(
        log.check_length(gen, 0),
        Err(LogError::StaleGeneration { .. })
    ));
}

#[test]
fn catch_up_replays_appends_or_refuses() {
    let mut owner = agent_log();
    let base = owner.clone();
    let mut next = base.clone();
    next.replace_prefix(5, vec![(100, Meta::user(5))], base.generation())
        .unwrap();
    owner.push(7, Meta::assistant(7));
    owner.push(8, Meta::user(8));
    assert!(next.catch_up(&base, &owner));
    assert_eq!(
        next.iter().map(|e| *e.payload).collect::<Vec<_>>(),
        [100, 5, 6, 7, 8]
    );
    assert_eq!(next.last().map(|e| e.turn), Some(TurnId::user(3)));
    assert_eq!(next.generation(), base.generation() + 1);

    // Another rewrite won: refuse, unchanged.
    let mut other = base.clone();
    other.remove_turn(2).unwrap();
    let before: Vec<u32> = next.iter().map(|e| *e.payload).collect();
    assert!(!next.catch_up(&base, &other));
    assert_eq!(next.iter().map(|e| *e.payload).collect::<Vec<_>>(), before);
}

#[test]
fn calibration() {
    let mut log = agent_log();
    assert_eq!(log.estimated_context_tokens(), 310);
    log.calibrate(1_000);
    assert_eq!(log.estimated_context_tokens(), 1_000);
    log.push(7, Meta::assistant(25));
    assert_eq!(log.estimated_context_tokens(), 1_025);
    log.clear();
    assert_eq!(log.estimated_context_tokens(), 0);
}

#[test]
fn errors_display_values() {
    assert!(LogError::OutOfRange { index: 9, len: 3 }
        .to_string()
        .contains("index 9"));
    assert!(LogError::NoSuchTurn(4).to_string().contains('4'));
}
