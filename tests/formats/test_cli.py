"""The ``ctxtrim`` command line, run as a real subprocess on the example sessions and on bad
input: trimmed output is provider-valid, in the input's format, within budget; errors are one
line and exit code 2, never a traceback."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxtrim import HeuristicTokenCounter, Message, validate
from ctxtrim.formats import (
    detect,
    load,
    parse_json,
    to_anthropic,
    to_openai_chat,
    to_openai_responses,
)
from ctxtrim.strategies import TRUNCATION_MARKER, TruncateToolOutputs

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "examples" / "sessions"
FILES = {
    "openai": SESSIONS / "openai_chat.json",
    "responses": SESSIONS / "openai_responses.json",
    "anthropic": SESSIONS / "anthropic.json",
    "ctxtrim": SESSIONS / "ctxtrim.jsonl",
}


def run(*args: object, stdin: str | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    if "stdout" not in kwargs:
        kwargs["stdout"] = subprocess.PIPE
    return subprocess.run(
        [sys.executable, "-m", "ctxtrim.cli", *map(str, args)],
        input=stdin,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        timeout=60,
        cwd=ROOT,
        **kwargs,
    )


def tokens(messages: list[Message]) -> int:
    counter = HeuristicTokenCounter()
    return sum(counter.count_message(m) for m in messages)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert not proc.stdout
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
    # One message holds both long results: two tool outputs were clipped (not "1 message").
    assert "clipped 2 tool output(s)" in proc.stderr


def test_trim_over_budget_keeps_the_minimum_and_says_so() -> None:
    proc = run("trim", FILES["responses"], "--max-tokens", "50")
    assert proc.returncode == 3, proc.stderr  # written all the same, but a script can tell
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
        ("[]", ["trim", "--max-tokens", "9" * 30], ["--max-tokens", "at most", "64-bit"]),
        ("[]", ["trim", "--max-tokens", "1e30"], ["--max-tokens", "whole number", "'1e30'"]),
        ("[]", ["trim", "--max-tokens", str(2**64)], ["--max-tokens", str(2**63 - 1)]),
        ("[]", ["trim", "--max-tokens", "9", "--keep-turns", "9" * 25], ["--keep-turns"]),
        ("[]", ["trim", "--max-tokens", "9", "--reserve-tokens", "-1"], ["--reserve-tokens"]),
        ("[]", ["trim", "--max-tokens", "lots"], ["--max-tokens", "'lots'"]),
        ("[]", ["trim"], ["--max-tokens"]),
        ("[]", ["trim", "--max-tokens", "10", "--format", "mistral"], ["mistral"]),
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
    """The README's first set-up line installs, runs the quickstart (tests/project/test_readme.py),
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
    """`ctxtrim bench` is wired to ctxtrim.bench (smoke mode keeps it to a few seconds); its
    output names no outside document and no machine-specific path, and without a Python 3.12
    interpreter configured the axio rows say how to give one."""
    env = {k: v for k, v in os.environ.items() if k != "CTXTRIM_BENCH_PY312"}
    out = subprocess.run(
        [sys.executable, "-m", "ctxtrim.cli", "bench", "--smoke", "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "| workload |" in out.stdout and "ctxtrim MessageLog.append" in out.stdout
    assert "| goal | measured | met |" in out.stdout
    assert "DESIGN" not in out.stdout + out.stderr and "/tmp" not in out.stdout + out.stderr
    assert (
        "skipped axio MemoryContextStore.fork(): axio needs Python >= 3.12: pass --python312"
        in (out.stderr)
    )
    assert all(line.startswith("ctxtrim bench: ") for line in out.stderr.splitlines())
    helped = subprocess.run(
        [sys.executable, "-m", "ctxtrim.cli", "--help"], capture_output=True, text=True
    )
    assert "bench" in helped.stdout


def test_bench_python312_is_an_option() -> None:
    from ctxtrim import bench
    from ctxtrim.bench import axio
    from ctxtrim.bench.timing import Progress

    rows: list[bench.Row] = []
    axio.bench_axio(bench.SMOKE, rows, Progress(1, enabled=False), "/no/python3.12")
    assert rows and all(r.skipped for r in rows)
    assert all("no interpreter at /no/python3.12" in r.note for r in rows)
    proc = subprocess.run(
        [sys.executable, "-m", "ctxtrim.bench", "--help"], capture_output=True, text=True
    )
    assert "--python312" in proc.stdout and "CTXTRIM_BENCH_PY312" in proc.stdout


def test_bench_quick_measures_what_goals_are_checked_on_as_a_full_run_does() -> None:
    """A quick run takes fewer samples of the agent loops only; per-turn flatness, append,
    get_history, the token estimate (and its corpus) and SQLite flatness are measured as in a
    full run, so a quick run does not report those goals unmet for want of samples."""
    from ctxtrim import bench

    assert bench.QUICK.loop_samples < bench.FULL.loop_samples
    assert dataclasses.replace(bench.QUICK, loop_samples=bench.FULL.loop_samples) == bench.FULL


# --------------------------------------------------------------------------------------------
# Exit codes and --json reports


def entry_count(payload: Any) -> int:
    if isinstance(payload, dict):
        payload = payload.get("input", payload.get("messages"))
    assert isinstance(payload, list)
    return len(payload)


def test_help_documents_the_exit_codes() -> None:
    for args in ([], ["trim"], ["validate"]):
        proc = run(*args, "--help")
        assert proc.returncode == 0
        text = " ".join(proc.stdout.split())
        assert "exit codes:" in text
        assert "3 trim: over budget" in text and "1 validate: violations found" in text


@pytest.mark.parametrize("fmt", ["openai", "responses"])
def test_trim_json_report_matches_what_was_written(tmp_path: Path, fmt: str) -> None:
    source = FILES[fmt]
    original = load(source.read_text(encoding="utf-8"))
    out = tmp_path / "out.json"
    proc = run("trim", source, "--max-tokens", "3000", "--json", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    report = json.loads(proc.stdout)
    written = json.loads(out.read_text(encoding="utf-8"))
    trimmed = load(written, fmt)
    assert report["format"] == fmt and report["format_detected"] is True
    assert report["messages_before"] == len(original)
    assert report["messages_after"] == len(trimmed)
    assert report["dropped_messages"] == len(original) - len(trimmed)
    assert report["entries_before"] == entry_count(json.loads(source.read_text("utf-8")))
    assert report["entries_after"] == entry_count(written) < report["entries_before"]
    assert report["dropped_entries"] == report["entries_before"] - report["entries_after"]
    assert report["tokens_before"] == tokens(original)
    assert report["tokens_after"] == tokens(trimmed) <= 3000
    assert report["budget"] == 3000 and report["over_budget"] is False
    assert report["clipped_tool_outputs"] == 0 and report["violations"] == []
    assert report["written"] is True and report["exit_code"] == 0

    proc = run("trim", source, "--max-tokens", "40", "--json", "-o", out)
    assert proc.returncode == 3
    report = json.loads(proc.stdout)
    assert report["over_budget"] is True and report["exit_code"] == 3
    assert report["tokens_after"] > 40


def test_json_reports_need_an_output_file_for_the_conversation() -> None:
    assert_one_line_error(run("trim", FILES["openai"], "--max-tokens", "99", "--json"), "-o")
    assert_one_line_error(run("validate", FILES["openai"], "--repair", "--json"), "-o")


def test_validate_json(tmp_path: Path) -> None:
    proc = run("validate", FILES["anthropic"], "--json")
    assert proc.returncode == 0
    report = json.loads(proc.stdout)
    assert report["ok"] is True and report["violations"] == []
    assert report["entries"] == 42 and report["messages"] == 43
    assert report["format"] == "anthropic" and report["exit_code"] == 0

    path = tmp_path / "broken.json"
    path.write_text(json.dumps(BROKEN), encoding="utf-8")
    proc = run("validate", path, "--json")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["ok"] is False and report["exit_code"] == 1
    [violation] = report["violations"]
    assert violation["path"] == "messages[2]" and violation["entry"] == 2
    assert violation["kind"] == "orphan_result" and "call_gone" in violation["description"]

    out = tmp_path / "fixed.json"
    proc = run("validate", path, "--repair", "-o", out, "--json")
    assert proc.returncode == 0
    report = json.loads(proc.stdout)
    assert report["repaired"] == 1 and report["written"] is True
    assert validate(load(out.read_text(encoding="utf-8"), "openai")) == []


# --------------------------------------------------------------------------------------------
# Counts in the input's own entries; violations located by entry


def test_counts_are_given_in_entries_as_well_as_messages(tmp_path: Path) -> None:
    for fmt, n in (("openai", 61), ("responses", 96), ("anthropic", 42)):
        s = json.loads(run("stats", FILES[fmt], "--json").stdout)
        assert s["entries"] == n and s["messages"] == 43
        assert f"entries      {n}" in run("stats", FILES[fmt]).stdout
    out = tmp_path / "out.json"
    proc = run("trim", FILES["openai"], "--max-tokens", "3000", "-o", out)
    written = json.loads(out.read_text(encoding="utf-8"))
    assert f"= {len(written)} of 61 entries (openai format, detected)" in proc.stderr


def test_violations_name_the_entry_not_the_merged_message(tmp_path: Path) -> None:
    # Two tool messages are one ctxtrim message: the orphan is entry 5, message 4.
    entries = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call_json("c1"), call_json("c2")]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        {"role": "user", "content": "and?"},
        {"role": "tool", "tool_call_id": "gone", "content": "orphan"},
    ]
    path = tmp_path / "v.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    assert len(load(entries, "openai")) == 5
    proc = run("validate", path)
    assert proc.returncode == 1
    assert proc.stdout.startswith("messages[5]: orphan_result: ")
    report = json.loads(run("validate", path, "--json").stdout)
    assert [(v["entry"], v["message"]) for v in report["violations"]] == [(5, 4)]


def call_json(call_id: str, arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "ls", "arguments": arguments}}


# --------------------------------------------------------------------------------------------
# The detected format is named; stderr lines carry the prefix; -V


def test_an_error_after_detection_names_the_detected_format(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text('{"role":"user","content":"x","meta":{}}', encoding="utf-8")
    proc = run("stats", path)
    assert_one_line_error(proc, "messages[0].content", "detected as ctxtrim format", "--format")
    path.write_text(json.dumps(BROKEN), encoding="utf-8")
    assert_one_line_error(run("trim", path, "--max-tokens", "99"), "openai format, detected")


def test_every_stderr_line_has_the_prefix(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(BROKEN + BROKEN[2:3]), encoding="utf-8")
    for args in (
        ["validate", path],
        ["validate", path, "--repair", "-o", tmp_path / "fixed.json"],
        ["trim", path, "--max-tokens", "1000", "--repair", "-o", tmp_path / "t.json"],
        ["trim", FILES["openai"], "--max-tokens", "40", "-o", tmp_path / "t.json"],
    ):
        proc = run(*args)
        lines = proc.stderr.splitlines()
        assert len(lines) >= 1
        assert all(line.startswith("ctxtrim: ") for line in lines), proc.stderr


def test_dash_capital_v_is_version() -> None:
    proc = run("-V")
    assert proc.returncode == 0 and proc.stdout == run("--version").stdout
    assert proc.stdout.startswith("ctxtrim ")


# --------------------------------------------------------------------------------------------
# Byte order mark, deep nesting, a full disk


def test_a_byte_order_mark_is_accepted_on_a_file_and_on_stdin(tmp_path: Path) -> None:
    text = FILES["openai"].read_text(encoding="utf-8")
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    proc = run("stats", path, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["entries"] == 61
    proc = run("trim", "-", "--max-tokens", "3000", stdin="\ufeff" + text)
    assert proc.returncode == 0, proc.stderr
    assert not proc.stdout.startswith("\ufeff")
    assert validate(load(proc.stdout, "openai")) == []


def test_deeply_nested_json_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    proc = run("stats", path)
    assert_one_line_error(proc, "nested too deeply")
    assert "internal error" not in proc.stderr


def test_a_full_disk_is_a_user_error(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        proc = run("trim", FILES["anthropic"], "--max-tokens", "3000", stdout=full)
    assert_one_line_error(proc, "cannot write to stdout", "No space left on device")
    proc = run("trim", FILES["anthropic"], "--max-tokens", "3000", "-o", "/dev/full")
    assert_one_line_error(proc, "cannot write /dev/full", "No space left on device")


# --------------------------------------------------------------------------------------------
# Atomic output; an unchanged result is not rewritten


def test_output_may_name_the_input_file(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    shutil.copy(FILES["responses"], path)
    path.chmod(0o640)
    proc = run("trim", path, "--max-tokens", "3000", "-o", path)
    assert proc.returncode == 0, proc.stderr
    trimmed = load(path.read_text(encoding="utf-8"), "responses")
    assert validate(trimmed) == [] and tokens(trimmed) <= 3000
    assert [p.name for p in tmp_path.iterdir()] == ["session.json"]  # no temporary left
    assert path.stat().st_mode & 0o777 == 0o640  # the file's permissions are kept


def _limit_file_size() -> None:  # runs in the child: writes past 2,000 bytes fail (EFBIG)
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
def test_a_failed_write_leaves_the_existing_output_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text("previous result\n", encoding="utf-8")
    proc = run(
        "trim", FILES["openai"], "--max-tokens", "3000", "-o", out, preexec_fn=_limit_file_size
    )
    assert_one_line_error(proc, f"cannot write {out}", "File too large")
    assert out.read_text(encoding="utf-8") == "previous result\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_nothing_to_repair_leaves_the_file_untouched(tmp_path: Path) -> None:
    # Keys in an order the converter would not write back: a rewrite would show.
    text = json.dumps([{"content": "hi", "role": "user"}, {"content": "yo", "role": "assistant"}])
    path = tmp_path / "ok.json"
    path.write_text(text, encoding="utf-8")
    before = path.stat().st_mtime_ns
    proc = run("validate", path, "--repair", "-o", path)
    assert proc.returncode == 0, proc.stderr
    assert path.read_text(encoding="utf-8") == text and path.stat().st_mtime_ns == before
    assert "left as it was" in proc.stderr
    proc = run("trim", path, "--max-tokens", "1000", "-o", path)
    assert proc.returncode == 0 and path.read_text(encoding="utf-8") == text
    # To another file or stdout, the input comes out byte for byte.
    assert run("validate", path, "--repair").stdout == text
    assert run("trim", path, "--max-tokens", "1000").stdout == text


# --------------------------------------------------------------------------------------------
# Tool calls whose arguments are not JSON


def cut_off_session(fmt: str, directory: Path) -> tuple[Path, str]:
    """An agent session whose first and last tool calls were cut off mid-arguments."""
    messages = [Message.system("Be terse."), Message.user("List the files.")]
    for i in range(30):
        messages.append(Message.assistant("x" * 60, tool_uses=[(f"c{i}", "ls", {"p": i})]))
        messages.append(Message.tool_results((f"c{i}", "y" * 300)))
    messages.append(Message.assistant("Done."))
    cut = '{"path": "/tmp/a'
    if fmt == "openai":
        data: list[dict[str, Any]] = to_openai_chat(messages)
        for item in data:
            for call in item.get("tool_calls") or []:
                if call["id"] in ("c0", "c29"):
                    call["function"]["arguments"] = cut
    else:
        data = to_openai_responses(messages)
        for item in data:
            if item.get("call_id") in ("c0", "c29") and item["type"] == "function_call":
                item["arguments"] = cut
    path = directory / f"cut_{fmt}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path, cut


@pytest.mark.parametrize("fmt", ["openai", "responses"])
def test_arguments_that_are_not_json_have_a_way_through(fmt: str, tmp_path: Path) -> None:
    path, cut = cut_off_session(fmt, tmp_path)
    where = (
        "messages[2].tool_calls[0].function.arguments" if fmt == "openai" else "input[3].arguments"
    )
    # trim refuses, naming the call and --repair
    assert_one_line_error(run("trim", path, "--max-tokens", "900"), where, "--repair")
    # stats counts it
    s = json.loads(run("stats", path, "--json").stdout)
    assert s["invalid_arguments"] == 2 and s["tool_pairs"] == 30
    # validate lists both (exit 1)
    proc = run("validate", path)
    assert proc.returncode == 1
    assert proc.stdout.count("invalid_arguments") == 2 and where in proc.stdout
    # trim --repair keeps the raw text, and the newest cut-off call still pairs with its result
    out = tmp_path / "out.json"
    proc = run("trim", path, "--max-tokens", "900", "--repair", "-o", out)
    assert proc.returncode == 0, proc.stderr
    written = json.loads(out.read_text(encoding="utf-8"))
    assert out.read_text(encoding="utf-8").count(json.dumps(cut)) == 1  # c0 was trimmed away
    kept = load(written, fmt, raw_arguments=True)
    assert validate(kept) == []
    assert any(u.id == "c29" for m in kept for u in m.tool_uses)
    assert any(r.tool_use_id == "c29" for m in kept for r in m.tool_results)
    # validate --repair writes the file as it was (nothing to repair) and exits 0
    proc = run("validate", path, "--repair", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == path.read_bytes()
    assert "kept the arguments of 2 tool call(s) as raw text" in proc.stderr


def test_raw_arguments_survive_a_round_trip_through_the_converters() -> None:
    from ctxtrim.formats import RAW_ARGUMENTS, InvalidToolArguments

    chat: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call_json("c1", '{"a": [1,')]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]
    with pytest.raises(InvalidToolArguments, match=r"tool_calls\[0\]\.function\.arguments"):
        load(chat, "openai")
    messages = load(chat, "openai", raw_arguments=True)
    assert messages[1].tool_uses[0].input == {RAW_ARGUMENTS: '{"a": [1,'}
    assert to_openai_chat(messages) == chat
    assert validate(messages) == []
    # Valid arguments that merely use the key are ordinary arguments.
    ok = [*chat[:1], {**chat[1], "tool_calls": [call_json("c1", '{"ctxtrim_raw_arguments":"{}"}')]}]
    assert to_openai_chat(load(ok, "openai")) == ok


# --------------------------------------------------------------------------------------------
# --truncate-tool-outputs


def test_clipping_never_makes_a_tool_output_longer() -> None:
    for length in range(1, 120):
        text = "z" * length
        history = [
            Message.user("task"),
            Message.assistant(tool_uses=[("t1", "ls", {})]),
            Message.tool_results(("t1", text)),
        ]
        out = TruncateToolOutputs(50)(history)
        content = out[2].tool_results[0].content
        assert isinstance(content, str)
        assert len(content) <= length
        assert len(content) <= 50 + len(TRUNCATION_MARKER)
        if length > 50 + len(TRUNCATION_MARKER):
            assert content == "z" * 50 + TRUNCATION_MARKER
        else:
            assert out is history  # nothing to gain: left as it is


def outputs_session(path: Path, lengths: list[int]) -> list[Message]:
    """Three user turns of six rounds; each round calls two tools at once (36 tool outputs
    in 18 messages), whose output lengths cycle through ``lengths``."""
    messages = [Message.system("Be terse.")]
    k = 0
    for turn in range(3):
        messages.append(Message.user(f"turn {turn}"))
        for _ in range(6):
            ids = [f"c{k}", f"c{k + 1}"]
            messages.append(Message.assistant(tool_uses=[(i, "ls", {}) for i in ids]))
            messages.append(
                Message.tool_results(
                    *[(i, "w" * lengths[(k + j) % len(lengths)]) for j, i in enumerate(ids)]
                )
            )
            k += 2
        messages.append(Message.assistant("ok"))
    path.write_text(json.dumps(to_openai_chat(messages)), encoding="utf-8")
    return messages


def test_truncate_tool_outputs_from_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    # outputs a little over the limit: clipping would only add the marker
    messages = outputs_session(path, [51, 52, 53, 54, 55, 60])
    proc = run("trim", path, "--max-tokens", "100000", "--truncate-tool-outputs", "50")
    assert proc.returncode == 0, proc.stderr
    assert load(proc.stdout, "openai") == messages
    assert "clipped 0 tool output(s)" in proc.stderr

    messages = outputs_session(path, [400])
    assert sum(len(m.tool_results) for m in messages) == 36
    proc = run("trim", path, "--max-tokens", "100000", "--truncate-tool-outputs", "50")
    out = load(proc.stdout, "openai")
    turn3 = max(i for i, m in enumerate(out) if m.is_real_user)
    # older turns clipped, every output counted; the newest turn's results left whole
    assert "clipped 24 tool output(s)" in proc.stderr
    assert all(len(r.content) == 64 for m in out[:turn3] for r in m.tool_results)
    assert all(len(r.content) == 400 for m in out[turn3:] for r in m.tool_results)
    proc = run(
        "trim",
        path,
        "--max-tokens",
        "100000",
        "--truncate-tool-outputs",
        "50",
        "--truncate-recent-turns",
        "0",
        "--json",
        "-o",
        tmp_path / "o.json",
    )
    assert json.loads(proc.stdout)["clipped_tool_outputs"] == 36
