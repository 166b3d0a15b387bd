//! Token estimation without a tokenizer.
//!
//! [`estimate_tokens`] approximates what a byte-level BPE tokenizer of the cl100k / o200k family
//! produces, without allocating and at a fraction of a nanosecond per byte. Those tokenizers
//! split text with a regex into *pre-tokens* (a word with the space before it, up to three
//! digits, a run of punctuation, a run of whitespace) and merge bytes inside each one, so the
//! count follows from where runs start and how long they are. The estimate counts a few such
//! local patterns ([`features::Features`], 64 bytes at a time with bit masks) and prices each:
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

// The AVX2 block classifier is the core's only unsafe code (the bindings have one more
// call, `bindings::untrack`); see its module docs.
#[allow(unsafe_code)]
mod classify;
pub mod features;
pub mod image;

use features::Tally;
pub use features::{Feature, Features};

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

/// Hundredths of a token: the estimator's internal unit.
const UNIT: i64 = 100;

/// The price of each [`Features`] count, in hundredths of a token (negative prices undo part
/// of a price already paid: a glued word's punctuation, an indented line's break).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Prices {
    word: i64,
    long_letter: i64,
    other_letter: i64,
    punct_run: i64,
    glued: i64,
    punct_mixed: i64,
    multi_space: i64,
    space_alone: i64,
    newline: i64,
    indent: i64,
    han: i64,
    kana: i64,
    hangul: i64,
}

/// Prices both encodings share: digits (the regex groups them by three and never glues a
/// space to them), repeated punctuation, and rare symbols (too few in any corpus to fit; a
/// token or two each).
const DIGIT_RUN: i64 = 100;
const DIGIT_EXTRA: i64 = 33;
const SPACE_DIGIT: i64 = 100;
/// Runs of one repeated punctuation character are nearly free: 64 `-` are one token.
const PUNCT_REPEAT: i64 = 3;
const ASTRAL: i64 = 200;
const DINGBAT: i64 = 150;
const JOINER: i64 = 100;
const SYMBOL: i64 = 150;

const CL100K: Prices = Prices {
    word: 93,
    long_letter: 20,
    other_letter: 36,
    punct_run: 88,
    glued: -41,
    punct_mixed: 37,
    multi_space: 77,
    space_alone: 143,
    newline: 173,
    indent: -145,
    han: 92,
    kana: 93,
    hangul: 66,
};

/// o200k_base spends ~30 % fewer tokens on Chinese and Japanese than cl100k_base and half as
/// many on Korean; elsewhere the two agree within a few percent.
const O200K: Prices = Prices {
    word: 93,
    long_letter: 20,
    other_letter: 17,
    punct_run: 89,
    glued: -40,
    punct_mixed: 36,
    multi_space: 73,
    space_alone: 118,
    newline: 169,
    indent: -132,
    han: 67,
    kana: 62,
    hangul: 35,
};

/// A price as the vector path multiplies by it: its magnitude as a byte, and its sign.
pub(crate) type ByteWeight = (u8, bool);

/// Every feature's [`ByteWeight`], built at compile time.
const fn byte_weights(prices: &Prices) -> [ByteWeight; features::FEATURES] {
    let mut out = [(0, false); features::FEATURES];
    let mut i = 0;
    while i < features::FEATURES {
        let price = prices.of(Feature::ALL[i]);
        // Non-pattern features (scripts) are never priced this way; a test checks that
        // every pattern price fits.
        let magnitude = price.unsigned_abs();
        out[i] = (
            if magnitude > 255 {
                255
            } else {
                magnitude as u8
            },
            price < 0,
        );
        i += 1;
    }
    out
}

static CL100K_BYTES: [ByteWeight; features::FEATURES] = byte_weights(&CL100K);
static O200K_BYTES: [ByteWeight; features::FEATURES] = byte_weights(&O200K);

impl Prices {
    /// The price of one count of `feature`.
    #[inline(always)]
    const fn of(&self, feature: Feature) -> i64 {
        match feature {
            Feature::Word => self.word,
            Feature::LongLetter => self.long_letter,
            Feature::OtherLetter => self.other_letter,
            Feature::DigitRun => DIGIT_RUN,
            Feature::DigitExtra => DIGIT_EXTRA,
            Feature::SpaceDigit => SPACE_DIGIT,
            Feature::PunctRun => self.punct_run,
            Feature::Glued => self.glued,
            Feature::PunctMixed => self.punct_mixed,
            Feature::PunctRepeat => PUNCT_REPEAT,
            Feature::MultiSpace => self.multi_space,
            Feature::SpaceAlone => self.space_alone,
            Feature::Newline => self.newline,
            Feature::Indent => self.indent,
            Feature::Han => self.han,
            Feature::Kana => self.kana,
            Feature::Hangul => self.hangul,
            Feature::Joiner => JOINER,
            Feature::Astral => ASTRAL,
            Feature::Dingbat => DINGBAT,
            Feature::Symbol => SYMBOL,
        }
    }
}

/// The estimate while it is being counted: the priced sum of the features so far, in
/// hundredths of a token (no per-feature counts are kept).
pub(crate) struct Units {
    prices: &'static Prices,
    units: i64,
}

impl Units {
    pub(crate) fn new(prices: &'static Prices) -> Self {
        Self { prices, units: 0 }
    }

    /// Adds a sum priced elsewhere (the vector path's).
    #[inline(always)]
    pub(crate) fn add_units(&mut self, units: i64) {
        self.units += units;
    }

    pub(crate) fn total(&self) -> i64 {
        self.units
    }
}

impl Tally for Units {
    #[inline(always)]
    fn add(&mut self, feature: Feature, n: u32) {
        // Cannot overflow: a block adds at most 64 × 300, so it would take a text of 10^15
        // blocks; saturating here would cost a third of the scan.
        self.units += i64::from(n) * self.prices.of(feature);
    }
}

/// The pass that prices a text.
struct Estimate<'a> {
    text: &'a str,
    encoding: Encoding,
}

impl classify::Scan for Estimate<'_> {
    type Output = i64;

    #[inline(always)]
    fn scan(self, classify: &impl classify::Classify) -> i64 {
        classify.units(self.text, self.encoding)
    }
}

/// The estimate of `text` in hundredths of a token, with a given classifier.
fn units_with(text: &str, encoding: Encoding, classifier: classify::Classifier) -> i64 {
    classifier.run(Estimate { text, encoding })
}

/// The price table: which tokenizer the text estimate imitates and which provider's rule
/// prices images. OpenAI's two encodings agree within a few percent on English, code and
/// JSON, and disagree by 30–50 % on CJK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// `cl100k_base` (GPT-4, GPT-3.5), images at OpenAI's high detail; also the safe default:
    /// it prices CJK highest, and over-estimating is the safe side when trimming to a window.
    #[default]
    Cl100k,
    /// `o200k_base` (GPT-4o, o-series, GPT-4.1 and later), images at OpenAI's high detail.
    O200k,
    /// `anthropic` (Claude): texts at `cl100k_base`'s prices (Anthropic publishes no
    /// tokenizer; cl100k's are the higher of the two, the safe side), images by Anthropic's
    /// rule.
    Anthropic,
}

/// Which price table each model family uses, by model-name prefix, the first match winning
/// (so `gpt-4o` comes before `gpt-4`). The one place the mapping lives.
const MODELS: &[(&str, Encoding)] = &[
    ("gpt-4o", Encoding::O200k),
    ("gpt-4.1", Encoding::O200k),
    ("gpt-4.5", Encoding::O200k),
    ("gpt-5", Encoding::O200k),
    ("chatgpt-4o", Encoding::O200k),
    ("o1", Encoding::O200k),
    ("o3", Encoding::O200k),
    ("o4", Encoding::O200k),
    ("gpt-4", Encoding::Cl100k),
    ("gpt-3.5", Encoding::Cl100k),
    ("gpt-35", Encoding::Cl100k),
    ("text-embedding-3", Encoding::Cl100k),
    ("text-embedding-ada-002", Encoding::Cl100k),
    ("claude", Encoding::Anthropic),
];

impl Encoding {
    pub(crate) const fn prices(self) -> &'static Prices {
        match self {
            Self::Cl100k | Self::Anthropic => &CL100K,
            Self::O200k => &O200K,
        }
    }

    /// The prices as the vector path multiplies by them.
    pub(crate) fn byte_weights(self) -> &'static [ByteWeight; features::FEATURES] {
        match self {
            Self::Cl100k | Self::Anthropic => &CL100K_BYTES,
            Self::O200k => &O200K_BYTES,
        }
    }

    /// The rule images are priced by.
    #[must_use]
    pub const fn image_rule(self) -> image::ImageRule {
        match self {
            Self::Cl100k | Self::O200k => image::ImageRule::OpenAiHigh,
            Self::Anthropic => image::ImageRule::Anthropic,
        }
    }

    /// The table's name: the encoding's as OpenAI spells it, or `"anthropic"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Cl100k => "cl100k_base",
            Self::O200k => "o200k_base",
            Self::Anthropic => "anthropic",
        }
    }

    /// The price table of a model, by its name (`"gpt-4o"`, `"gpt-4.1-mini"`, `"o3"`,
    /// `"gpt-4"`, `"claude-sonnet-4-5"`; a provider prefix such as `"openai/"` and a
    /// fine-tune's `"ft:"` are ignored), or `None` for a model it does not know.
    #[must_use]
    pub fn for_model(model: &str) -> Option<Self> {
        let model = model.strip_prefix("ft:").unwrap_or(model);
        let model = model.rsplit('/').next().unwrap_or(model);
        MODELS
            .iter()
            .find(|(prefix, _)| {
                model.strip_prefix(prefix).is_some_and(|rest| {
                    // A whole name part: "o3" and "o3-mini", not "o300".
                    rest.is_empty()
                        || rest.starts_with(['-', '.', ':', '@'])
                        || prefix.ends_with(|c: char| !c.is_ascii_digit())
                })
            })
            .map(|&(_, encoding)| encoding)
    }
}

impl std::str::FromStr for Encoding {
    type Err = String;

    /// `"cl100k_base"`/`"cl100k"`, `"o200k_base"`/`"o200k"`, `"anthropic"`, or a model name
    /// ([`Encoding::for_model`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cl100k_base" | "cl100k" => Ok(Self::Cl100k),
            "o200k_base" | "o200k" => Ok(Self::O200k),
            "anthropic" => Ok(Self::Anthropic),
            other => Self::for_model(other).ok_or_else(|| {
                format!(
                    "unknown encoding or model {other:?}: expected \"cl100k_base\", \"o200k_base\", \
                     \"anthropic\" or a model name such as \"gpt-4o\", \"gpt-4\", \"o3\" or \"claude-…\""
                )
            }),
        }
    }
}

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
    let units = units_with(text, encoding, classify::Classifier::detect()).max(UNIT);
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

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    /// Every feature's count times its price, field by field.
    fn priced(f: &Features, p: &Prices) -> i64 {
        let pairs = [
            (f.word, Feature::Word),
            (f.long_letter, Feature::LongLetter),
            (f.other_letter, Feature::OtherLetter),
            (f.digit_run, Feature::DigitRun),
            (f.digit_extra, Feature::DigitExtra),
            (f.space_digit, Feature::SpaceDigit),
            (f.punct_run, Feature::PunctRun),
            (f.glued, Feature::Glued),
            (f.punct_mixed, Feature::PunctMixed),
            (f.punct_repeat, Feature::PunctRepeat),
            (f.multi_space, Feature::MultiSpace),
            (f.space_alone, Feature::SpaceAlone),
            (f.newline, Feature::Newline),
            (f.indent, Feature::Indent),
            (f.han, Feature::Han),
            (f.kana, Feature::Kana),
            (f.hangul, Feature::Hangul),
            (f.joiner, Feature::Joiner),
            (f.astral, Feature::Astral),
            (f.dingbat, Feature::Dingbat),
            (f.symbol, Feature::Symbol),
        ];
        pairs
            .iter()
            .map(|&(n, feature)| n as i64 * p.of(feature))
            .sum()
    }

    /// The vector path (four blocks per step, byte popcounts, multiply-adds), the one-block
    /// path and the priced feature counts give `text` the same estimate.
    fn paths_agree(text: &str, encodings: &[Encoding]) -> Result<(), TestCaseError> {
        for &encoding in encodings {
            let scalar = units_with(text, encoding, classify::Classifier::SCALAR);
            prop_assert_eq!(
                units_with(text, encoding, classify::Classifier::detect()),
                scalar
            );
            prop_assert_eq!(priced(&features::features(text), encoding.prices()), scalar);
        }
        Ok(())
    }

    const MIXED: &str =
        "[ a-zA-Z0-9.,:;(){}\\[\\]\"'=_/\\-\t\n\r\u{a0}\u{2028}éЖ中こ한。😀\u{200d}✓—]{0,700}";

    proptest! {
        /// The vector path (four blocks per step, byte popcounts, multiply-adds) and the
        /// one-block path give the same estimate, and both are the priced feature counts.
        #[test]
        fn vector_and_scalar_paths_agree(text in MIXED) {
            paths_agree(&text, &[Encoding::Cl100k, Encoding::O200k])?;
        }

        /// Long ASCII runs take the vector path's whole-group shortcut; a rare non-ASCII
        /// character sends a group down the block-by-block path.
        #[test]
        fn vector_and_scalar_paths_agree_on_mostly_ascii_text(
            text in "([ a-zA-Z0-9.,:;(){}=_/\\-\t\n\"]{0,400}(中|é|😀| \u{a0}|Жж)?){0,8}"
        ) {
            paths_agree(&text, &[Encoding::Cl100k, Encoding::O200k])?;
        }

        /// CJK, kana, hangul and fullwidth runs take the vector path's script groups; other
        /// characters (Yi, jamo, `￥`, emoji, Cyrillic) must be decoded and send a group down
        /// the block-by-block path.
        #[test]
        fn vector_and_scalar_paths_agree_on_cjk_text(
            text in "([中文字こカ한국ー、。，！（）ｱ]{0,200}([ a-z0-9\n]{0,5}|é|😀|Ж|ꀀ|ㄱ|￥)?){0,6}"
        ) {
            paths_agree(&text, &[Encoding::Cl100k, Encoding::O200k])?;
        }

        /// One whole group and a tail too long for block-at-a-time: the text's last group is
        /// read from further back, and each byte it prices looks back only within it.
        #[test]
        fn vector_and_scalar_paths_agree_on_an_overlapped_last_group(
            text in "[a-z0-9 .]{385,511}"
        ) {
            paths_agree(&text, &[Encoding::Cl100k])?;
        }

        /// Long runs with no ASCII (read as script runs, the text's last one overlapping the
        /// one before), between ASCII words and spaces and characters that must be decoded.
        #[test]
        fn vector_and_scalar_paths_agree_on_runs_of_cjk(
            runs in proptest::collection::vec(("[中文こカ한국ー、。，ｱ]{0,300}", "( |  |a |x|\n|1|é|ꀀ|ㄱ|\u{3000})?"), 1..4)
        ) {
            let text: String = runs.into_iter().map(|(run, gap)| run + &gap).collect();
            paths_agree(&text, &[Encoding::Cl100k, Encoding::O200k])?;
        }

        /// Texts that end exactly where a group of four blocks does, so the script group's
        /// last byte has no byte after it in the text; near the end, a character that must be
        /// decoded (`ㄱ`, `ꀀ`) follows one whose last byte would make it CJK or hangul if read
        /// as its second byte (`一` ends in `80`, `丿` in `BF`).
        #[test]
        fn vector_and_scalar_paths_agree_on_cjk_ending_a_group(
            chars in proptest::collection::vec(proptest::sample::select(vec!['中', '한', '一', '，', 'ー']), 0..170),
            end in proptest::sample::select(vec!["", "一ㄱ", "丿ꀀ", "一ㄱ中", "丿ꀀ한一"]),
            groups in 1usize..3,
        ) {
            let size = 256 * groups;
            let mut tail = String::new();
            for c in chars {
                if tail.len() + c.len_utf8() + end.len() <= size {
                    tail.push(c);
                }
            }
            tail.push_str(end);
            let text = "a".repeat(size - tail.len()) + &tail;
            paths_agree(&text, &[Encoding::Cl100k])?;
        }

        #[test]
        fn vector_and_scalar_paths_agree_on_any_text(text in any::<String>()) {
            paths_agree(&text, &[Encoding::Cl100k])?;
        }
    }

    /// A run of CJK read by script alone right after a whole group that ends with a space:
    /// the space before the run is still priced.
    #[test]
    fn space_before_a_run_of_cjk_after_a_whole_group() {
        for run in ["中", "こ", "한"] {
            let text = run.repeat(85) + " " + &run.repeat(100);
            assert_eq!(text.as_bytes()[255], b' ');
            paths_agree(&text, &[Encoding::Cl100k]).unwrap();
        }
    }

    #[test]
    fn vector_path_folds_long_texts_exactly() {
        // Over 1,024 groups of four blocks, so the 32-bit sums are folded mid-text.
        let text = "fn main() { let x = 42; }\n    // 中文 Ж — done.\n".repeat(8_000);
        assert!(text.len() > 1_024 * 256);
        let scalar = units_with(&text, Encoding::Cl100k, classify::Classifier::SCALAR);
        assert_eq!(
            units_with(&text, Encoding::Cl100k, classify::Classifier::detect()),
            scalar
        );
    }

    #[test]
    fn pattern_prices_fit_a_byte() {
        // The vector path multiplies counts by |price| as an unsigned byte.
        for prices in [&CL100K, &O200K] {
            for feature in [
                Feature::Word,
                Feature::LongLetter,
                Feature::DigitRun,
                Feature::DigitExtra,
                Feature::SpaceDigit,
                Feature::PunctRun,
                Feature::Glued,
                Feature::PunctMixed,
                Feature::PunctRepeat,
                Feature::MultiSpace,
                Feature::SpaceAlone,
                Feature::Newline,
                Feature::Indent,
            ] {
                assert!(prices.of(feature).unsigned_abs() < 256, "{feature:?}");
            }
        }
    }

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
