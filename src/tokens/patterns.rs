//! The pattern arithmetic: every [`Feature`] of a block as a few shifts, ANDs and popcounts
//! of its class masks.
//!
//! A 64-byte block becomes masks, one bit per byte ([`Block`]: words, letters, digits,
//! punctuation, spaces, line breaks, bytes equal to the one before, and the rest); each
//! pattern is then a mask too — a word start is a word byte whose byte before is not one — and
//! its count is the mask's popcount. Masks carry their top bits into the next block
//! ([`Carry`]), so a pattern that straddles two blocks counts as it would inside one.
//!
//! The arithmetic is written once over [`Lanes`]: `u64` for one block, or (on the AVX2 path,
//! for texts of four blocks or more) four blocks at a time in the 64-bit lanes of a vector,
//! where a [`Sink`] prices them with byte popcounts and multiply-adds.
//!
//! Invariants: [`patterns`] looks back at most 6 bytes (a letter's six predecessors), all of
//! them through `carry` or earlier lanes, so feeding a text in blocks, groups or lanes gives
//! the same counts (`matches_reference`, `vector_and_scalar_paths_agree`).

use std::ops::{BitAnd, BitOr, Not};

use super::features::{Feature, Tally};

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
pub(super) struct Carry<L> {
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
    /// Whether the last byte fed was a space.
    #[inline(always)]
    pub(super) fn ends_with_space(&self) -> bool {
        self.space.last() >> 63 != 0
    }

    /// What the block after the last lane looks back into, to go on one block at a time.
    #[inline(always)]
    pub(super) fn last_lane(&self) -> Carry<u64> {
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

impl<L: Lanes> Scripts<L> {
    #[inline(always)]
    pub(super) fn price(&self, sink: &mut impl Sink<L>) {
        sink.add_mask(Feature::Han, self.han);
        sink.add_mask(Feature::Kana, self.kana);
        sink.add_mask(Feature::Hangul, self.hangul);
    }
}

/// A sink that drops the bits of bytes counted before (`counted`).
pub(super) struct Masked<'a, S, L> {
    pub(super) sink: &'a mut S,
    pub(super) counted: L,
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
pub(super) fn pack<L: Lanes>(group: &[Block<u64>]) -> Block<L> {
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
pub(super) fn patterns<L: Lanes>(b: &Block<L>, carry: &mut Carry<L>, sink: &mut impl Sink<L>) {
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
