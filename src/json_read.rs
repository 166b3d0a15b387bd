//! How the bytes readers (`chat_json`, `anthropic_json`, `responses_json`) parse a body: all
//! of it as one value, or nothing; and the pieces they read it with.
//!
//! Every refusal here is a `serde` error that [`read_whole`] turns into `None`: its text is
//! never shown to anyone (the general reader then names what is wrong), so it only has to
//! say, to someone reading a failed unit test, why the fast reader gave up.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;

use serde::de::{Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// `data` as one `T` with nothing after it but whitespace, or `None` (not UTF-8, not JSON,
/// or not a `T`): the caller's general reader then reads it, or names what is wrong.
#[must_use]
pub fn read_whole<'a, T: Deserialize<'a>>(data: &'a [u8]) -> Option<T> {
    // Text, not bytes: the slice reader skips unread strings without checking their UTF-8.
    let text = std::str::from_utf8(data).ok()?;
    let mut de = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}

/// The value under `key` of a request body object, as a `T`; `other` reads the value of each
/// other key ([`skip`] drops it: a body's model, tools, sampling options...). A body without
/// the key, or with it twice, is refused: Python's `json` keeps the last of a duplicate, so
/// only the general reader can read it as Python does.
pub(crate) fn under_key<'de, A, T, F>(mut map: A, key: &str, mut other: F) -> Result<T, A::Error>
where
    A: MapAccess<'de>,
    T: Deserialize<'de>,
    F: FnMut(&str, &mut A) -> Result<(), A::Error>,
{
    let mut found = None;
    while let Some(k) = map.next_key::<Str>()? {
        if &*k == key {
            once(&mut found, map.next_value()?)?;
        } else {
            other(&k, &mut map)?;
        }
    }
    found.ok_or_else(|| A::Error::custom(format_args!("no {key}")))
}

/// For [`under_key`]: the value of a key the reader does not use, read in full (so its
/// numbers and strings are checked, as `json.loads` would check them) and dropped.
pub(crate) fn skip<'de, A: MapAccess<'de>>(_key: &str, map: &mut A) -> Result<(), A::Error> {
    map.next_value::<Any>().map(|Any| ())
}

/// `value` into the empty `slot`; a full one means the key came twice, which is refused.
pub(crate) fn once<T, E: Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    if slot.replace(value).is_some() {
        return Err(E::custom("duplicate key"));
    }
    Ok(())
}

/// `s` if it is not empty (an id or a name the dict readers require non-empty).
pub(crate) fn nonempty<S: Deref<Target = str>, E: Error>(s: S) -> Result<S, E> {
    if s.is_empty() {
        return Err(E::custom("empty"));
    }
    Ok(s)
}

/// A string read from the body, borrowed from its text when it has no escapes (every key
/// and tag the readers know has none): no allocation for it, where a `String` is one each.
pub(crate) struct Str<'de>(Cow<'de, str>);

impl<'de> From<Str<'de>> for Cow<'de, str> {
    fn from(s: Str<'de>) -> Self {
        s.0
    }
}

impl Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
        }
        de.deserialize_str(V)
    }
}

/// Any JSON value, read in full (so its numbers and strings are checked) and dropped.
pub(crate) struct Any;

impl<'de> Deserialize<'de> for Any {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Any;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: Error>(self, _: bool) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_i64<E: Error>(self, _: i64) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_u64<E: Error>(self, _: u64) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_f64<E: Error>(self, _: f64) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_str<E: Error>(self, _: &str) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_unit<E: Error>(self) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Any, A::Error> {
                while seq.next_element::<Any>()?.is_some() {}
                Ok(Any)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Any, A::Error> {
                while map.next_key::<Str>()?.is_some() {
                    map.next_value::<Any>()?;
                }
                Ok(Any)
            }
        }
        de.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body's `"k"` string (its `"also"` string kept aside), or the error's text.
    fn read(text: &str) -> Result<(String, Option<String>), String> {
        struct Body(String, Option<String>);
        impl<'de> Deserialize<'de> for Body {
            fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = Body;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str("a body")
                    }
                    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Body, A::Error> {
                        let mut also = None;
                        let k = under_key(map, "k", |key, map| match key {
                            "also" => once(&mut also, map.next_value()?),
                            _ => skip(key, map),
                        })?;
                        Ok(Body(k, also))
                    }
                }
                de.deserialize_map(V)
            }
        }
        serde_json::from_str::<Body>(text)
            .map(|Body(k, also)| (k, also))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn under_key_reads_its_key_hands_on_the_others_and_skips_the_rest() {
        let got = read(r#"{"x": [1, {"y": null}], "also": "a", "k": "v", "z": 2.5}"#);
        assert_eq!(got, Ok(("v".into(), Some("a".into()))));
        assert_eq!(read(r#"{"k": "v"}"#), Ok(("v".into(), None)));
    }

    #[test]
    fn under_key_refuses_a_missing_or_repeated_key_and_a_bad_skipped_value() {
        let err = |text: &str| read(text).unwrap_err();
        assert!(err(r#"{"x": 1}"#).starts_with("no k at"));
        assert!(err(r#"{"k": "v", "k": "v"}"#).starts_with("duplicate key at"));
        assert!(err(r#"{"also": "a", "k": "v", "also": "a"}"#).starts_with("duplicate key at"));
        assert!(err(r#"{"k": 1}"#).starts_with("invalid type: integer"));
        assert!(err(r#"{"x": 1e400, "k": "v"}"#).starts_with("number out of range"));
        // A lone surrogate, which Python's `json` takes and `serde_json` does not.
        assert!(err(r#"{"x": "\ud800", "k": "v"}"#).contains("hex escape"));
    }
}
