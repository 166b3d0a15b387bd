//! OpenAI Responses input items read from JSON bytes, for the shapes a server receives on
//! every turn, without building Python dicts first (as [`crate::chat_json`] reads Chat
//! Completions).
//!
//! [`read_responses_json`] takes a JSON array of input items, a string (the API's shorthand
//! for one user message), or a request body: an object with an `"input"` key holding either
//! (its other values, `instructions` among them, are read and dropped, as the dict reader
//! drops them). It answers when every item has a common shape, exactly the shapes the dict
//! reader in the bindings (`responses_fast_prefix`) takes:
//!
//! - a message: `{"type": "message", "role", "content"}` or its short form
//!   `{"role", "content"}`, the role `user`, `system` or `assistant`, the content a string
//!   or a list of parts `{"type": "input_text" | "output_text", "text"}` (`output_text` for
//!   the assistant, `input_text` for the others);
//! - `{"type": "function_call", "call_id", "name", "arguments"}` (call id and name non-empty,
//!   the arguments a string);
//! - `{"type": "function_call_output", "call_id", "output"}` (call id non-empty, the output a
//!   string).
//!
//! Keys may come in any order; any other key, a duplicate key, another type or value is
//! `None`, as is any text `serde_json` refuses: `None` only means "read it the general way".
//! Grouping the items into messages, whether a part list is empty and whether the arguments
//! are the compact JSON of an object are left to the caller, which checks them as the dict
//! reader does.

use std::borrow::Cow;
use std::fmt;

use serde::de::value::SeqAccessDeserializer;
use serde::de::{Deserializer, Error, MapAccess, SeqAccess, Unexpected, Visitor};
use serde::Deserialize;

use crate::json_read::{nonempty, once, read_whole, skip, under_key, Str};

/// A message item's role among those with a common shape (`developer` is recorded: the
/// general reader's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    System,
    Assistant,
}

/// A message item's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content<'a> {
    /// A string.
    Text(Cow<'a, str>),
    /// Text parts of the role's type, their texts in order (possibly none).
    Parts(Vec<Cow<'a, str>>),
}

/// One input item in a common shape. Its strings borrow from the body where they have no
/// escapes: reading one costs no allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item<'a> {
    Message {
        /// The `{"role", "content"}` form, without `"type"`.
        short: bool,
        role: Role,
        content: Content<'a>,
    },
    Call {
        call_id: Cow<'a, str>,
        name: Cow<'a, str>,
        /// The `arguments` text as it came (JSON inside JSON).
        arguments: Cow<'a, str>,
    },
    Output {
        call_id: Cow<'a, str>,
        output: Cow<'a, str>,
    },
}

/// The input items of `data` (see the module docs), or `None` for the general reader.
#[must_use]
pub fn read_responses_json(data: &[u8]) -> Option<Vec<Item<'_>>> {
    read_whole::<Body>(data).map(|Body(items)| items)
}

/// The top level: the input (see [`Input`]), or an object holding it under `"input"`.
struct Body<'a>(Vec<Item<'a>>);

impl<'de> Deserialize<'de> for Body<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_any(InputVisitor { body: true }).map(Body)
    }
}

/// A body's `"input"`: an item array, or a string (one user message, short form).
struct Input<'a>(Vec<Item<'a>>);

impl<'de> Deserialize<'de> for Input<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_any(InputVisitor { body: false }).map(Input)
    }
}

/// Reads an [`Input`], and at the top level (`body`) a [`Body`]: the same values, and there
/// also an object holding one under `"input"`.
struct InputVisitor {
    body: bool,
}

impl<'de> Visitor<'de> for InputVisitor {
    type Value = Vec<Item<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(if self.body {
            "input items or a request body"
        } else {
            "input items or a string"
        })
    }
    fn visit_borrowed_str<E: Error>(self, s: &'de str) -> Result<Vec<Item<'de>>, E> {
        Ok(vec![shorthand(Cow::Borrowed(s))])
    }
    fn visit_str<E: Error>(self, s: &str) -> Result<Vec<Item<'de>>, E> {
        Ok(vec![shorthand(Cow::Owned(s.to_owned()))])
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Vec<Item<'de>>, A::Error> {
        Vec::deserialize(SeqAccessDeserializer::new(seq))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Vec<Item<'de>>, A::Error> {
        if !self.body {
            // What serde's default `visit_map` answers: a body's input is no object.
            return Err(A::Error::invalid_type(Unexpected::Map, &self));
        }
        under_key(map, "input", skip).map(|Input(items)| items)
    }
}

/// The item the string input `text` stands for: `{"role": "user", "content": text}`.
fn shorthand(text: Cow<'_, str>) -> Item<'_> {
    Item::Message {
        short: true,
        role: Role::User,
        content: Content::Text(text),
    }
}

/// A message's content as read, before its role says which part type it must have.
enum RawContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

/// A text part: whether it is `output_text` (else `input_text`), and its text.
struct Part<'a> {
    output: bool,
    text: Cow<'a, str>,
}

impl<'de> Deserialize<'de> for RawContent<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawContent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of text parts")
            }
            fn visit_borrowed_str<E: Error>(self, s: &'de str) -> Result<RawContent<'de>, E> {
                Ok(RawContent::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: Error>(self, s: &str) -> Result<RawContent<'de>, E> {
                Ok(RawContent::Text(Cow::Owned(s.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RawContent<'de>, A::Error> {
                Vec::deserialize(SeqAccessDeserializer::new(seq)).map(RawContent::Parts)
            }
        }
        de.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Part<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Part<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a text part")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part<'de>, A::Error> {
                let mut kind: Option<Str> = None;
                let mut text: Option<Str<'de>> = None;
                while let Some(key) = map.next_key::<Str>()? {
                    match &*key {
                        "type" => once(&mut kind, map.next_value()?)?,
                        "text" => once(&mut text, map.next_value()?)?,
                        _ => return Err(A::Error::custom("another key")),
                    }
                }
                let output = match kind.as_deref() {
                    Some("output_text") => true,
                    Some("input_text") => false,
                    _ => return Err(A::Error::custom("another part")),
                };
                let text = text.ok_or_else(|| A::Error::custom("no text"))?.into();
                Ok(Part { output, text })
            }
        }
        de.deserialize_map(V)
    }
}

/// The fields of an item; each key has one type whatever the item's `type`, so they can be
/// read before it is known (keys come in any order).
#[derive(Default)]
struct ItemFields<'a> {
    kind: Option<Str<'a>>,
    role: Option<Str<'a>>,
    content: Option<RawContent<'a>>,
    call_id: Option<Str<'a>>,
    name: Option<Str<'a>>,
    arguments: Option<Str<'a>>,
    output: Option<Str<'a>>,
}

impl<'de> Deserialize<'de> for Item<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Item<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an input item in a common shape")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item<'de>, A::Error> {
                let mut f = ItemFields::default();
                while let Some(key) = map.next_key::<Str>()? {
                    match &*key {
                        "type" => once(&mut f.kind, map.next_value()?)?,
                        "role" => once(&mut f.role, map.next_value()?)?,
                        "content" => once(&mut f.content, map.next_value()?)?,
                        "call_id" => once(&mut f.call_id, map.next_value()?)?,
                        "name" => once(&mut f.name, map.next_value()?)?,
                        "arguments" => once(&mut f.arguments, map.next_value()?)?,
                        "output" => once(&mut f.output, map.next_value()?)?,
                        _ => return Err(A::Error::custom("another key")),
                    }
                }
                item(f)
            }
        }
        de.deserialize_map(V)
    }
}

/// The item the fields make, if they are exactly one common shape's.
fn item<E: Error>(f: ItemFields<'_>) -> Result<Item<'_>, E> {
    match f {
        ItemFields {
            kind,
            role: Some(role),
            content: Some(content),
            call_id: None,
            name: None,
            arguments: None,
            output: None,
        } if kind.as_deref().is_none_or(|k| k == "message") => {
            message(kind.is_none(), &role, content)
        }
        ItemFields {
            kind: Some(kind),
            role: None,
            content: None,
            call_id: Some(call_id),
            name: Some(name),
            arguments: Some(arguments),
            output: None,
        } if &*kind == "function_call" => Ok(Item::Call {
            call_id: nonempty(call_id)?.into(),
            name: nonempty(name)?.into(),
            arguments: arguments.into(),
        }),
        ItemFields {
            kind: Some(kind),
            role: None,
            content: None,
            call_id: Some(call_id),
            name: None,
            arguments: None,
            output: Some(output),
        } if &*kind == "function_call_output" => Ok(Item::Output {
            call_id: nonempty(call_id)?.into(),
            output: output.into(),
        }),
        _ => Err(E::custom("another shape")),
    }
}

/// A message item, if its role is a common one and its parts are of that role's type.
fn message<'a, E: Error>(short: bool, role: &str, content: RawContent<'a>) -> Result<Item<'a>, E> {
    let role = match role {
        "user" => Role::User,
        "system" => Role::System,
        "assistant" => Role::Assistant,
        _ => return Err(E::custom("another role")),
    };
    let content = match content {
        RawContent::Text(text) => Content::Text(text),
        RawContent::Parts(parts) => {
            let output = role == Role::Assistant;
            if parts.iter().any(|p| p.output != output) {
                return Err(E::custom("a part of the other side"));
            }
            Content::Parts(parts.into_iter().map(|p| p.text).collect())
        }
    };
    Ok(Item::Message {
        short,
        role,
        content,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Option<Vec<Item<'_>>> {
        read_responses_json(text.as_bytes())
    }

    #[test]
    fn reads_the_common_shapes_in_any_key_order() {
        let items = read(
            r#"{"model": "m", "instructions": "be terse", "input": [
                {"role": "system", "content": "s"},
                {"content": [{"text": "hi", "type": "input_text"}], "type": "message", "role": "user"},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "a"}, {"text": "b", "type": "output_text"}]},
                {"arguments": "{\"a\":1}", "name": "f", "call_id": "c1", "type": "function_call"},
                {"type": "function_call_output", "output": "out", "call_id": "c1"}
            ], "tools": [{"x": [1, 2.5, null]}]}"#,
        )
        .unwrap();
        assert_eq!(
            items,
            vec![
                Item::Message {
                    short: true,
                    role: Role::System,
                    content: Content::Text("s".into()),
                },
                Item::Message {
                    short: false,
                    role: Role::User,
                    content: Content::Parts(vec!["hi".into()]),
                },
                Item::Message {
                    short: false,
                    role: Role::Assistant,
                    content: Content::Parts(vec!["a".into(), "b".into()]),
                },
                Item::Call {
                    call_id: "c1".into(),
                    name: "f".into(),
                    arguments: r#"{"a":1}"#.into(),
                },
                Item::Output {
                    call_id: "c1".into(),
                    output: "out".into(),
                },
            ]
        );
        let user = |text: &'static str| {
            Some(vec![Item::Message {
                short: true,
                role: Role::User,
                content: Content::Text(text.into()),
            }])
        };
        assert_eq!(read(r#""hello""#), user("hello"));
        assert_eq!(read(r#"{"input": "hi"}"#), user("hi"));
        assert_eq!(
            read(r#"[{"role": "user", "content": []}]"#).map(|i| i.len()),
            Some(1)
        );
    }

    #[test]
    fn anything_else_is_for_the_general_reader() {
        for text in [
            r#"{"model": "m"}"#,
            r#"{"input": [], "input": []}"#,
            r#"{"input": {"input": []}}"#,
            r#"{"input": null}"#,
            r"[1]",
            r#"[{"role": "developer", "content": "x"}]"#,
            r#"[{"role": "user", "content": "x", "id": "m1"}]"#,
            r#"[{"type": "message", "role": "user", "content": "x", "status": "completed"}]"#,
            r#"[{"type": "message", "role": "user", "role": "user", "content": "x"}]"#,
            r#"[{"type": "message", "content": "x"}]"#,
            r#"[{"type": 5, "role": "user", "content": "x"}]"#,
            r#"[{"role": "user", "content": null}]"#,
            r#"[{"role": "user", "content": [{"type": "output_text", "text": "x"}]}]"#,
            r#"[{"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}]"#,
            r#"[{"role": "user", "content": [{"type": "input_text", "text": "x", "annotations": []}]}]"#,
            r#"[{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]"#,
            r#"[{"type": "reasoning", "summary": []}]"#,
            r#"[{"type": "function_call", "call_id": "", "name": "f", "arguments": "{}"}]"#,
            r#"[{"type": "function_call", "call_id": "c", "name": "", "arguments": "{}"}]"#,
            r#"[{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]"#,
            r#"[{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}", "id": "fc"}]"#,
            r#"[{"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "x"}]}]"#,
            r#"[{"type": "function_call_output", "call_id": "", "output": "x"}]"#,
            r#"[{"type": "function_call_output", "call_id": "c", "output": "x", "role": "user"}]"#,
            r#"[{"role": "user", "content": "\ud800"}]"#,
            r#"[{"role": "user", "content": "x"}] trailing"#,
            r#"{"temperature": 1e400, "input": []}"#,
        ] {
            assert!(read(text).is_none(), "{text}");
        }
    }
}
