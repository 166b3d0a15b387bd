//! The AVX2 classifier and the four-block lanes it prices with: the core's only `unsafe`
//! code.
//!
//! With AVX2 (detected at run time, present on x86-64 CPUs since 2013) a block's byte classes
//! are 2 × 32 bytes of compares and `movemask`s instead of a byte-by-byte loop, and texts of a
//! group of four blocks or more are read a group at a time where they can be: all-ASCII
//! groups (`ascii_group`) and groups whose non-ASCII characters are all CJK, kana or hangul
//! (`script_group`, which tests each byte against the byte after it) are classified straight
//! into 4 × 64-bit lanes ([`V`]), and runs with no ASCII at all (`script_run`) are only
//! counted. Their patterns are priced in the lanes with byte popcounts and multiply-adds
//! ([`VecUnits`]).
//!
//! Safety: the intrinsics are sound to call only once the CPU is known to have AVX2. An
//! [`Avx2`] value is that proof: its field is private, and only [`detect`] makes one, after
//! `is_x86_feature_detected!("avx2")` said yes. [`V`] is private too, and only made by code a
//! scan started through [`Avx2::run`].
//!
//! Invariants: this classifier's masks equal the portable one's for any bytes
//! (`avx2_matches_scalar`), and its estimate equals the one-block path's
//! (`vector_and_scalar_paths_agree`).

use super::classes::{Classify, Masks, Raw, Wide};
use super::encoding::Encoding;
use super::features::{Feature, Tally, FEATURES};
use super::patterns::{Block, Lanes, Scripts, Sink, Window};
use super::prices::{ByteWeight, Units};
use super::scan::{drive, units_by_block, Scan, Scanner};
use std::arch::x86_64::{
    __m256i, _mm256_add_epi16, _mm256_add_epi32, _mm256_add_epi8, _mm256_alignr_epi8,
    _mm256_and_si256, _mm256_blend_epi32, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8,
    _mm256_extract_epi64, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_maddubs_epi16,
    _mm256_movemask_epi8, _mm256_or_si256, _mm256_permute2x128_si256, _mm256_permute4x64_epi64,
    _mm256_set1_epi16, _mm256_set1_epi8, _mm256_set_epi64x, _mm256_setr_epi32, _mm256_setr_epi8,
    _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_sll_epi64, _mm256_srl_epi64,
    _mm256_srli_epi16, _mm256_storeu_si256, _mm256_sub_epi16, _mm256_testz_si256, _mm256_xor_si256,
    _mm_cvtsi32_si128,
};
use std::ops::{BitAnd, BitOr, Not};

/// The AVX2 classifier, and the proof that this CPU has AVX2: [`detect`] is the only way to
/// get one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Avx2(());

/// The AVX2 classifier if this CPU has AVX2 (and so POPCNT); the answer is cached by std.
pub(super) fn detect() -> Option<Avx2> {
    std::is_x86_feature_detected!("avx2").then_some(Avx2(()))
}

impl Avx2 {
    /// Runs `scan` with this classifier, compiled for AVX2 and POPCNT: that makes its
    /// popcounts one instruction each, not a dozen.
    pub(super) fn run<S: Scan>(self, scan: S) -> S::Output {
        // SAFETY: an `Avx2` exists only once `detect` found AVX2 on this CPU.
        unsafe { run(self, scan) }
    }
}

/// SAFETY: the CPU has AVX2 (and so POPCNT).
#[target_feature(enable = "avx2,popcnt")]
unsafe fn run<S: Scan>(avx2: Avx2, scan: S) -> S::Output {
    scan.scan(&avx2)
}

impl Classify for Avx2 {
    #[inline(always)]
    fn ascii(&self, cur: &[u8; 64], prev: Option<&[u8; 64]>) -> Masks {
        // SAFETY: an `Avx2` exists only once `detect` found AVX2.
        unsafe { ascii(cur, prev) }
    }

    #[inline(always)]
    fn wide(&self, cur: &[u8; 64]) -> Wide {
        // SAFETY: as above.
        unsafe { wide(cur) }
    }
}

impl Scanner for Avx2 {
    /// Four blocks at a time: the pattern masks as 4 × 64-bit lanes, priced with byte
    /// popcounts and multiply-adds. A text shorter than a group of four blocks goes one
    /// block at a time: with no whole group to read in place, its blocks would be packed
    /// into lanes one by one, and the vector sums set up and folded, for no gain.
    #[inline(always)]
    fn units(&self, text: &str, encoding: Encoding) -> i64 {
        if text.len() <= 64 {
            // One block: a copy of the loop that the compiler knows runs once.
            return units_by_block(self, text, encoding);
        }
        if text.len() < 4 * 64 {
            return units_by_block(self, text, encoding);
        }
        let mut sink = VecUnits::new(encoding);
        drive::<V, _>(text, self, &mut sink);
        sink.total()
    }
}

/// The masks of four consecutive blocks, one per 64-bit lane. Values exist only inside
/// [`run`] (the type is private to this module, and only a scan that `run` started makes
/// one), so the CPU has AVX2.
#[derive(Clone, Copy)]
struct V(__m256i);

impl Default for V {
    #[inline(always)]
    fn default() -> Self {
        // SAFETY: see `V`.
        Self(unsafe { _mm256_setzero_si256() })
    }
}

impl BitAnd for V {
    type Output = Self;
    #[inline(always)]
    fn bitand(self, o: Self) -> Self {
        // SAFETY: see `V`.
        Self(unsafe { _mm256_and_si256(self.0, o.0) })
    }
}

impl BitOr for V {
    type Output = Self;
    #[inline(always)]
    fn bitor(self, o: Self) -> Self {
        // SAFETY: see `V`.
        Self(unsafe { _mm256_or_si256(self.0, o.0) })
    }
}

impl Not for V {
    type Output = Self;
    #[inline(always)]
    fn not(self) -> Self {
        // SAFETY: see `V`.
        Self(unsafe { _mm256_xor_si256(self.0, _mm256_set1_epi8(-1)) })
    }
}

impl V {
    /// Whether any bit is set.
    #[inline(always)]
    fn any(self) -> bool {
        // SAFETY: see `V`.
        unsafe { _mm256_testz_si256(self.0, self.0) == 0 }
    }
}

impl Lanes for V {
    const BLOCKS: usize = 4;

    #[inline(always)]
    fn pack(blocks: &[u64]) -> Self {
        let lane = |i: usize| blocks[i] as i64;
        // SAFETY: see `V`.
        Self(unsafe { _mm256_set_epi64x(lane(3), lane(2), lane(1), lane(0)) })
    }

    #[inline(always)]
    fn back(self, carry: Self, k: u32) -> Self {
        // SAFETY: see `V`.
        unsafe {
            // Lanes rotated up by one: [x3, x0, x1, x2]; lane 0 then takes carry's x3.
            let up = _mm256_permute4x64_epi64::<0b10_01_00_11>(self.0);
            let carry_up = _mm256_permute4x64_epi64::<0b10_01_00_11>(carry.0);
            let before = _mm256_blend_epi32::<0b0000_0011>(up, carry_up);
            let k_bits = _mm_cvtsi32_si128(k as i32);
            let rest = _mm_cvtsi32_si128(64 - k as i32);
            Self(_mm256_or_si256(
                _mm256_sll_epi64(self.0, k_bits),
                _mm256_srl_epi64(before, rest),
            ))
        }
    }

    #[inline(always)]
    fn last(self) -> u64 {
        // SAFETY: see `V`.
        unsafe { _mm256_extract_epi64::<3>(self.0) as u64 }
    }

    #[inline(always)]
    fn ascii_group(window: &Window<'_>) -> Option<Block<Self>> {
        // SAFETY: see `V`.
        unsafe { ascii_group(window) }
    }

    #[inline(always)]
    fn script_group(window: &Window<'_>) -> Option<(Block<Self>, Scripts<Self>)> {
        // SAFETY: see `V`.
        unsafe { script_group(window) }
    }

    #[inline(always)]
    fn script_run(window: &Window<'_>, skip: usize) -> Option<[u32; 3]> {
        // SAFETY: see `V`.
        unsafe { script_run(window, skip) }
    }
}

/// `[e(0), e(1), …, e(7)]` for the eight 32-byte halves of a group, written out: the
/// group functions use no closures, because a closure is compiled without the CPU
/// features of the function around it (the intrinsics it calls would stay calls), and no
/// arrays filled in a loop (the lanes would be read back from memory before the stores
/// land).
macro_rules! halves {
    (|$j:ident| $e:expr) => {
        [
            { let $j = 0usize; $e },
            { let $j = 1usize; $e },
            { let $j = 2usize; $e },
            { let $j = 3usize; $e },
            { let $j = 4usize; $e },
            { let $j = 5usize; $e },
            { let $j = 6usize; $e },
            { let $j = 7usize; $e },
        ]
    };
}

/// The eight halves' masks `e(j)` as lanes (two halves a block).
macro_rules! lanes {
    (|$j:ident| $e:expr) => {{
        let [m0, m1, m2, m3, m4, m5, m6, m7] = halves!(|$j| $e as i32);
        V(_mm256_setr_epi32(m0, m1, m2, m3, m4, m5, m6, m7))
    }};
}

/// Eight 32-byte loads, one OR to check they are ASCII, then each class's eight
/// `movemask`s go straight into the lanes: no per-block masks in between.
///
/// The group functions are inlined into `run`, so they carry no `target_feature` of
/// their own (which would forbid that; out of line, their results go through memory).
///
/// SAFETY: the CPU has AVX2.
#[inline(always)]
unsafe fn ascii_group(window: &Window<'_>) -> Option<Block<V>> {
    let cur = halves!(|j| load(window.cur.as_ptr().add(32 * j)));
    let any = halves!(|j| cur[j])
        .into_iter()
        .fold(_mm256_setzero_si256(), |a, v| _mm256_or_si256(a, v));
    if bits(any) != 0 {
        return None;
    }
    Some(classes(&cur, window, V::default()))
}

/// [`ascii_group`] for groups with non-ASCII bytes: each is tested against the byte after
/// it for the first bytes of CJK, kana and hangul characters. Any other non-ASCII
/// character (one that must be decoded) sends the group back (`None`).
///
/// SAFETY: the CPU has AVX2.
#[inline(always)]
unsafe fn script_group(window: &Window<'_>) -> Option<(Block<V>, Scripts<V>)> {
    let cur = halves!(|j| load(window.cur.as_ptr().add(32 * j)));
    let after = halves!(|j| after(window, &cur, j));
    let wide = halves!(|j| raw(cur[j], after[j]).wide());
    let decode = halves!(|j| wide[j].lead)
        .into_iter()
        .fold(V::default(), |a, lead| a | lead);
    if decode.any() {
        return None;
    }
    let scripts = Scripts {
        han: lanes!(|j| bits(wide[j].han.0)),
        kana: lanes!(|j| bits(wide[j].kana.0)),
        hangul: lanes!(|j| bits(wide[j].hangul.0)),
    };
    Some((classes(&cur, window, lanes!(|j| bits(cur[j]))), scripts))
}

/// [`Lanes::script_run`]: the [`Raw`] tests of each 32-byte half, their masks cut to the
/// bytes from `skip` on, and popcounts.
///
/// SAFETY: the CPU has AVX2.
#[inline(always)]
unsafe fn script_run(window: &Window<'_>, skip: usize) -> Option<[u32; 3]> {
    let cur = halves!(|j| load(window.cur.as_ptr().add(32 * j)));
    // The bits of the bytes from `skip` on, per half.
    let counted = halves!(|j| match skip.saturating_sub(32 * j) {
        0 => u32::MAX,
        n if n >= 32 => 0,
        n => u32::MAX << n,
    });
    let [a0, a1, a2, a3, a4, a5, a6, a7] = halves!(|j| !bits(cur[j]) & counted[j]);
    if a0 | a1 | a2 | a3 | a4 | a5 | a6 | a7 != 0 {
        return None;
    }
    let after = halves!(|j| after(window, &cur, j));
    let wide = halves!(|j| raw(cur[j], after[j]).wide());
    let [d0, d1, d2, d3, d4, d5, d6, d7] = halves!(|j| bits(wide[j].lead.0) & counted[j]);
    if d0 | d1 | d2 | d3 | d4 | d5 | d6 | d7 != 0 {
        return None;
    }
    let [h, k, g] = [
        halves!(|j| (bits(wide[j].han.0) & counted[j]).count_ones()),
        halves!(|j| (bits(wide[j].kana.0) & counted[j]).count_ones()),
        halves!(|j| (bits(wide[j].hangul.0) & counted[j]).count_ones()),
    ];
    let sum = |c: [u32; 8]| c[0] + c[1] + c[2] + c[3] + c[4] + c[5] + c[6] + c[7];
    Some([sum(h), sum(k), sum(g)])
}

/// The bytes one further on than half `j` of `window`'s group (`cur`): in the group,
/// except after its last byte; there, if the text ends, a zero comes in (no character
/// starts in a text's last byte).
#[inline(always)]
unsafe fn after(window: &Window<'_>, cur: &[__m256i; 8], j: usize) -> __m256i {
    match (j, window.on) {
        (7, Some(on)) => load(on.as_ptr().add(7 * 32)),
        (7, None) => shifted_out(cur[7]),
        _ => load(window.cur.as_ptr().add(32 * j + 1)),
    }
}

/// The class masks of `window`'s group, `cur` (its eight 32-byte halves), as lanes;
/// `other` are its non-ASCII bytes.
#[inline(always)]
unsafe fn classes(cur: &[__m256i; 8], window: &Window<'_>, other: V) -> Block<V> {
    let letter = lanes!(|j| letters(cur[j]));
    let digit = lanes!(|j| digits(cur[j]));
    let space = lanes!(|j| spaces(cur[j]));
    let newline = lanes!(|j| newlines(cur[j]));
    let same = lanes!(|j| {
        let back = match (j, window.back) {
            (0, Some(back)) => load(back.as_ptr()),
            (0, None) => shifted_in(cur[0]),
            _ => load(window.cur.as_ptr().add(32 * j).sub(1)),
        };
        // Without a byte before the text, the zero shifted in is no byte: clear bit 0.
        bits(_mm256_cmpeq_epi8(cur[j], back)) & !u32::from(j == 0 && window.back.is_none())
    });
    Block {
        word: letter,
        letter,
        digit,
        punct: !(letter | digit | space | newline | other),
        space,
        newline,
        same,
        other,
    }
}

/// 32 bytes shifted up by one byte, a zero coming in: the bytes before each, at a text's
/// start.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn shifted_in(v: __m256i) -> __m256i {
    _mm256_alignr_epi8::<15>(v, _mm256_permute2x128_si256::<0x08>(v, v))
}

/// 32 bytes shifted down by one byte, a zero coming in: the bytes after each, at a text's
/// end.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn shifted_out(v: __m256i) -> __m256i {
    _mm256_alignr_epi8::<1>(_mm256_permute2x128_si256::<0x81>(v, v), v)
}

/// The [`Raw`] tests of 32 bytes `v` as byte vectors; `after` holds the byte after each.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn raw(v: __m256i, after: __m256i) -> Raw<V> {
    let range = |x, lo, n| V(within(x, lo, n));
    let byte = |x, b: u8| V(_mm256_cmpeq_epi8(x, _mm256_set1_epi8(b as i8)));
    Raw {
        nonascii: V(_mm256_cmpgt_epi8(_mm256_setzero_si256(), v)),
        continuation: range(v, 0x80, 64),
        han: range(v, 0xE4, 6),
        hangul: range(v, 0xEB, 3),
        e3: byte(v, 0xE3),
        ea: byte(v, 0xEA),
        ef: byte(v, 0xEF),
        next_80: byte(after, 0x80),
        next_81_83: range(after, 0x81, 3),
        next_b0_bf: range(after, 0xB0, 16),
        next_bc_be: range(after, 0xBC, 3),
    }
}

/// The estimate while it is being counted four blocks at a time: each pattern's mask is
/// popcounted per byte and multiplied by its price with `vpmaddubsw` into 16-bit sums,
/// which are folded into 32-bit sums after every four blocks and into `units` every 1,024
/// times that.
struct VecUnits {
    units: Units,
    /// Each feature's |price| as a byte, and whether the price is negative.
    weights: &'static [ByteWeight; FEATURES],
    /// At most 16 × Σ|price| ≈ 17,000 per 16-bit lane after four blocks: no overflow.
    narrow: __m256i,
    /// At most ~35,000 per 32-bit lane per four blocks: folded long before 2^31.
    wide: __m256i,
    groups: u32,
}

impl VecUnits {
    #[inline(always)]
    fn new(encoding: Encoding) -> Self {
        // SAFETY: only called inside `run`.
        let zero = unsafe { _mm256_setzero_si256() };
        Self {
            units: Units::new(encoding.prices()),
            weights: encoding.byte_weights(),
            narrow: zero,
            wide: zero,
            groups: 0,
        }
    }

    #[inline(always)]
    fn fold_wide(&mut self) {
        let mut lanes = [0i32; 8];
        // SAFETY: `lanes` is 32 writable bytes; only called inside `run`.
        unsafe {
            _mm256_storeu_si256(lanes.as_mut_ptr().cast(), self.wide);
            self.wide = _mm256_setzero_si256();
        }
        self.units
            .add_units(lanes.iter().map(|&x| i64::from(x)).sum());
    }

    #[inline(always)]
    fn total(mut self) -> i64 {
        <Self as Sink<V>>::end_group(&mut self);
        self.fold_wide();
        self.units.total()
    }
}

impl Tally for VecUnits {
    #[inline(always)]
    fn add(&mut self, feature: Feature, n: u32) {
        self.units.add(feature, n);
    }
}

impl Sink<V> for VecUnits {
    #[inline(always)]
    fn add_mask(&mut self, feature: Feature, mask: V) {
        let (weight, negative) = self.weights[feature as usize];
        // SAFETY: see `V`.
        unsafe {
            let nibble = _mm256_set1_epi8(0x0F);
            let ones = _mm256_setr_epi8(
                0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3,
                2, 3, 3, 4,
            );
            let low = _mm256_and_si256(mask.0, nibble);
            let high = _mm256_and_si256(_mm256_srli_epi16::<4>(mask.0), nibble);
            let counts = _mm256_add_epi8(
                _mm256_shuffle_epi8(ones, low),
                _mm256_shuffle_epi8(ones, high),
            );
            // Unsigned weight × signed count (0..=8), pairs summed into 16 bits.
            let priced = _mm256_maddubs_epi16(_mm256_set1_epi8(weight as i8), counts);
            self.narrow = if negative {
                _mm256_sub_epi16(self.narrow, priced)
            } else {
                _mm256_add_epi16(self.narrow, priced)
            };
        }
    }

    #[inline(always)]
    fn end_group(&mut self) {
        // SAFETY: see `V`.
        unsafe {
            let pairs = _mm256_madd_epi16(self.narrow, _mm256_set1_epi16(1));
            self.wide = _mm256_add_epi32(self.wide, pairs);
            self.narrow = _mm256_setzero_si256();
        }
        self.groups += 1;
        if self.groups == 1024 {
            self.groups = 0;
            self.fold_wide();
        }
    }
}

/// The two 32-byte halves' masks as one.
#[inline(always)]
fn join(lo: u32, hi: u32) -> u64 {
    u64::from(lo) | u64::from(hi) << 32
}

/// `lo <= v < lo + n` per byte (`n <= 128`), unsigned: `v - lo + 0x80` moves the range
/// to the bottom of the signed bytes, `-128..-128 + n`, and one signed compare finds it.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn within(v: __m256i, lo: u8, n: u8) -> __m256i {
    let moved = _mm256_add_epi8(v, _mm256_set1_epi8(0x80u8.wrapping_sub(lo) as i8));
    _mm256_cmpgt_epi8(_mm256_set1_epi8((i16::from(n) - 128) as i8), moved)
}

/// [`within`] as a mask.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn in_range(v: __m256i, lo: u8, n: u8) -> u32 {
    bits(within(v, lo, n))
}

/// The top bit of each byte. The result is passed through an empty `asm!` so that LLVM
/// keeps it an integer: left to itself, it rewrites the later mask arithmetic as a vector
/// of 64 booleans and unpacks it bit by bit (~300 instructions per block).
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn bits(v: __m256i) -> u32 {
    let mut m = _mm256_movemask_epi8(v) as u32;
    std::arch::asm!("/* {0:e} */", inout(reg) m, options(pure, nomem, nostack, preserves_flags));
    m
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

/// The ASCII classes of 32 bytes, as [`Masks`] defines them (one definition for both
/// the block-by-block and the whole-group paths). SAFETY: the CPU has AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn letters(v: __m256i) -> u32 {
    in_range(_mm256_or_si256(v, _mm256_set1_epi8(0x20)), b'a', 26)
}

#[target_feature(enable = "avx2")]
#[inline]
unsafe fn digits(v: __m256i) -> u32 {
    in_range(v, b'0', 10)
}

#[target_feature(enable = "avx2")]
#[inline]
unsafe fn spaces(v: __m256i) -> u32 {
    either(v, b' ', b'\t')
}

#[target_feature(enable = "avx2")]
#[inline]
unsafe fn newlines(v: __m256i) -> u32 {
    either(v, b'\n', b'\r')
}

/// The bytes equal to `a` or `b` (one `movemask` for both).
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn either(v: __m256i, a: u8, b: u8) -> u32 {
    bits(_mm256_or_si256(
        _mm256_cmpeq_epi8(v, _mm256_set1_epi8(a as i8)),
        _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b as i8)),
    ))
}

/// SAFETY: the CPU has AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn ascii(cur: &[u8; 64], prev: Option<&[u8; 64]>) -> Masks {
    let (v0, v1) = (load(cur.as_ptr()), load(cur.as_ptr().add(32)));
    // The bytes before each: read in place, except before the text's first byte, where
    // the first half is shifted up one byte in registers (a zero comes in).
    let p0 = match prev {
        Some(prev) => load(prev.as_ptr()),
        None => shifted_in(v0),
    };
    let p1 = load(cur.as_ptr().add(31));
    let letter = join(letters(v0), letters(v1));
    let digit = join(digits(v0), digits(v1));
    let space = join(spaces(v0), spaces(v1));
    let newline = join(newlines(v0), newlines(v1));
    let nonascii = join(bits(v0), bits(v1));
    Masks {
        letter,
        digit,
        space,
        newline,
        punct: !(letter | digit | space | newline | nonascii),
        nonascii,
        // Without a byte before the text, the zero shifted in is no byte: clear bit 0.
        same: join(
            bits(_mm256_cmpeq_epi8(v0, p0)),
            bits(_mm256_cmpeq_epi8(v1, p1)),
        ) & !u64::from(prev.is_none()),
    }
}

/// SAFETY: the CPU has AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn wide(cur: &[u8; 64]) -> Wide {
    let (v0, v1) = (load(cur.as_ptr()), load(cur.as_ptr().add(32)));
    let range = |lo, n| join(in_range(v0, lo, n), in_range(v1, lo, n));
    let byte = |b| join(eq(v0, b), eq(v1, b));
    Raw {
        nonascii: join(bits(v0), bits(v1)),
        continuation: range(0x80, 64),
        han: range(0xE4, 6),
        hangul: range(0xEB, 3),
        e3: byte(0xE3),
        ea: byte(0xEA),
        ef: byte(0xEF),
        next_80: byte(0x80) >> 1,
        next_81_83: range(0x81, 3) >> 1,
        next_b0_bf: range(0xB0, 16) >> 1,
        next_bc_be: range(0xBC, 3) >> 1,
    }
    .wide()
}
