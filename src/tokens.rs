//! Token estimation without a tokenizer.
//!
//! [`estimate_tokens`] approximates what a byte-level BPE tokenizer of the cl100k / o200k family
//! produces, in one pass over the characters and without allocating. Those tokenizers first
//! split text with a regex into *pre-tokens* (a word with the space before it, up to three
//! digits, a run of punctuation, a run of whitespace) and then merge bytes inside each
//! pre-token. So the estimator walks the same runs and prices each one:
//!
//! | run | price (tokens) | why |
//! |---|---|---|
//! | ASCII word, space before it included | 1 up to ~6 letters, then ~1 per 4.5 letters, +½ per camelCase hump | common words are single tokens; long or rare words split into 4–5 letter pieces |
//! | digits | 1 per 3 | the regex groups digits by three |
//! | ASCII punctuation run | 1, +½ per extra char; a single char glued to a following word ≈ ¼ | `{"`, `":`, `",` are single tokens; `.name`, `_id` usually merge |
//! | whitespace | a single space before a word is free; a newline run 1; an indentation or space run 1 | the regex folds one space into the next word, and the vocabularies hold long space runs |
//! | CJK ideograph, kana, hangul, CJK punctuation | ~1 each | 3-byte UTF-8 characters: the common ones are single tokens, rare ones split |
//! | other letters (Cyrillic, Greek, Arabic, Hebrew, Devanagari, accented Latin) | ~1 per 2.5 | 2-byte characters merge less than ASCII |
//! | emoji and symbols ≥ U+1F000 | 2 each | 4-byte characters rarely have a token of their own |
//! | variation selectors, ZWJ | 1 each | |
//!
//! Prices are kept in hundredths of a token and rounded once at the end, so fractions add up
//! instead of being rounded away run by run.
//!
//! Invariants: `estimate_tokens("") == 0`; any non-empty text costs at least 1; the estimate
//! never panics and saturates at `u32::MAX`.
//!
//! Per message, [`TokenTally`] adds the framing every chat API charges ([`MESSAGE_OVERHEAD`]),
//! a flat price per image ([`IMAGE_TOKENS`]) and tool calls (name, JSON input and the ids).

/// Tokens every message costs beyond its content: role markers and separators in the chat
/// template (OpenAI documents 3 per message plus 3 to prime the reply; 4 rounds that up).
pub const MESSAGE_OVERHEAD: u32 = 4;

/// Flat price of one image.
///
/// Providers price images by size: OpenAI's high-detail 1024×1024 image costs 765 tokens and a
/// 2048×768 one 1105; Anthropic charges width×height/750, about 1,600 at its 1.15-megapixel
/// limit and ~1,050 for an 800×1000 screenshot. The core does not see pixel sizes, so it takes
/// 1,000, near the middle of common cases; an exact counter from Python can replace it.
pub const IMAGE_TOKENS: u32 = 1_000;

/// Tokens a tool call costs beyond its name and JSON input: the call id (ids like
/// `toolu_01A09q90qw90lq917835lq9` are ~10 tokens) and the block's framing.
pub const TOOL_USE_OVERHEAD: u32 = 12;

/// Tokens a tool result block costs beyond its content: the id it answers and the framing.
pub const TOOL_RESULT_OVERHEAD: u32 = 12;

/// Hundredths of a token: the estimator's internal unit.
const UNIT: u64 = 100;

/// Estimates how many tokens `text` is for a cl100k/o200k-style BPE tokenizer.
///
/// ```
/// use ctxtrim::tokens::estimate_tokens;
/// assert_eq!(estimate_tokens(""), 0);
/// assert_eq!(estimate_tokens("hello world"), 2);
/// ```
#[must_use]
pub fn estimate_tokens(text: &str) -> u32 {
    let mut est = Estimator::default();
    est.feed_str(text);
    est.finish()
}

/// What kind of run the estimator is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum Run {
    /// Nothing pending (start, or after a character priced on its own).
    #[default]
    None,
    /// Letters: ASCII and other alphabetic characters.
    Word,
    /// ASCII digits.
    Digits,
    /// ASCII punctuation and symbols.
    Punct,
    /// Spaces and tabs.
    Spaces,
    /// Line breaks.
    Newlines,
}

/// The class of one character, as far as pricing is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    AsciiLetter {
        upper: bool,
    },
    OtherLetter,
    Digit,
    Punct,
    Space,
    Newline,
    /// A character priced on its own, in hundredths of a token.
    Alone(u64),
}

fn classify(c: char) -> Class {
    if c.is_ascii() {
        return match c {
            'a'..='z' => Class::AsciiLetter { upper: false },
            'A'..='Z' => Class::AsciiLetter { upper: true },
            '0'..='9' => Class::Digit,
            ' ' | '\t' => Class::Space,
            '\n' | '\r' => Class::Newline,
            // Other control characters are rare; price them like punctuation.
            _ => Class::Punct,
        };
    }
    let cp = u32::from(c);
    match cp {
        // Hiragana, katakana, CJK symbols and punctuation, fullwidth forms.
        0x3000..=0x30FF | 0xFF00..=0xFFEF => Class::Alone(UNIT),
        // CJK unified ideographs (with extension A) and compatibility ideographs.
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF => Class::Alone(UNIT),
        // Hangul syllables and jamo.
        0xAC00..=0xD7AF | 0x1100..=0x11FF | 0x3130..=0x318F => Class::Alone(UNIT),
        // Rare ideographs in the supplementary planes: 4 bytes, usually two tokens.
        0x20000..=0x3FFFF => Class::Alone(2 * UNIT),
        // Zero-width joiner and variation selectors.
        0x200D | 0xFE00..=0xFE0F => Class::Alone(UNIT),
        // Emoji, pictographs and other 4-byte symbols.
        0x1F000..=0x1FFFF => Class::Alone(2 * UNIT),
        // Misc symbols and dingbats (☀, ✓, ❤): 3 bytes, a token or two.
        0x2600..=0x27BF => Class::Alone(3 * UNIT / 2),
        // Non-breaking and other Unicode spaces behave like a space.
        0x00A0 | 0x2000..=0x200A | 0x202F | 0x205F => Class::Space,
        // Line and paragraph separators.
        0x2028 | 0x2029 | 0x0085 => Class::Newline,
        // Combining marks extend the previous letter.
        0x0300..=0x036F => Class::OtherLetter,
        _ if c.is_alphabetic() => Class::OtherLetter,
        // Typographic punctuation and symbols: quotes, dashes, bullets, currency.
        _ => Class::Alone(UNIT),
    }
}

/// A streaming estimator: feed text in pieces, read the total at the end. It holds only a few
/// counters, so one estimator can price a whole message made of several text blocks.
#[derive(Clone, Debug, Default)]
struct Estimator {
    /// Hundredths of a token for runs already closed.
    units: u64,
    run: Run,
    /// Characters in the current run.
    len: u32,
    /// ASCII letters in the current word.
    ascii_letters: u32,
    /// Other alphabetic characters in the current word.
    other_letters: u32,
    /// Lower-to-upper case changes in the current word (camelCase humps).
    humps: u32,
    /// Whether the previous character was a lowercase ASCII letter.
    prev_lower: bool,
}

impl Estimator {
    fn feed_str(&mut self, text: &str) {
        for c in text.chars() {
            self.feed(c);
        }
    }

    fn feed(&mut self, c: char) {
        let class = classify(c);
        let run = match class {
            Class::AsciiLetter { .. } | Class::OtherLetter => Run::Word,
            Class::Digit => Run::Digits,
            Class::Punct => Run::Punct,
            Class::Space => Run::Spaces,
            Class::Newline => Run::Newlines,
            Class::Alone(units) => {
                self.close(Run::None);
                self.units = self.units.saturating_add(units);
                return;
            }
        };
        if run != self.run {
            self.close(run);
            self.run = run;
        }
        self.len = self.len.saturating_add(1);
        match class {
            Class::AsciiLetter { upper } => {
                self.ascii_letters = self.ascii_letters.saturating_add(1);
                if upper && self.prev_lower {
                    self.humps = self.humps.saturating_add(1);
                }
                self.prev_lower = !upper;
            }
            Class::OtherLetter => {
                self.other_letters = self.other_letters.saturating_add(1);
                self.prev_lower = false;
            }
            _ => {}
        }
    }

    /// Prices the current run, knowing which run comes next (`Run::None` at the end or before
    /// a character priced alone), and resets the run state.
    fn close(&mut self, next: Run) {
        let n = u64::from(self.len);
        let cost = match self.run {
            Run::None => 0,
            Run::Word => word_cost(
                u64::from(self.ascii_letters),
                u64::from(self.other_letters),
                u64::from(self.humps),
            ),
            Run::Digits => n.div_ceil(3) * UNIT,
            Run::Punct => {
                if n == 1 && next == Run::Word {
                    // `.name`, `_id`, `(self`: the regex glues one punctuation character to
                    // the word after it, and the pair is often a single token.
                    UNIT / 4
                } else {
                    UNIT + (n - 1) * UNIT / 2
                }
            }
            Run::Spaces => match next {
                // Spaces before a line break fold into the line-break token.
                Run::Newlines => 0,
                // One space merges into the word or punctuation after it; a longer run is one
                // token for all but the last space.
                Run::Word | Run::Punct => {
                    if n == 1 {
                        0
                    } else {
                        UNIT
                    }
                }
                // The regex never glues a space to digits: " 42" is two tokens.
                Run::Digits => {
                    if n == 1 {
                        UNIT
                    } else {
                        2 * UNIT
                    }
                }
                Run::None | Run::Spaces => UNIT,
            },
            Run::Newlines => UNIT,
        };
        self.units = self.units.saturating_add(cost);
        self.run = Run::None;
        self.len = 0;
        self.ascii_letters = 0;
        self.other_letters = 0;
        self.humps = 0;
        self.prev_lower = false;
    }

    fn finish(mut self) -> u32 {
        self.close(Run::None);
        let tokens = self.units.div_ceil(UNIT);
        u32::try_from(tokens).unwrap_or(u32::MAX)
    }
}

/// Price of one word in hundredths of a token.
fn word_cost(ascii: u64, other: u64, humps: u64) -> u64 {
    let mut cost = 0;
    if ascii > 0 {
        // Up to ~6 letters is one token; beyond that BPE pieces average 4–5 letters.
        cost += UNIT + ascii.saturating_sub(6) * UNIT * 2 / 9;
        cost += humps * UNIT / 2;
    }
    // Non-ASCII letters take 2 bytes each and merge about 2.5 to a token.
    cost += other * UNIT * 2 / 5;
    cost.max(UNIT)
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
        Self {
            total: u64::from(MESSAGE_OVERHEAD),
        }
    }

    /// Adds a text block (or a tool result's text content).
    pub fn text(&mut self, text: &str) {
        self.add(estimate_tokens(text));
    }

    /// Adds one image at the flat [`IMAGE_TOKENS`] price.
    pub fn image(&mut self) {
        self.add(IMAGE_TOKENS);
    }

    /// Adds a tool call: its name, its JSON input and [`TOOL_USE_OVERHEAD`].
    pub fn tool_use(&mut self, name: &str, json_input: &str) {
        self.add(TOOL_USE_OVERHEAD);
        self.add(estimate_tokens(name));
        self.add(estimate_tokens(json_input));
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
        assert_eq!(estimate_tokens("hello world"), 2);
        assert_in("The quick brown fox jumps over the lazy dog.", 9..=12);
        let para = "Large language models read text as tokens, not characters. \
            A tokenizer splits each word into pieces from a fixed vocabulary: common words \
            such as the, and, or which become a single token, while rarer words are broken \
            into several fragments. Numbers are grouped by three digits, and punctuation \
            usually costs one token each. This paragraph is about four hundred characters long.";
        assert!((360..=440).contains(&para.len()), "{}", para.len());
        assert_in(para, 75..=110);
    }

    #[test]
    fn json_payload() {
        assert_in(r#"{"path": "/src/main.rs", "line": 42}"#, 13..=20);
    }

    #[test]
    fn cjk_is_about_one_token_per_character() {
        let zh = "我们今天讨论大型语言模型如何处理中文文本以及为什么按字符数除以四的估计方法会严重低估中文的词元数量这对上下文窗口管理非常重要因为低估会导致请求被拒绝所以我们需要一个更好的估计方法来避免这种情况发生并且保证准确";
        let zh: String = zh.chars().take(100).collect();
        assert_eq!(zh.chars().count(), 100);
        assert_in(&zh, 70..=130);
        assert_in("こんにちは世界", 5..=10);
        assert_in("안녕하세요", 3..=8);
    }

    #[test]
    fn other_scripts_and_emoji() {
        assert_in("Привет, как дела?", 5..=12);
        assert_in("😀😀😀", 4..=9);
        assert_in("👨\u{200d}👩\u{200d}👧", 5..=10);
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
        assert_in(code, 22..=36);
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
