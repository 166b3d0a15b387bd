"""The ``ctxtrim`` command line, run as a real subprocess on the example sessions and on bad
input: trimmed output is provider-valid, in the input's format, within budget; errors are one
line and exit code 2, never a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxtrim import HeuristicTokenCounter, Message, validate
from ctxtrim.formats import detect, load, parse_json, to_anthropic, to_openai_chat

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = ROOT / "examples" / "sessions"
FILES = {
    "openai": SESSIONS / "openai_chat.json",
    "responses": SESSIONS / "openai_responses.json",
    "anthropic": SESSIONS / "anthropic.json",
    "ctxtrim": SESSIONS / "ctxtrim.jsonl",
}


def run(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxtrim.cli", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        cwd=ROOT,
    )


def tokens(messages: list[Message]) -> int:
    counter = HeuristicTokenCounter()
    return sum(counter.count_message(m) for m in messages)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("ctxtrim: error: ")
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


# --------------------------------------------------------------------------------------------
# trim


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_trim_each_example_session(fmt: str) -> None:
    source = FILES[fmt]
    original = load(source.read_text(encoding="utf-8"))
    budget = 3000
    assert tokens(original) > budget  # the session really needs trimming
    proc = run("trim", source, "--max-tokens", budget)
    assert proc.returncode == 0, proc.stderr
    data, jsonl = parse_json(proc.stdout)
    assert jsonl == (fmt == "ctxtrim")  # JSON Lines in, JSON Lines out
    assert detect(data) == fmt
    trimmed = load(data, fmt)
    assert validate(trimmed) == []
    assert len(trimmed) < len(original)
    assert tokens(trimmed) <= budget
    # The system prompt and the task survive; the kept tail is the newest messages.
    assert trimmed[0] == original[0] and trimmed[0].role == "system"
    assert trimmed[1] == original[1] and trimmed[1].is_real_user
    assert trimmed[-1] == original[-1]
    dropped = len(original) - len(trimmed)
    report = proc.stderr.strip()
    assert f"kept {len(trimmed)} of {len(original)} messages" in report
    assert f"dropped {dropped} message(s)" in report
    assert f"-> ~{tokens(trimmed):,} tokens" in report
    assert "within budget" in report


def test_trim_writes_to_a_file_and_reads_stdin(tmp_path: Path) -> None:
    out = tmp_path / "trimmed.json"
    text = FILES["openai"].read_text(encoding="utf-8")
    proc = run("trim", "-", "--max-tokens", "2500", "-o", out, stdin=text)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    trimmed = json.loads(out.read_text(encoding="utf-8"))
    assert trimmed[0]["role"] == "system" and isinstance(trimmed, list)
    assert validate(load(trimmed, "openai")) == []


def test_trim_keeps_a_request_body_and_its_other_keys(tmp_path: Path) -> None:
    body: dict[str, Any] = json.loads(FILES["anthropic"].read_text(encoding="utf-8"))
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, **body, "tools": []}
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    proc = run("trim", path, "--max-tokens", "2000")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert list(out) == ["model", "max_tokens", "system", "messages", "tools"]
    assert out["system"] == body["system"] and out["tools"] == []
    assert len(out["messages"]) < len(body["messages"])
    # A bare list of Anthropic messages stays a bare list.
    path.write_text(json.dumps(body["messages"]), encoding="utf-8")
    proc = run("trim", path, "--max-tokens", "2000", "--format", "anthropic")
    assert proc.returncode == 0, proc.stderr
    assert isinstance(json.loads(proc.stdout), list)


def test_trim_keep_turns_and_truncate_tool_outputs() -> None:
    original = load(FILES["anthropic"].read_text(encoding="utf-8"))
    proc = run("trim", FILES["anthropic"], "--max-tokens", "100000", "--keep-turns", "1")
    assert proc.returncode == 0, proc.stderr
    trimmed = load(json.loads(proc.stdout), "anthropic")
    users = [m for m in trimmed if m.is_real_user]
    # The task (pinned) and the last user turn; the middle turn is gone.
    assert [m.text for m in users] == [
        original[1].text,
        [m for m in original if m.is_real_user][-1].text,
    ]
    assert "dropped" in proc.stderr and "and 1 user turn(s)" in proc.stderr
    assert validate(trimmed) == []

    proc = run(
        "trim", FILES["anthropic"], "--max-tokens", "100000", "--truncate-tool-outputs", "200"
    )
    assert proc.returncode == 0, proc.stderr
    clipped = load(json.loads(proc.stdout), "anthropic")
    assert len(clipped) == len(original)
    longest = max(len(str(r.content)) for m in clipped for r in m.tool_results)
    assert longest < 300
    assert "clipped 1 tool output(s)" in proc.stderr


def test_trim_over_budget_keeps_the_minimum_and_says_so() -> None:
    proc = run("trim", FILES["responses"], "--max-tokens", "50")
    assert proc.returncode == 0, proc.stderr
    trimmed = load(json.loads(proc.stdout), "responses")
    assert validate(trimmed) == []
    assert trimmed[0].role == "system" and trimmed[1].is_real_user
    assert "OVER BUDGET" in proc.stderr


BROKEN = [
    {"role": "system", "content": "Be terse."},
    {"role": "user", "content": "List the files."},
    {"role": "tool", "tool_call_id": "call_gone", "content": "orphaned result"},
    {"role": "assistant", "content": "Done."},
]


def test_trim_refuses_broken_pairs_unless_repair(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(BROKEN), encoding="utf-8")
    proc = run("trim", path, "--max-tokens", "4000")
    assert_one_line_error(proc, "messages[2]", "--repair")
    proc = run("trim", path, "--max-tokens", "4000", "--repair")
    assert proc.returncode == 0, proc.stderr
    repaired = load(json.loads(proc.stdout), "openai")
    assert validate(repaired) == []
    assert all(m.tool_results == () for m in repaired)


# --------------------------------------------------------------------------------------------
# stats and validate


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_stats(fmt: str) -> None:
    messages = load(FILES[fmt].read_text(encoding="utf-8"))
    proc = run("stats", FILES[fmt], "--json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["format"] == fmt
    assert s["messages"] == len(messages) >= 40
    assert s["turns"] == sum(m.is_real_user for m in messages) == 3
    calls = sum(len(m.tool_uses) for m in messages)
    assert s["tool_calls"] == s["tool_pairs"] == calls > 20
    assert s["tokens"] == tokens(messages) == sum(s["tokens_by_role"].values())
    assert s["tokens_by_role"]["tool"] > s["tokens_by_role"]["system"] > 0
    assert s["violations"] == 0
    text = run("stats", FILES[fmt])
    assert text.returncode == 0
    assert f"messages     {len(messages)}" in text.stdout
    assert "tool results" in text.stdout


def test_validate_valid_and_broken(tmp_path: Path) -> None:
    proc = run("validate", FILES["ctxtrim"])
    assert proc.returncode == 0 and proc.stdout.startswith("ok: ")

    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in BROKEN) + "\n", encoding="utf-8")
    proc = run("validate", path)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith("messages[2]: orphan_result: ")
    assert "1 violation(s)" in proc.stderr

    out = tmp_path / "fixed.jsonl"
    proc = run("validate", path, "--repair", "-o", out)
    assert proc.returncode == 0, proc.stderr
    fixed, jsonl = parse_json(out.read_text(encoding="utf-8"))
    assert jsonl
    assert validate(load(fixed, "openai")) == []
    assert run("validate", out).returncode == 0


def test_validate_finds_a_dangling_call_in_anthropic(tmp_path: Path) -> None:
    messages = [
        Message.user("go"),
        Message.assistant("calling", tool_uses=[("toolu_1", "ls", {})]),
        Message.user("why no result?"),
    ]
    path = tmp_path / "dangling.json"
    path.write_text(json.dumps(to_anthropic(messages)), encoding="utf-8")
    proc = run("validate", path)
    assert proc.returncode == 1
    assert "dangling_call" in proc.stdout and "toolu_1" in proc.stdout


# --------------------------------------------------------------------------------------------
# Bad input: one line, exit 2


@pytest.mark.parametrize(
    ("content", "args", "needles"),
    [
        ("this is not json", ["trim", "--max-tokens", "100"], ["not JSON"]),
        ('{"a": 1}\n{"b": \n', ["stats"], ["line 2"]),
        ('{"model": "x"}', ["stats"], ["cannot detect the format"]),
        (
            json.dumps([{"role": "assistant", "tool_calls": [{"function": {"name": "x"}}]}]),
            ["trim", "--max-tokens", "100"],
            ["messages[0].tool_calls[0].id"],
        ),
        (
            json.dumps(
                to_openai_chat(
                    [
                        Message.user("hi"),
                        Message.assistant(tool_uses=[("c1", "ls", {})]),
                        Message.tool_results(("c1", "a.txt")),
                    ]
                )
            ),
            ["validate", "--format", "responses"],
            ["--format responses"],
        ),
        (json.dumps(BROKEN), ["validate", "-o", "x.json"], ["--repair"]),
        ("[]", ["trim", "--max-tokens", "0"], ["--max-tokens", "at least 1"]),
        ("[]", ["trim", "--max-tokens", "-5"], ["--max-tokens"]),
        ("[]", ["trim", "--max-tokens", "lots"], ["--max-tokens", "'lots'"]),
        ("[]", ["trim"], ["--max-tokens"]),
        ("[]", ["trim", "--max-tokens", "10", "--format", "gemini"], ["gemini"]),
        ("[]", ["trim", "--max-tokens", "10", "--reserve-tokens", "10"], ["--reserve-tokens"]),
        ("[]", ["frobnicate"], ["frobnicate"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, content: str, args: list[str], needles: list[str]
) -> None:
    path = tmp_path / "input.json"
    path.write_text(content, encoding="utf-8")
    command, *rest = args
    argv = [command, path, *rest] if command != "frobnicate" else [command]
    assert_one_line_error(run(*argv), *needles)


def test_missing_file_directory_and_unwritable_output(tmp_path: Path) -> None:
    assert_one_line_error(run("stats", tmp_path / "nope.json"), "nope.json")
    assert_one_line_error(run("stats", tmp_path), "cannot read")
    proc = run("trim", FILES["openai"], "--max-tokens", "2000", "-o", tmp_path / "no" / "x.json")
    assert_one_line_error(proc, "cannot write")


def test_version_and_help() -> None:
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("ctxtrim ")
    proc = run("trim", "--help")
    assert proc.returncode == 0 and "--truncate-tool-outputs" in proc.stdout


def test_the_console_script() -> None:
    script = Path(sys.executable).parent / "ctxtrim"
    if not script.exists():
        script_path = shutil.which("ctxtrim")
        if script_path is None:
            pytest.skip(
                "the ctxtrim console script is not installed in this environment (an editable "
                "install made before [project.scripts] existed); `pip install .` installs it"
            )
        script = Path(script_path)
    proc = subprocess.run(
        [str(script), "stats", str(FILES["openai"]), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["format"] == "openai"


def test_the_readme_setup_command_trims_an_example_session(tmp_path: Path) -> None:
    """The README's first set-up line installs, runs the quickstart (tests/test_readme.py),
    then runs `ctxtrim trim` on an example session; run that part as written (output
    redirected to tmp_path)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme[readme.index("## Set up") :]
    block = setup[setup.index("```bash\n") + len("```bash\n") :]
    first = block.splitlines()[0]
    install, *_, command = first.split(" && ")
    assert "pip install" in install and command.startswith("ctxtrim trim examples/sessions/")
    args = command.split("#")[0].split()[1:]
    out = tmp_path / "trimmed.json"
    args[args.index("-o") + 1] = str(out)
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    assert "within budget" in proc.stderr
    trimmed = load(out.read_text(encoding="utf-8"))
    assert validate(trimmed) == [] and trimmed[0].role == "system"


def test_a_one_line_json_lines_file_stays_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(Message.user("你好 👋").to_dict()) + "\n", encoding="utf-8")
    proc = run("trim", path, "--max-tokens", "100", "--format", "ctxtrim")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1
    assert load(proc.stdout, "ctxtrim") == [Message.user("你好 👋")]


def test_bench_subcommand_runs_the_side_by_side_table() -> None:
    """`ctxtrim bench` is wired to ctxtrim.bench (smoke mode keeps it to a few seconds)."""
    out = subprocess.run(
        [sys.executable, "-m", "ctxtrim.cli", "bench", "--smoke", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "| workload |" in out.stdout and "ctxtrim MessageLog.append" in out.stdout
    helped = subprocess.run(
        [sys.executable, "-m", "ctxtrim.cli", "--help"], capture_output=True, text=True
    )
    assert "bench" in helped.stdout
