//! What the estimator counts: the [`Features`] of a text, found 64 bytes at a time.
//!
//! Every feature is a local pattern over byte classes — a letter whose six predecessors are
//! letters too, a digit right after a space, a punctuation character after a different one —
//! so a 64-byte block becomes a few 64-bit masks (one bit per byte, from
//! [`super::classify`]) and each feature a shift, an AND and a popcount. Masks carry their top
//! bits into the next block, so a pattern that straddles two blocks counts as it would inside
//! one. Non-ASCII characters are decoded one by one and marked by what they are: letters
//! (Cyrillic, accented Latin, combining marks) join words, Unicode spaces and line separators
//! act as spaces and line breaks, and the rest (CJK, kana, hangul, emoji, symbols) is counted
//! by script and separates runs. CJK ideographs U+4000..=U+9FFF are counted straight from
//! their lead bytes, without decoding.
//!
//! Invariant: [`features`] equals a byte-by-byte count of the same patterns
//! (`matches_reference`, property-tested), whichever classifier runs.

use super::classify::{Classifier, Classify, Scan};

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

/// What a non-ASCII character is: part of a word, a space, a line break, or a character
/// counted on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Char {
    Letter,
    Space,
    Newline,
    Alone(Feature),
}

pub(crate) fn kind(c: char) -> Char {
    match u32::from(c) {
        0x3040..=0x30FF => Char::Alone(Feature::Kana),
        // CJK symbols and punctuation, fullwidth forms, ideographs (extension A, the unified
        // block — with the Yijing hexagrams U+4DC0..U+4DFF, which share its lead bytes — and
        // compatibility ideographs).
        0x3000..=0x303F | 0xFF00..=0xFFEF | 0x3400..=0x9FFF | 0xF900..=0xFAFF => {
            Char::Alone(Feature::Han)
        }
        0xAC00..=0xD7FF | 0x1100..=0x11FF | 0x3130..=0x318F => Char::Alone(Feature::Hangul),
        0x200D | 0xFE00..=0xFE0F => Char::Alone(Feature::Joiner),
        0x1_0000..=0x10_FFFF => Char::Alone(Feature::Astral),
        0x2600..=0x27BF => Char::Alone(Feature::Dingbat),
        0x00A0 | 0x2000..=0x200A | 0x202F | 0x205F => Char::Space,
        0x0085 | 0x2028 | 0x2029 => Char::Newline,
        0x0300..=0x036F => Char::Letter,
        _ if c.is_alphabetic() => Char::Letter,
        _ => Char::Alone(Feature::Symbol),
    }
}

/// The masks of the previous block that the patterns look back into.
#[derive(Clone, Copy, Default)]
struct Carry {
    word: u64,
    /// Bytes ending a run of ≥ 2 word bytes, ≥ 4 word bytes.
    word2: u64,
    word4: u64,
    digit: u64,
    digit2: u64,
    punct: u64,
    space: u64,
    newline: u64,
}

/// `x` seen `k` bytes later: bit `i` is bit `i - k` of `x`, continued from the previous block.
#[inline]
fn back(x: u64, carry: u64, k: u32) -> u64 {
    (x << k) | (carry >> (64 - k))
}

/// The bits `from..to` (`to <= 64`).
#[inline]
fn span(from: usize, to: usize) -> u64 {
    let high = if to >= 64 { u64::MAX } else { (1u64 << to) - 1 };
    high & !((1u64 << from) - 1)
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

/// [`tally`] with a given classifier.
#[must_use]
pub fn tally_with<T: Tally>(text: &str, classifier: Classifier, tally: T) -> T {
    classifier.run(Count { text, tally })
}

/// The counting pass of [`tally_with`].
struct Count<'a, T> {
    text: &'a str,
    tally: T,
}

impl<T: Tally> Scan for Count<'_, T> {
    type Output = T;

    #[inline(always)]
    fn scan(self, classify: &impl Classify) -> T {
        count(self.text, classify, self.tally)
    }
}

#[inline(always)]
fn count<T: Tally>(text: &str, classify: &impl Classify, tally: T) -> T {
    let bytes = text.as_bytes();
    let mut counter = Counter {
        text,
        tally,
        carry: Carry::default(),
        spill: None,
    };
    let mut off = 0;
    while off < bytes.len() {
        let len = (bytes.len() - off).min(64);
        match off
            .checked_sub(1)
            .and_then(|before| bytes[before..].first_chunk::<65>())
        {
            // The hot path: a whole block, read in place with the byte before it.
            Some(window) if len == 64 => {
                counter.block(
                    classify,
                    off,
                    first64(&window[1..]),
                    first64(window),
                    u64::MAX,
                );
            }
            _ => {
                // The first block and a short last one: copy into a zero-padded buffer.
                let mut buf = [0u8; 65];
                buf[0] = off.checked_sub(1).map_or(0, |before| bytes[before]);
                buf[1..=len].copy_from_slice(&bytes[off..off + len]);
                counter.block(
                    classify,
                    off,
                    first64(&buf[1..]),
                    first64(&buf),
                    span(0, len),
                );
            }
        }
        off += len;
    }
    let mut f = counter.tally;
    // The end of the text follows a trailing space the way a CJK character would.
    if text
        .chars()
        .next_back()
        .is_some_and(|c| c == ' ' || c == '\t' || kind(c) == Char::Space)
    {
        f.add(Feature::SpaceAlone, 1);
    }
    f
}

/// The state of a count between blocks.
struct Counter<'a, T> {
    text: &'a str,
    tally: T,
    carry: Carry,
    /// A character whose bytes run on into the next block: how many, and what it is.
    spill: Option<(usize, Char)>,
}

impl<T: Tally> Counter<'_, T> {
    /// Counts the block at byte `off`: `cur`, with `prev` the same shifted back by one byte,
    /// and `valid` the bits of `cur` inside the text.
    #[inline(always)]
    fn block(
        &mut self,
        classify: &impl Classify,
        off: usize,
        cur: &[u8; 64],
        prev: &[u8; 64],
        valid: u64,
    ) {
        let (f, carry, text) = (&mut self.tally, self.carry, self.text);
        let m = classify.ascii(cur, prev);
        let letter = m.letter & valid;
        let digit = m.digit & valid;
        let punct = m.punct & valid;
        let mut word = letter;
        let mut space = m.space & valid;
        let mut newline = m.newline & valid;
        let ascii = m.nonascii & valid == 0;
        if !ascii {
            let mut mark = |c: Char, bits: u64| match c {
                Char::Letter => word |= bits,
                Char::Space => space |= bits,
                Char::Newline => newline |= bits,
                Char::Alone(_) => {}
            };
            if let Some((n, c)) = self.spill.take() {
                mark(c, span(0, n));
            }
            let wide = classify.wide(cur);
            f.add(Feature::Han, (wide.han & valid).count_ones());
            f.add(Feature::Kana, (wide.kana & valid).count_ones());
            f.add(Feature::Hangul, (wide.hangul & valid).count_ones());
            let mut leads = wide.lead & valid;
            while leads != 0 {
                let i = leads.trailing_zeros() as usize;
                leads &= leads - 1;
                let Some(ch) = text.get(off + i..).and_then(|s| s.chars().next()) else {
                    continue;
                };
                let c = kind(ch);
                match c {
                    Char::Letter => f.add(Feature::OtherLetter, 1),
                    Char::Alone(feature) => f.add(feature, 1),
                    Char::Space | Char::Newline => {}
                }
                let end = i + ch.len_utf8();
                mark(c, span(i, end.min(64)));
                if end > 64 {
                    self.spill = Some((end - 64, c));
                }
            }
        }

        let word1 = back(word, carry.word, 1);
        let word2 = word & word1;
        let word4 = word2 & back(word2, carry.word2, 2);
        let word7 = word4 & back(word4, carry.word4, 3);
        let digit1 = back(digit, carry.digit, 1);
        let digit2 = digit & digit1;
        let digit4 = digit2 & back(digit2, carry.digit2, 2);
        let punct1 = back(punct, carry.punct, 1);
        let punct2 = back(punct, carry.punct, 2);
        let space1 = back(space, carry.space, 1);
        let space2 = back(space, carry.space, 2);
        let newline1 = back(newline, carry.newline, 1);
        let run_punct = punct & punct1;

        f.add(Feature::Word, (word & !word1).count_ones());
        f.add(Feature::LongLetter, (letter & word7).count_ones());
        f.add(Feature::DigitRun, (digit & !digit1).count_ones());
        f.add(Feature::DigitExtra, digit4.count_ones());
        f.add(Feature::SpaceDigit, (digit & space1).count_ones());
        f.add(Feature::PunctRun, (punct & !punct1).count_ones());
        f.add(Feature::Glued, (word & punct1 & !punct2).count_ones());
        f.add(Feature::PunctMixed, (run_punct & !m.same).count_ones());
        f.add(Feature::PunctRepeat, (run_punct & m.same).count_ones());
        let solid = word | digit | punct;
        f.add(Feature::MultiSpace, (solid & space1 & space2).count_ones());
        if !ascii {
            // Only a non-ASCII character can be none of these classes.
            let other = valid & !(solid | space | newline);
            f.add(Feature::SpaceAlone, (other & space1).count_ones());
        }
        f.add(Feature::Newline, (newline & !newline1).count_ones());
        f.add(Feature::Indent, (space & newline1).count_ones());

        self.carry = Carry {
            word,
            word2,
            word4,
            digit,
            digit2,
            punct,
            space,
            newline,
        };
    }
}

/// The first 64 bytes of a slice known to hold at least that many.
#[inline]
fn first64(s: &[u8]) -> &[u8; 64] {
    match s.first_chunk::<64>() {
        Some(block) => block,
        None => unreachable!("blocks are 64 bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The byte classes of the reference, one per byte.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum C {
        Word { ascii: bool },
        Digit,
        Punct,
        Space,
        Newline,
        None,
    }

    /// The same patterns counted byte by byte, with no masks, blocks or carries.
    fn reference(text: &str) -> Features {
        let mut f = Features::default();
        let mut classes = Vec::new();
        for ch in text.chars() {
            let c = if ch.is_ascii() {
                match ch {
                    'a'..='z' | 'A'..='Z' => C::Word { ascii: true },
                    '0'..='9' => C::Digit,
                    ' ' | '\t' => C::Space,
                    '\n' | '\r' => C::Newline,
                    _ => C::Punct,
                }
            } else {
                match kind(ch) {
                    Char::Letter => {
                        f.other_letter += 1;
                        C::Word { ascii: false }
                    }
                    Char::Space => C::Space,
                    Char::Newline => C::Newline,
                    Char::Alone(feature) => {
                        f.add(feature, 1);
                        C::None
                    }
                }
            };
            classes.extend(std::iter::repeat_n(c, ch.len_utf8()));
        }
        classes.push(C::None); // the end of the text
        let bytes = text.as_bytes();
        let at = |i: usize, k: usize| i.checked_sub(k).map_or(C::None, |j| classes[j]);
        let word = |c: C| matches!(c, C::Word { .. });
        for (i, &c) in classes.iter().enumerate() {
            let p1 = at(i, 1);
            let p2 = at(i, 2);
            let n = |b: bool| u64::from(b);
            f.word += n(word(c) && !word(p1));
            f.long_letter += n(c == C::Word { ascii: true } && (1..=6).all(|k| word(at(i, k))));
            f.digit_run += n(c == C::Digit && p1 != C::Digit);
            f.digit_extra += n(c == C::Digit && (1..=3).all(|k| at(i, k) == C::Digit));
            f.space_digit += n(c == C::Digit && p1 == C::Space);
            f.punct_run += n(c == C::Punct && p1 != C::Punct);
            f.glued += n(word(c) && p1 == C::Punct && p2 != C::Punct);
            let same = i > 0 && i < bytes.len() && bytes[i] == bytes[i - 1];
            f.punct_mixed += n(c == C::Punct && p1 == C::Punct && !same);
            f.punct_repeat += n(c == C::Punct && p1 == C::Punct && same);
            let solid = word(c) || c == C::Digit || c == C::Punct;
            f.multi_space += n(solid && p1 == C::Space && p2 == C::Space);
            f.space_alone += n(c == C::None && p1 == C::Space);
            f.newline += n(c == C::Newline && p1 != C::Newline);
            f.indent += n(c == C::Space && p1 == C::Newline);
        }
        f
    }

    const ALPHABET: &str = "[ a-zA-Z0-9.,:;(){}\\[\\]\"'=_/\\-\t\n\r\u{a0}\u{2028}\u{3000}éßЖ中こ한😀\u{200d}\u{300}✓—]{0,300}";

    proptest! {
        #[test]
        fn matches_reference(text in ALPHABET) {
            prop_assert_eq!(features(&text), reference(&text));
            prop_assert_eq!(tally_with(&text, Classifier::SCALAR, Features::default()), reference(&text));
        }

        #[test]
        fn matches_reference_any(text in any::<String>()) {
            prop_assert_eq!(features(&text), reference(&text));
        }

        /// Runs that straddle block boundaries at every offset.
        #[test]
        fn matches_reference_across_blocks(pad in 0usize..70, run in "(a{1,9}|1{1,5}|-{1,3}| {1,3}|\n{1,2}|Ж{1,3}|中{1,2}|\u{2028})") {
            let text = format!("{}{}{}", "x".repeat(pad), run, run.repeat(20));
            prop_assert_eq!(features(&text), reference(&text));
        }
    }

    #[test]
    fn counts() {
        let f = features("Hello, wonderful world!\n    x = 1234;  中文 😀");
        assert_eq!(f.word, 4);
        assert_eq!(f.long_letter, 3); // wonder|ful
        assert_eq!(f.digit_run, 1);
        assert_eq!(f.digit_extra, 1);
        assert_eq!(f.space_digit, 1);
        assert_eq!(f.punct_run, 4); // , ! = ;
        assert_eq!(f.newline, 1);
        assert_eq!(f.indent, 1);
        assert_eq!(f.multi_space, 1); // x after the indentation
        assert_eq!(f.space_alone, 2); // before 中 and before 😀
        assert_eq!(f.han, 2);
        assert_eq!(f.astral, 1);
        assert_eq!(features(""), Features::default());
    }
}
