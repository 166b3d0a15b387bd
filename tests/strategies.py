"""Hypothesis strategies for ctxtrim's message model, shared by the test suite.

* :func:`texts` — any Unicode string without surrogates (emoji, CJK, NUL, empty...).
* :func:`json_values` / :func:`json_dicts` — plain JSON (what ``ToolUseBlock.input`` and
  ``Message.meta`` accept).
* :func:`blocks` / :func:`messages` — any valid block / message (every role, every field,
  empty content).
* :func:`histories` — plausible agent conversations (see its docstring for the guarantees).
* :func:`broken_histories` / :func:`broken_histories_with_faults` — the same with structural
  faults added (orphans, duplicates, dangling calls, results before calls, assistant first).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from ctxtrim.messages import (
    IMAGE_MEDIA_TYPES,
    Block,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

__all__ = [
    "FAULTS",
    "blocks",
    "broken_histories",
    "broken_histories_with_faults",
    "histories",
    "image_blocks",
    "json_dicts",
    "json_values",
    "messages",
    "nonempty_texts",
    "reasoning_blocks",
    "text_blocks",
    "texts",
    "tool_result_blocks",
    "tool_use_blocks",
    "turn_ids",
    "usages",
]

_SAMPLES = [
    "",
    "\x00",
    "hello world",
    "héllo wörld",
    "你好\uff0c世界",
    "こんにちは",
    "안녕하세요",
    "😀👍🏽👨‍👩‍👧‍👦",
    "مرحبا",
    "line1\nline2\r\n\ttabbed",
    '{"not": "json"}',
    "\u200b\ufeff\uffff",
    "\U0010ffff",
]


def texts(*, min_size: int = 0, max_size: int = 40) -> st.SearchStrategy[str]:
    """Any string without surrogates (which cannot be UTF-8); includes NUL, emoji and CJK."""
    return st.one_of(
        st.text(st.characters(exclude_categories=("Cs",)), min_size=min_size, max_size=max_size),  # type: ignore[arg-type]  # a literal category; mypy widens the tuple to str
        st.sampled_from([s for s in _SAMPLES if min_size <= len(s) <= max_size]),
    )


def nonempty_texts(max_size: int = 20) -> st.SearchStrategy[str]:
    return texts(min_size=1, max_size=max_size)


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Plain JSON values: None, bool, int (also beyond 64 bits), finite float, str, list, dict."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        texts(),
    )
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(texts(max_size=10), children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


def json_dicts(max_leaves: int = 12) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(texts(max_size=10), json_values(max_leaves), max_size=5)


def turn_ids() -> st.SearchStrategy[str]:
    return st.builds(
        lambda owner, n: f"{owner}{n}", st.sampled_from("ua"), st.integers(0, 2**32 - 1)
    )


def text_blocks() -> st.SearchStrategy[TextBlock]:
    return st.builds(TextBlock, texts())


def image_blocks() -> st.SearchStrategy[ImageBlock]:
    return st.builds(ImageBlock, st.sampled_from(sorted(IMAGE_MEDIA_TYPES)), st.binary(max_size=64))


def tool_use_blocks() -> st.SearchStrategy[ToolUseBlock]:
    return st.builds(ToolUseBlock, nonempty_texts(), nonempty_texts(), json_dicts())


def tool_result_blocks() -> st.SearchStrategy[ToolResultBlock]:
    return st.builds(
        ToolResultBlock,
        nonempty_texts(),
        st.one_of(texts(), st.lists(st.one_of(text_blocks(), image_blocks()), max_size=3)),
        is_error=st.booleans(),
        compact_summary=st.none() | texts(),
    )


def reasoning_blocks() -> st.SearchStrategy[ReasoningBlock]:
    return st.builds(ReasoningBlock, texts(), texts(), st.booleans())


def blocks() -> st.SearchStrategy[Block]:
    """Any valid block."""
    return st.one_of(
        text_blocks(), image_blocks(), tool_use_blocks(), tool_result_blocks(), reasoning_blocks()
    )


def usages() -> st.SearchStrategy[Usage]:
    counts = st.integers(0, 2**40)
    return st.builds(
        Usage, counts, counts, counts, counts, st.none() | texts(), st.none() | texts()
    )


_ROLE_CONTENT = {
    "system": st.lists(text_blocks(), max_size=4),
    "user": st.lists(st.one_of(text_blocks(), image_blocks(), tool_result_blocks()), max_size=4),
    "assistant": st.lists(
        st.one_of(text_blocks(), image_blocks(), tool_use_blocks(), reasoning_blocks()),
        max_size=4,
    ),
}
_ROLES = st.sampled_from(["system", "user", "assistant"])
_OPT_TEXT = st.none() | nonempty_texts()
_OPT_TURN = st.none() | turn_ids()
_OPT_USAGE = st.none() | usages()
_OPT_META = st.none() | json_dicts(6)
_SEQ_TYPE = st.sampled_from([list, tuple])


@st.composite
def messages(draw: st.DrawFn, role: str | None = None) -> Message:
    """Any valid message: every role, possibly empty content, every optional field."""
    role = role or draw(_ROLES)
    content = draw(_ROLE_CONTENT[role])
    return Message(
        role,  # type: ignore[arg-type]
        draw(_SEQ_TYPE)(content),
        id=draw(_OPT_TEXT),
        turn=draw(_OPT_TURN),
        name=draw(_OPT_TEXT),
        usage=draw(_OPT_USAGE),
        meta=draw(_OPT_META),
    )


# --------------------------------------------------------------------------------------------
# Conversations

_TOOL_NAMES = ["read_file", "grep", "run_tests", "search_web", "list_dir", "edit_file"]

# Built once: making a strategy per draw costs more than the draw (hypothesis validates it).
_PROSE = st.sampled_from(
    [
        "Fix the failing test in parser.py.",
        "Let me look at the file first.",
        "I'll run the tests.",
        "Done: the bug was an off-by-one.",
        "What about the 中文 input?",
        "Looks good 👍",
        "ok",
    ]
)
_TEXT = st.one_of(_PROSE, texts(min_size=1))
_SHORT = st.one_of(st.sampled_from(["", "sig_abc"]), texts(max_size=8))
_TOOL_INPUT = st.dictionaries(
    st.sampled_from(["path", "query", "n", "flags", "pattern", "é"]),
    st.one_of(st.integers(), _PROSE, texts(max_size=12), st.lists(st.integers(), max_size=3)),
    max_size=3,
)
_RESULT_TEXT = st.one_of(
    st.sampled_from(["ok", "", "FAILED: 3 tests", "x" * 300, "no such file"]), texts(max_size=60)
)
_RESULT_BLOCKS = st.lists(st.one_of(text_blocks(), image_blocks()), min_size=1, max_size=2)
_USAGE = st.none() | usages()
_SUMMARY = st.none() | st.just("[summary]")
_TOOL_NAME = st.sampled_from(_TOOL_NAMES)
_D4 = st.integers(0, 3)


def _result_content(draw: st.DrawFn) -> str | list[TextBlock | ImageBlock]:
    if draw(st.integers(0, 9)) == 0:
        return draw(_RESULT_BLOCKS)
    return draw(_RESULT_TEXT)


@st.composite
def histories(draw: st.DrawFn, max_rounds: int = 12) -> list[Message]:
    """A plausible agent conversation, provider-valid but for the usual agent-loop liberties.

    Shape: an optional system prompt, the user's task, then rounds: an assistant message
    (optional reasoning, optional text, 0-3 parallel tool calls) followed by user messages that
    deliver the results — in any order, possibly spread over several messages, possibly mixed
    with user text (results first, then text), possibly with a pure-text user message
    interleaved — and now and then a new user task.

    Guarantees (what :func:`broken_histories` breaks):

    * message ids (``"m0"``, ``"m1"``, ...) and tool-use ids are unique;
    * the first message that is not a system message is a real user message;
    * every tool result answers a call made by an earlier message, and no call is answered
      twice;
    * a result may arrive *late*, after one further assistant message, but no later;
    * unanswered calls exist only at the end (calls of the last two assistant messages that
      were still pending when the conversation stopped).
    """
    out: list[Message] = []
    counter = iter(range(10**9))
    tool_counter = iter(range(10**9))

    def mid() -> str:
        return f"m{next(counter)}"

    if draw(st.booleans()):
        out.append(Message.system(draw(_TEXT), id=mid()))
    out.append(Message.user(draw(_TEXT), id=mid()))

    late: list[str] = []  # held back last round; must be delivered this round
    for _ in range(draw(st.integers(0, max_rounds))):
        # -- the assistant speaks
        n_calls = draw(_D4)
        calls = [
            ToolUseBlock(
                f"toolu_{next(tool_counter):04d}",
                draw(_TOOL_NAME),
                draw(_TOOL_INPUT),
            )
            for _ in range(n_calls)
        ]
        head: list[Block] = []
        if draw(_D4) == 0:
            head.append(ReasoningBlock(draw(_TEXT), draw(_SHORT)))
        if not calls or draw(st.booleans()):
            head.append(TextBlock(draw(_TEXT)))
        usage = draw(_USAGE)
        out.append(Message("assistant", head + calls, id=mid(), usage=usage))  # type: ignore[arg-type]  # a list is accepted and stored as a tuple

        # -- the results come back
        ids = [c.id for c in calls]
        ids = draw(st.permutations(ids)) if ids else ids
        held = [i for i in ids if draw(st.integers(0, 5)) == 0]  # delivered next round
        now = late + [i for i in ids if i not in held]
        late = held
        while now:
            k = draw(st.integers(1, len(now)))
            chunk, now = now[:k], now[k:]
            results: list[Block] = [
                ToolResultBlock(
                    i,
                    _result_content(draw),  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
                    is_error=draw(st.integers(0, 7)) == 0,
                    compact_summary=draw(_SUMMARY),
                )
                for i in chunk
            ]
            if draw(st.integers(0, 5)) == 0:
                results.append(TextBlock(draw(_TEXT)))
            out.append(Message("user", results, id=mid()))  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
            if now and draw(st.integers(0, 6)) == 0:
                out.append(Message.user(draw(_TEXT), id=mid()))
        if out[-1].role == "assistant" and not calls:
            # The assistant finished its turn: the user speaks next.
            out.append(Message.user(draw(_TEXT), id=mid()))
        elif not late and draw(st.integers(0, 4)) == 0:
            out.append(Message.user(draw(_TEXT), id=mid()))
    # Stop mid-round now and then: the last calls are still pending.
    if draw(_D4) == 0:
        calls = [
            ToolUseBlock(f"toolu_{next(tool_counter):04d}", draw(_TOOL_NAME), {})
            for _ in range(draw(st.integers(1, 3)))
        ]
        out.append(Message.assistant(tool_uses=calls, id=mid()))
    return out


#: The faults :func:`broken_histories_with_faults` can inject.
FAULTS = (
    "orphan_result",  # a result whose id no message ever issued
    "duplicate_tool_use_id",  # two calls with the same id
    "duplicate_result",  # one call answered twice
    "dangling_call",  # a call never answered although the conversation went on
    "result_before_call",  # a result placed before the call it answers
    "assistant_first",  # the first non-system message is an assistant message
)


def _with_content(m: Message, content: list[Block]) -> Message:
    return Message(m.role, content, id=m.id, turn=m.turn, name=m.name, usage=m.usage, meta=m.meta)  # type: ignore[arg-type]  # a list is accepted and stored as a tuple


@st.composite
def broken_histories_with_faults(
    draw: st.DrawFn, max_rounds: int = 8
) -> tuple[list[Message], frozenset[str]]:
    """A :func:`histories` conversation with 1-3 faults injected; returns it and the faults.

    The returned set names the faults deliberately injected; an injection can have side
    effects (e.g. calls cut off from their results by an inserted dangling round), so a
    validator may find more violations than listed, never fewer kinds.
    """
    msgs = draw(histories(max_rounds=max_rounds))
    wanted = draw(st.lists(st.sampled_from(FAULTS), min_size=1, max_size=3, unique=True))
    applied: set[str] = set()
    extra = iter(range(10**9))
    for fault in wanted:
        calls = [(i, b) for i, m in enumerate(msgs) for b in m.tool_uses]
        answered = [(i, b) for i, m in enumerate(msgs) for b in m.tool_results]
        if fault == "orphan_result":
            pos = draw(st.integers(1, len(msgs)))
            orphan = Message.tool_results((f"orphan_{next(extra)}", "?"), id=f"x{next(extra)}")
            msgs.insert(pos, orphan)
        elif fault == "duplicate_tool_use_id" and calls:
            _, call = draw(st.sampled_from(calls))
            dup = Message.assistant(tool_uses=[(call.id, "dup", {})], id=f"x{next(extra)}")
            msgs.append(dup)
            msgs.append(Message.tool_results((call.id, "dup"), id=f"x{next(extra)}"))
        elif fault == "duplicate_result" and answered:
            i, res = draw(st.sampled_from(answered))
            msgs.insert(i + 1, Message.tool_results(res, id=f"x{next(extra)}"))
        elif fault == "dangling_call":
            # A new call, never answered, followed by two more assistant rounds.
            at = draw(st.integers(1, len(msgs)))
            tail = [
                Message.assistant(tool_uses=[(f"dangling_{next(extra)}", "grep", {})]),
                Message.user("go on"),
                Message.assistant("first"),
                Message.user("more"),
                Message.assistant("second"),
            ]
            msgs[at:at] = [Message(m.role, list(m.content), id=f"x{next(extra)}") for m in tail]  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
        elif fault == "result_before_call" and (
            movable := [(i, r) for i, r in answered if any(b.id == r.tool_use_id for _, b in calls)]
        ):
            i, res = draw(st.sampled_from(movable))
            call_at = next(j for j, b in calls if b.id == res.tool_use_id)
            rest = [b for b in msgs[i].content if b is not res]
            if rest:
                msgs[i] = _with_content(msgs[i], rest)
            else:
                del msgs[i]
            msgs.insert(call_at, Message.tool_results(res, id=f"x{next(extra)}"))
        elif fault == "assistant_first":
            first = next(j for j, m in enumerate(msgs) if m.role != "system")
            msgs.insert(first, Message.assistant("I start.", id=f"x{next(extra)}"))
        else:
            continue
        applied.add(fault)
    if not applied:  # every wanted fault needed tool calls and there were none
        msgs.insert(1, Message.tool_results(("orphan_only", "?"), id="x_orphan"))
        applied.add("orphan_result")
    return msgs, frozenset(applied)


def broken_histories(max_rounds: int = 8) -> st.SearchStrategy[list[Message]]:
    """A :func:`histories` conversation with 1-3 structural faults (see :data:`FAULTS`)."""
    return broken_histories_with_faults(max_rounds).map(lambda pair: pair[0])
