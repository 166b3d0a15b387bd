//! Image tokens from the image itself: its width and height read from the file header (PNG,
//! JPEG, GIF, WebP; nothing is decoded), priced by the provider's published rule.
//!
//! * OpenAI, high detail (<https://platform.openai.com/docs/guides/images-vision>, "Calculating
//!   costs"): the image is scaled down to fit in 2048 × 2048, then so that its shortest side is
//!   768 px; it costs 85 tokens plus 170 per 512-px tile of the result. Low detail costs 85.
//! * Anthropic (<https://docs.anthropic.com/en/docs/build-with-claude/vision>, "Evaluate image
//!   size"): an image whose long edge exceeds 1568 px is scaled down to it; it costs
//!   width × height / 750 tokens, and images over ~1,600 tokens are scaled down until they are
//!   within it, so the price is capped at 1,600.
//!
//! Scaling only ever shrinks (no provider enlarges a small image), and a scaled side is whole
//! pixels, rounded down. A header that cannot be read gets the flat [`IMAGE_TOKENS`](super::IMAGE_TOKENS):
//! the image may still be one the provider accepts (a format or variant this reader does not
//! know), and refusing the message would be worse than pricing it at the middle of common sizes.

use std::fmt;

/// An image's size in pixels, as its header states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ImageSize {
    pub width: u32,
    pub height: u32,
}

/// Why a header could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Not PNG, JPEG, GIF or WebP by its first bytes.
    UnknownFormat,
    /// The data ends before the size is stated.
    Truncated,
    /// The header is there but does not follow its format (a bad chunk, marker or signature).
    Malformed,
    /// The header states a width or height of 0.
    ZeroSize,
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UnknownFormat => "not a PNG, JPEG, GIF or WebP image",
            Self::Truncated => "the image data ends before its size is stated",
            Self::Malformed => "the image header is malformed",
            Self::ZeroSize => "the image header states a width or height of 0",
        })
    }
}

impl std::error::Error for HeaderError {}

fn be16(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes(
        d.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn le16(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes(
        d.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn be32(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

fn le24(d: &[u8], at: usize) -> Option<u32> {
    let b = d.get(at..at + 3)?;
    Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
}

fn le32(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// The width and height an image's header states. Reads at most the first few dozen bytes
/// (a JPEG: its markers up to the frame header, skipping each segment by its length).
///
/// ```
/// use ctxtrim::tokens::image::{image_size, ImageSize};
/// let gif = b"GIF89a\x40\x01\xc8\x00";
/// assert_eq!(image_size(gif), Ok(ImageSize { width: 320, height: 200 }));
/// assert!(image_size(b"\x89PNG").is_err());
/// ```
pub fn image_size(data: &[u8]) -> Result<ImageSize, HeaderError> {
    let (width, height) = if data.starts_with(&PNG_SIGNATURE[..4]) {
        png(data)?
    } else if data.starts_with(b"\xff\xd8") {
        jpeg(data)?
    } else if data.starts_with(b"GIF8") {
        gif(data)?
    } else if data.starts_with(b"RIFF") {
        webp(data)?
    } else {
        return Err(HeaderError::UnknownFormat);
    };
    if width == 0 || height == 0 {
        return Err(HeaderError::ZeroSize);
    }
    Ok(ImageSize { width, height })
}

fn png(d: &[u8]) -> Result<(u32, u32), HeaderError> {
    // Signature, then the IHDR chunk: length (13), "IHDR", width, height (big-endian).
    let sig = d.get(..8).ok_or(HeaderError::Truncated)?;
    if sig != PNG_SIGNATURE {
        return Err(HeaderError::Malformed);
    }
    let kind = d.get(12..16).ok_or(HeaderError::Truncated)?;
    if kind != b"IHDR" {
        return Err(HeaderError::Malformed);
    }
    let w = be32(d, 16).ok_or(HeaderError::Truncated)?;
    let h = be32(d, 20).ok_or(HeaderError::Truncated)?;
    // The format limits both to 2^31 - 1.
    if w > i32::MAX as u32 || h > i32::MAX as u32 {
        return Err(HeaderError::Malformed);
    }
    Ok((w, h))
}

fn gif(d: &[u8]) -> Result<(u32, u32), HeaderError> {
    let sig = d.get(..6).ok_or(HeaderError::Truncated)?;
    if sig != b"GIF87a" && sig != b"GIF89a" {
        return Err(HeaderError::Malformed);
    }
    // The logical screen: width, height (little-endian).
    Ok((
        le16(d, 6).ok_or(HeaderError::Truncated)?,
        le16(d, 8).ok_or(HeaderError::Truncated)?,
    ))
}

fn webp(d: &[u8]) -> Result<(u32, u32), HeaderError> {
    let form = d.get(8..12).ok_or(HeaderError::Truncated)?;
    if form != b"WEBP" {
        return Err(HeaderError::UnknownFormat);
    }
    let t = HeaderError::Truncated;
    match d.get(12..16).ok_or(t)? {
        b"VP8 " => {
            // A lossy key frame: 3 bytes of frame tag, the start code, 14-bit sizes.
            if d.get(23..26).ok_or(t)? != b"\x9d\x01\x2a" {
                return Err(HeaderError::Malformed);
            }
            Ok((
                le16(d, 26).ok_or(t)? & 0x3fff,
                le16(d, 28).ok_or(t)? & 0x3fff,
            ))
        }
        b"VP8L" => {
            // Lossless: a signature byte, then 14 bits of width - 1 and of height - 1.
            if *d.get(20).ok_or(t)? != 0x2f {
                return Err(HeaderError::Malformed);
            }
            let bits = le32(d, 21).ok_or(t)?;
            Ok(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
        }
        b"VP8X" => {
            // Extended: the canvas, 24 bits each of width - 1 and height - 1.
            Ok((le24(d, 24).ok_or(t)? + 1, le24(d, 27).ok_or(t)? + 1))
        }
        _ => Err(HeaderError::Malformed),
    }
}

// The segment walk names bytes as the JPEG spec does (marker, length, ...) in short names.
#[allow(clippy::many_single_char_names)]
fn jpeg(d: &[u8]) -> Result<(u32, u32), HeaderError> {
    let t = HeaderError::Truncated;
    let mut i = 2;
    loop {
        if *d.get(i).ok_or(t)? != 0xff {
            return Err(HeaderError::Malformed);
        }
        // Any number of 0xFF fill bytes may precede a marker.
        while *d.get(i).ok_or(t)? == 0xff {
            i += 1;
        }
        let marker = d[i];
        i += 1;
        match marker {
            // Markers with no segment: TEM and the restart markers.
            0x01 | 0xd0..=0xd7 => continue,
            // The image ends, or its scan starts, before any frame header.
            0xd9 | 0xda | 0x00 => return Err(HeaderError::Malformed),
            _ => {}
        }
        let len = be16(d, i).ok_or(t)? as usize;
        if len < 2 {
            return Err(HeaderError::Malformed);
        }
        // Start of frame (every SOFn; C4, C8 and CC are other markers): length, precision,
        // height, width (big-endian).
        if matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc) {
            let h = be16(d, i + 3).ok_or(t)?;
            let w = be16(d, i + 5).ok_or(t)?;
            return Ok((w, h));
        }
        i += len;
    }
}

/// How a provider prices an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageRule {
    /// OpenAI, `detail: "high"` (and what `"auto"` picks for large images).
    OpenAiHigh,
    /// OpenAI, `detail: "low"`: 85 tokens whatever the size.
    OpenAiLow,
    /// Anthropic: width × height / 750 after its resize.
    Anthropic,
}

/// OpenAI's base price of an image (and the whole price at low detail).
pub const OPENAI_BASE: u32 = 85;
/// OpenAI's price of each 512-px tile at high detail.
pub const OPENAI_TILE: u32 = 170;
/// Anthropic's cap: larger images are scaled down to about this many tokens.
pub const ANTHROPIC_MAX: u32 = 1_600;

/// Scales `(w, h)` down so that `side(w, h)` is at most `limit`, keeping the aspect ratio;
/// sides are rounded down, to at least 1 px.
fn fit(w: u64, h: u64, side: u64, limit: u64) -> (u64, u64) {
    if side <= limit {
        return (w, h);
    }
    ((w * limit / side).max(1), (h * limit / side).max(1))
}

impl ImageRule {
    /// The tokens an image of `size` costs under this rule.
    #[must_use]
    pub fn price(self, size: ImageSize) -> u32 {
        let (w, h) = (u64::from(size.width), u64::from(size.height));
        match self {
            Self::OpenAiLow => OPENAI_BASE,
            Self::OpenAiHigh => {
                let (w, h) = fit(w, h, w.max(h), 2048);
                let (w, h) = fit(w, h, w.min(h), 768);
                let tiles = w.div_ceil(512) * h.div_ceil(512);
                // At most 4 × 2 tiles after the resize.
                OPENAI_BASE + OPENAI_TILE * tiles as u32
            }
            Self::Anthropic => {
                let (w, h) = fit(w, h, w.max(h), 1568);
                // At most 1568 × 1568 / 750 before the cap: fits in a u32.
                ((w * h).div_ceil(750) as u32).min(ANTHROPIC_MAX)
            }
        }
    }

    /// The tokens the image in `data` costs: by its header's size, or the flat
    /// [`IMAGE_TOKENS`](super::IMAGE_TOKENS) if the header cannot be read.
    #[must_use]
    pub fn price_data(self, data: &[u8]) -> u32 {
        image_size(data).map_or(super::IMAGE_TOKENS, |size| self.price(size))
    }

    /// The rule's name: `"openai-high"`, `"openai-low"` or `"anthropic"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::OpenAiHigh => "openai-high",
            Self::OpenAiLow => "openai-low",
            Self::Anthropic => "anthropic",
        }
    }
}

impl std::str::FromStr for ImageRule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai-high" | "openai" => Ok(Self::OpenAiHigh),
            "openai-low" => Ok(Self::OpenAiLow),
            "anthropic" => Ok(Self::Anthropic),
            other => Err(format!(
                "unknown image rule {other:?}: expected \"openai-high\", \"openai-low\" or \"anthropic\""
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn size(width: u32, height: u32) -> ImageSize {
        ImageSize { width, height }
    }

    pub(crate) fn png_header(w: u32, h: u32) -> Vec<u8> {
        let mut d = PNG_SIGNATURE.to_vec();
        d.extend_from_slice(&13u32.to_be_bytes());
        d.extend_from_slice(b"IHDR");
        d.extend_from_slice(&w.to_be_bytes());
        d.extend_from_slice(&h.to_be_bytes());
        d.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        d
    }

    fn jpeg_header(w: u16, h: u16) -> Vec<u8> {
        let mut d = vec![0xff, 0xd8];
        // An APP0 segment to skip, a fill byte, then SOF2 (progressive).
        d.extend_from_slice(&[0xff, 0xe0, 0x00, 0x06, b'J', b'F', b'I', b'F']);
        d.extend_from_slice(&[0xff, 0xff, 0xc2, 0x00, 0x11, 0x08]);
        d.extend_from_slice(&h.to_be_bytes());
        d.extend_from_slice(&w.to_be_bytes());
        d.extend_from_slice(&[3, 1, 0x22, 0]);
        d
    }

    #[test]
    fn reads_every_format() {
        assert_eq!(image_size(&png_header(1280, 800)), Ok(size(1280, 800)));
        assert_eq!(image_size(&jpeg_header(640, 480)), Ok(size(640, 480)));
        assert_eq!(image_size(b"GIF87a\x10\x00\x20\x00"), Ok(size(16, 32)));
        let mut lossy = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\x9d\x01\x2a".to_vec();
        lossy.extend_from_slice(&[0x00, 0x05, 0x20, 0x43]); // 1280; 800 with scale bits set
        assert_eq!(image_size(&lossy), Ok(size(1280, 800)));
        let bits: u32 = 99 + (49 << 14); // width - 1 = 99, height - 1 = 49: 100 × 50
        let mut lossless = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        lossless.extend_from_slice(&bits.to_le_bytes());
        assert_eq!(image_size(&lossless), Ok(size(100, 50)));
        let mut extended = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        extended.extend_from_slice(&[0xff, 0x0e, 0x00, 0x1f, 0x03, 0x00]); // 3840, 800
        assert_eq!(image_size(&extended), Ok(size(3840, 800)));
    }

    #[test]
    fn malformed_headers_say_why() {
        assert_eq!(image_size(b""), Err(HeaderError::UnknownFormat));
        assert_eq!(image_size(b"\x89PNG"), Err(HeaderError::Truncated));
        assert_eq!(image_size(&png_header(0, 5)), Err(HeaderError::ZeroSize));
        let mut bad = png_header(5, 5);
        bad[12] = b'X';
        assert_eq!(image_size(&bad), Err(HeaderError::Malformed));
        assert_eq!(
            image_size(b"\xff\xd8\xff\xda\x00\x02"),
            Err(HeaderError::Malformed)
        );
        assert_eq!(
            image_size(&jpeg_header(640, 480)[..17]),
            Err(HeaderError::Truncated)
        );
        assert_eq!(
            image_size(b"GIF89z\x01\x00\x01\x00"),
            Err(HeaderError::Malformed)
        );
        assert_eq!(
            image_size(b"RIFF\0\0\0\0AVI "),
            Err(HeaderError::UnknownFormat)
        );
        assert_eq!(
            ImageRule::OpenAiHigh.price_data(b"\x89PNG"),
            super::super::IMAGE_TOKENS
        );
    }

    #[test]
    fn published_examples() {
        // OpenAI's worked examples: 1024² → 768² → 4 tiles; 2048×4096 → 768×1536 → 6 tiles.
        assert_eq!(ImageRule::OpenAiHigh.price(size(1024, 1024)), 765);
        assert_eq!(ImageRule::OpenAiHigh.price(size(2048, 4096)), 1105);
        assert_eq!(ImageRule::OpenAiLow.price(size(4096, 8192)), 85);
        // A 1280×800 screenshot: 1228×768 → 6 tiles; 1,024,000 / 750 on Anthropic.
        assert_eq!(ImageRule::OpenAiHigh.price(size(1280, 800)), 1105);
        assert_eq!(ImageRule::Anthropic.price(size(1280, 800)), 1366);
        // Anthropic's table: 1092×1092 is about 1,600 tokens; 200×200 about 54.
        assert_eq!(ImageRule::Anthropic.price(size(1092, 1092)), 1590);
        assert_eq!(ImageRule::Anthropic.price(size(200, 200)), 54);
        assert_eq!(ImageRule::Anthropic.price(size(8000, 8000)), ANTHROPIC_MAX);
        assert_eq!(ImageRule::OpenAiHigh.price(size(64, 64)), 255);
        assert_eq!(ImageRule::OpenAiHigh.price(size(1, 100_000)), 85 + 170 * 4);
    }

    proptest! {
        #[test]
        fn header_reader_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = image_size(&data);
        }

        #[test]
        fn header_reader_never_panics_after_a_signature(
            sig in proptest::sample::select(vec![
                &b"\x89PNG\r\n\x1a\n"[..], b"\xff\xd8", b"GIF89a", b"RIFF\0\0\0\0WEBPVP8 ",
                b"RIFF\0\0\0\0WEBPVP8L", b"RIFF\0\0\0\0WEBPVP8X", b"\xff\xd8\xff\xe0",
            ]),
            rest in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let data = [sig, &rest].concat();
            let _ = image_size(&data);
        }

        #[test]
        fn prices_are_bounded_and_never_panic(w in 1u32.., h in 1u32..) {
            let s = size(w, h);
            let high = ImageRule::OpenAiHigh.price(s);
            prop_assert!((255..=85 + 170 * 8).contains(&high));
            prop_assert!((1..=ANTHROPIC_MAX).contains(&ImageRule::Anthropic.price(s)));
        }
    }
}
