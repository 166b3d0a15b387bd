//! Token estimation without a tokenizer.
//!
//! [`estimate_tokens`] approximates what a byte-level BPE tokenizer of the cl100k / o200k family
//! produces, without allocating and at a fraction of a nanosecond per byte. Those tokenizers
//! split text with a regex into *pre-tokens* (a word with the space before it, up to three
//! digits, a run of punctuation, a run of whitespace) and merge bytes inside each one, so the
//! count follows from where runs start and how long they are. The estimate counts a few such
//! local patterns ([`Features`], 64 bytes at a time with bit masks) and prices each:
//!
//! | pattern | cl100k / o200k (tokens) | why |
//! |---|---|---|
//! | a word (run of letters) | 0.93 | common words, even long ones, are single tokens |
//! | each ASCII letter after the 6th of a word | 0.20 | rarer long words split in pieces |
//! | each non-ASCII letter (Cyrillic, accented Latin) | 0.36 / 0.17 | 2-byte characters merge less |
//! | a run of digits; each digit after its 3rd; a digit after a space | 1; 0.33; 1 | digits group by three; `" 42"` is two tokens |
//! | a run of punctuation | 0.88 / 0.89 | `{"`, `");` are often one token |
//! | a word right after one punctuation character | −0.41 / −0.40 | `.name`, `_id`, `"key` often merge |
//! | punctuation after a different one; after the same one | 0.37 / 0.36; 0.03 | 64 `-` are one token |
//! | a line-break run; a space right after one | 1.73 / 1.69; −1.45 / −1.32 | with the next row, an indented line break costs about one token |
//! | a word, digit or punctuation after ≥ 2 spaces | 0.77 / 0.73 | |
//! | a space before a CJK character, emoji or the end | 1.43 / 1.18 | it cannot merge into a word |
//! | a CJK ideograph or CJK punctuation; kana; hangul | 0.92 / 0.67; 0.93 / 0.62; 0.66 / 0.35 | o200k's vocabulary holds far more CJK |
//! | emoji (4-byte); dingbat; joiner; other symbol | 2; 1.5; 1; 1.5 | rarely a token of their own |
//!
//! The prices were fitted per encoding by `scripts/fit_token_prices.py` (least absolute
//! relative error) on ~2,100 texts — package READMEs, standard-library and Rust source, JSON
//! built from package metadata and signatures, vim's Chinese, Japanese and Korean message
//! catalogues, and its Russian, German, French, Spanish, Greek, Ukrainian and Polish ones —
//! with the digit, repeated-punctuation and rare-symbol prices fixed. Fitted on half and
//! measured on the other half, the mean absolute relative error (cl100k / o200k) is: prose
//! 6.8 % / 6.8 %, code 4.7 % / 4.3 %, JSON 3.3 % / 3.2 %, CJK 7.1 % / 5.8 %, other scripts
//! 17 % / 12 %; on the benchmark's corpora (never fitted on): prose 4.0 / 3.9, code 3.9 / 4.1,
//! JSON tool payloads 5.1 / 4.3, CJK 3.6 / 5.8. chars/4 is off by 16–24 % on English and code
//! and 66 % on CJK.
//!
//! Prices are kept in hundredths of a token and rounded once at the end, so fractions add up
//! instead of being rounded away run by run.
//!
//! Invariants: `estimate_tokens("") == 0`; any non-empty text costs at least 1; the estimate
//! never panics and saturates at `u32::MAX`.
//!
//! Per message, [`TokenTally`] adds the framing every chat API charges ([`MESSAGE_OVERHEAD`]),
//! a flat price per image ([`IMAGE_TOKENS`]) and tool calls (name, JSON input and the ids).

//!
//! # Modules
//!
//! Dependencies go one way, from the bottom of this list up:
//!
//! - `features`: what is counted ([`Feature`], [`Features`], [`Tally`]);
//! - `classes`: byte classes of a 64-byte block as bit masks, and the portable classifier;
//! - `prices`: what each feature costs per encoding, and the priced tally;
//! - [`image`]: image sizes from their headers, and each provider's price for them;
//! - `encoding`: which price table ([`Encoding`]) and which model uses which;
//! - `patterns`: the pattern arithmetic over masks, once for one block and for four-block
//!   lanes;
//! - `scan`: reading a text block by block or group by group, feeding the patterns;
//! - `avx2`: the AVX2 classifier and lanes, the core's only `unsafe` code (the bindings have one
//!   more call, `bindings::untrack`);
//! - `dispatch`: which classifier runs, and the counting and pricing passes;
//! - `bpe`: the exact tokenizer (OpenAI's split rules, tiktoken's merges; on its own);
//! - this module: the entry points ([`estimate_tokens`], [`features`], [`TokenTally`]).

pub mod bpe;

// The AVX2 classifier is the core's only unsafe code (the bindings have one more call,
// `bindings::untrack`); see its module docs.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2;
mod classes;
mod dispatch;
mod encoding;
mod features;
pub mod image;
mod patterns;
mod prices;
mod scan;

use dispatch::{tally_with, units_with, Classifier};
use prices::UNIT;

pub use encoding::Encoding;
pub use features::{Feature, Features, Tally};

/// Tokens every message costs beyond its content: role markers and separators in the chat
/// template (OpenAI documents 3 per message plus 3 to prime the reply; 4 rounds that up).
pub const MESSAGE_OVERHEAD: u32 = 4;

/// Flat price of one image whose size cannot be read from its header (see [`image`]).
///
/// Providers price images by size: OpenAI's high-detail 1024×1024 image costs 765 tokens and a
/// 2048×768 one 1105; Anthropic charges width×height/750, about 1,600 at its 1.15-megapixel
/// limit and ~1,050 for an 800×1000 screenshot. An image whose header cannot be read is priced
/// at 1,000, near the middle of common cases.
pub const IMAGE_TOKENS: u32 = 1_000;

/// Tokens a tool call costs beyond its name and JSON input: the call id (ids like
/// `toolu_01A09q90qw90lq917835lq9` are ~10 tokens) and the block's framing.
pub const TOOL_USE_OVERHEAD: u32 = 12;

/// Tokens a tool result block costs beyond its content: the id it answers and the framing.
pub const TOOL_RESULT_OVERHEAD: u32 = 12;

/// Estimates how many tokens `text` is for a cl100k/o200k-style BPE tokenizer.
///
/// ```
/// use ctxtrim::tokens::estimate_tokens;
/// assert_eq!(estimate_tokens(""), 0);
/// assert_eq!(estimate_tokens("hello world"), 2);
/// ```
#[must_use]
pub fn estimate_tokens(text: &str) -> u32 {
    estimate_tokens_for(text, Encoding::Cl100k)
}

/// [`estimate_tokens`] with the prices of a given encoding (they differ on CJK).
#[must_use]
pub fn estimate_tokens_for(text: &str, encoding: Encoding) -> u32 {
    if text.is_empty() {
        return 0;
    }
    let units = units_with(text, encoding, Classifier::detect()).max(UNIT);
    // `units` is at least UNIT, so it converts; round up to whole tokens.
    u32::try_from(
        u64::try_from(units)
            .unwrap_or(u64::MAX)
            .div_ceil(UNIT as u64),
    )
    .unwrap_or(u32::MAX)
}

/// Adds up the tokens of one message: [`MESSAGE_OVERHEAD`] plus its text, images and tool
/// blocks.
///
/// ```
/// use ctxtrim::tokens::{TokenTally, MESSAGE_OVERHEAD, IMAGE_TOKENS};
/// let mut t = TokenTally::new();
/// t.text("hello world");
/// t.image();
/// assert_eq!(t.total(), MESSAGE_OVERHEAD + 2 + IMAGE_TOKENS);
/// ```
#[derive(Clone, Debug)]
pub struct TokenTally {
    total: u64,
    encoding: Encoding,
}

impl Default for TokenTally {
    fn default() -> Self {
        Self::new()
    }
}

impl TokenTally {
    /// A tally holding only the per-message overhead.
    #[must_use]
    pub fn new() -> Self {
        Self::with_encoding(Encoding::default())
    }

    /// A tally pricing texts as `encoding` does.
    #[must_use]
    pub fn with_encoding(encoding: Encoding) -> Self {
        Self {
            total: u64::from(MESSAGE_OVERHEAD),
            encoding,
        }
    }

    /// Adds a text block (or a tool result's text content).
    pub fn text(&mut self, text: &str) {
        self.add(estimate_tokens_for(text, self.encoding));
    }

    /// Adds one image at the flat [`IMAGE_TOKENS`] price.
    pub fn image(&mut self) {
        self.add(IMAGE_TOKENS);
    }

    /// Adds one image priced by its size, read from `data`'s header, under the table's image
    /// rule ([`IMAGE_TOKENS`] if the header cannot be read).
    pub fn image_data(&mut self, data: &[u8]) {
        self.add(self.encoding.image_rule().price_data(data));
    }

    /// Adds a tool call: its name, its JSON input and [`TOOL_USE_OVERHEAD`].
    pub fn tool_use(&mut self, name: &str, json_input: &str) {
        self.add(TOOL_USE_OVERHEAD);
        self.text(name);
        self.text(json_input);
    }

    /// Adds the framing of one tool result block ([`TOOL_RESULT_OVERHEAD`]); its content goes
    /// through [`TokenTally::text`] and [`TokenTally::image`].
    pub fn tool_result(&mut self) {
        self.add(TOOL_RESULT_OVERHEAD);
    }

    /// Adds an exact count from elsewhere (a Python counter, a cached value).
    pub fn add(&mut self, tokens: u32) {
        self.total = self.total.saturating_add(u64::from(tokens));
    }

    /// The message's tokens, saturating at `u32::MAX`.
    #[must_use]
    pub fn total(&self) -> u32 {
        u32::try_from(self.total).unwrap_or(u32::MAX)
    }
}

/// Counts the [`Features`] of `text` with the fastest classifier this CPU has.
#[must_use]
pub fn features(text: &str) -> Features {
    tally(text, Features::default())
}

/// Adds the features of `text` to `tally`, with the fastest classifier this CPU has.
#[must_use]
pub fn tally<T: Tally>(text: &str, tally: T) -> T {
    tally_with(text, Classifier::detect(), tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_in(text: &str, range: std::ops::RangeInclusive<u32>) {
        let got = estimate_tokens(text);
        assert!(range.contains(&got), "{got} not in {range:?} for {text:?}");
    }

    #[test]
    fn empty_is_zero_and_nonempty_is_positive() {
        assert_eq!(estimate_tokens(""), 0);
        for s in [" ", "a", "\n", "1", "{", "中", "😀", "\u{200d}", "é"] {
            assert!(estimate_tokens(s) >= 1, "{s:?}");
        }
    }

    #[test]
    fn english() {
        // Real counts (cl100k_base / o200k_base) in the comments.
        assert_eq!(estimate_tokens("hello world"), 2); // 2 / 2
        assert_in("The quick brown fox jumps over the lazy dog.", 9..=11); // 10 / 10
        let para = "Large language models read text as tokens, not characters. \
            A tokenizer splits each word into pieces from a fixed vocabulary: common words \
            such as the, and, or which become a single token, while rarer words are broken \
            into several fragments. Numbers are grouped by three digits, and punctuation \
            usually costs one token each. This paragraph is about four hundred characters long.";
        assert!((360..=440).contains(&para.len()), "{}", para.len());
        assert_in(para, 62..=82); // 72 / 72
    }

    #[test]
    fn json_payload() {
        assert_in(r#"{"path": "/src/main.rs", "line": 42}"#, 13..=18); // 14 / 14
    }

    #[test]
    fn o200k_prices_cjk_lower_and_everything_else_alike() {
        let zh = "我们今天讨论上下文窗口的管理方法以及工具调用的配对问题".repeat(4);
        let (cl, o) = (
            estimate_tokens_for(&zh, Encoding::Cl100k),
            estimate_tokens_for(&zh, Encoding::O200k),
        );
        // o200k_base: ~0.69 tokens per Chinese character; cl100k_base: ~0.96.
        let chars = zh.chars().count() as f64;
        assert!(
            (0.6..0.8).contains(&(f64::from(o) / chars)),
            "{o} for {chars}"
        );
        assert!(cl > o && cl == estimate_tokens(&zh));
        let en = "fn main() { println!(\"hello, world\"); } // the quick brown fox";
        assert_eq!(
            estimate_tokens_for(en, Encoding::Cl100k),
            estimate_tokens_for(en, Encoding::O200k)
        );
        assert_eq!("o200k".parse::<Encoding>(), Ok(Encoding::O200k));
        assert_eq!("cl100k_base".parse::<Encoding>(), Ok(Encoding::Cl100k));
        assert!("p50k".parse::<Encoding>().unwrap_err().contains("p50k"));
    }

    #[test]
    fn cjk_is_about_one_token_per_character() {
        let zh = "我们今天讨论大型语言模型如何处理中文文本以及为什么按字符数除以四的估计方法会严重低估中文的词元数量这对上下文窗口管理非常重要因为低估会导致请求被拒绝所以我们需要一个更好的估计方法来避免这种情况发生并且保证准确";
        let zh: String = zh.chars().take(100).collect();
        assert_eq!(zh.chars().count(), 100);
        assert_in(&zh, 70..=130); // 108 / 64 (chars/4 says 25)
        assert_in("こんにちは世界", 3..=8); // 4 / 2
        assert_in("안녕하세요", 3..=6); // 5 / 2
    }

    #[test]
    fn other_scripts_and_emoji() {
        assert_in("Привет, как дела?", 6..=10); // 8 / 6
        assert_in("😀😀😀", 3..=8); // 6 / 3
        assert_in("👨\u{200d}👩\u{200d}👧", 6..=13); // 13 / 8
    }

    #[test]
    fn digits_group_by_three() {
        assert_eq!(estimate_tokens("123"), 1);
        assert_eq!(estimate_tokens("1234"), 2);
        assert_eq!(estimate_tokens("1234567"), 3);
    }

    #[test]
    fn code() {
        let code = "fn main() {\n    let x = vec![1, 2, 3];\n    println!(\"{:?}\", x);\n}\n";
        assert_in(code, 22..=32); // 26 / 26
    }

    #[test]
    fn repeated_punctuation_and_camel_case() {
        assert_in("==========", 1..=2); // 1 / 1
        assert_in(&"-".repeat(64), 1..=3); // 1 / 1
        assert_in(&"-".repeat(1000), 16..=40); // 16 / 16: over, the safe side
        assert_in("getElementById", 2..=4); // 2 / 4
        assert_in(" 1234567", 3..=4); // 4 / 4
    }

    #[test]
    fn never_panics_on_odd_input() {
        let odd = "\u{0}\u{7f}\u{300}\u{200d}\u{fe0f}\u{10ffff}\r\n\t \u{a0}\u{2028}ǅ";
        assert!(estimate_tokens(odd) > 0);
        let long = "a".repeat(1 << 20);
        assert!(estimate_tokens(&long) > 1_000);
    }

    #[test]
    fn tally() {
        let mut t = TokenTally::new();
        assert_eq!(t.total(), MESSAGE_OVERHEAD);
        t.text("hello world");
        t.image();
        t.tool_use("read_file", r#"{"path": "a"}"#);
        t.tool_result();
        let expected = MESSAGE_OVERHEAD
            + 2
            + IMAGE_TOKENS
            + TOOL_USE_OVERHEAD
            + estimate_tokens("read_file")
            + estimate_tokens(r#"{"path": "a"}"#)
            + TOOL_RESULT_OVERHEAD;
        assert_eq!(t.total(), expected);
        let mut big = TokenTally::new();
        big.add(u32::MAX);
        big.add(u32::MAX);
        assert_eq!(big.total(), u32::MAX);
    }
}
