# ruff: noqa: RUF001, RUF002, RUF003  (the goals print ×)
"""The performance goals of docs/performance.md, checked against a run's rows.

Each goal is a :class:`~ctxtrim.bench.report.Goal` ``(goal, measured, met)``; ``met`` is
None when the run could not measure it (a peer not installed). The bars:

- user paths: a server turn ≥ 50× LangChain's and cheaper than ``json.dumps`` of the
  window, at every size; flat within 1.5× from the smallest size to the largest (memory
  and SQLite); the plain list ≥ 50× agentix and flat within 2×; ``Message`` construction
  no slower than agentix's; each provider conversion, per message, within 2× of
  ``json.loads`` / ``json.dumps`` of the payload (also on first rendering).
- agent loop: ≥ 50× agentix ``FitContextWindow`` and ≥ 200× LangChain ``trim_messages``;
  per-turn cost flat (≤ 1.5×) from the smallest to the largest history.
- fork ≥ 1000× axio's deep-copy fork; append within 3× of ``list.append``;
  ``get_history()`` within 1.5× of a list copy.
- token estimate ≥ 10× LangChain's ``count_tokens_approximately`` and ≤ 15 % mean error
  on every corpus.
- SQLite append flat (±30 %) from 100 to 10 000 messages, and at least
  axio-context-sqlite's rate.
"""

from __future__ import annotations

from .loops import CtxtrimLog
from .report import (
    APPEND,
    CONSTRUCT,
    CONVERT,
    ESTIMATE,
    FORK,
    GET_HISTORY,
    LOOP,
    PLAIN_LIST,
    SEED_LOOP,
    SERVER_TURN,
    SQLITE_APPEND,
    SQLITE_TURN,
    Goal,
    Table,
    fmt_ratio,
    fmt_time,
)

__all__ = ["goals"]


def goals(table: Table) -> list[Goal]:
    """Every goal, checked against ``table`` (sorted by name)."""
    return sorted(_path_goals(table) + _other_goals(table), key=lambda g: g.goal)


def _path_goals(table: Table) -> list[Goal]:
    """The user-path goals."""
    out: list[Goal] = []

    def seconds(workload: str, size: str, impl: str) -> float | None:
        row = table.find(workload, size, impl)
        return None if row is None else row.seconds

    def at_least(label: str, ours: float | None, theirs: float | None, want: float) -> None:
        if ours is None or theirs is None:
            out.append(Goal(label, "not measured", None))
        else:
            out.append(Goal(label, f"{theirs / ours:,.1f}×", theirs / ours >= want))

    def flat(label: str, workload: str, impl: str, limit: float) -> None:
        points = [
            (int(r.size.split()[0].replace(",", "")), r.seconds)
            for r in table.rows
            if r.workload == workload and r.impl == impl and r.seconds
        ]
        if len(points) >= 2:
            points.sort()
            growth = points[-1][1] / points[0][1]
            out.append(
                Goal(
                    f"{label}: flat within {limit}× from {points[0][0]:,} to {points[-1][0]:,}",
                    f"{fmt_time(points[0][1])} → {fmt_time(points[-1][1])} ({growth:.2f}×)",
                    growth <= limit,
                )
            )

    sizes = sorted({r.size for r in table.rows if r.workload == SERVER_TURN}, key=len)
    ours_turn = "ctxtrim MemoryContextStore"
    for size in sizes:
        ours = seconds(SERVER_TURN, size, ours_turn)
        lc = seconds(SERVER_TURN, size, "LangChain (convert, trim_messages, convert back)")
        at_least(f"server turn {size}: ≥ 50× LangChain", ours, lc, 50)
        dumps = seconds(SERVER_TURN, size, "json.dumps of the window (scale)")
        if ours is not None and dumps is not None:
            out.append(
                Goal(
                    f"server turn {size}: cheaper than json.dumps of the window",
                    f"{fmt_time(ours)} vs {fmt_time(dumps)}",
                    ours < dumps,
                )
            )
        at_least(
            f"plain list {size}: ≥ 50× agentix",
            seconds(PLAIN_LIST, size, "ctxtrim FitContextWindow on a list"),
            seconds(PLAIN_LIST, size, "agentix FitContextWindow"),
            50,
        )
        at_least(
            f"agent loop as the seeds write it {size}: ≥ 50× agentix",
            seconds(SEED_LOOP, size, "ctxtrim MemoryContextStore"),
            seconds(SEED_LOOP, size, "agentix FitContextWindow"),
            50,
        )
    flat("server turn", SERVER_TURN, ours_turn, 1.5)
    flat("server turn on SQLite", SQLITE_TURN, "ctxtrim SQLiteContextStore", 1.5)
    flat("plain list", PLAIN_LIST, "ctxtrim FitContextWindow on a list", 2.0)
    flat("agent loop as the seeds write it", SEED_LOOP, "ctxtrim MemoryContextStore", 2.0)
    ours = seconds(CONSTRUCT, "4 messages", "ctxtrim Message")
    theirs = seconds(CONSTRUCT, "4 messages", "agentix Message")
    if ours is not None and theirs is not None:
        out.append(
            Goal(
                "Message construction ≤ agentix",
                f"{fmt_time(ours)} vs {fmt_time(theirs)}",
                ours <= theirs,
            )
        )
    for name in ("OpenAI Chat", "OpenAI Responses", "Anthropic", "Gemini"):
        for side, ours_impl, json_impl in (
            ("from", "ctxtrim from_*", "json.loads of the payload"),
            ("to", "ctxtrim to_*, kept renderings", "json.dumps of the payload"),
            ("to", "ctxtrim to_*, first rendering", "json.dumps of the payload"),
        ):
            ours = seconds(CONVERT, f"{name}: {side}", ours_impl)
            base = seconds(CONVERT, f"{name}: {side}", json_impl)
            if ours is None or base is None:
                continue
            what = "first rendering" if "first" in ours_impl else side
            out.append(
                Goal(
                    f"{name} {what}, per message: ≤ 2× {json_impl.split()[0]}",
                    f"{fmt_time(ours)} vs {fmt_time(base)} ({ours / base:.2f}×)",
                    ours <= 2 * base,
                )
            )
    return out


def _other_goals(table: Table) -> list[Goal]:
    """The agent-loop, log, store and token-estimate goals."""
    out: list[Goal] = []

    def ratio(workload: str, size: str, impl: str) -> float | None:
        row = table.find(workload, size, impl)
        return None if row is None else row.ratio

    for size in {r.size for r in table.rows if r.workload == LOOP}:
        for peer, want in (("agentix FitContextWindow", 50.0), ("LangChain trim_messages", 200.0)):
            got = ratio(LOOP, size, peer)
            out.append(
                Goal(
                    f"agent loop {size}: ≥ {want:.0f}× {peer}",
                    "not measured" if got is None else f"{got:,.1f}×",
                    None if got is None else got >= want,
                )
            )
    curve = sorted(table.curve().get(CtxtrimLog.name, []))
    if len(curve) >= 2:
        growth = curve[-1][1] / curve[0][1]
        out.append(
            Goal(
                f"per-turn cost flat from {curve[0][0]:,} to {curve[-1][0]:,} messages",
                f"{fmt_time(curve[0][1])} → {fmt_time(curve[-1][1])} ({growth:.2f}×)",
                growth <= 1.5,
            )
        )
    forks = [r for r in table.rows if r.workload == FORK and r.impl.startswith("axio") and r.ratio]
    for r in forks:
        out.append(
            Goal(
                f"fork {r.size}: ≥ 1000× axio deep-copy fork",
                f"{r.ratio:,.0f}×",
                r.ratio is not None and r.ratio >= 1000,
            )
        )
    if not forks:
        out.append(Goal("fork: ≥ 1000× axio deep-copy fork", "axio not measured", None))
    app = [r for r in table.rows if r.workload == APPEND]
    ours = next((r for r in app if r.impl == "ctxtrim MessageLog.append"), None)
    floor = next((r for r in app if r.impl == "Python list.append"), None)
    if ours and floor and ours.seconds and floor.seconds:
        x = ours.seconds / floor.seconds
        out.append(
            Goal(
                "append within 3× of list.append",
                f"{fmt_time(ours.seconds)} vs {fmt_time(floor.seconds)} ({x:.1f}×)",
                x <= 3,
            )
        )
    gh = [r for r in table.rows if r.workload == GET_HISTORY]
    ours = next((r for r in gh if r.impl == "ctxtrim await MemoryContextStore.get_history()"), None)
    floor = next((r for r in gh if r.impl == "Python list copy"), None)
    if ours and floor and ours.seconds and floor.seconds:
        x = ours.seconds / floor.seconds
        out.append(
            Goal(
                f"get_history() at {ours.size} within 1.5× of a list copy",
                f"{fmt_time(ours.seconds)} vs {fmt_time(floor.seconds)} ({x:.1f}×)",
                x <= 1.5,
            )
        )
    for est in table.rows:
        if est.workload == ESTIMATE and est.impl.startswith("LangChain") and est.ratio:
            out.append(
                Goal(
                    f"token estimate ({est.size}) ≥ 10× LangChain count_tokens_approximately",
                    fmt_ratio(est.ratio),
                    est.ratio >= 10,
                )
            )
    accuracy_goal = "token estimate ≤ 15 % mean error on every corpus"
    if table.accuracy:
        worst = max(table.accuracy, key=lambda a: a[2])
        bad = [f"{c} ({t}) {e:.1%}" for c, t, e, _, _ in table.accuracy if e > 0.15]
        out.append(
            Goal(
                accuracy_goal,
                "worst: "
                + f"{worst[0]} ({worst[1]}) {worst[2]:.1%}"
                + (("; over: " + ", ".join(bad)) if bad else ""),
                not bad,
            )
        )
    else:
        out.append(Goal(accuracy_goal, "no offline tokenizer installed (bpe-openai)", None))
    ours_sq = [
        r
        for r in table.rows
        if r.workload == SQLITE_APPEND and r.impl.startswith("ctxtrim") and r.seconds
    ]
    if len(ours_sq) >= 2:
        a, b = ours_sq[0].seconds or 0.0, ours_sq[-1].seconds or 0.0
        out.append(
            Goal(
                f"SQLite append flat (±30 %) from {ours_sq[0].size.removeprefix('at ')} to "
                f"{ours_sq[-1].size.removeprefix('at ')} messages",
                f"{fmt_time(a)} → {fmt_time(b)}",
                abs(b / a - 1) <= 0.3,
            )
        )
        axio = [r for r in table.rows if r.workload == SQLITE_APPEND and r.impl.startswith("axio")]
        if axio and axio[-1].seconds:
            out.append(
                Goal(
                    f"SQLite append {ours_sq[-1].size}: at least axio-context-sqlite's rate",
                    f"{fmt_time(b)} vs {fmt_time(axio[-1].seconds)}",
                    b <= axio[-1].seconds,
                )
            )
    else:
        out.append(
            Goal(
                "SQLite append flat (±30 %) from 100 to 10 000 messages",
                "ctxtrim SQLiteContextStore not measured",
                None,
            )
        )
    return out
