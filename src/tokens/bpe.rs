//! OpenAI's exact token count (`cl100k_base`, `o200k_base`), without the regex engine.
//!
//! OpenAI's tokenizers split a text into *pieces* with a regex (a word with the character
//! before it, up to three digits, a run of punctuation, a run of whitespace) and encode each
//! piece by byte-pair merges. Counting needs no token ids: a piece that is itself in the
//! vocabulary (most are) is one token; any other is merged as tiktoken merges it (the
//! adjacent pair of lowest rank first, the leftmost of equal ranks) and its parts counted.
//!
//! The split is the costly part of a regex tokenizer (about as long as the whole count in
//! `bpe-openai`), so it is written out here as the regexes' leftmost-first alternatives over
//! the characters' Unicode general categories, read once per character. The two patterns,
//! as tiktoken states them:
//!
//! ```text
//! cl100k_base: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//!              | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//! o200k_base:  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//!              |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//!              |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//! ```
//!
//! Every character starts a match of some alternative, so the pieces tile the text. The
//! tests compare the count with `bpe-openai`'s on the accuracy corpora and on random texts
//! drawn from the characters the alternatives tell apart (`tests/tokens/test_exact_counter.py`).
//! The vocabulary is the published `.tiktoken` file (one `base64 rank` line per token).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use base64::Engine as _;
use rustc_hash::FxHashMap;
use unicode_general_category::{get_general_category, GeneralCategory as G};

/// Which of OpenAI's pre-tokenizing patterns splits the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
    /// `o200k_base` (GPT-4o and later).
    O200k,
}

// Character classes, as bits.
/// `\p{Lu}`, `\p{Lt}`: a letter only the o200k "upper" class holds.
const UPPER: u8 = 1;
/// `\p{Ll}`: a letter only the o200k "lower" class holds.
const LOWER: u8 = 2;
/// `\p{Lm}`, `\p{Lo}`: a letter both o200k classes hold.
const OTHER_LETTER: u8 = 4;
/// `\p{M}`: a mark (both o200k letter classes hold it; it is not `\p{L}`).
const MARK: u8 = 8;
/// `\p{N}`.
const NUMBER: u8 = 16;
/// `\s` (Unicode `White_Space`), `\r` and `\n` included.
const SPACE: u8 = 32;
/// `\r` or `\n`.
const NEWLINE: u8 = 64;

const LETTER: u8 = UPPER | LOWER | OTHER_LETTER;
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
const O200K_UPPER: u8 = UPPER | OTHER_LETTER | MARK;
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
const O200K_LOWER: u8 = LOWER | OTHER_LETTER | MARK;

fn class_of(c: char) -> u8 {
    if c == '\r' || c == '\n' {
        return SPACE | NEWLINE;
    }
    if c.is_whitespace() {
        return SPACE;
    }
    match get_general_category(c) {
        G::UppercaseLetter | G::TitlecaseLetter => UPPER,
        G::LowercaseLetter => LOWER,
        G::ModifierLetter | G::OtherLetter => OTHER_LETTER,
        G::NonspacingMark | G::SpacingMark | G::EnclosingMark => MARK,
        G::DecimalNumber | G::LetterNumber | G::OtherNumber => NUMBER,
        _ => 0,
    }
}

/// The classes of the 128 ASCII characters.
const fn ascii_classes() -> [u8; 128] {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if c == b'\r' || c == b'\n' {
            SPACE | NEWLINE
        } else if c == b' ' || (c >= 9 && c <= 13) {
            SPACE
        } else if c.is_ascii_uppercase() {
            UPPER
        } else if c.is_ascii_lowercase() {
            LOWER
        } else if c.is_ascii_digit() {
            NUMBER
        } else {
            0
        };
        b += 1;
    }
    t
}

static ASCII: [u8; 128] = ascii_classes();

/// One character of the text: its class, its byte offset, and the character itself.
#[derive(Clone, Copy)]
struct Ch {
    class: u8,
    at: u32,
    c: char,
}

/// A text's characters, classified; `at(len)` is the text's end.
struct Chars {
    chars: Vec<Ch>,
    end: u32,
}

impl Chars {
    fn new(text: &str) -> Self {
        let mut chars = Vec::with_capacity(text.len());
        for (at, c) in text.char_indices() {
            let class = if c.is_ascii() {
                ASCII[c as usize]
            } else {
                class_of(c)
            };
            chars.push(Ch {
                class,
                at: at as u32,
                c,
            });
        }
        Self {
            chars,
            end: text.len() as u32,
        }
    }
}

/// An ASCII text: its bytes are its characters (no per-character table to build).
struct Ascii<'a>(&'a [u8]);

/// A text as the split reads it: characters by index, each with its class.
trait Text {
    /// Number of characters.
    fn len(&self) -> usize;
    /// The class of character `i`, if it exists.
    fn class(&self, i: usize) -> Option<u8>;
    /// Character `i`, if it exists.
    fn char(&self, i: usize) -> Option<char>;
    /// The byte offset of character `i` (the text's length at the end).
    fn at(&self, i: usize) -> usize;

    /// True if character `i` exists and has a class in `mask`.
    #[inline]
    fn is(&self, i: usize, mask: u8) -> bool {
        self.class(i).is_some_and(|class| class & mask != 0)
    }

    /// The end of the run of characters with a class in `mask` starting at `i`.
    #[inline]
    fn run(&self, mut i: usize, mask: u8) -> usize {
        while self.is(i, mask) {
            i += 1;
        }
        i
    }

    /// The length in characters of a contraction (`(?i:'s|'t|'re|'ve|'m|'ll|'d)`) at `i`,
    /// or 0.
    fn contraction(&self, i: usize) -> usize {
        if self.char(i) != Some('\'') {
            return 0;
        }
        // Simple case folding, as `(?i)` matches: `ſ` (U+017F) folds to `s`.
        let fold = |j: usize| {
            self.char(j).map(|c| match c {
                'ſ' => 's',
                c => c.to_ascii_lowercase(),
            })
        };
        match fold(i + 1) {
            Some('s' | 't' | 'm' | 'd') => 2,
            Some('r' | 'v') if fold(i + 2) == Some('e') => 3,
            Some('l') if fold(i + 2) == Some('l') => 3,
            _ => 0,
        }
    }

    /// `[^\r\n\p{L}\p{N}]`: the character a word may take before it.
    #[inline]
    fn word_prefix(&self, i: usize) -> bool {
        self.class(i)
            .is_some_and(|class| class & (NEWLINE | LETTER | NUMBER) == 0)
    }

    /// `[^\s\p{L}\p{N}]`: punctuation and symbols (marks too).
    #[inline]
    fn punct(&self, i: usize) -> bool {
        self.class(i)
            .is_some_and(|class| class & (SPACE | LETTER | NUMBER) == 0)
    }

    /// The end of the piece starting at `p` (a character index below `len`).
    fn piece_end(&self, p: usize, pattern: Pattern) -> usize {
        match pattern {
            Pattern::Cl100k => self.cl100k(p),
            Pattern::O200k => self.o200k(p),
        }
    }

    fn cl100k(&self, p: usize) -> usize {
        let n = self.contraction(p);
        if n > 0 {
            return p + n;
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        if self.word_prefix(p) && self.is(p + 1, LETTER) {
            return self.run(p + 1, LETTER);
        }
        if self.is(p, LETTER) {
            return self.run(p, LETTER);
        }
        if let Some(end) = self.digits(p) {
            return end;
        }
        // " ?[^\s\p{L}\p{N}]+[\r\n]*"
        if let Some(end) = self.punctuation(p, false) {
            return end;
        }
        self.spaces(p)
    }

    fn o200k(&self, p: usize) -> usize {
        // The two word alternatives, each first with the prefix character, then without.
        for (first, second, at_least_one_first) in [
            (O200K_UPPER, O200K_LOWER, false),
            (O200K_UPPER, O200K_LOWER, true),
        ] {
            for q in [p + 1, p] {
                if q == p + 1 && !self.word_prefix(p) {
                    continue;
                }
                if let Some(end) = self.o200k_word(q, first, second, at_least_one_first) {
                    return end + self.contraction(end);
                }
            }
        }
        if let Some(end) = self.digits(p) {
            return end;
        }
        if let Some(end) = self.punctuation(p, true) {
            return end;
        }
        self.spaces(p)
    }

    /// `first*second+` (or `first+second*` when `at_least_one_first`) from `q`, with a
    /// backtracking engine's choice: `first` as long as the rest still matches.
    fn o200k_word(
        &self,
        q: usize,
        first: u8,
        second: u8,
        at_least_one_first: bool,
    ) -> Option<usize> {
        let u = self.run(q, first);
        if at_least_one_first {
            return (u > q).then(|| self.run(u, second));
        }
        // The longest `first*` after which a `second` character follows.
        let k = (q..=u).rev().find(|&k| self.is(k, second))?;
        Some(self.run(k, second))
    }

    /// `\p{N}{1,3}`.
    fn digits(&self, p: usize) -> Option<usize> {
        if !self.is(p, NUMBER) {
            return None;
        }
        let mut end = p + 1;
        while end < p + 3 && self.is(end, NUMBER) {
            end += 1;
        }
        Some(end)
    }

    /// ` ?[^\s\p{L}\p{N}]+` then `[\r\n]*` (`[\r\n/]*` for o200k).
    fn punctuation(&self, p: usize, slash: bool) -> Option<usize> {
        let q = if self.char(p) == Some(' ') && self.punct(p + 1) {
            p + 1
        } else if self.punct(p) {
            p
        } else {
            return None;
        };
        let mut end = q;
        while self.punct(end) {
            end += 1;
        }
        while self.is(end, NEWLINE) || (slash && self.char(end) == Some('/')) {
            end += 1;
        }
        Some(end)
    }

    /// `\s*[\r\n]+|\s+(?!\S)|\s+` at `p`, a whitespace character (every other character
    /// was matched by an earlier alternative).
    fn spaces(&self, p: usize) -> usize {
        let end = self.run(p, SPACE);
        // \s*[\r\n]+: through the run's last line break.
        if let Some(last) = (p..end).rev().find(|&i| self.is(i, NEWLINE)) {
            return last + 1;
        }
        // \s+(?!\S): all of it at the text's end, else all but its last character.
        if end == self.len() || end - p == 1 {
            end
        } else {
            end - 1
        }
    }
}

impl Text for Chars {
    #[inline]
    fn len(&self) -> usize {
        self.chars.len()
    }
    #[inline]
    fn class(&self, i: usize) -> Option<u8> {
        self.chars.get(i).map(|ch| ch.class)
    }
    #[inline]
    fn char(&self, i: usize) -> Option<char> {
        self.chars.get(i).map(|ch| ch.c)
    }
    #[inline]
    fn at(&self, i: usize) -> usize {
        self.chars.get(i).map_or(self.end, |ch| ch.at) as usize
    }
}

impl Text for Ascii<'_> {
    #[inline]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline]
    fn class(&self, i: usize) -> Option<u8> {
        self.0.get(i).map(|&b| ASCII[usize::from(b)])
    }
    #[inline]
    fn char(&self, i: usize) -> Option<char> {
        self.0.get(i).map(|&b| char::from(b))
    }
    #[inline]
    fn at(&self, i: usize) -> usize {
        i
    }
}

/// Token ranks by their bytes. Tokens of up to 7 bytes (most of them, and most pieces
/// looked up) are keyed by their bytes packed in a `u64` with their length, those of up to
/// 15 in a `u128`: a lookup then hashes and compares in registers, with no pointer to a key
/// stored elsewhere, and the table of short tokens is small enough to stay in cache.
#[derive(Default)]
struct Ranks {
    tiny: FxHashMap<u64, u32>,
    short: FxHashMap<u128, u32>,
    long: FxHashMap<Box<[u8]>, u32>,
}

/// `bytes` (1 to 8 of them) as a little-endian integer, read with at most two loads that may
/// overlap (the overlapping bytes are equal, so OR-ing them is exact).
#[inline]
fn load_le(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    debug_assert!((1..=8).contains(&n));
    if n >= 4 {
        let lo = u64::from(u32::from_le_bytes(
            bytes[..4].try_into().unwrap_or_default(),
        ));
        let hi = u64::from(u32::from_le_bytes(
            bytes[n - 4..].try_into().unwrap_or_default(),
        ));
        lo | (hi << (8 * (n - 4)))
    } else {
        u64::from(bytes[0])
            | (u64::from(bytes[n / 2]) << (8 * (n / 2)))
            | (u64::from(bytes[n - 1]) << (8 * (n - 1)))
    }
}

/// A key of 1 to 7 bytes: the bytes, and the length in the top byte.
#[inline]
fn pack64(bytes: &[u8]) -> u64 {
    load_le(bytes) | ((bytes.len() as u64) << 56)
}

/// A key of 8 to 15 bytes: the bytes, and the length in the top byte.
#[inline]
fn pack128(bytes: &[u8]) -> u128 {
    let n = bytes.len();
    let lo = u128::from(load_le(&bytes[..8]));
    let hi = u128::from(load_le(&bytes[n - 8..]));
    lo | (hi << (8 * (n - 8))) | ((n as u128) << 120)
}

impl Ranks {
    fn insert(&mut self, token: &[u8], rank: u32) {
        match token.len() {
            0 => {}
            1..=7 => {
                self.tiny.insert(pack64(token), rank);
            }
            8..=15 => {
                self.short.insert(pack128(token), rank);
            }
            _ => {
                self.long.insert(token.into(), rank);
            }
        }
    }

    #[inline]
    fn get(&self, bytes: &[u8]) -> Option<u32> {
        match bytes.len() {
            0 => None,
            1..=7 => self.tiny.get(&pack64(bytes)).copied(),
            8..=15 => self.short.get(&pack128(bytes)).copied(),
            _ => self.long.get(bytes).copied(),
        }
    }

    fn len(&self) -> usize {
        self.tiny.len() + self.short.len() + self.long.len()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An OpenAI tokenizer's vocabulary and split, for counting.
pub struct Bpe {
    ranks: Ranks,
    pattern: Pattern,
}

/// Pieces at least this long are merged with a heap (O(n log n)) rather than tiktoken's
/// rescans (O(n²), faster on the short pieces that nearly all are).
const LONG_PIECE: usize = 128;

impl Bpe {
    /// Reads a `.tiktoken` file (lines of `base64-token rank`).
    ///
    /// # Errors
    /// A line that is not a base64 token and a rank, or a vocabulary that lacks a single
    /// byte (every byte must be a token, or some texts could not be counted).
    pub fn from_tiktoken(data: &[u8], pattern: Pattern) -> Result<Self, String> {
        let mut ranks = Ranks::default();
        for (n, line) in data.split(|&b| b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let bad = || format!("line {}: not `base64-token rank`", n + 1);
            let mut fields = line.split(|&b| b == b' ');
            let (Some(token), Some(rank), None) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(bad());
            };
            let token = base64::engine::general_purpose::STANDARD
                .decode(token)
                .map_err(|_| bad())?;
            let rank: u32 = std::str::from_utf8(rank)
                .ok()
                .and_then(|r| r.trim_end_matches('\r').parse().ok())
                .ok_or_else(bad)?;
            ranks.insert(&token, rank);
        }
        if let Some(b) = (0..=255u8).find(|b| ranks.get(&[*b]).is_none()) {
            return Err(format!("the vocabulary lacks the single byte {b:#04x}"));
        }
        Ok(Self { ranks, pattern })
    }

    /// Number of tokens in the vocabulary.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ranks.len()
    }

    /// True if the vocabulary is empty (never, for a loaded one).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    /// The pieces `text` splits into, as byte ranges.
    #[must_use]
    pub fn pieces(&self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        self.split(text, |a, b| out.push((a, b)));
        out
    }

    /// Tokens of `text` (special-token text counts as plain text, as `encode_ordinary`).
    #[must_use]
    pub fn count(&self, text: &str) -> usize {
        let bytes = text.as_bytes();
        let mut total = 0;
        self.split(text, |a, b| total += self.piece_tokens(&bytes[a..b]));
        total
    }

    /// Calls `f` with each piece's byte range, in order.
    fn split(&self, text: &str, f: impl FnMut(usize, usize)) {
        if text.is_ascii() {
            self.split_text(&Ascii(text.as_bytes()), f);
        } else {
            self.split_text(&Chars::new(text), f);
        }
    }

    fn split_text(&self, text: &impl Text, mut f: impl FnMut(usize, usize)) {
        let mut p = 0;
        while p < text.len() {
            let end = text.piece_end(p, self.pattern);
            f(text.at(p), text.at(end));
            p = end;
        }
    }

    fn rank(&self, bytes: &[u8]) -> u32 {
        self.ranks.get(bytes).unwrap_or(u32::MAX)
    }

    fn piece_tokens(&self, piece: &[u8]) -> usize {
        if piece.len() <= 1 || self.ranks.get(piece).is_some() {
            return piece.len().min(1);
        }
        if piece.len() < LONG_PIECE {
            self.merge_scan(piece)
        } else {
            self.merge_heap(piece)
        }
    }

    /// tiktoken's `_byte_pair_merge`: merge the lowest-ranked adjacent pair (the leftmost of
    /// equals) until no pair is in the vocabulary; the parts left are the tokens.
    fn merge_scan(&self, piece: &[u8]) -> usize {
        // (start, rank of the pair starting here)
        let mut parts: Vec<(usize, u32)> = Vec::with_capacity(piece.len() + 1);
        for i in 0..piece.len() - 1 {
            parts.push((i, self.rank(&piece[i..i + 2])));
        }
        parts.push((piece.len() - 1, u32::MAX));
        parts.push((piece.len(), u32::MAX));
        let rank_at = |parts: &[(usize, u32)], i: usize| {
            if i + 3 < parts.len() {
                self.rank(&piece[parts[i].0..parts[i + 3].0])
            } else {
                u32::MAX
            }
        };
        loop {
            let (mut min, mut at) = (u32::MAX, 0);
            for (i, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
                if r < min {
                    (min, at) = (r, i);
                }
            }
            if min == u32::MAX {
                break;
            }
            if at > 0 {
                parts[at - 1].1 = rank_at(&parts, at - 1);
            }
            parts[at].1 = rank_at(&parts, at);
            parts.remove(at + 1);
        }
        parts.len() - 1
    }

    /// The same merges in O(n log n): the parts as a linked list, the pairs in a heap keyed
    /// by (rank, start), stale entries skipped by a per-part stamp.
    fn merge_heap(&self, piece: &[u8]) -> usize {
        let n = piece.len();
        // Part i starts at byte i; next[i] is the next part's start (n at the end).
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut stamp = vec![0u32; n];
        let mut alive = n;
        let mut heap = BinaryHeap::with_capacity(n);
        let pair_rank = |next: &[usize], i: usize| {
            let j = next[i];
            if j >= n {
                return u32::MAX;
            }
            self.rank(&piece[i..next[j]])
        };
        for i in 0..n - 1 {
            let r = pair_rank(&next, i);
            if r != u32::MAX {
                heap.push(Reverse((r, i, 0u32)));
            }
        }
        while let Some(Reverse((_, i, s))) = heap.pop() {
            if stamp[i] != s || next[i] >= n {
                continue; // stale: part i was merged away or its pair changed since
            }
            let j = next[i];
            next[i] = next[j];
            if next[j] < n {
                prev[next[j]] = i;
            }
            stamp[j] = u32::MAX; // j is gone
            alive -= 1;
            stamp[i] += 1;
            let ri = pair_rank(&next, i);
            if ri != u32::MAX {
                heap.push(Reverse((ri, i, stamp[i])));
            }
            let h = prev[i];
            if h < n {
                stamp[h] += 1;
                let rh = pair_rank(&next, h);
                if rh != u32::MAX {
                    heap.push(Reverse((rh, h, stamp[h])));
                }
            }
        }
        alive
    }

    /// Tokens of `piece` by both merge procedures (tests: they must agree).
    #[doc(hidden)]
    #[must_use]
    pub fn merge_both(&self, piece: &[u8]) -> (usize, usize) {
        if piece.len() <= 1 {
            return (piece.len(), piece.len());
        }
        (self.merge_scan(piece), self.merge_heap(piece))
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    /// A vocabulary of the 256 bytes plus `merges`, ranked in order after them.
    fn vocabulary(merges: &[&str], pattern: Pattern) -> Bpe {
        let engine = base64::engine::general_purpose::STANDARD;
        let mut lines = String::new();
        for b in 0..=255u8 {
            let _ = writeln!(lines, "{} {b}", engine.encode([b]));
        }
        for (i, m) in merges.iter().enumerate() {
            let _ = writeln!(lines, "{} {}", engine.encode(m), 256 + i);
        }
        Bpe::from_tiktoken(lines.as_bytes(), pattern).unwrap()
    }

    fn split(bpe: &Bpe, text: &str) -> Vec<String> {
        bpe.pieces(text)
            .into_iter()
            .map(|(a, b)| text[a..b].to_owned())
            .collect()
    }

    #[test]
    fn cl100k_split_follows_the_regex() {
        let bpe = vocabulary(&[], Pattern::Cl100k);
        let cases: &[(&str, &[&str])] = &[
            ("Hello world", &["Hello", " world"]),
            ("it's 12345!", &["it", "'s", " ", "123", "45", "!"]),
            ("a  b", &["a", " ", " b"]),
            ("x \n\n  y", &["x", " \n\n", " ", " y"]),
            ("end   ", &["end", "   "]),
            ("(x)\r\n", &["(x", ")\r\n"]),
            ("I'LL", &["I", "'LL"]),
        ];
        for (text, pieces) in cases {
            assert_eq!(split(&bpe, text), *pieces, "{text:?}");
        }
    }

    #[test]
    fn o200k_split_follows_the_regex() {
        let bpe = vocabulary(&[], Pattern::O200k);
        let cases: &[(&str, &[&str])] = &[
            ("HelloWorld", &["Hello", "World"]),
            ("HTTPServer's", &["HTTPServer's"]),
            ("don't", &["don't"]),
            ("a/b//\n", &["a", "/b", "//\n"]),
            ("1234", &["123", "4"]),
        ];
        for (text, pieces) in cases {
            assert_eq!(split(&bpe, text), *pieces, "{text:?}");
        }
    }

    #[test]
    fn merges_take_the_lowest_rank_first_and_both_ways_agree() {
        // "ab" before "bc": "abc" -> "ab" + "c"; with "abc" too, one token.
        let bpe = vocabulary(&["ab", "bc"], Pattern::Cl100k);
        assert_eq!(bpe.count("abc"), 2);
        let bpe = vocabulary(&["ab", "bc", "abc", "aa", "aaaa"], Pattern::Cl100k);
        assert_eq!(bpe.count("abc"), 1);
        assert_eq!(bpe.count("aaaaaaa"), 3); // aaaa + aa + a
        for text in ["abcabcaab", &"ab".repeat(300), &"a".repeat(1001), "cba"] {
            let (scan, heap) = bpe.merge_both(text.as_bytes());
            assert_eq!(scan, heap, "{text:?}");
        }
        assert_eq!(bpe.count(""), 0);
    }

    #[test]
    fn bad_vocabularies_are_refused() {
        assert!(Bpe::from_tiktoken(b"!!! 1\n", Pattern::O200k).is_err());
        assert!(Bpe::from_tiktoken(b"YQ== x\n", Pattern::O200k).is_err());
        let Err(e) = Bpe::from_tiktoken(b"YQ== 0\n", Pattern::O200k) else {
            panic!("a vocabulary without the single bytes was accepted");
        };
        assert!(e.contains("lacks the single byte"), "{e}");
    }
}
