//! How the bytes readers (`chat_json`, `anthropic_json`, `responses_json`) parse a body: all
//! of it as one value, or nothing.

use serde::de::DeserializeOwned;

/// `data` as one `T` with nothing after it but whitespace, or `None` (not UTF-8, not JSON,
/// or not a `T`): the caller's general reader then reads it, or names what is wrong.
#[must_use]
pub fn read_whole<T: DeserializeOwned>(data: &[u8]) -> Option<T> {
    // Text, not bytes: the slice reader skips unread strings without checking their UTF-8.
    let text = std::str::from_utf8(data).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}
