//! What each [`Feature`] costs, per encoding, in hundredths of a token; and [`Units`], the
//! tally that adds up a text's priced features.
//!
//! The prices were fitted per encoding by `scripts/fit_token_prices.py` (the module docs of
//! `tokens` give the table and the errors measured). They are kept in hundredths of a token
//! and rounded once at the end, so fractions add up instead of being rounded away run by run.
//!
//! Invariants: every pattern price's magnitude fits in a byte (`pattern_prices_fit_a_byte`),
//! since the vector path multiplies counts by `|price|` as an unsigned byte ([`ByteWeight`]);
//! `CL100K_BYTES` and `O200K_BYTES` are the same prices in that form, built at compile time.

use super::features::{Feature, Tally, FEATURES};

/// Hundredths of a token: the estimator's internal unit.
pub(super) const UNIT: i64 = 100;

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

pub(super) const CL100K: Prices = Prices {
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
pub(super) const O200K: Prices = Prices {
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
const fn byte_weights(prices: &Prices) -> [ByteWeight; FEATURES] {
    let mut out = [(0, false); FEATURES];
    let mut i = 0;
    while i < FEATURES {
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

pub(super) static CL100K_BYTES: [ByteWeight; FEATURES] = byte_weights(&CL100K);
pub(super) static O200K_BYTES: [ByteWeight; FEATURES] = byte_weights(&O200K);

impl Prices {
    /// The price of one count of `feature`.
    #[inline(always)]
    pub(crate) const fn of(&self, feature: Feature) -> i64 {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
