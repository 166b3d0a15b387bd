# ruff: noqa: RUF001, RUF002  (the CJK corpus has fullwidth commas, the docs a minus sign)
"""Token estimates: accuracy against real tokenizers, and throughput against the peers.

- **accuracy** (:func:`accuracy`): on four corpora of message-sized texts (:func:`corpora`:
  English prose, source code, JSON tool payloads, CJK text), the mean of
  ``|estimate − real| / real`` per text, for ``estimate_tokens(text, encoding=...)`` and
  for chars/4 (what the peers use), against OpenAI's o200k_base and cl100k_base counts
  from ``bpe-openai`` (offline). The corpora are built, not downloaded: prose from the
  running Python's own documentation (``pydoc_data``), code from its standard library,
  JSON payloads from a fixed seed, and a fixed Chinese/Japanese/Korean text.
- **throughput** (``ESTIMATE``, :func:`bench_estimate`): estimating every text of the
  corpora, and every message of an agent history (text, tool calls and results,
  overhead), against chars/4 in Python and LangChain's ``count_tokens_approximately``;
  interleaved rounds, best of ``plan.repeat``.
"""

from __future__ import annotations

import importlib
import json
import math
import random
import statistics
import warnings
from collections.abc import Callable
from pathlib import Path

from ctxtrim import estimate_tokens

from . import peers
from .history import TOOLS, WORDS, agent_history, ctxtrim_messages, sentence
from .plan import Plan
from .report import ESTIMATE, Row
from .timing import Progress, best_interleaved, sampler

__all__ = ["accuracy", "bench_estimate", "corpora", "tokenizers"]

_CJK = (
    "构建系统在昨晚的夜间任务中失败了。日志显示链接器找不到新模块导出的符号，"
    "这通常意味着锁文件中固定的依赖版本与代码不一致。我们首先检查了发布构建的功能开关，"
    "然后比较了本地环境和服务器上的编译参数。问题在于代理服务器限制了请求体的大小，"
    "当上传的文件超过限制时，连接会在三十秒后被断开，而工作进程仍在从磁盘缓存中读取数据。"
    "迁移之后查询返回了过期的数据，因为架构版本没有更新，连接池为每个新会话重复使用旧的执行计划。"
    "为了修复这个问题，我们需要在迁移脚本中增加版本号，并在部署时清空缓存。"
    "测试套件在本地通过，但在持续集成环境中有两个测试失败，原因是时区设置不同。"
    "我们建议在配置文件中显式指定时区，并为每个测试创建独立的临时目录。"
    "夜間ビルドが昨日から失敗しています。ログを確認すると、リンカが新しいモジュールのシンボルを"
    "見つけられないことがわかりました。ロックファイルで固定されたバージョンを確認し、"
    "リリースビルドで機能フラグが有効になっているかを調べる必要があります。"
    "サーバーは大きなリクエストに対してエラーを返し、プロキシが接続を切断します。"
    "移行後にキャッシュを消去し、スキーマのバージョンを上げてから再度デプロイしてください。"
    "이 문제는 설정 파일의 시간대 때문에 발생했습니다. 테스트마다 임시 디렉터리를 만들고 "
    "캐시를 비운 뒤 다시 실행하면 모든 테스트가 통과합니다."
)


def corpora(*, samples: int = 40, seed: int = 11) -> dict[str, list[str]]:
    """Four corpora of message-sized texts (deterministic): English prose, source code,
    JSON tool payloads and CJK text. Prose and code come from the running Python's own
    documentation and standard library, so they are real text, not generated letters."""
    rng = random.Random(seed)
    out: dict[str, list[str]] = {}

    prose_src = ""
    try:
        topics = importlib.import_module("pydoc_data.topics").topics
        prose_src = "\n\n".join(topics[k] for k in sorted(topics))
    except ImportError:  # some distributions strip pydoc_data: fall back to docstrings
        prose_src = "\n\n".join(
            (getattr(importlib.import_module(m), "__doc__", "") or "")
            for m in ("asyncio", "json", "argparse", "random", "statistics", "subprocess")
        )
    # Keep paragraphs that read as prose (mostly letters, few code markers).
    paras = [
        p.strip().replace("\n", " ")
        for p in prose_src.split("\n\n")
        if len(p) > 200 and sum(c.isalpha() or c == " " for c in p) / len(p) > 0.85
    ]
    out["English prose"] = _pick(rng, paras, samples)

    code_src = []
    for name in ("json.decoder", "argparse", "dataclasses", "statistics", "textwrap", "shutil"):
        try:
            code_src.append(Path(importlib.import_module(name).__file__ or "").read_text())
        except (ImportError, OSError):
            continue
    blocks = [b for s in code_src for b in s.split("\n\n\n") if 200 < len(b) < 4000]
    out["source code"] = _pick(rng, blocks, samples)

    payloads = []
    for k in range(samples):
        payloads.append(
            json.dumps(
                {
                    "tool": rng.choice(TOOLS),
                    "call_id": f"call_{rng.getrandbits(48):012x}",
                    "status": rng.choice(("ok", "error")),
                    "results": [
                        {
                            "path": f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py",
                            "line": rng.randint(1, 2000),
                            "score": round(rng.random(), 4),
                            "snippet": sentence(rng, rng.randint(4, 12)),
                            "tags": rng.sample(WORDS, 3),
                        }
                        for _ in range(1 + k % 6)
                    ],
                    "elapsed_ms": rng.randint(1, 5000),
                },
                indent=None if k % 2 else 2,
            )
        )
    out["JSON tool payloads"] = payloads

    sentences = [s + "。" for s in _CJK.split("。") if s.strip()]
    cjk = []
    for _ in range(samples):
        start = rng.randrange(len(sentences))
        cjk.append(
            "".join(sentences[(start + j) % len(sentences)] for j in range(rng.randint(2, 6)))
        )
    out["CJK text"] = cjk
    return out


def _pick(rng: random.Random, pool: list[str], k: int) -> list[str]:
    if not pool:
        return []
    return [pool[i] for i in sorted(rng.sample(range(len(pool)), min(k, len(pool))))]


def tokenizers() -> list[tuple[str, Callable[[str], int]]]:
    """Real tokenizers that work offline: bpe-openai ships o200k_base and cl100k_base."""
    out: list[tuple[str, Callable[[str], int]]] = []
    with warnings.catch_warnings():  # bpe-openai reads its data with a deprecated importlib API
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            mod = importlib.import_module("bpe_openai")
        except ImportError:
            return out
        for name in ("o200k_base", "cl100k_base"):
            encode = mod.get_encoding(name).encode
            encode("load the vocabulary now")  # it loads lazily, on first use

            def count(text: str, encode: Callable[[str], list[int]] = encode) -> int:
                return len(encode(text))

            out.append((name, count))
    return out


def accuracy(samples: int) -> list[tuple[str, str, float, float, int]]:
    """``(corpus, tokenizer, ctxtrim error, chars/4 error, samples)``: mean absolute
    relative error of each estimate against the real tokenizer's count."""
    out = []
    texts = corpora(samples=samples)
    for tok_name, count in tokenizers():
        for corpus, items in texts.items():
            ours, naive = [], []
            for text in items:
                real = count(text)
                if real == 0:
                    continue
                # the price table of the encoding being compared against
                estimate = estimate_tokens(text, encoding=tok_name)
                ours.append(abs(estimate - real) / real)
                naive.append(abs(math.ceil(len(text) / 4) - real) / real)
            if ours:
                out.append(
                    (corpus, tok_name, statistics.fmean(ours), statistics.fmean(naive), len(ours))
                )
    return out


def bench_estimate(plan: Plan, rows: list[Row], progress: Progress) -> None:
    """Append the ``ESTIMATE`` rows (texts of the corpora, messages of a history)."""
    texts = [t for items in corpora(samples=plan.accuracy_samples).values() for t in items]
    sample = ctxtrim_messages(agent_history(plan.history_size // 4))[:2000]
    message_tokens = importlib.import_module("ctxtrim._core").message_tokens
    text_size = f"{sum(len(t) for t in texts):,} chars"
    message_size = f"{len(sample):,} messages"
    lc = "LangChain count_tokens_approximately"
    texts_timed: dict[str, Callable[[], float]] = {
        "ctxtrim estimate_tokens": sampler(lambda: [estimate_tokens(t) for t in texts], number=3),
        "chars / 4 in Python": sampler(lambda: [len(t) // 4 for t in texts], number=3),
    }
    messages_timed: dict[str, Callable[[], float]] = {
        "ctxtrim message_tokens": sampler(lambda: [message_tokens(m) for m in sample], number=3),
    }
    if peers.has("langchain_core.messages.utils"):
        count_fn = importlib.import_module(
            "langchain_core.messages.utils"
        ).count_tokens_approximately
        human = importlib.import_module("langchain_core.messages").HumanMessage
        lmsgs = [[human(t)] for t in texts]
        lhead, lturns = peers.langchain_messages(agent_history(len(sample) // 4))
        lsample = [[m] for m in (lhead + [m for t in lturns for m in t])[: len(sample)]]
        texts_timed[lc] = sampler(lambda: [count_fn(m) for m in lmsgs], number=3)
        messages_timed[lc] = sampler(lambda: [count_fn(m) for m in lsample], number=3)
    for size, samplers in ((text_size, texts_timed), (message_size, messages_timed)):
        timed = best_interleaved(samplers, repeat=plan.repeat)
        rows.extend(Row(ESTIMATE, size, impl, t) for impl, t in timed.items())
        if lc not in timed:
            rows.append(Row(ESTIMATE, size, lc, None, note="langchain-core not installed"))
    progress.step(ESTIMATE)
