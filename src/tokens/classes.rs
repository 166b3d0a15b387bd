//! Byte classes of 64 bytes at a time, as bit masks (bit `i` stands for byte `i`), and the
//! class of a non-ASCII character.
//!
//! Classifying is the estimator's only per-byte work. A block is classified in two steps:
//! [`Classify::ascii`] for every block, and [`Classify::wide`] only for blocks holding
//! non-ASCII bytes, so English and code never pay for the CJK masks. CJK ideographs, CJK
//! punctuation, fullwidth forms, kana and hangul are recognised from their first two bytes
//! ([`Raw`]), so CJK text is counted without decoding characters; any other non-ASCII
//! character is decoded by the caller and sorted by [`kind`].
//!
//! This module holds the portable classifier ([`Scalar`], a lookup table byte by byte); the
//! AVX2 one (`avx2`) computes the same masks with vector compares.
//!
//! Invariants: every byte of a block is in exactly one of `letter`, `digit`, `space`,
//! `newline`, `punct` and `nonascii`; [`Wide::lead`] marks exactly the first bytes of the
//! non-ASCII characters not counted as `han`, `kana` or `hangul` (the caller decodes
//! those). Both classifiers give the same masks for any bytes (`avx2_matches_scalar`).

use std::ops::{BitAnd, BitOr, Not};

use super::features::Feature;

/// by the caller (they read as zero bytes, i.e. punctuation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Masks {
    /// ASCII letters.
    pub letter: u64,
    /// ASCII digits.
    pub digit: u64,
    /// Space and tab.
    pub space: u64,
    /// `\n` and `\r`.
    pub newline: u64,
    /// Every other ASCII byte: punctuation, symbols, control characters.
    pub punct: u64,
    /// Bytes of non-ASCII characters.
    pub nonascii: u64,
    /// Bytes equal to the byte before them.
    pub same: u64,
}

impl Masks {
    /// Drops the block's first `n` bytes (`n < 64`): bit `i` becomes bit `i - n`.
    pub(crate) fn skip(&mut self, n: u32) {
        let masks = [
            &mut self.letter,
            &mut self.digit,
            &mut self.space,
            &mut self.newline,
            &mut self.punct,
            &mut self.nonascii,
            &mut self.same,
        ];
        for mask in masks {
            *mask >>= n;
        }
    }
}

/// The non-ASCII characters of a block, by their first byte: bit masks (`M = u64`), or, on
/// the AVX2 whole-group path, byte vectors (0xFF where true).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Wide<M = u64> {
    /// CJK ideographs U+4000..=U+9FFF, CJK punctuation U+3000..=U+303F and fullwidth forms
    /// U+FF00..=U+FFBF.
    pub han: M,
    /// Hiragana and katakana, U+3040..=U+30FF.
    pub kana: M,
    /// Hangul syllables, U+AC00..=U+D7FF.
    pub hangul: M,
    /// Every other character, which the caller decodes. A character whose second byte is in
    /// the next block is always left to the caller.
    pub lead: M,
}

impl Wide {
    /// Drops the block's first `n` bytes (`n < 64`), as [`Masks::skip`].
    pub(crate) fn skip(&mut self, n: u32) {
        for mask in [
            &mut self.han,
            &mut self.kana,
            &mut self.hangul,
            &mut self.lead,
        ] {
            *mask >>= n;
        }
    }
}

/// Raw byte tests behind [`Wide`], combined by [`Raw::wide`] the same way for every
/// classifier and path. The `next_*` tests are of the byte after each byte: masks shifted
/// down by one (so a lead in a block's last byte is left to the caller), or a vector of the
/// bytes one further on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Raw<M> {
    pub(super) nonascii: M,
    /// `0x80..=0xBF`: continuation bytes.
    pub(super) continuation: M,
    /// `0xE4..=0xE9`: first bytes of U+4000..=U+9FFF.
    pub(super) han: M,
    /// `0xEB..=0xED`: first bytes of U+B000..=U+DFFF (hangul up to U+D7FF; the rest are
    /// surrogates, which `str` never holds).
    pub(super) hangul: M,
    /// `0xE3`: U+3000..=U+3FFF.
    pub(super) e3: M,
    /// `0xEA`: U+A000..=U+AFFF.
    pub(super) ea: M,
    /// `0xEF`: U+F000..=U+FFFF.
    pub(super) ef: M,
    /// `0x80`, `0x81..=0x83` after `E3`: CJK punctuation, kana; `0xB0..=0xBF` after `EA`:
    /// hangul; `0xBC..=0xBE` after `EF`: fullwidth forms.
    pub(super) next_80: M,
    pub(super) next_81_83: M,
    pub(super) next_b0_bf: M,
    pub(super) next_bc_be: M,
}

impl<M: Copy + BitAnd<Output = M> + BitOr<Output = M> + Not<Output = M>> Raw<M> {
    #[inline(always)]
    pub(super) fn wide(self) -> Wide<M> {
        let han = self.han | self.e3 & self.next_80 | self.ef & self.next_bc_be;
        let kana = self.e3 & self.next_81_83;
        let hangul = self.hangul | self.ea & self.next_b0_bf;
        Wide {
            han,
            kana,
            hangul,
            lead: self.nonascii & !self.continuation & !(han | kana | hangul),
        }
    }
}

/// A way to classify blocks: [`Scalar`] here, the AVX2 classifier in `avx2`.
pub(crate) trait Classify: Sized {
    /// The ASCII masks of `cur`; `prev` is the same block shifted back by one byte (`prev[0]`
    /// is the byte before `cur[0]`), for [`Masks::same`], or `None` if `cur` starts the text
    /// (then bit 0 of `same` is clear).
    fn ascii(&self, cur: &[u8; 64], prev: Option<&[u8; 64]>) -> Masks;
    /// The non-ASCII characters of `cur`.
    fn wide(&self, cur: &[u8; 64]) -> Wide;
}

/// The portable classifier.
pub(crate) struct Scalar;

/// Class bits of one byte, for the portable path.
const LETTER: u16 = 1;
const DIGIT: u16 = 1 << 1;
const SPACE: u16 = 1 << 2;
const NEWLINE: u16 = 1 << 3;
const PUNCT: u16 = 1 << 4;
const CONTINUATION: u16 = 1 << 5;
const HAN: u16 = 1 << 6;
const HANGUL: u16 = 1 << 7;
const E3: u16 = 1 << 8;
const EA: u16 = 1 << 9;
const EF: u16 = 1 << 10;
const X80: u16 = 1 << 11;
const X81_83: u16 = 1 << 12;
const XB0_BF: u16 = 1 << 13;
const XBC_BE: u16 = 1 << 14;

const fn class_bits(b: u8) -> u16 {
    let ascii = match b {
        b'a'..=b'z' | b'A'..=b'Z' => LETTER,
        b'0'..=b'9' => DIGIT,
        b' ' | b'\t' => SPACE,
        b'\n' | b'\r' => NEWLINE,
        0..=0x7F => PUNCT,
        _ => 0,
    };
    let lead = match b {
        0xE3 => E3,
        0xE4..=0xE9 => HAN,
        0xEA => EA,
        0xEB..=0xED => HANGUL,
        0xEF => EF,
        _ => 0,
    };
    let second = match b {
        0x80 => X80,
        0x81..=0x83 => X81_83,
        0xBC..=0xBE => XB0_BF | XBC_BE,
        0xB0..=0xBF => XB0_BF,
        _ => 0,
    };
    let continuation = if b >= 0x80 && b <= 0xBF {
        CONTINUATION
    } else {
        0
    };
    ascii | lead | second | continuation
}

const CLASS: [u16; 256] = {
    let mut t = [0; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = class_bits(b as u8);
        b += 1;
    }
    t
};

/// The mask of the bytes of `block` whose class has `flag`.
fn mask_of(block: &[u8; 64], flag: u16) -> u64 {
    block.iter().enumerate().fold(0, |m, (i, &b)| {
        m | u64::from(CLASS[usize::from(b)] & flag != 0) << i
    })
}

impl Classify for Scalar {
    fn ascii(&self, cur: &[u8; 64], prev: Option<&[u8; 64]>) -> Masks {
        let before = |i: usize| match (i.checked_sub(1), prev) {
            (Some(j), _) => Some(cur[j]),
            (None, Some(p)) => Some(p[0]),
            (None, None) => None,
        };
        let same = cur
            .iter()
            .enumerate()
            .fold(0, |m, (i, &b)| m | u64::from(before(i) == Some(b)) << i);
        Masks {
            letter: mask_of(cur, LETTER),
            digit: mask_of(cur, DIGIT),
            space: mask_of(cur, SPACE),
            newline: mask_of(cur, NEWLINE),
            punct: mask_of(cur, PUNCT),
            nonascii: cur
                .iter()
                .enumerate()
                .fold(0, |m, (i, &b)| m | u64::from(b >= 0x80) << i),
            same,
        }
    }

    fn wide(&self, cur: &[u8; 64]) -> Wide {
        Raw {
            nonascii: self.ascii(cur, None).nonascii,
            continuation: mask_of(cur, CONTINUATION),
            han: mask_of(cur, HAN),
            hangul: mask_of(cur, HANGUL),
            e3: mask_of(cur, E3),
            ea: mask_of(cur, EA),
            ef: mask_of(cur, EF),
            next_80: mask_of(cur, X80) >> 1,
            next_81_83: mask_of(cur, X81_83) >> 1,
            next_b0_bf: mask_of(cur, XB0_BF) >> 1,
            next_bc_be: mask_of(cur, XBC_BE) >> 1,
        }
        .wide()
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

/// What `c` (a non-ASCII character) is.
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
        // General punctuation (dashes, curly quotes, bullets, ellipses): common in prose, and
        // none of it alphabetic, so no table lookup.
        0x2010..=0x2027 | 0x2030..=0x205E => Char::Alone(Feature::Symbol),
        _ if c.is_alphabetic() => Char::Letter,
        _ => Char::Alone(Feature::Symbol),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(bytes: &[u8]) -> [u8; 64] {
        let mut b = [0; 64];
        for (d, s) in b.iter_mut().zip(bytes) {
            *d = *s;
        }
        b
    }

    #[test]
    fn classes() {
        let cur = block("aZ9 \t\n\r{é中\u{80}こ。한ꙮ".as_bytes());
        let m = Scalar.ascii(&cur, Some(&[0; 64]));
        assert_eq!(m.letter, 0b11);
        assert_eq!(m.digit, 0b100);
        assert_eq!(m.space, 0b11000);
        assert_eq!(m.newline, 0b110_0000);
        // (bytes from 27 on are the zero padding, which reads as punctuation)
        assert_eq!(m.punct & 0x7FF_FFFF, 0b1000_0000);
        let w = Scalar.wide(&cur);
        // é (2 bytes) at 8, U+0080 (2 bytes) at 13 and ꙮ (U+A66E, lead EA) at 24 decode;
        // 中 at 10 and 。 at 18 count as han, こ at 15 as kana, 한 at 21 as hangul.
        assert_eq!(w.lead, 1 << 8 | 1 << 13 | 1 << 24);
        assert_eq!(w.han, 1 << 10 | 1 << 18);
        assert_eq!(w.kana, 1 << 15);
        assert_eq!(w.hangul, 1 << 21);
    }
}
