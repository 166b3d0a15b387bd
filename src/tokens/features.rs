//! What the estimator counts: the [`Features`] of a text, found 64 bytes at a time.
//!
//! Every feature is a local pattern over byte classes — a letter whose six predecessors are
//! letters too, a digit right after a space, a punctuation character after a different one —
//! so a 64-byte block becomes a few 64-bit masks (one bit per byte, from
//! `classify`) and each feature a shift, an AND and a popcount. Masks carry their top
//! bits into the next block, so a pattern that straddles two blocks counts as it would inside
//! one. Non-ASCII characters are decoded one by one and marked by what they are: letters
//! (Cyrillic, accented Latin, combining marks) join words, Unicode spaces and line separators
//! act as spaces and line breaks, and the rest (CJK, kana, hangul, emoji, symbols) is counted
//! by script and separates runs. CJK and hangul are counted straight from their first two
//! bytes, without decoding.
//!
//! The pattern arithmetic (`patterns`) is written once over `Lanes`: `u64` for one block,
//! or (on the AVX2 path, for texts of four blocks or more) four blocks at a time in the 64-bit
//! lanes of a vector, priced there with byte popcounts and multiply-adds.
//!
//! Invariants: [`features`] equals a byte-by-byte count of the same patterns
//! (`matches_reference`, property-tested), whichever classifier runs; the vector path's
//! estimate equals the one-block path's (`vector_and_scalar_paths_agree`).

use std::ops::{BitAnd, BitOr, Not};

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
        // General punctuation (dashes, curly quotes, bullets, ellipses): common in prose, and
        // none of it alphabetic, so no table lookup.
        0x2010..=0x2027 | 0x2030..=0x205E => Char::Alone(Feature::Symbol),
        _ if c.is_alphabetic() => Char::Letter,
        _ => Char::Alone(Feature::Symbol),
    }
}

/// The masks of one block once its non-ASCII characters are marked (`L = u64`), or of
/// several consecutive blocks, one per lane.
#[derive(Clone, Copy, Default)]
pub(crate) struct Block<L> {
    pub(crate) word: L,
    pub(crate) letter: L,
    pub(crate) digit: L,
    pub(crate) punct: L,
    pub(crate) space: L,
    pub(crate) newline: L,
    pub(crate) same: L,
    /// Characters that are none of the above (CJK, emoji, symbols); only non-ASCII ones can be.
    pub(crate) other: L,
}

/// The masks of the block before that the patterns look back into (the last lane's, for
/// several blocks at once).
#[derive(Clone, Copy, Default)]
struct Carry<L> {
    word: L,
    /// Bytes ending a run of ≥ 2 word bytes, ≥ 4 word bytes.
    word2: L,
    word4: L,
    digit: L,
    digit2: L,
    punct: L,
    space: L,
    newline: L,
}

impl<L: Lanes> Carry<L> {
    /// What the block after the last lane looks back into, to go on one block at a time.
    #[inline(always)]
    fn last_lane(&self) -> Carry<u64> {
        Carry {
            word: self.word.last(),
            word2: self.word2.last(),
            word4: self.word4.last(),
            digit: self.digit.last(),
            digit2: self.digit2.last(),
            punct: self.punct.last(),
            space: self.space.last(),
            newline: self.newline.last(),
        }
    }
}

/// Masks of one block (`u64`) or of several consecutive blocks at once, one per lane (the
/// AVX2 path packs four): the pattern arithmetic is written once for both.
pub(crate) trait Lanes:
    Copy + Default + BitAnd<Output = Self> + BitOr<Output = Self> + Not<Output = Self>
{
    /// Blocks per value.
    const BLOCKS: usize;
    /// One value from `BLOCKS` consecutive blocks' masks.
    fn pack(blocks: &[u64]) -> Self;
    /// `self` seen `k` bytes later: each block's bits move up by `k`, and the top `k` bits of
    /// the block before it (the previous lane, or `carry`'s last lane) come in below.
    fn back(self, carry: Self, k: u32) -> Self;
    /// The last block's masks.
    fn last(self) -> u64;

    /// The masks of `BLOCKS` whole blocks straight from the bytes, if they are all ASCII;
    /// `None` sends them down the block-by-block path. Only multi-block lanes have this
    /// shortcut.
    fn ascii_group(_window: &Window<'_>) -> Option<Block<Self>> {
        None
    }

    /// [`Lanes::ascii_group`] for blocks whose non-ASCII characters are all CJK, kana or
    /// hangul, with those characters' first bytes; `None` if any other character must be
    /// decoded.
    fn script_group(_window: &Window<'_>) -> Option<(Block<Self>, Scripts<Self>)> {
        None
    }

    /// If every byte of `window.cur` from `skip` on belongs to a CJK, kana or hangul
    /// character (no ASCII, nothing to decode), how many of each start there. Such bytes
    /// have no class masks, so none of the patterns but a space before the first one can
    /// match.
    fn script_run(_window: &Window<'_>, _skip: usize) -> Option<[u32; 3]> {
        None
    }
}

/// The bytes of a whole group of blocks.
pub(crate) const GROUP: usize = 4 * 64;

/// A whole group of blocks, read in place, and the bytes around it that its patterns look
/// at.
pub(crate) struct Window<'a> {
    /// The group.
    pub(crate) cur: &'a [u8; GROUP],
    /// The group one byte back, or `None` at the text's start.
    pub(crate) back: Option<&'a [u8; GROUP]>,
    /// The group one byte on, or `None` if the text ends with it.
    pub(crate) on: Option<&'a [u8; GROUP]>,
}

/// The first bytes of characters counted by script without decoding: CJK ideographs,
/// punctuation and fullwidth forms, kana, hangul.
#[derive(Clone, Copy, Default)]
pub(crate) struct Scripts<L> {
    pub(crate) han: L,
    pub(crate) kana: L,
    pub(crate) hangul: L,
}

impl Lanes for u64 {
    const BLOCKS: usize = 1;

    #[inline(always)]
    fn pack(blocks: &[u64]) -> Self {
        blocks[0]
    }

    #[inline(always)]
    fn back(self, carry: Self, k: u32) -> Self {
        (self << k) | (carry >> (64 - k))
    }

    #[inline(always)]
    fn last(self) -> u64 {
        self
    }
}

/// Where the masks of each pattern go to be counted or priced.
pub(crate) trait Sink<L> {
    fn add_mask(&mut self, feature: Feature, mask: L);

    /// Called after each `Lanes::BLOCKS` blocks (vector sinks fold their narrow sums).
    fn end_group(&mut self) {}
}

impl<T: Tally> Sink<u64> for T {
    #[inline(always)]
    fn add_mask(&mut self, feature: Feature, mask: u64) {
        self.add(feature, mask.count_ones());
    }
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
    fn scan(self, classify: &impl Classify) -> T {
        let mut tally = self.tally;
        drive::<u64, T>(self.text, classify, &mut tally);
        tally
    }
}

/// Feeds every pattern of `text` to `sink`, `L::BLOCKS` blocks at a time.
#[inline(always)]
pub(crate) fn drive<L: Lanes, S: Sink<L> + Tally>(
    text: &str,
    classify: &impl Classify,
    sink: &mut S,
) {
    let bytes = text.as_bytes();
    let mut carry = Carry::<L>::default();
    // A character whose bytes run on into the next block: how many, and what it is.
    let mut spill: Option<(usize, Char)> = None;
    let mut group = [Block::<u64>::default(); 4];
    let mut filled = 0;
    let mut off = 0;
    // What the block before was: the whole-group paths are tried after blocks like theirs,
    // so that each kind of text pays only for the path it takes.
    let mut last = Last::Ascii;
    while off < bytes.len() {
        let script_like = last == Last::Scripts || (off == 0 && !bytes[0].is_ascii());
        if filled == 0 && spill.is_none() && script_like {
            // Runs of CJK, kana or hangul with no ASCII in them: counted by script only.
            if let Some((scripts, len)) = script_run::<L>(bytes, off) {
                let [han, kana, hangul] = scripts;
                sink.add(Feature::Han, han);
                sink.add(Feature::Kana, kana);
                sink.add(Feature::Hangul, hangul);
                // The run's first character after a space.
                sink.add(Feature::SpaceAlone, (carry.space.last() >> 63) as u32);
                carry = Carry::default();
                last = Last::Scripts;
                off += len;
                continue;
            }
        }
        if L::BLOCKS > 1 && filled == 0 && bytes.len() - off <= 2 * 64 {
            // The text's last one or two blocks: one at a time costs less than packing them
            // into lanes with empty ones.
            let mut carry = carry.last_lane();
            while off < bytes.len() {
                let (b, _, len) = next_block(classify, text, off, &mut spill, sink);
                off += len;
                patterns::<u64>(&b, &mut carry, sink);
            }
            break;
        }
        let whole = if filled == 0 && spill.is_none() {
            whole_group::<L>(bytes, off, last)
        } else {
            None
        };
        let lanes = match whole {
            // The hot path: a whole group of blocks classified straight into lanes.
            Some(Whole {
                block,
                scripts,
                counted: None,
            }) => {
                last = Last::Ascii;
                if let Some(s) = scripts {
                    s.price(sink);
                    last = Last::Scripts;
                }
                off += GROUP;
                block
            }
            // The text's last group, read from further back: only what lies past `off` is
            // priced, and the text ends with it.
            Some(Whole {
                block,
                scripts,
                counted: Some(counted),
            }) => {
                let mut sink = Masked { sink, counted };
                if let Some(s) = scripts {
                    s.price(&mut sink);
                }
                patterns(&block, &mut carry, &mut sink);
                off = bytes.len();
                continue;
            }
            None => {
                let (b, held, len) = next_block(classify, text, off, &mut spill, sink);
                group[filled] = b;
                last = held;
                filled += 1;
                off += len;
                if filled < L::BLOCKS {
                    continue;
                }
                filled = 0;
                pack::<L>(&group[..L::BLOCKS])
            }
        };
        patterns(&lanes, &mut carry, sink);
    }
    if filled > 0 {
        // Empty blocks after the end: no class bits, so no patterns.
        group[filled..].fill(Block::default());
        patterns(&pack::<L>(&group[..L::BLOCKS]), &mut carry, sink);
    }
    // The end of the text follows a trailing space the way a CJK character would.
    let trailing_space = match bytes.last() {
        Some(b' ' | b'\t') => true,
        Some(b) if b.is_ascii() => false,
        _ => text
            .chars()
            .next_back()
            .is_some_and(|c| kind(c) == Char::Space),
    };
    if trailing_space {
        sink.add(Feature::SpaceAlone, 1);
    }
}

/// The block at `off` (64 bytes, or the text's last bytes): its masks, what kind of block it
/// was, and its length.
#[inline(always)]
fn next_block(
    classify: &impl Classify,
    text: &str,
    off: usize,
    spill: &mut Option<(usize, Char)>,
    tally: &mut impl Tally,
) -> (Block<u64>, Last, usize) {
    let bytes = text.as_bytes();
    let len = (bytes.len() - off).min(64);
    let (b, held) = if len == 64 {
        // A whole block, read in place (with the byte before it, if any).
        let prev = off.checked_sub(1).map(|before| first64(&bytes[before..]));
        let cur = first64(&bytes[off..]);
        block(classify, text, off, cur, prev, len, 0, spill, tally)
    } else if let Some(start) = bytes.len().checked_sub(65) {
        // A short last block: the text's last 64 bytes, read in place and shifted down past
        // the bytes already counted.
        let (prev, cur) = (first64(&bytes[start..]), first64(&bytes[start + 1..]));
        let shift = (64 - len) as u32;
        block(
            classify,
            text,
            off,
            cur,
            Some(prev),
            len,
            shift,
            spill,
            tally,
        )
    } else {
        // A text shorter than a block: a zero-padded copy.
        let mut buf = [0u8; 64];
        buf[..len].copy_from_slice(&bytes[off..off + len]);
        block(classify, text, off, &buf, None, len, 0, spill, tally)
    };
    (b, held, len)
}

/// The masks of the `len` bytes at `off`: they are `cur`, or, if `shift` is not 0, the end of
/// `cur` (its first `shift` bytes were counted before); `prev` is `cur` shifted back by one
/// byte (`None` at the text's start). Non-ASCII characters are counted into `tally` and
/// marked in the masks. Also says what kind of block it was.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn block(
    classify: &impl Classify,
    text: &str,
    off: usize,
    cur: &[u8; 64],
    prev: Option<&[u8; 64]>,
    len: usize,
    shift: u32,
    spill: &mut Option<(usize, Char)>,
    tally: &mut impl Tally,
) -> (Block<u64>, Last) {
    let valid = span(0, len);
    let mut m = classify.ascii(cur, prev);
    m.skip(shift);
    let letter = m.letter & valid;
    let digit = m.digit & valid;
    let punct = m.punct & valid;
    let mut b = Block {
        word: letter,
        letter,
        digit,
        punct,
        space: m.space & valid,
        newline: m.newline & valid,
        same: m.same,
        other: 0,
    };
    if m.nonascii & valid == 0 {
        return (b, Last::Ascii);
    }
    let mut mark = |c: Char, bits: u64| match c {
        Char::Letter => b.word |= bits,
        Char::Space => b.space |= bits,
        Char::Newline => b.newline |= bits,
        Char::Alone(_) => {}
    };
    if let Some((n, c)) = spill.take() {
        mark(c, span(0, n));
    }
    let mut wide = classify.wide(cur);
    wide.skip(shift);
    tally.add(Feature::Han, (wide.han & valid).count_ones());
    tally.add(Feature::Kana, (wide.kana & valid).count_ones());
    tally.add(Feature::Hangul, (wide.hangul & valid).count_ones());
    let mut leads = wide.lead & valid;
    let held = if leads == 0 {
        Last::Scripts
    } else {
        Last::Decoded
    };
    while leads != 0 {
        let i = leads.trailing_zeros() as usize;
        leads &= leads - 1;
        let Some(ch) = text.get(off + i..).and_then(|s| s.chars().next()) else {
            continue;
        };
        let c = kind(ch);
        match c {
            Char::Letter => tally.add(Feature::OtherLetter, 1),
            Char::Alone(feature) => tally.add(feature, 1),
            Char::Space | Char::Newline => {}
        }
        let end = i + ch.len_utf8();
        mark(c, span(i, end.min(64)));
        if end > 64 {
            *spill = Some((end - 64, c));
        }
    }
    b.other = valid & !(b.word | b.digit | b.punct | b.space | b.newline);
    (b, held)
}

/// What a block held, for choosing how to read the next group.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    /// Only ASCII.
    Ascii,
    /// Non-ASCII characters, all CJK, kana or hangul.
    Scripts,
    /// Characters that had to be decoded.
    Decoded,
}

/// [`Lanes::script_run`] for the group of blocks at `off`, or, with fewer bytes left, for the
/// text's last group past `off`; also says how many bytes it covers.
#[inline(always)]
fn script_run<L: Lanes>(bytes: &[u8], off: usize) -> Option<([u32; 3], usize)> {
    if L::BLOCKS == 1 {
        return None;
    }
    let left = bytes.len() - off;
    let start = if left >= GROUP {
        off
    } else {
        bytes.len().checked_sub(GROUP)?
    };
    let window = Window {
        cur: bytes[start..].first_chunk()?,
        back: None,
        on: bytes[start + 1..].first_chunk(),
    };
    L::script_run(&window, off - start).map(|counts| (counts, left.min(GROUP)))
}

/// A group of blocks read whole.
struct Whole<L> {
    block: Block<L>,
    scripts: Option<Scripts<L>>,
    /// For the text's last group, read from further back: the bits of the bytes counted
    /// before, which it only looks back at.
    counted: Option<L>,
}

/// The group of blocks at `off` through [`Lanes::ascii_group`] or [`Lanes::script_group`],
/// whichever suits text like the block before (`last`; both at the text's start), if the
/// lanes have them. With fewer bytes than a group left, the text's last group is read,
/// from as far back as it takes.
#[inline(always)]
fn whole_group<L: Lanes>(bytes: &[u8], off: usize, last: Last) -> Option<Whole<L>> {
    if L::BLOCKS == 1 || last == Last::Decoded {
        return None;
    }
    let (start, counted) = if bytes.len() - off >= GROUP {
        (off, None)
    } else {
        // At least 7 bytes back, past the patterns' longest look-back (a letter's 6 before
        // it), so that every byte priced looks back within the group.
        let start = bytes.len().checked_sub(GROUP).filter(|&s| s + 7 <= off)?;
        let mut lanes = [0u64; 4];
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane = span(0, (off - start).saturating_sub(64 * i).min(64));
        }
        (start, Some(L::pack(&lanes[..L::BLOCKS])))
    };
    let window = Window {
        cur: bytes[start..].first_chunk()?,
        back: start.checked_sub(1).and_then(|p| bytes[p..].first_chunk()),
        on: bytes[start + 1..].first_chunk(),
    };
    // (No closures here: they would not be compiled with the classifier's CPU features.)
    if last == Last::Ascii || off == 0 {
        if let Some(block) = L::ascii_group(&window) {
            return Some(Whole {
                block,
                scripts: None,
                counted,
            });
        }
        if off > 0 {
            return None;
        }
    }
    let (block, scripts) = L::script_group(&window)?;
    Some(Whole {
        block,
        scripts: Some(scripts),
        counted,
    })
}

impl<L: Lanes> Scripts<L> {
    #[inline(always)]
    fn price(&self, sink: &mut impl Sink<L>) {
        sink.add_mask(Feature::Han, self.han);
        sink.add_mask(Feature::Kana, self.kana);
        sink.add_mask(Feature::Hangul, self.hangul);
    }
}

/// A sink that drops the bits of bytes counted before (`counted`).
struct Masked<'a, S, L> {
    sink: &'a mut S,
    counted: L,
}

impl<L: Lanes, S: Sink<L>> Sink<L> for Masked<'_, S, L> {
    #[inline(always)]
    fn add_mask(&mut self, feature: Feature, mask: L) {
        self.sink.add_mask(feature, mask & !self.counted);
    }

    #[inline(always)]
    fn end_group(&mut self) {
        self.sink.end_group();
    }
}

/// The masks of `L::BLOCKS` consecutive blocks, one per lane.
#[inline(always)]
fn pack<L: Lanes>(group: &[Block<u64>]) -> Block<L> {
    let lanes = |field: fn(&Block<u64>) -> u64| {
        let mut masks = [0u64; 4];
        for (mask, block) in masks.iter_mut().zip(group) {
            *mask = field(block);
        }
        L::pack(&masks[..L::BLOCKS])
    };
    Block {
        word: lanes(|b| b.word),
        letter: lanes(|b| b.letter),
        digit: lanes(|b| b.digit),
        punct: lanes(|b| b.punct),
        space: lanes(|b| b.space),
        newline: lanes(|b| b.newline),
        same: lanes(|b| b.same),
        other: lanes(|b| b.other),
    }
}

/// Feeds the patterns of `b` to `sink`, and leaves in `carry` what the next blocks look back
/// into.
#[inline(always)]
fn patterns<L: Lanes>(b: &Block<L>, carry: &mut Carry<L>, sink: &mut impl Sink<L>) {
    // Each class's patterns are priced as soon as they are found, and its carry replaced,
    // so that few masks are live at once (the vector path has 16 registers for them).
    let space1 = b.space.back(carry.space, 1);
    let space2 = b.space.back(carry.space, 2);
    carry.space = b.space;
    sink.add_mask(Feature::SpaceAlone, b.other & space1);
    sink.add_mask(Feature::SpaceDigit, b.digit & space1);
    let solid = b.word | b.digit | b.punct;
    sink.add_mask(Feature::MultiSpace, solid & space1 & space2);

    let word1 = b.word.back(carry.word, 1);
    sink.add_mask(Feature::Word, b.word & !word1);
    let word2 = b.word & word1;
    let word4 = word2 & word2.back(carry.word2, 2);
    let word7 = word4 & word4.back(carry.word4, 3);
    sink.add_mask(Feature::LongLetter, b.letter & word7);
    carry.word = b.word;
    carry.word2 = word2;
    carry.word4 = word4;

    let digit1 = b.digit.back(carry.digit, 1);
    sink.add_mask(Feature::DigitRun, b.digit & !digit1);
    let digit2 = b.digit & digit1;
    sink.add_mask(Feature::DigitExtra, digit2 & digit2.back(carry.digit2, 2));
    carry.digit = b.digit;
    carry.digit2 = digit2;

    let punct1 = b.punct.back(carry.punct, 1);
    let punct2 = b.punct.back(carry.punct, 2);
    carry.punct = b.punct;
    sink.add_mask(Feature::PunctRun, b.punct & !punct1);
    sink.add_mask(Feature::Glued, b.word & punct1 & !punct2);
    let run_punct = b.punct & punct1;
    sink.add_mask(Feature::PunctMixed, run_punct & !b.same);
    sink.add_mask(Feature::PunctRepeat, run_punct & b.same);

    let newline1 = b.newline.back(carry.newline, 1);
    carry.newline = b.newline;
    sink.add_mask(Feature::Newline, b.newline & !newline1);
    sink.add_mask(Feature::Indent, b.space & newline1);
    sink.end_group();
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
