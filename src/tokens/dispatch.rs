//! Which classifier runs a pass over a text, and the two passes: counting [`Features`]
//! ([`tally_with`]) and pricing them ([`units_with`]).
//!
//! [`Classifier::detect`] picks the fastest classifier this CPU has (AVX2 on x86-64 when
//! present, else the portable one) and [`Classifier::run`] runs a pass with it, compiled for
//! its CPU features. Tests run both and compare them.
//!
//! Invariants: a pass gives the same result with either classifier; the counts equal a
//! byte-by-byte count of the same patterns (`matches_reference`); the estimate equals the
//! priced counts (`vector_and_scalar_paths_agree`).

#[cfg(target_arch = "x86_64")]
use super::avx2::{self, Avx2};
use super::classes::Scalar;
use super::encoding::Encoding;
use super::features::Tally;
use super::scan::{drive, Scan, Scanner};

/// How blocks are classified on this CPU; [`Classifier::detect`] picks the fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Classifier {
    /// The AVX2 classifier, if this CPU has AVX2 (only `avx2::detect` makes one).
    #[cfg(target_arch = "x86_64")]
    avx2: Option<Avx2>,
}

impl Classifier {
    /// The portable, byte-by-byte classifier (tests compare it with the vector one).
    #[cfg(test)]
    pub const SCALAR: Self = Self {
        #[cfg(target_arch = "x86_64")]
        avx2: None,
    };

    /// The fastest classifier this CPU supports (the detection result is cached by std).
    #[must_use]
    pub fn detect() -> Self {
        Self {
            #[cfg(target_arch = "x86_64")]
            avx2: avx2::detect(),
        }
    }

    /// Runs `scan` with this classifier.
    pub fn run<S: Scan>(self, scan: S) -> S::Output {
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = self.avx2 {
            return avx2.run(scan);
        }
        scan.scan(&Scalar)
    }
}

/// Adds the features of `text` to `tally`, with a given classifier.
#[must_use]
pub(crate) fn tally_with<T: Tally>(text: &str, classifier: Classifier, tally: T) -> T {
    classifier.run(Count { text, tally })
}

/// The counting pass of [`tally_with`]: one block at a time.
struct Count<'a, T> {
    text: &'a str,
    tally: T,
}

impl<T: Tally> Scan for Count<'_, T> {
    type Output = T;

    #[inline(always)]
    fn scan(self, scanner: &impl Scanner) -> T {
        let mut tally = self.tally;
        drive::<u64, T>(self.text, scanner, &mut tally);
        tally
    }
}

/// The estimate of `text` in hundredths of a token, with a given classifier.
pub(crate) fn units_with(text: &str, encoding: Encoding, classifier: Classifier) -> i64 {
    classifier.run(Estimate { text, encoding })
}

/// The pricing pass of [`units_with`], with the widest lanes the classifier has.
struct Estimate<'a> {
    text: &'a str,
    encoding: Encoding,
}

impl Scan for Estimate<'_> {
    type Output = i64;

    #[inline(always)]
    fn scan(self, scanner: &impl Scanner) -> i64 {
        scanner.units(self.text, self.encoding)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::classes::{kind, Char, Masks, Wide};
    use crate::tokens::features::{Feature, Features};
    use crate::tokens::prices::Prices;
    use proptest::prelude::*;

    fn features(text: &str) -> Features {
        tally_with(text, Classifier::detect(), Features::default())
    }

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

    /// Classifies one block both ways.
    struct One<'a>(&'a [u8; 64], Option<&'a [u8; 64]>);

    impl Scan for One<'_> {
        type Output = (Masks, Wide);
        fn scan(self, scanner: &impl Scanner) -> (Masks, Wide) {
            (scanner.ascii(self.0, self.1), scanner.wide(self.0))
        }
    }

    #[test]
    fn a_zero_byte_starting_the_text_is_not_the_same_as_the_byte_before() {
        let cur = [0u8; 64];
        let (vector, scalar) = (
            Classifier::detect().run(One(&cur, None)),
            Classifier::SCALAR.run(One(&cur, None)),
        );
        assert_eq!(vector, scalar);
        assert_eq!(scalar.0.same, !1);
    }

    proptest! {
        #[test]
        fn avx2_matches_scalar(cur in proptest::collection::vec(any::<u8>(), 64), first in any::<u8>()) {
            let cur: [u8; 64] = cur.try_into().unwrap();
            let mut prev = [first; 64];
            prev[1..].copy_from_slice(&cur[..63]);
            for prev in [Some(&prev), None] {
                prop_assert_eq!(
                    Classifier::detect().run(One(&cur, prev)),
                    Classifier::SCALAR.run(One(&cur, prev))
                );
            }
        }
    }

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
            let scalar = units_with(text, encoding, Classifier::SCALAR);
            prop_assert_eq!(units_with(text, encoding, Classifier::detect()), scalar);
            prop_assert_eq!(priced(&features(text), encoding.prices()), scalar);
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
        let scalar = units_with(&text, Encoding::Cl100k, Classifier::SCALAR);
        assert_eq!(
            units_with(&text, Encoding::Cl100k, Classifier::detect()),
            scalar
        );
    }
}
