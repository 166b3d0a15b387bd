//! What the estimator counts: the [`Feature`]s of a text and their counts, [`Features`].
//!
//! Every feature is a local pattern over byte classes — a letter whose six predecessors are
//! letters too, a digit right after a space, a punctuation character after a different one —
//! or a non-ASCII character counted by what it is (CJK, kana, hangul, emoji, symbols). This
//! module only names them; `patterns` finds them and `prices` prices them.
//!
//! Invariants: `Feature::ALL` lists every feature in declaration order
//! (`ALL[f as usize] == f`), and `FEATURES` is its length; a [`Tally`] only ever adds.

/// Counts of the patterns the estimate prices. A *word* is a run of letters (ASCII or not), a
/// *space* is a space, tab or Unicode space, a *line break* is `\n`, `\r` or a Unicode line
/// separator, *punctuation* is any other ASCII byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// Words (the first letter of each run of letters).
    pub word: u64,
    /// ASCII letters with at least six letters before them in their word.
    pub long_letter: u64,
    /// Non-ASCII letters.
    pub other_letter: u64,
    /// Runs of digits.
    pub digit_run: u64,
    /// Digits with at least three digits before them in their run.
    pub digit_extra: u64,
    /// Digits right after a space.
    pub space_digit: u64,
    /// Runs of punctuation.
    pub punct_run: u64,
    /// Words right after a single punctuation character (`.name`, `_id`, `"key`).
    pub glued: u64,
    /// Punctuation right after a different punctuation character (`{"`, `");`).
    pub punct_mixed: u64,
    /// Punctuation right after the same character (`====`, `))`).
    pub punct_repeat: u64,
    /// Words, digits or punctuation right after two or more spaces (indentation).
    pub multi_space: u64,
    /// A space followed by something other than a word, digit, punctuation, space or line
    /// break: a CJK character, an emoji, the end of the text.
    pub space_alone: u64,
    /// Runs of line breaks.
    pub newline: u64,
    /// Spaces right after a line break.
    pub indent: u64,
    /// CJK ideographs, CJK punctuation and fullwidth forms.
    pub han: u64,
    /// Hiragana and katakana.
    pub kana: u64,
    /// Hangul syllables and jamo.
    pub hangul: u64,
    /// Zero-width joiners and variation selectors.
    pub joiner: u64,
    /// Emoji and other characters outside the Basic Multilingual Plane.
    pub astral: u64,
    /// Miscellaneous symbols and dingbats (☀, ✓, ❤).
    pub dingbat: u64,
    /// Other non-ASCII punctuation and symbols (curly quotes, dashes, bullets, currency).
    pub symbol: u64,
}

/// One pattern of [`Features`], for [`Tally::add`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    Word,
    LongLetter,
    OtherLetter,
    DigitRun,
    DigitExtra,
    SpaceDigit,
    PunctRun,
    Glued,
    PunctMixed,
    PunctRepeat,
    MultiSpace,
    SpaceAlone,
    Newline,
    Indent,
    Han,
    Kana,
    Hangul,
    Joiner,
    Astral,
    Dingbat,
    Symbol,
}

/// How many [`Feature`]s there are.
pub(crate) const FEATURES: usize = 21;

impl Feature {
    /// Every feature, in declaration order (`ALL[f as usize] == f`).
    pub(crate) const ALL: [Self; FEATURES] = [
        Self::Word,
        Self::LongLetter,
        Self::OtherLetter,
        Self::DigitRun,
        Self::DigitExtra,
        Self::SpaceDigit,
        Self::PunctRun,
        Self::Glued,
        Self::PunctMixed,
        Self::PunctRepeat,
        Self::MultiSpace,
        Self::SpaceAlone,
        Self::Newline,
        Self::Indent,
        Self::Han,
        Self::Kana,
        Self::Hangul,
        Self::Joiner,
        Self::Astral,
        Self::Dingbat,
        Self::Symbol,
    ];
}

/// Where the counts go: [`Features`] keeps each one; the estimate keeps only their priced
/// sum, in one register.
pub trait Tally {
    fn add(&mut self, feature: Feature, n: u32);
}

impl Tally for Features {
    #[inline(always)]
    fn add(&mut self, feature: Feature, n: u32) {
        let count = match feature {
            Feature::Word => &mut self.word,
            Feature::LongLetter => &mut self.long_letter,
            Feature::OtherLetter => &mut self.other_letter,
            Feature::DigitRun => &mut self.digit_run,
            Feature::DigitExtra => &mut self.digit_extra,
            Feature::SpaceDigit => &mut self.space_digit,
            Feature::PunctRun => &mut self.punct_run,
            Feature::Glued => &mut self.glued,
            Feature::PunctMixed => &mut self.punct_mixed,
            Feature::PunctRepeat => &mut self.punct_repeat,
            Feature::MultiSpace => &mut self.multi_space,
            Feature::SpaceAlone => &mut self.space_alone,
            Feature::Newline => &mut self.newline,
            Feature::Indent => &mut self.indent,
            Feature::Han => &mut self.han,
            Feature::Kana => &mut self.kana,
            Feature::Hangul => &mut self.hangul,
            Feature::Joiner => &mut self.joiner,
            Feature::Astral => &mut self.astral,
            Feature::Dingbat => &mut self.dingbat,
            Feature::Symbol => &mut self.symbol,
        };
        *count += u64::from(n);
    }
}
