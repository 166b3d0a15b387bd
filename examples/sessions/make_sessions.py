"""Write the example agent sessions in this directory, one per format, reproducibly.

Run: python examples/sessions/make_sessions.py

One scripted session — a coding agent fixing a CSV parser for a user who writes in Chinese
and English — is written natively in each provider's shape, the way a client would send it
back to the API (provider ids, ``status``, ``annotations``, ``cache_control``, encrypted
reasoning...), not through ctxtrim's converters, so the files test the converters:

* ``openai_chat.json``       Chat Completions ``messages``
* ``openai_responses.json``  Responses API ``input`` items
* ``anthropic.json``         ``{"system": ..., "messages": [...]}``
* ``ctxtrim.jsonl``          ctxtrim's own shape, one ``Message.to_dict()`` per line

The session has file reads, searches, parallel calls, a failed call (``is_error``), a long
tool output (several KB), an image, reasoning, non-English text and emoji, and at least 40
messages in every format. Everything is derived from a fixed seed: running the script again
rewrites byte-identical files.
"""

# ruff: noqa: RUF001  (the session is written in Chinese, with its full-width punctuation)
from __future__ import annotations

import base64
import json
import random
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

SYSTEM = (
    "You are a careful coding agent working in the repository at /work/csvkit. "
    "Use the tools to read and edit files and to run the tests. Reply in the user's language."
)


def _png(width: int, height: int) -> bytes:
    """A small valid PNG (a grey gradient) — a stand-in for the user's screenshot."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    rows = b"".join(b"\x00" + bytes((x * 8 + y) % 256 for x in range(width)) for y in range(height))
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x00\x00\x00\x00"
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def _parser_source() -> str:
    """The long tool output: a ~7 KB Python module."""
    lines = [
        '"""csvkit.parser — a small CSV reader with type sniffing."""',
        "",
        "from __future__ import annotations",
        "",
        "import re",
        "from dataclasses import dataclass",
        "",
        "",
        "@dataclass",
        "class Field:",
        "    name: str",
        "    kind: str = 'str'",
        "",
        "",
    ]
    for k in range(24):
        lines += [
            f"def parse_{k}(line: str, sep: str = ',') -> list[str]:",
            f'    """Split one record of dialect {k}; quoted fields may hold the separator."""',
            "    out, buf, quoted = [], [], False",
            "    for ch in line:",
            "        if ch == '\"':",
            "            quoted = not quoted",
            "        elif ch == sep and not quoted:",
            "            out.append(''.join(buf))",
            "            buf = []",
            "        else:",
            "            buf.append(ch)",
            f"    return out  # BUG {k}: the last field is never appended",
            "",
        ]
    return "\n".join(f"{n + 1:4d}  {text}" for n, text in enumerate(lines))


def script() -> list[dict[str, Any]]:
    """The session as provider-neutral steps: user turns and assistant rounds with results."""
    rng = random.Random(20261122)
    parser = _parser_source()
    steps: list[dict[str, Any]] = [
        {
            "user": "请修复 csvkit 的解析器 🐛：带引号的字段里有逗号时就会崩溃。"
            "Start with src/csvkit/parser.py.",
            "image": _png(16, 12),
        }
    ]

    def rnd(
        text: str | None, calls: list[tuple[str, dict[str, Any], str, bool]], think: str = ""
    ) -> None:
        steps.append({"text": text, "calls": calls, "think": think})

    rnd(
        "I'll read the parser and search for the quoting logic in parallel.",
        [
            ("read_file", {"path": "src/csvkit/parser.py"}, parser, False),
            (
                "grep",
                {"pattern": "quoted", "path": "src/"},
                "\n".join(
                    f"src/csvkit/parser.py:{18 + 13 * k}:            quoted = not quoted"
                    for k in range(24)
                ),
                False,
            ),
        ],
        think="The crash is about quoted fields; read the parser first.",
    )
    rnd(
        "Let me run the parser tests to see the failure.",
        [
            (
                "run_tests",
                {"path": "tests/test_parser.py", "flags": ["-x", "-q"]},
                "F\n=== FAILURES ===\ntest_quoted_comma: assert parse_0('a,\"b,c\"') == "
                "['a', 'b,c']\nE   AssertionError: ['a'] != ['a', 'b,c']\n1 failed in 0.12s",
                False,
            )
        ],
    )
    rnd(
        None,
        [
            (
                "read_file",
                {"path": "src/csvkit/dialects.py"},
                "Error: FileNotFoundError: [Errno 2] No such file or directory: "
                "'src/csvkit/dialects.py'",
                True,
            )
        ],
        think="Maybe dialects live in their own module.",
    )
    rnd(
        "That file does not exist; listing the package instead.",
        [
            (
                "list_dir",
                {"path": "src/csvkit"},
                "__init__.py\nparser.py\nsniff.py\nwriter.py\n_compat.py",
                False,
            )
        ],
    )
    for k in range(0, 24, 3):  # fix three dialects per round, in parallel
        rnd(
            f"Fixing dialects {k}–{k + 2}: append the last field before returning.",
            [
                (
                    "edit_file",
                    {
                        "path": "src/csvkit/parser.py",
                        "old": f"    return out  # BUG {j}: the last field is never appended",
                        "new": "    out.append(''.join(buf))\n    return out",
                    },
                    f"Edited src/csvkit/parser.py (1 replacement, dialect {j})",
                    False,
                )
                for j in range(k, k + 3)
            ],
        )
    rnd(
        "Running the tests again.",
        [("run_tests", {"path": "tests/"}, "........................ 24 passed in 0.31s", False)],
    )
    steps.append({"answer": "修好了 ✅ 24 个方言的解析器都会追加最后一个字段，测试全部通过。"})
    steps.append({"user": "Thanks! 顺便把 README 里的示例也更新一下 📝, and check the docs site."})
    rnd(
        "Searching the docs for the old example.",
        [
            (
                "grep",
                {"pattern": "parse_0", "path": "README.md"},
                "README.md:42:  parse_0(line)",
                False,
            ),
            (
                "search_web",
                {"query": "csvkit docs quoted fields"},
                "1. csvkit — Reading quoted fields (docs.csvkit.dev/quoting) «引号字段的处理»\n"
                "2. RFC 4180 — Common Format for CSV Files",
                False,
            ),
        ],
    )
    rnd(
        None,
        [
            (
                "edit_file",
                {"path": "README.md", "old": "parse_0(line)", "new": "parse_0('a,\"b,c\"')"},
                "Edited README.md (1 replacement)",
                False,
            )
        ],
    )
    rnd(
        "Double-checking the rendered README example.",
        [("run_tests", {"path": "tests/test_readme.py"}, "1 passed in 0.05s", False)],
    )
    steps.append({"answer": "README 已更新：示例现在展示带逗号的引号字段 🎉"})
    steps.append({"user": "最后一个问题：writer.py 会不会有同样的 bug？"})
    rnd(
        "Reading the writer.",
        [
            (
                "read_file",
                {"path": "src/csvkit/writer.py"},
                "def write_row(fields):\n    return ','.join(quote(f) for f in fields)\n",
                False,
            )
        ],
    )
    rnd(
        None,
        [("grep", {"pattern": "def quote", "path": "src/csvkit"}, "src/csvkit/writer.py:9", False)],
    )
    steps.append({"answer": "不会：writer 会给每个含逗号的字段加引号，没有同样的问题。"})
    # Give every call a provider-style id, deterministically.
    for step in steps:
        if "calls" in step:
            step["ids"] = [f"{rng.getrandbits(48):012x}" for _ in step["calls"]]
    return steps


def _args(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _signature(rng: random.Random, n: int = 48) -> str:
    return base64.b64encode(rng.randbytes(n)).decode()


def openai_chat(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for step in steps:
        if "user" in step:
            if "image" in step:
                url = "data:image/png;base64," + base64.b64encode(step["image"]).decode()
                content: Any = [
                    {"type": "text", "text": step["user"]},
                    {"type": "image_url", "image_url": {"url": url, "detail": "low"}},
                ]
            else:
                content = step["user"]
            out.append({"role": "user", "content": content})
        elif "answer" in step:
            out.append({"role": "assistant", "content": step["answer"], "refusal": None})
        else:
            out.append(
                {
                    "role": "assistant",
                    "content": step["text"],
                    "refusal": None,
                    "tool_calls": [
                        {
                            "id": f"call_{cid}",
                            "type": "function",
                            "function": {"name": name, "arguments": _args(args)},
                        }
                        for cid, (name, args, _, _) in zip(step["ids"], step["calls"], strict=True)
                    ],
                }
            )
            for cid, (_, _, result, _failed) in zip(step["ids"], step["calls"], strict=True):
                # Chat Completions has no error flag: the error is in the text.
                out.append({"role": "tool", "tool_call_id": f"call_{cid}", "content": result})
    return out


def openai_responses(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rng = random.Random(7)
    out: list[dict[str, Any]] = [{"role": "developer", "content": SYSTEM}]

    def msg_id(prefix: str) -> str:
        return f"{prefix}_{rng.getrandbits(64):016x}"

    def assistant_text(text: str) -> dict[str, Any]:
        return {
            "id": msg_id("msg"),
            "type": "message",
            "status": "completed",
            "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}],
            "role": "assistant",
        }

    for step in steps:
        if "user" in step:
            if "image" in step:
                url = "data:image/png;base64," + base64.b64encode(step["image"]).decode()
                out.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "input_text", "text": step["user"]},
                            {"type": "input_image", "image_url": url, "detail": "low"},
                        ],
                    }
                )
            else:
                out.append({"role": "user", "content": step["user"]})
        elif "answer" in step:
            out.append(assistant_text(step["answer"]))
        else:
            if step["think"]:
                out.append(
                    {
                        "id": msg_id("rs"),
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": step["think"]}],
                        "encrypted_content": "gAAAAA" + _signature(rng),
                    }
                )
            if step["text"]:
                out.append(assistant_text(step["text"]))
            for cid, (name, args, _, _) in zip(step["ids"], step["calls"], strict=True):
                out.append(
                    {
                        "id": msg_id("fc"),
                        "type": "function_call",
                        "status": "completed",
                        "arguments": _args(args),
                        "call_id": f"call_{cid}",
                        "name": name,
                    }
                )
            for cid, (_, _, result, _) in zip(step["ids"], step["calls"], strict=True):
                out.append(
                    {"type": "function_call_output", "call_id": f"call_{cid}", "output": result}
                )
    return out


def anthropic(steps: list[dict[str, Any]]) -> dict[str, Any]:
    rng = random.Random(11)
    messages: list[dict[str, Any]] = []
    for step in steps:
        if "user" in step:
            if "image" in step:
                content: Any = [
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": base64.b64encode(step["image"]).decode(),
                        },
                    },
                    {"type": "text", "text": step["user"]},
                ]
            else:
                content = step["user"]
            messages.append({"role": "user", "content": content})
        elif "answer" in step:
            messages.append(
                {"role": "assistant", "content": [{"type": "text", "text": step["answer"]}]}
            )
        else:
            blocks: list[dict[str, Any]] = []
            if step["think"]:
                blocks.append(
                    {"type": "thinking", "thinking": step["think"], "signature": _signature(rng)}
                )
            if step["text"]:
                blocks.append({"type": "text", "text": step["text"]})
            for cid, (name, args, _, _) in zip(step["ids"], step["calls"], strict=True):
                blocks.append(
                    {"type": "tool_use", "id": f"toolu_{cid}", "name": name, "input": args}
                )
            messages.append({"role": "assistant", "content": blocks})
            results: list[dict[str, Any]] = []
            for cid, (_, _, result, failed) in zip(step["ids"], step["calls"], strict=True):
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": f"toolu_{cid}",
                    "content": result,
                }
                if failed:
                    block["is_error"] = True
                results.append(block)
            messages.append({"role": "user", "content": results})
    # Prompt caching: a breakpoint on the system prompt and on the newest message.
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    return {"system": system, "messages": messages}


def ctxtrim_lines(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """ctxtrim's own shape, written by hand (ids, turns and usage included)."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": [{"type": "text", "text": SYSTEM}], "id": "m0"}
    ]
    turn = 0
    used = 1200
    for step in steps:
        if "user" in step:
            turn += 1
            content: list[dict[str, Any]] = [{"type": "text", "text": step["user"]}]
            if "image" in step:
                content.append(
                    {
                        "type": "image",
                        "media_type": "image/png",
                        "data": base64.b64encode(step["image"]).decode(),
                    }
                )
            out.append(
                {"role": "user", "content": content, "id": f"m{len(out)}", "turn": f"u{turn}"}
            )
            continue
        blocks: list[dict[str, Any]] = []
        if step.get("think"):
            blocks.append(
                {"type": "reasoning", "text": step["think"], "signature": "sig-" + step["ids"][0]}
            )
        text = step.get("answer") or step.get("text")
        if text:
            blocks.append({"type": "text", "text": text})
        for cid, (name, args, _, _) in zip(step.get("ids", []), step.get("calls", []), strict=True):
            blocks.append({"type": "tool_use", "id": f"toolu_{cid}", "name": name, "input": args})
        used += 180 + 40 * len(blocks)
        out.append(
            {
                "role": "assistant",
                "content": blocks,
                "id": f"m{len(out)}",
                "turn": f"a{turn}",
                "usage": {
                    "input_tokens": used,
                    "output_tokens": 40 * len(blocks),
                    "cache_read_tokens": used - 400,
                    "model": "claude-sonnet-4-5",
                    "finish_reason": "tool_use" if "calls" in step else "end_turn",
                },
            }
        )
        if "calls" in step:
            results = []
            for cid, (_, _, result, failed) in zip(step["ids"], step["calls"], strict=True):
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": f"toolu_{cid}",
                    "content": result,
                }
                if failed:
                    block["is_error"] = True
                results.append(block)
            out.append(
                {"role": "user", "content": results, "id": f"m{len(out)}", "turn": f"u{turn}"}
            )
    return out


def main() -> None:
    steps = script()
    files = {
        "openai_chat.json": openai_chat(steps),
        "openai_responses.json": openai_responses(steps),
        "anthropic.json": anthropic(steps),
    }
    for name, data in files.items():
        (HERE / name).write_text(
            json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
    lines = [json.dumps(m, ensure_ascii=False) for m in ctxtrim_lines(steps)]
    (HERE / "ctxtrim.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
