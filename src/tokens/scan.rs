//! Reading a text for the patterns: block by block, or a whole group of four blocks at a
//! time where the lanes allow, and the traits a pass over a text is written against.
//!
//! [`drive`] feeds every pattern of a text to a sink. Each 64-byte block is classified
//! (`classes`), its non-ASCII characters decoded and marked (letters join words, Unicode
//! spaces and line separators act as spaces and line breaks, the rest is counted by script),
//! and its masks handed to `patterns`. With four-block lanes, whole groups that are all ASCII,
//! or whose non-ASCII characters are all CJK, kana or hangul, are classified straight into
//! lanes, and runs with no ASCII at all are only counted by script.
//!
//! A pass ([`Scan`]) is written once over any classifier ([`Scanner`]), so that `dispatch`
//! can run it compiled for the CPU it found.
//!
//! Invariants: every byte of the text is priced exactly once, whichever path reads it (the
//! text's last group, read from further back, masks off the bytes counted before); a
//! character split across two blocks is marked in both.

use super::classes::{kind, Char, Classify};
use super::encoding::Encoding;
use super::features::{Feature, Tally};
use super::patterns::{pack, patterns, Block, Carry, Lanes, Masked, Scripts, Sink, Window, GROUP};
use super::prices::Units;

/// A classifier, and how it prices a whole text: one block at a time, unless it has wider
/// lanes to do it with.
pub(crate) trait Scanner: Classify {
    /// The estimate of `text` in hundredths of a token.
    fn units(&self, text: &str, encoding: Encoding) -> i64 {
        units_by_block(self, text, encoding)
    }
}

/// [`Scanner::units`] one block at a time.
#[inline(always)]
pub(super) fn units_by_block(scanner: &impl Classify, text: &str, encoding: Encoding) -> i64 {
    let mut units = Units::new(encoding.prices());
    drive::<u64, _>(text, scanner, &mut units);
    units.total()
}

impl Scanner for super::classes::Scalar {}

/// A pass over a text that classifies it block by block.
pub(crate) trait Scan {
    type Output;

    /// Scans with `scanner`. Mark implementations `#[inline(always)]`, so that they are
    /// compiled with the classifier's CPU features.
    fn scan(self, scanner: &impl Scanner) -> Self::Output;
}

/// Feeds every pattern of `text` to `sink`, `L::BLOCKS` blocks at a time.
#[inline(always)]
pub(super) fn drive<L: Lanes, S: Sink<L> + Tally>(
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
                sink.add(Feature::SpaceAlone, u32::from(carry.ends_with_space()));
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

/// The first 64 bytes of a slice known to hold at least that many.
#[inline]
fn first64(s: &[u8]) -> &[u8; 64] {
    match s.first_chunk::<64>() {
        Some(block) => block,
        None => unreachable!("blocks are 64 bytes"),
    }
}

/// The bits `from..to` (`to <= 64`).
#[inline]
fn span(from: usize, to: usize) -> u64 {
    let high = if to >= 64 { u64::MAX } else { (1u64 << to) - 1 };
    high & !((1u64 << from) - 1)
}
