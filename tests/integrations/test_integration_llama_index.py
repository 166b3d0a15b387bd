"""ctxtrim.integrations.llama_index.Memory against llama-index-core's own Memory.

llama-index-core's sdist ships no tests (so scripts/peer_tests.py has none of its to run):
the two classes run side by side instead, on the same generated histories, and must agree
on everything a user sees — what ``get`` returns after each put, what is archived in the
chat store, what the memory blocks receive — wherever LlamaIndex's queue is pair-safe.
Where it is not (a person writing while a tool runs), LlamaIndex's own result is shown
and ours is checked pair-safe. A real ``FunctionAgent`` runs several turns on ours.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="llama-index-core is not installed")

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.async_utils import asyncio_run
from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import BaseMemory, StaticMemoryBlock
from llama_index.core.memory import Memory as LlamaMemory
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.core.tools import FunctionTool

from ctxtrim import validate
from ctxtrim.integrations.llama_index import Memory, to_skeleton

Key = tuple[str, str | None, tuple[str | None, ...], Any]


async def close(*memories: LlamaMemory) -> None:
    """Dispose of the memories' SQLAlchemy engines: LlamaIndex's chat store never closes
    its aiosqlite connections (the same for its Memory and ours), which warn when collected."""
    for memory in memories:
        engine = getattr(memory.sql_store, "_async_engine", None)
        if engine is not None:
            await engine.dispose()


def key(m: ChatMessage) -> Key:
    calls = tuple(b.tool_call_id for b in m.blocks if isinstance(b, ToolCallBlock))
    return (str(m.role.value), m.content, calls, m.additional_kwargs.get("tool_call_id"))


def keys(ms: Sequence[ChatMessage]) -> list[Key]:
    return [key(m) for m in ms]


def pair_safe(messages: Sequence[ChatMessage]) -> bool:
    """No tool result without its call before it, no call without its results after it."""
    kinds = {"orphan_result", "result_before_call", "dangling_call", "duplicate_result"}
    skeletons = [to_skeleton(m, i) for i, m in enumerate(messages)]
    return not any(v.kind in kinds for v in validate(skeletons))


def call(*ids: str) -> ChatMessage:
    blocks = [ToolCallBlock(tool_call_id=c, tool_name="f", tool_kwargs={"x": 1}) for c in ids]
    return ChatMessage(role="assistant", blocks=blocks)


def result(cid: str, words: int = 3) -> ChatMessage:
    return ChatMessage(role="tool", content="r " * words, additional_kwargs={"tool_call_id": cid})


def turns(rng: random.Random, n: int, *, interleave: bool = False) -> list[list[ChatMessage]]:
    """Agent turns (a user message, rounds of parallel calls and their results, an answer)
    of about ``n`` messages in all; with ``interleave``, a person sometimes writes while the
    tools run (a user message between a call and its results)."""
    out: list[list[ChatMessage]] = []
    k = total = 0
    while total < n:
        turn = [ChatMessage(role="user", content="q " * rng.randint(1, 40))]
        for _ in range(rng.randint(0, 3)):
            ids = [f"c{k}-{j}" for j in range(rng.randint(1, 3))]
            k += 1
            turn.append(call(*ids))
            if interleave and rng.random() < 0.4:
                turn.append(ChatMessage(role="user", content="also " * rng.randint(1, 5)))
            turn += [result(c, rng.randint(1, 60)) for c in ids]
        turn.append(ChatMessage(role="assistant", content="a " * rng.randint(1, 50)))
        out.append(turn)
        total += len(turn)
    return out


class Recorder(BaseMemoryBlock[str]):
    """A memory block that keeps what the waterfall hands it and returns a count."""

    received: list[list[Key]] = Field(default_factory=list)

    async def _aget(self, messages: list[ChatMessage] | None = None, **kw: Any) -> str:
        return f"{len(self.received)} flushes" if self.received else ""

    async def _aput(self, messages: list[ChatMessage]) -> None:
        self.received.append(keys(messages))


async def play(
    cls: type[LlamaMemory], history: list[list[ChatMessage]], *, batched: bool, **kw: Any
) -> tuple[list[list[Key]], list[Key], list[list[Key]], bool]:
    """Put ``history`` turn by turn (whole turns at once, as an agent's ``finalize``
    does, with ``batched``), reading ``get`` after each put; then the archive, what the
    block received, and whether every view read after a whole turn was pair-safe."""
    block = Recorder(name="recorder", priority=1, received=[])
    memory = cls.from_defaults(memory_blocks=[block], **kw)
    seen: list[list[Key]] = []
    safe = True
    for turn in history:
        if batched:
            await memory.aput(turn[0])
            await memory.aput_messages(turn[1:])
        else:
            for m in turn[:-1]:
                await memory.aput(m)
                seen.append(keys(await memory.aget()))
            await memory.aput(turn[-1])
        view = await memory.aget()
        seen.append(keys(view))
        safe = safe and pair_safe(view)
    archived = keys(await memory.aget_all(status=MessageStatus.ARCHIVED))
    await close(memory)
    return seen, archived, block.received, safe


SETTINGS: list[dict[str, Any]] = [
    {"token_limit": 60, "token_flush_size": 5, "chat_history_token_ratio": 1.0},
    {"token_limit": 200, "token_flush_size": 10, "chat_history_token_ratio": 0.7},
    {"token_limit": 800, "token_flush_size": 50},
    {"token_limit": 3000, "token_flush_size": 300, "chat_history_token_ratio": 0.3},
    {"token_limit": 500, "token_flush_size": 600},  # over the limit: LlamaIndex lowers it
]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("batched", [False, True])
async def test_same_as_llama_index_on_valid_histories(seed: int, batched: bool) -> None:
    rng = random.Random(seed)
    history = turns(rng, rng.randint(10, 90))
    kw = SETTINGS[seed % len(SETTINGS)]
    theirs = await play(LlamaMemory, history, batched=batched, **kw)
    ours = await play(Memory, history, batched=batched, **kw)
    assert ours == theirs
    # The settings flush: the comparison covers the waterfall, not just appends.
    assert theirs[1], "nothing was archived: the case does not test the flush"
    assert ours[3]  # and each view after a whole turn is pair-safe (as LlamaIndex's here)


async def test_llama_index_orphans_a_result_when_a_person_writes_while_a_tool_runs() -> None:
    history = [
        ChatMessage(role="user", content="list /tmp " * 20),
        call("c1"),
        ChatMessage(role="user", content="and /var too"),
        result("c1"),
        ChatMessage(role="assistant", content="done"),
    ]
    kw: dict[str, Any] = {"token_limit": 60, "token_flush_size": 5, "chat_history_token_ratio": 1}
    theirs = LlamaMemory.from_defaults(**kw)
    await theirs.aput_messages(history)
    view = await theirs.aget()
    # LlamaIndex's queue starts at the second user message: the tool result lost its call.
    assert [m.role.value for m in view] == ["user", "tool", "assistant"]
    assert not pair_safe(view)
    ours = Memory.from_defaults(**kw)
    await ours.aput_messages(history)
    view = await ours.aget()
    # Ours keeps the last whole turn from the last pair-safe user message (LlamaIndex's own
    # rule when no user message is left to start at): the call stays with its result.
    assert keys(view) == keys(history)
    assert pair_safe(view)
    assert await ours.aget_all(status=MessageStatus.ARCHIVED) == []
    await close(theirs, ours)


@pytest.mark.parametrize("seed", range(4))
async def test_pair_safe_with_interleaved_parallel_calls(seed: int) -> None:
    """People writing while parallel tools run: every ``get`` is pair-safe, the queue stays
    bounded, and whatever is archived is a prefix of the history (nothing lost)."""
    rng = random.Random(1000 + seed)
    history = turns(rng, 150, interleave=True)
    memory = Memory.from_defaults(token_limit=400, token_flush_size=40)
    theirs = LlamaMemory.from_defaults(token_limit=400, token_flush_size=40)
    orphaned = False
    for turn in history:
        for m in (memory, theirs):  # as an agent does: the task, then the turn's messages
            await m.aput(turn[0])
            await m.aput_messages(turn[1:])
        assert pair_safe(await memory.aget())
        orphaned |= not pair_safe(await theirs.aget())
    flat = [m for t in history for m in t]
    active = await memory.aget()
    archived = await memory.aget_all(status=MessageStatus.ARCHIVED)
    assert keys(archived + active) == keys(flat)
    assert keys(await memory.aget_all()) == keys(flat)
    assert archived, "the queue never flushed"
    await close(memory, theirs)
    if seed == 0:  # the generator makes this case: LlamaIndex orphans a result in it
        assert orphaned


async def test_tool_calls_in_additional_kwargs_pair_too() -> None:
    """Older integrations put calls in ``additional_kwargs["tool_calls"]`` (OpenAI's shape)."""
    legacy = ChatMessage(
        role="assistant",
        content="",
        additional_kwargs={"tool_calls": [{"id": "k1", "type": "function"}]},
    )
    sk = to_skeleton(legacy)
    assert [u.id for u in sk.tool_uses] == ["k1"]
    assert to_skeleton(result("k1")).tool_results[0].tool_use_id == "k1"
    both = ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id="k2", tool_name="f")],
        additional_kwargs={"tool_calls": [{"id": "k2"}]},
    )
    assert [u.id for u in to_skeleton(both).tool_uses] == ["k2"]  # one call, named twice
    history = [
        ChatMessage(role="user", content="x " * 30),
        legacy,
        ChatMessage(role="user", content="meanwhile"),
        result("k1"),
        ChatMessage(role="user", content="next"),
        ChatMessage(role="assistant", content="ok"),
    ]
    memory = Memory.from_defaults(token_limit=40, token_flush_size=2, chat_history_token_ratio=1)
    await memory.aput_messages(history)
    view = await memory.aget()
    assert pair_safe(view)
    assert keys(view) == keys(history[4:])  # flushed up to the next pair-safe user message
    await close(memory)


async def test_memory_block_content_is_inserted_into_a_copy() -> None:
    """LlamaIndex writes the blocks' text into the system message it returns; ours returns
    the stored messages, so that message is copied first and never accumulates it."""
    system = ChatMessage(role="system", content="be terse")
    static = StaticMemoryBlock(static_content=[TextBlock(text="the user is Ada")])
    for cls in (LlamaMemory, Memory):
        memory = cls.from_defaults(memory_blocks=[static], token_limit=1000)
        await memory.aput(system)
        await memory.aput(ChatMessage(role="user", content="hi"))
        for _ in range(3):
            view = await memory.aget()
            texts = [b.text for b in view[0].blocks if isinstance(b, TextBlock)]
            assert sum("the user is Ada" in t for t in texts) == 1, cls
            assert texts[-1] == "be terse"
        await close(memory)
        assert [b.text for b in system.blocks if isinstance(b, TextBlock)] == ["be terse"]


async def test_blocks_get_copies_of_the_flushed_messages() -> None:
    mine = ChatMessage(role="user", content="q " * 50)
    block = Recorder(name="recorder", received=[])
    memory = Memory.from_defaults(memory_blocks=[block], token_limit=30, token_flush_size=1)
    await memory.aput(mine)
    await memory.aput(ChatMessage(role="assistant", content="a"))
    await memory.aput(ChatMessage(role="user", content="q2"))
    assert block.received and block.received[0][0] == key(mine)
    assert "session_id" not in mine.additional_kwargs  # the block marked a copy
    await close(memory)


async def test_set_reset_get_all_and_a_reloaded_session(tmp_path: Path) -> None:
    """The chat store is LlamaIndex's: a new Memory on the same database and session sees
    what an earlier one stored, and flushes exactly as LlamaIndex's would from there."""
    rng = random.Random(7)
    history = turns(rng, 60)
    kw: dict[str, Any] = {"token_limit": 300, "token_flush_size": 20}
    views = {}
    for name, cls in (("theirs", LlamaMemory), ("ours", Memory)):
        uri = f"sqlite+aiosqlite:///{tmp_path / name}.db"
        first = cls.from_defaults(session_id="s", async_database_uri=uri, **kw)
        for t in history[:5]:
            await first.aput_messages(t)
        again = cls.from_defaults(session_id="s", async_database_uri=uri, **kw)
        for t in history[5:]:
            await again.aput_messages(t)
        views[name] = (
            keys(await again.aget()),
            keys(await again.aget_all(status=MessageStatus.ARCHIVED)),
        )
        await again.aset(history[0])
        assert keys(await again.aget()) == keys(history[0])
        assert keys(await again.aget_all()) == keys(history[0])
        await again.areset(status=MessageStatus.ARCHIVED)
        assert keys(await again.aget()) == keys(history[0])
        await again.areset()
        assert await again.aget() == []
        await again.aput(history[1][0])
        assert keys(await again.aget()) == keys(history[1][:1])
        await close(first, again)
    assert views["ours"] == views["theirs"]
    assert views["ours"][1]


def test_sync_api_and_from_defaults_chat_history() -> None:
    history = [ChatMessage(role="user", content="hi"), ChatMessage(role="assistant", content="yo")]
    memory = Memory.from_defaults(chat_history=history, token_limit=100)
    assert isinstance(memory, LlamaMemory) and isinstance(memory, BaseMemory)
    assert keys(memory.get()) == keys(history)
    memory.put(ChatMessage(role="user", content="again"))
    memory.put_messages([ChatMessage(role="assistant", content="sure")])
    assert [m.content for m in memory.get_all()] == ["hi", "yo", "again", "sure"]
    memory.set(history[:1])
    assert keys(memory.get()) == keys(history[:1])
    memory.reset()
    assert memory.get() == []
    asyncio_run(close(memory))


def test_invalid_arguments_raise_as_llama_index_does() -> None:
    for cls in (LlamaMemory, Memory):
        with pytest.raises(ValueError, match="Token limit must be set"):
            cls.from_defaults(token_limit=0)
        with pytest.raises(ValueError, match="unique names"):
            cls(
                token_limit=100,
                memory_blocks=[StaticMemoryBlock(static_content=[TextBlock(text="a")])] * 2,
            )


# llama-index-workflows lists the agent's members with inspect.getmembers, which reads
# every deprecated attribute pydantic keeps on a model (``__fields__``,
# ``model_computed_fields`` on the instance...): third-party code, whatever the memory.
@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20")
@pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211")
def test_function_agent_runs_turns_with_parallel_tools_on_our_memory() -> None:
    """A real FunctionAgent, several turns, each making two parallel tool calls: every
    request the LLM receives is pair-safe, the memory flushes, and the static block's text
    reaches the LLM once per request."""
    requests: list[list[ChatMessage]] = []
    n_calls = [0]

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        requests.append(list(messages))
        if messages[-1].role == "tool":
            return ChatMessage(role="assistant", content="the answer " * 10)
        n_calls[0] += 1
        k = n_calls[0]
        return ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(tool_call_id=f"a{k}", tool_name="add", tool_kwargs={"a": k, "b": 1}),
                ToolCallBlock(tool_call_id=f"m{k}", tool_name="mul", tool_kwargs={"a": k, "b": 2}),
            ],
        )

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def mul(a: int, b: int) -> int:
        """Multiply two numbers."""
        return a * b

    llm = MockFunctionCallingLLM(response_generator=respond)
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(add), FunctionTool.from_defaults(mul)],
        llm=llm,
        system_prompt="You add and multiply.",
    )
    block = StaticMemoryBlock(static_content=[TextBlock(text="The user likes primes.")])
    memory = Memory.from_defaults(
        session_id="agent", token_limit=400, token_flush_size=40, memory_blocks=[block]
    )

    async def main() -> tuple[list[str], list[ChatMessage], list[ChatMessage], list[ChatMessage]]:
        answers = []
        for i in range(12):
            handler = agent.run(user_msg=f"compute {i} " * 8, memory=memory)
            answers.append(str(await handler))
        archived = await memory.aget_all(status=MessageStatus.ARCHIVED)
        active = await memory.aget()
        stored = await memory.aget_all()
        await close(memory)
        return answers, archived, active, stored

    answers, archived, active, stored = asyncio.run(main())
    assert len(answers) == 12 and all("the answer" in a for a in answers)
    assert len(requests) == 24
    for request in requests:
        assert pair_safe(request)
        texts = [b.text for m in request for b in m.blocks if isinstance(b, TextBlock)]
        assert sum("The user likes primes." in t for t in texts) == 1
    assert archived, "the agent's history never flushed"
    assert active[0].role == "system"  # the static block's text, in a system message
    assert active[1].role == "user" and pair_safe(active)
    # Each turn: the task, the parallel calls, two results, the answer.
    assert len(stored) == 12 * 5
    assert [m.role.value for m in stored[:5]] == ["user", "assistant", "tool", "tool", "assistant"]


async def test_a_long_session_drops_its_flushed_front_and_still_agrees() -> None:
    """Past 1024 flushed messages the in-memory queue drops its flushed front (the lists and
    the log are rebuilt from the active part): the views stay LlamaIndex's."""
    history = [
        [
            ChatMessage(role="user", content=f"q{i} " * 3),
            call(f"c{i}"),
            result(f"c{i}"),
            ChatMessage(role="assistant", content=f"a{i}"),
        ]
        for i in range(300)
    ]
    kw: dict[str, Any] = {"token_limit": 120, "token_flush_size": 30}
    ours = Memory.from_defaults(**kw)
    assert isinstance(ours, Memory)  # from_defaults is typed as returning LlamaIndex's
    theirs = LlamaMemory.from_defaults(**kw)
    for i, turn in enumerate(history):
        for m in (ours, theirs):
            await m.aput_messages(turn)
        if i % 25 == 0 or i > 290:
            assert keys(await ours.aget()) == keys(await theirs.aget())
    assert len(ours._msgs) < 1024  # the front was dropped (the list holds the active part)
    archived = await ours.aget_all(status=MessageStatus.ARCHIVED)
    assert keys(archived) == keys(await theirs.aget_all(status=MessageStatus.ARCHIVED))
    assert len(archived) > 1024
    await close(ours, theirs)


async def test_fact_extraction_block_gets_the_same_flushes_as_with_llama_index() -> None:
    """LlamaIndex's FactExtractionMemoryBlock, run by its own code: the LLM (a mock that
    states one fact per flushed user message) sees the same flushed messages, so the facts
    and the views are the same as on LlamaIndex's Memory."""
    from llama_index.core.memory import FactExtractionMemoryBlock

    def facts_of(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        said = [m.content for m in messages if m.role == "user" and m.content]
        body = "".join(f"<fact>the user said {len(s.split())} words</fact>" for s in said)
        return ChatMessage(role="assistant", content=f"<facts>{body}</facts>")

    history = turns(random.Random(3), 80)
    views = []
    for cls in (LlamaMemory, Memory):
        block = FactExtractionMemoryBlock(
            llm=MockFunctionCallingLLM(response_generator=facts_of), max_facts=1000
        )
        memory = cls.from_defaults(memory_blocks=[block], token_limit=300, token_flush_size=30)
        seen = []
        for turn in history:
            await memory.aput(turn[0])
            await memory.aput_messages(turn[1:])
            seen.append(keys(await memory.aget()))
        views.append((seen, list(block.facts)))
        await close(memory)
    assert views[0] == views[1]
    assert len(views[1][1]) > 3, "few facts were extracted: little was flushed"
