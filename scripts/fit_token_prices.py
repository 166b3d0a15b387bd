"""Fit the token estimator's prices (src/tokens/mod.rs) against OpenAI's real tokenizers.

    python scripts/fit_token_prices.py        # needs numpy and bpe-openai (offline)

Texts come from this machine, never from the benchmark's corpora (those stay held out):
package READMEs (``*.dist-info/METADATA``), standard-library and this crate's Rust source,
JSON built from package metadata and function signatures, and vim's message catalogues in
Chinese, Japanese, Korean, Russian, German, French, Spanish, Greek, Ukrainian and Polish
(Debian's ``vim-runtime``; skipped when absent). ``features`` below counts the same patterns
as ``src/tokens/features.rs``, byte by byte; each price minimises the mean absolute relative
error (iteratively reweighted least squares, every corpus weighing the same). Digits, repeated
punctuation and rare symbols keep fixed prices (``FIXED``). The script prints the prices,
the error on the half of each corpus it was not fitted on, and the error on the benchmark's
corpora.
"""

from __future__ import annotations

import email.parser
import gettext
import glob
import importlib
import inspect
import json
import os
import random
import sys
import sysconfig
import warnings

import numpy as np

from ctxtrim.bench import corpora

NONE, LETTER, OTHER, DIGIT, PUNCT, SPACE, NEWLINE = range(7)
SCRIPTS = ["han", "kana", "hangul", "joiner", "astral", "dingbat", "symbol"]
PATTERNS = ["word", "long_letter", "other_letter", "digit_run", "digit_extra", "space_digit",
            "punct_run", "glued", "punct_mixed", "punct_repeat", "multi_space", "space_alone",
            "newline", "indent"]  # fmt: skip
NAMES = PATTERNS + SCRIPTS
# Prices (hundredths of a token) that are not fitted.
FIXED = {"digit_run": 100, "digit_extra": 33, "space_digit": 100, "punct_repeat": 3,
         "joiner": 100, "astral": 200, "dingbat": 150, "symbol": 150}  # fmt: skip


def char_class(c: str) -> tuple[int, str | None]:
    o = ord(c)
    if o < 128:
        if c.isalpha():
            return LETTER, None
        if c.isdigit():
            return DIGIT, None
        return {" ": SPACE, "\t": SPACE, "\n": NEWLINE, "\r": NEWLINE}.get(c, PUNCT), None
    if 0x3040 <= o <= 0x30FF:
        return NONE, "kana"
    if 0x3000 <= o <= 0x303F or 0xFF00 <= o <= 0xFFEF or 0x3400 <= o <= 0x9FFF:
        return NONE, "han"
    if 0xF900 <= o <= 0xFAFF:
        return NONE, "han"
    if 0xAC00 <= o <= 0xD7FF or 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F:
        return NONE, "hangul"
    if o == 0x200D or 0xFE00 <= o <= 0xFE0F:
        return NONE, "joiner"
    if o >= 0x10000:
        return NONE, "astral"
    if 0x2600 <= o <= 0x27BF:
        return NONE, "dingbat"
    if o in (0xA0, 0x202F, 0x205F) or 0x2000 <= o <= 0x200A:
        return SPACE, None
    if o in (0x85, 0x2028, 0x2029):
        return NEWLINE, None
    if 0x300 <= o <= 0x36F or c.isalpha():
        return OTHER, None
    return NONE, "symbol"


def features(text: str) -> np.ndarray:
    raw = text.encode()
    cls = np.zeros(len(raw) + 1, np.int8)  # one more: the end of the text
    scripts = dict.fromkeys(SCRIPTS, 0)
    other = 0
    i = 0
    for c in text:
        k, script = char_class(c)
        n = len(c.encode())
        cls[i : i + n] = k
        other += k == OTHER
        if script:
            scripts[script] += 1
        i += n
    b = np.frombuffer(raw + b"\0", np.uint8)

    def back(m: np.ndarray, k: int) -> np.ndarray:
        out = np.zeros_like(m)
        out[k:] = m[:-k]
        return out

    letter, digit, punct = cls == LETTER, cls == DIGIT, cls == PUNCT
    space, newline = cls == SPACE, cls == NEWLINE
    word = letter | (cls == OTHER)
    same = np.zeros_like(word)
    same[1 : len(raw)] = b[1 : len(raw)] == b[: len(raw) - 1]
    run_punct = punct & back(punct, 1)
    solid = word | digit | punct
    counts = [
        word & ~back(word, 1),
        letter & np.logical_and.reduce([back(word, k) for k in range(1, 7)]),
        None,
        digit & ~back(digit, 1),
        digit & back(digit, 1) & back(digit, 2) & back(digit, 3),
        digit & back(space, 1),
        punct & ~back(punct, 1),
        word & back(punct, 1) & ~back(punct, 2),
        run_punct & ~same,
        run_punct & same,
        solid & back(space, 1) & back(space, 2),
        ~(solid | space | newline) & back(space, 1),
        newline & ~back(newline, 1),
        space & back(newline, 1),
    ]
    row = [other if m is None else int(m.sum()) for m in counts]
    return np.array(row + [scripts[s] for s in SCRIPTS], float)


def training_texts(rng: random.Random) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {k: [] for k in ("prose", "code", "json", "cjk", "other")}
    site = glob.glob(sys.prefix + "/lib/python3*/site-packages")
    metadata = [f for s in site for f in glob.glob(s + "/*.dist-info/METADATA")]

    def chunks(text: str) -> list[str]:
        found, cur = [], ""
        for p in text.split("\n\n"):
            cur = f"{cur}\n\n{p}" if cur else p
            if len(cur) >= 200:
                if len(cur) <= 3000:
                    found.append(cur)
                cur = ""
        return found

    for f in metadata:
        body = open(f, errors="ignore").read().split("\n\n", 1)[-1]
        out["prose"] += [
            c for c in chunks(body) if sum(x.isalpha() or x == " " for x in c) / len(c) > 0.8
        ]
        msg = email.parser.Parser().parsestr(open(f, errors="ignore").read(), headersonly=True)
        fields: dict[str, list[str]] = {}
        for k, v in msg.items():
            fields.setdefault(k.lower().replace("-", "_"), []).append(v)
        record = {k: v[0] if len(v) == 1 else v for k, v in fields.items()}
        payload = {"tool": "pip_show", "result": record}
        out["json"].append(json.dumps(payload, indent=rng.choice([None, 2])))
    for name in ("os", "json", "re", "pathlib", "shutil", "subprocess", "itertools", "string"):
        mod = importlib.import_module(name)
        items = []
        for attr, obj in sorted(vars(mod).items()):
            if callable(obj) and not attr.startswith("_"):
                try:
                    sig: str | None = str(inspect.signature(obj))
                except (TypeError, ValueError):
                    sig = None
                doc = (obj.__doc__ or "").split("\n")[0][:120]
                items.append({"name": f"{name}.{attr}", "signature": sig, "doc": doc})
        for i in range(0, len(items), 5):
            out["json"].append(json.dumps({"results": items[i : i + 5], "page": i // 5 + 1}))
    std = sysconfig.get_paths()["stdlib"]
    modules = ["email/message.py", "http/client.py", "logging/__init__.py", "typing.py"]
    modules += ["inspect.py", "pathlib.py", "tarfile.py", "zipfile.py", "csv.py", "ast.py"]
    for name in modules:
        src = open(os.path.join(std, name)).read()
        out["code"] += [b for b in src.split("\n\n\n") if 200 < len(b) < 4000]
    crate = os.path.join(os.path.dirname(__file__), "..", "src")
    for f in glob.glob(os.path.join(crate, "**", "*.rs"), recursive=True):
        out["code"] += [b for b in chunks(open(f).read()) if len(b) < 4000][:40]

    def catalogue(lang: str, most: int = 10_000) -> list[str]:
        path = f"/usr/share/vim/vim90/lang/{lang}/LC_MESSAGES/vim.mo"
        try:
            with open(path, "rb") as fh:
                cat = gettext.GNUTranslations(fh)
        except (OSError, UnicodeDecodeError):  # absent, or not a UTF-8 catalogue
            return []
        msgs = [v for k, v in cat._catalog.items() if isinstance(v, str) and v and k]
        rng.shuffle(msgs)
        return ["\n".join(msgs[i : i + 6]) for i in range(0, min(len(msgs), most), 6)]

    for lang in ("zh_CN.UTF-8", "zh_TW.UTF-8", "ja", "ko"):
        out["cjk"] += catalogue(lang)
    for lang in ("ru", "de", "fr", "es", "el", "uk", "pl"):
        out["other"] += catalogue(lang, most=600)
    for k in out:
        rng.shuffle(out[k])
        out[k] = [t for t in out[k] if t.strip()][:500]
    return {k: v for k, v in out.items() if v}


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray, cols: list[int]) -> np.ndarray:
    fixed_cols = [NAMES.index(n) for n in FIXED]
    fixed = x[:, fixed_cols] @ (np.array(list(FIXED.values())) / 100)
    a, w = x[:, cols], np.ones_like(y)
    coef = np.zeros(len(cols))
    for _ in range(40):  # IRLS: weights 1/|residual| turn least squares into least absolute
        sw = np.sqrt(weight * w) / y
        coef = np.linalg.lstsq(a * sw[:, None], (y - fixed) * sw, rcond=None)[0]
        w = 1 / np.maximum(np.abs(a @ coef + fixed - y) / y, 0.01)
    return coef


def report(enc: str, train: dict[str, list[str]], held: dict[str, list[str]]) -> None:
    """Fits `enc`'s prices and prints them with their errors."""
    import bpe_openai

    encode = bpe_openai.get_encoding(enc).encode
    cols = [i for i, n in enumerate(NAMES) if n not in FIXED]
    fixed_cols = [NAMES.index(n) for n in FIXED]
    fixed_prices = np.array(list(FIXED.values())) / 100

    def data(texts: dict[str, list[str]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {
            k: (
                np.array([features(t) for t in v]),
                np.array([len(encode(t, disallowed_special=())) for t in v], float),
            )
            for k, v in texts.items()
        }

    def error(coef: np.ndarray, x: np.ndarray, y: np.ndarray) -> str:
        e = np.abs(x[:, cols] @ coef + x[:, fixed_cols] @ fixed_prices - y) / y
        return f"{e.mean():.1%}"

    def fit_on(sets: dict[str, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        x = np.vstack([x for x, _ in sets.values()])
        y = np.concatenate([y for _, y in sets.values()])
        weight = np.concatenate([np.full(len(y), 1 / len(y)) for _, y in sets.values()])
        return fit(x, y, weight, cols)

    train_sets, held_sets = data(train), data(held)
    half = fit_on({k: (x[::2], y[::2]) for k, (x, y) in train_sets.items()})
    coef = fit_on(train_sets)
    print(enc)
    print("  prices:", {NAMES[c]: round(v * 100) for c, v in zip(cols, coef, strict=True)})
    print(
        "  fitted on even, error on odd:",
        {k: error(half, x[1::2], y[1::2]) for k, (x, y) in train_sets.items()},
    )
    print(
        "  error on the benchmark corpora:",
        {k: error(coef, x, y) for k, (x, y) in held_sets.items()},
    )


def main() -> None:
    warnings.simplefilter("ignore", DeprecationWarning)
    train = training_texts(random.Random(5))
    held = corpora(samples=300, seed=11)
    for enc in ("cl100k_base", "o200k_base"):
        report(enc, train, held)


if __name__ == "__main__":
    main()
