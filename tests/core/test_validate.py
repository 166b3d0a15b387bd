"""`validate` lists every violation without mutating; `repair` fixes them deterministically."""

from __future__ import annotations

from hypothesis import given, settings

from ctxtrim import Message, ToolResultBlock, ToolUseBlock, repair, validate
from ctxtrim.validate import INTERRUPTED_RESULT

from helpers import call, results
from strategies import broken_histories, histories


def kinds(messages: list[Message]) -> list[tuple[str, int]]:
    return [(v.kind, v.index) for v in validate(messages)]


def test_valid_history_has_no_violations_and_repair_returns_same_list() -> None:
    msgs = [Message.system("s"), Message.user("task"), call("", "t1"), results("t1")]
    assert validate(msgs) == []
    assert repair(msgs) is msgs


def test_orphan_result() -> None:
    msgs = [Message.user("task"), results("ghost"), Message.assistant("ok")]
    [v] = validate(msgs)
    assert (v.kind, v.index, v.tool_use_id) == ("orphan_result", 1, "ghost")
    assert "ghost" in str(v)
    fixed = repair(msgs)
    assert validate(fixed) == [] and len(fixed) == 2  # the emptied message is dropped


def test_dangling_call_gets_an_error_result() -> None:
    msgs = [Message.user("task"), call("", "t1", "t2"), results("t1")]
    assert kinds(msgs) == [("dangling_call", 1)]
    fixed = repair(msgs)
    assert validate(fixed) == []
    answered = {r.tool_use_id: r for m in fixed for r in m.tool_results}
    assert answered["t2"].is_error and answered["t2"].content == INTERRUPTED_RESULT
    assert len(fixed) == 3  # merged into the tool-result message that followed


def test_result_before_its_call() -> None:
    msgs = [Message.user("task"), results("t1"), call("", "t1")]
    assert ("result_before_call", 1) in kinds(msgs)
    assert validate(repair(msgs)) == []


def test_duplicate_ids_are_renamed_deterministically() -> None:
    msgs = [
        Message.user("task"),
        call("", "t1"),
        results("t1"),
        call("", "t1"),
        results("t1"),
    ]
    assert ("duplicate_tool_use_id", 3) in kinds(msgs)
    fixed = repair(msgs)
    assert validate(fixed) == []
    assert repair(msgs) == fixed  # same input, same output
    ids = [b.id for m in fixed for b in m.content if isinstance(b, ToolUseBlock)]
    assert len(set(ids)) == 2


def test_duplicate_result() -> None:
    msgs = [
        Message.user("task"),
        call("", "t1"),
        Message.tool_results(ToolResultBlock("t1", "a"), ToolResultBlock("t1", "b")),
    ]
    assert ("duplicate_result", 2) in kinds(msgs)
    assert validate(repair(msgs)) == []


def test_assistant_first_history_gets_a_user_turn() -> None:
    msgs = [Message.system("s"), Message.assistant("hello"), Message.user("hi")]
    assert kinds(msgs) == [("non_user_first_turn", 1)]
    fixed = repair(msgs)
    assert [m.role for m in fixed] == ["system", "user", "assistant", "user"]
    assert validate(fixed) == []


def test_validate_never_mutates() -> None:
    msgs = [Message.user("task"), results("ghost")]
    before = list(msgs)
    validate(msgs)
    repair(msgs)
    assert msgs == before


@settings(max_examples=150, deadline=None)
@given(broken_histories())
def test_repair_always_yields_a_valid_history(msgs: list[Message]) -> None:
    fixed = repair(msgs)
    assert validate(fixed) == []
    assert repair(msgs) == fixed
    assert repair(fixed) is fixed


@settings(max_examples=100, deadline=None)
@given(histories())
def test_generated_histories_only_have_pending_calls(msgs: list[Message]) -> None:
    # histories() are realistic: the only violation allowed is a call still awaiting its result
    assert {v.kind for v in validate(msgs)} <= {"dangling_call"}
