//! Byte classes of 64 bytes at a time, as bit masks (bit `i` stands for byte `i`).
//!
//! This is the estimator's only per-byte work, so it has a vector path: with AVX2 (detected at
//! run time, present on x86-64 CPUs since 2013) a block is 2 × 32 bytes of compares and
//! `movemask`s; elsewhere a portable loop computes the same masks byte by byte. Both are
//! checked against each other on arbitrary bytes (`avx2_matches_scalar`).
//!
//! A block is classified in two steps: [`Classify::ascii`] for every block, and
//! [`Classify::wide`] only for blocks holding non-ASCII bytes, so English and code never pay
//! for the CJK masks. CJK ideographs, CJK punctuation, kana and hangul are recognised from
//! their first two bytes, so CJK text is counted without decoding characters.
//!
//! This module is the crate's only `unsafe` code: the AVX2 intrinsics, which are sound to call
//! only once the CPU is known to have AVX2. [`Classifier::run`] enforces that: the AVX2
//! classifier is only ever used after `is_x86_feature_detected!("avx2")` said yes.

/// The ASCII classes of one 64-byte block. Bytes past the end of the text must be masked off
/// by the caller (they read as zero bytes, i.e. punctuation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Masks {
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

/// The non-ASCII characters of a block, by their first byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wide {
    /// CJK ideographs U+4000..=U+9FFF and CJK punctuation U+3000..=U+303F.
    pub han: u64,
    /// Hiragana and katakana, U+3040..=U+30FF.
    pub kana: u64,
    /// Hangul syllables, U+AC00..=U+D7FF.
    pub hangul: u64,
    /// Every other character, which the caller decodes. A character whose second byte is in
    /// the next block is always left to the caller.
    pub lead: u64,
}

/// Raw byte tests behind [`Wide`], combined by [`Raw::wide`] the same way for both
/// classifiers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Raw {
    nonascii: u64,
    /// `0x80..=0xBF`: continuation bytes.
    continuation: u64,
    /// `0xE4..=0xE9`: first bytes of U+4000..=U+9FFF.
    han: u64,
    /// `0xEB..=0xED`: first bytes of U+B000..=U+DFFF (hangul up to U+D7FF; the rest are
    /// surrogates, which `str` never holds).
    hangul: u64,
    /// `0xE3`: U+3000..=U+3FFF.
    e3: u64,
    /// `0xEA`: U+A000..=U+AFFF.
    ea: u64,
    /// `0x80`, `0x81..=0x83`, `0xB0..=0xBF`: the second bytes that make an `E3` character CJK
    /// punctuation or kana, and an `EA` one hangul.
    x80: u64,
    x81_83: u64,
    xb0_bf: u64,
}

impl Raw {
    fn wide(self) -> Wide {
        // A lead's second byte is one bit up; `>> 1` lines it up with the lead (and leaves
        // a lead in bit 63 to the caller).
        let han = self.han | self.e3 & (self.x80 >> 1);
        let kana = self.e3 & (self.x81_83 >> 1);
        let hangul = self.hangul | self.ea & (self.xb0_bf >> 1);
        Wide {
            han,
            kana,
            hangul,
            lead: self.nonascii & !self.continuation & !(han | kana | hangul),
        }
    }
}

/// A way to classify blocks.
pub trait Classify {
    /// The ASCII masks of `cur`; `prev` is the same block shifted back by one byte (`prev[0]`
    /// is the byte before `cur[0]`), for [`Masks::same`].
    fn ascii(&self, cur: &[u8; 64], prev: &[u8; 64]) -> Masks;
    /// The non-ASCII characters of `cur`.
    fn wide(&self, cur: &[u8; 64]) -> Wide;
}

/// A pass over a text that classifies it block by block.
pub trait Scan {
    type Output;

    /// Scans with `classify`. Mark implementations `#[inline(always)]`, so that they are
    /// compiled with the classifier's CPU features.
    fn scan(self, classify: &impl Classify) -> Self::Output;
}

/// How blocks are classified on this CPU; [`Classifier::detect`] picks the fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classifier {
    /// True only if AVX2 was detected (the field is private so nothing else can set it).
    avx2: bool,
}

impl Classifier {
    /// The portable, byte-by-byte classifier.
    pub const SCALAR: Self = Self { avx2: false };

    /// The fastest classifier this CPU supports (the detection result is cached by std).
    #[must_use]
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            Self {
                avx2: std::is_x86_feature_detected!("avx2"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Self::SCALAR
        }
    }

    /// Runs `scan` with this classifier. With AVX2, the scan is compiled for AVX2 and POPCNT
    /// (every AVX2 CPU has it): that makes its popcounts one instruction each, not a dozen.
    pub fn run<S: Scan>(self, scan: S) -> S::Output {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: `avx2` is true only when `detect` found AVX2 on this CPU.
            return unsafe { avx2::run(scan) };
        }
        scan.scan(&Scalar)
    }
}

/// The portable classifier.
struct Scalar;

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
const X80: u16 = 1 << 10;
const X81_83: u16 = 1 << 11;
const XB0_BF: u16 = 1 << 12;

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
        _ => 0,
    };
    let second = match b {
        0x80 => X80,
        0x81..=0x83 => X81_83,
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
    fn ascii(&self, cur: &[u8; 64], prev: &[u8; 64]) -> Masks {
        let same = cur
            .iter()
            .zip(prev)
            .enumerate()
            .fold(0, |m, (i, (b, p))| m | u64::from(b == p) << i);
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
            nonascii: self.ascii(cur, cur).nonascii,
            continuation: mask_of(cur, CONTINUATION),
            han: mask_of(cur, HAN),
            hangul: mask_of(cur, HANGUL),
            e3: mask_of(cur, E3),
            ea: mask_of(cur, EA),
            x80: mask_of(cur, X80),
            x81_83: mask_of(cur, X81_83),
            xb0_bf: mask_of(cur, XB0_BF),
        }
        .wide()
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Classify, Masks, Raw, Scan, Wide};
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8, _mm256_sub_epi8,
    };

    /// The AVX2 classifier. Values exist only inside [`run`], whose caller checked the CPU.
    struct Avx2(());

    /// SAFETY: the CPU has AVX2 (and so POPCNT).
    #[target_feature(enable = "avx2,popcnt")]
    pub unsafe fn run<S: Scan>(scan: S) -> S::Output {
        scan.scan(&Avx2(()))
    }

    impl Classify for Avx2 {
        #[inline(always)]
        fn ascii(&self, cur: &[u8; 64], prev: &[u8; 64]) -> Masks {
            // SAFETY: an `Avx2` exists only inside `run`, so the CPU has AVX2.
            unsafe { ascii(cur, prev) }
        }

        #[inline(always)]
        fn wide(&self, cur: &[u8; 64]) -> Wide {
            // SAFETY: as above.
            unsafe { wide(cur) }
        }
    }

    /// The two 32-byte halves' masks as one.
    fn join(lo: u32, hi: u32) -> u64 {
        u64::from(lo) | u64::from(hi) << 32
    }

    /// `lo <= v < lo + n` per byte, unsigned: `min(v - lo, n - 1) == v - lo`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn in_range(v: __m256i, lo: u8, n: u8) -> u32 {
        let d = _mm256_sub_epi8(v, _mm256_set1_epi8(lo as i8));
        bits(_mm256_cmpeq_epi8(
            _mm256_min_epu8(d, _mm256_set1_epi8((n - 1) as i8)),
            d,
        ))
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn bits(v: __m256i) -> u32 {
        _mm256_movemask_epi8(v) as u32
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn eq(v: __m256i, b: u8) -> u32 {
        bits(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b as i8)))
    }

    /// SAFETY: the CPU has AVX2; `p` points to 32 readable bytes.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn load(p: *const u8) -> __m256i {
        _mm256_loadu_si256(p.cast())
    }

    /// SAFETY: the CPU has AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn ascii(cur: &[u8; 64], prev: &[u8; 64]) -> Masks {
        let half = |o: usize| {
            let v = load(cur.as_ptr().add(o));
            let p = load(prev.as_ptr().add(o));
            [
                in_range(_mm256_or_si256(v, _mm256_set1_epi8(0x20)), b'a', 26),
                in_range(v, b'0', 10),
                eq(v, b' ') | eq(v, b'\t'),
                eq(v, b'\n') | eq(v, b'\r'),
                bits(v),
                bits(_mm256_cmpeq_epi8(v, p)),
            ]
        };
        let (a, b) = (half(0), half(32));
        let [letter, digit, space, newline, nonascii, same] =
            [0, 1, 2, 3, 4, 5].map(|k| join(a[k], b[k]));
        Masks {
            letter,
            digit,
            space,
            newline,
            punct: !(letter | digit | space | newline | nonascii),
            nonascii,
            same,
        }
    }

    /// SAFETY: the CPU has AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn wide(cur: &[u8; 64]) -> Wide {
        let half = |o: usize| {
            let v = load(cur.as_ptr().add(o));
            [
                bits(v),
                in_range(v, 0x80, 64),
                in_range(v, 0xE4, 6),
                in_range(v, 0xEB, 3),
                eq(v, 0xE3),
                eq(v, 0xEA),
                eq(v, 0x80),
                in_range(v, 0x81, 3),
                in_range(v, 0xB0, 16),
            ]
        };
        let (a, b) = (half(0), half(32));
        let [nonascii, continuation, han, hangul, e3, ea, x80, x81_83, xb0_bf] =
            [0, 1, 2, 3, 4, 5, 6, 7, 8].map(|k| join(a[k], b[k]));
        Raw {
            nonascii,
            continuation,
            han,
            hangul,
            e3,
            ea,
            x80,
            x81_83,
            xb0_bf,
        }
        .wide()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn block(bytes: &[u8]) -> [u8; 64] {
        let mut b = [0; 64];
        for (d, s) in b.iter_mut().zip(bytes) {
            *d = *s;
        }
        b
    }

    /// Classifies one block both ways.
    struct One<'a>(&'a [u8; 64], &'a [u8; 64]);

    impl Scan for One<'_> {
        type Output = (Masks, Wide);
        fn scan(self, classify: &impl Classify) -> (Masks, Wide) {
            (classify.ascii(self.0, self.1), classify.wide(self.0))
        }
    }

    proptest! {
        #[test]
        fn avx2_matches_scalar(cur in proptest::collection::vec(any::<u8>(), 64), first in any::<u8>()) {
            let cur = block(&cur);
            let mut prev = [first; 64];
            prev[1..].copy_from_slice(&cur[..63]);
            prop_assert_eq!(
                Classifier::detect().run(One(&cur, &prev)),
                Classifier::SCALAR.run(One(&cur, &prev))
            );
        }
    }

    #[test]
    fn classes() {
        let cur = block("aZ9 \t\n\r{é中\u{80}こ。한ꙮ".as_bytes());
        let m = Scalar.ascii(&cur, &[0; 64]);
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
