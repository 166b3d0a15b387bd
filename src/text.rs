//! Grapheme-safe clipping: where a text may be cut without changing what a reader sees.
//!
//! A cut is safe only between two extended grapheme clusters (Unicode UAX #29): cutting
//! inside one leaves a base letter without its accent, half a flag (a lone regional
//! indicator shows as a different symbol), a family emoji without its last member, a CR
//! without its LF, a Hangul syllable without its final jamo. The segmentation is the
//! `unicode-segmentation` crate's; lengths are counted in `char`s (code points), which is
//! how Python measures a `str`.

use unicode_segmentation::{GraphemeCursor, UnicodeSegmentation};

/// The largest `n <= max_chars` such that the first `n` chars of `text` end on an extended
/// grapheme cluster boundary. Returns the length of `text` in chars when it has at most
/// `max_chars` of them, and 0 when its first cluster is already longer than `max_chars`.
///
/// Boundaries before a position never depend on what comes after the char at it, so a
/// caller may pass only the first `max_chars + 1` chars. Cost: a char count of `text`
/// (vectorised in `core`), then work proportional to the cluster the cut falls in, found
/// from the end — cheapest when `text` holds `max_chars + 1` chars.
#[must_use]
pub fn grapheme_floor(text: &str, max_chars: usize) -> usize {
    let total = text.chars().count();
    if total <= max_chars {
        return total;
    }
    // Byte offset of char `max_chars`, counted back from the end.
    let (byte, _) = text
        .char_indices()
        .rev()
        .nth(total - max_chars - 1)
        .unwrap_or((0, ' '));
    let cut = boundary_at_or_before(text, byte);
    max_chars - text[cut..byte].chars().count()
}

/// The largest grapheme cluster boundary `<= byte` (a char boundary of `text`).
fn boundary_at_or_before(text: &str, byte: usize) -> usize {
    let mut cursor = GraphemeCursor::new(byte, text.len(), true);
    // The chunk is the whole text, so the cursor never asks for more context; should it
    // report anything else, segment from the start instead (same answer, linear time).
    match cursor.is_boundary(text, 0) {
        Ok(true) => byte,
        Ok(false) => match cursor.prev_boundary(text, 0) {
            Ok(Some(cut)) => cut,
            Ok(None) => 0,
            Err(_) => boundary_from_start(text, byte),
        },
        Err(_) => boundary_from_start(text, byte),
    }
}

fn boundary_from_start(text: &str, byte: usize) -> usize {
    text.grapheme_indices(true)
        .map(|(start, _)| start)
        .take_while(|&start| start <= byte)
        .last()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::{boundary_at_or_before, boundary_from_start, grapheme_floor};

    fn clip(text: &str, max_chars: usize) -> String {
        text.chars().take(grapheme_floor(text, max_chars)).collect()
    }

    #[test]
    fn fits_whole() {
        assert_eq!(grapheme_floor("abc", 3), 3);
        assert_eq!(grapheme_floor("abc", 10), 3);
        assert_eq!(grapheme_floor("", 0), 0);
    }

    #[test]
    fn never_splits_a_cluster() {
        assert_eq!(clip("ab\u{1F1EB}\u{1F1F7}\u{1F1E9}\u{1F1EA}", 3), "ab"); // flags
        assert_eq!(
            clip("ab\u{1F1EB}\u{1F1F7}\u{1F1E9}\u{1F1EA}", 5),
            "ab\u{1F1EB}\u{1F1F7}"
        );
        assert_eq!(clip("e\u{301}e\u{301}", 3), "e\u{301}"); // combining accent
        assert_eq!(clip("a\r\nb", 2), "a"); // CR LF is one cluster
        assert_eq!(clip("\u{1100}\u{1161}\u{11A8}x", 2), ""); // Hangul L V T

        // Family: man ZWJ woman ZWJ girl; a skin-tone modifier; a tag sequence (England).
        let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}";
        assert_eq!(clip(&format!("x{family}"), 5), "x");
        assert_eq!(clip("x\u{1F44D}\u{1F3FD}", 2), "x");
        let england = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}";
        assert_eq!(clip(&format!("x{england}y"), 7), "x");
        assert_eq!(clip(&format!("x{england}y"), 8), format!("x{england}"));
    }

    #[test]
    fn the_cursor_agrees_with_segmenting_from_the_start() {
        let text = "a\u{1F1EB}\u{1F1F7}\u{1F1E9}e\u{301}\r\n\u{915}\u{94D}\u{937}\u{1F468}\u{200D}\u{1F469}";
        for (byte, _) in text.char_indices() {
            assert_eq!(
                boundary_at_or_before(text, byte),
                boundary_from_start(text, byte)
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn the_cursor_agrees_with_segmenting_from_the_start_on_any_text(
            text in "[a\u{301}\u{200D}\u{1F1EB}\u{1F1F7}\u{1F468}\u{1F3FD}\u{915}\u{94D}\u{1100}\u{1161}\r\n\u{0600}]{0,24}|\\PC{0,24}",
        ) {
            for (byte, _) in text.char_indices() {
                proptest::prop_assert_eq!(boundary_at_or_before(&text, byte), boundary_from_start(&text, byte));
            }
        }
    }

    #[test]
    fn a_first_cluster_longer_than_the_limit_gives_zero() {
        assert_eq!(grapheme_floor("e\u{301}\u{302}", 2), 0);
    }
}
