//! Chat Completions messages read from JSON bytes, for the shapes a server receives on every
//! turn, without building Python dicts first.
//!
//! [`read_chat_json`] takes a JSON array of messages, or an object with a `"messages"` array
//! (a request body; its other values are read and dropped), and answers the messages when
//! every one of them has a common shape, exactly the shapes the dict reader in the bindings
//! (`chat_fast`) takes:
//!
//! - `{"role": "system" | "user", "content": "<text>"}`;
//! - `{"role": "assistant", "content": "<text>" | null}`, or the same with a non-empty
//!   `"tool_calls"` list of `{"id", "type": "function", "function": {"name", "arguments"}}`
//!   (id, name and arguments non-empty strings);
//! - `{"role": "tool", "tool_call_id": "<id>", "content": "<text>"}`.
//!
//! Keys may come in any order; any other key, a duplicate key, another type or a value that
//! JSON allows but these shapes do not is `None`. So is any text `serde_json` refuses (a lone
//! surrogate escape, a number out of range, a byte-order mark...), even where Python's `json`
//! would take it: `None` only means "read it the general way", which then reads it, or names
//! what is wrong, as it always did. Whether the arguments are the compact JSON of an object is
//! left to the caller, who checks it as the dict reader does.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::json_read::{nonempty, once, read_whole, skip, under_key, Str};

/// A message's role among those with a plain text shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextRole {
    System,
    User,
}

/// One function call of an assistant message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call<'a> {
    pub id: Cow<'a, str>,
    pub name: Cow<'a, str>,
    /// The `arguments` text as it came (JSON inside JSON).
    pub arguments: Cow<'a, str>,
}

/// One Chat Completions message in a common shape. Its strings borrow from the body where
/// they have no escapes (most do): reading one costs no allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatMessage<'a> {
    /// A system or user message with string content.
    Text { role: TextRole, text: Cow<'a, str> },
    /// An assistant message: string or null content, then its calls (possibly none).
    Assistant {
        text: Option<Cow<'a, str>>,
        calls: Vec<Call<'a>>,
    },
    /// A tool message: the result of call `call_id`.
    Tool {
        call_id: Cow<'a, str>,
        text: Cow<'a, str>,
    },
}

/// The messages of `data` (see the module docs), or `None` for the general reader.
#[must_use]
pub fn read_chat_json(data: &[u8]) -> Option<Vec<ChatMessage<'_>>> {
    read_whole::<Body>(data).map(|Body(messages)| messages)
}

/// The top level: a message array, or an object holding one under `"messages"`.
struct Body<'a>(Vec<ChatMessage<'a>>);

impl<'de> Deserialize<'de> for Body<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Body<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a message array or a request body")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Body<'de>, A::Error> {
                messages(seq).map(Body)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Body<'de>, A::Error> {
                under_key(map, "messages", skip).map(|Messages(messages)| Body(messages))
            }
        }
        de.deserialize_any(V)
    }
}

struct Messages<'a>(Vec<ChatMessage<'a>>);

impl<'de> Deserialize<'de> for Messages<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Messages<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a message array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Messages<'de>, A::Error> {
                messages(seq).map(Messages)
            }
        }
        de.deserialize_seq(V)
    }
}

fn messages<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Vec<ChatMessage<'de>>, A::Error> {
    let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(4));
    while let Some(m) = seq.next_element::<ChatMessage>()? {
        out.push(m);
    }
    Ok(out)
}

/// A field of a message: which one, so a duplicate or unknown key is refused.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Role,
    Content,
    ToolCallId,
    ToolCalls,
}

impl Field {
    fn of(key: &str) -> Option<Field> {
        Some(match key {
            "role" => Field::Role,
            "content" => Field::Content,
            "tool_call_id" => Field::ToolCallId,
            "tool_calls" => Field::ToolCalls,
            _ => return None,
        })
    }
}

impl<'de> Deserialize<'de> for ChatMessage<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ChatMessage<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Chat Completions message in a common shape")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ChatMessage<'de>, A::Error> {
                let mut role: Option<Str> = None;
                let mut content: Option<Option<Str<'de>>> = None;
                let mut call_id: Option<Str<'de>> = None;
                let mut calls: Option<Option<Calls>> = None;
                while let Some(key) = map.next_key::<Str>()? {
                    match Field::of(&key) {
                        Some(Field::Role) => once(&mut role, map.next_value()?)?,
                        Some(Field::Content) => once(&mut content, map.next_value()?)?,
                        Some(Field::ToolCallId) => once(&mut call_id, map.next_value()?)?,
                        Some(Field::ToolCalls) => once(&mut calls, map.next_value()?)?,
                        None => return Err(A::Error::custom("another key")),
                    }
                }
                let role = role.ok_or_else(|| A::Error::custom("no role"))?;
                let content = content.ok_or_else(|| A::Error::custom("no content"))?;
                let content = content.map(Cow::from);
                match (&*role, content, call_id, calls) {
                    ("system", Some(text), None, None) => Ok(ChatMessage::Text {
                        role: TextRole::System,
                        text,
                    }),
                    ("user", Some(text), None, None) => Ok(ChatMessage::Text {
                        role: TextRole::User,
                        text,
                    }),
                    ("assistant", text, None, None) => Ok(ChatMessage::Assistant {
                        text,
                        calls: Vec::new(),
                    }),
                    ("assistant", text, None, Some(Some(Calls(calls)))) if !calls.is_empty() => {
                        Ok(ChatMessage::Assistant { text, calls })
                    }
                    ("tool", Some(text), Some(call_id), None) => Ok(ChatMessage::Tool {
                        call_id: nonempty(call_id)?.into(),
                        text,
                    }),
                    _ => Err(A::Error::custom("another shape")),
                }
            }
        }
        de.deserialize_map(V)
    }
}

struct Calls<'a>(Vec<Call<'a>>);

impl<'de> Deserialize<'de> for Calls<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        Vec::<Call>::deserialize(de).map(Calls)
    }
}

impl<'de> Deserialize<'de> for Call<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Call<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a function call")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Call<'de>, A::Error> {
                let mut id: Option<Str<'de>> = None;
                let mut kind: Option<Str> = None;
                let mut function: Option<Function> = None;
                while let Some(key) = map.next_key::<Str>()? {
                    match &*key {
                        "id" => once(&mut id, map.next_value()?)?,
                        "type" => once(&mut kind, map.next_value()?)?,
                        "function" => once(&mut function, map.next_value()?)?,
                        _ => return Err(A::Error::custom("another key")),
                    }
                }
                match (id, kind.as_deref(), function) {
                    (Some(id), Some("function"), Some(Function { name, arguments })) => Ok(Call {
                        id: nonempty(id)?.into(),
                        name,
                        arguments,
                    }),
                    _ => Err(A::Error::custom("another shape")),
                }
            }
        }
        de.deserialize_map(V)
    }
}

struct Function<'a> {
    name: Cow<'a, str>,
    arguments: Cow<'a, str>,
}

impl<'de> Deserialize<'de> for Function<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Function<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a function")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Function<'de>, A::Error> {
                let mut name: Option<Str<'de>> = None;
                let mut arguments: Option<Str<'de>> = None;
                while let Some(key) = map.next_key::<Str>()? {
                    match &*key {
                        "name" => once(&mut name, map.next_value()?)?,
                        "arguments" => once(&mut arguments, map.next_value()?)?,
                        _ => return Err(A::Error::custom("another key")),
                    }
                }
                match (name, arguments) {
                    (Some(name), Some(arguments)) => Ok(Function {
                        name: nonempty(name)?.into(),
                        arguments: nonempty(arguments)?.into(),
                    }),
                    _ => Err(A::Error::custom("another shape")),
                }
            }
        }
        de.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(id: &'a str, name: &'a str, arguments: &'a str) -> Call<'a> {
        Call {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn reads_the_common_shapes_in_any_key_order() {
        let body = br#"[
            {"role": "system", "content": "be brief"},
            {"content": "hi", "role": "user"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"type": "function", "id": "c1", "function": {"arguments": "{\"a\":1}", "name": "f"}}
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": "done"}
        ]"#;
        let got = read_chat_json(body).unwrap();
        assert_eq!(
            got,
            vec![
                ChatMessage::Text {
                    role: TextRole::System,
                    text: "be brief".into()
                },
                ChatMessage::Text {
                    role: TextRole::User,
                    text: "hi".into()
                },
                ChatMessage::Assistant {
                    text: None,
                    calls: vec![call("c1", "f", r#"{"a":1}"#)]
                },
                ChatMessage::Tool {
                    call_id: "c1".into(),
                    text: "ok".into()
                },
                ChatMessage::Assistant {
                    text: Some("done".into()),
                    calls: vec![]
                },
            ]
        );
    }

    #[test]
    fn reads_a_request_body_and_drops_its_other_values() {
        let body = br#"{"model": "m", "temperature": 0.5, "tools": [{"x": [1, null, true]}],
                        "messages": [{"role": "user", "content": "hi"}], "n": 1}"#;
        assert_eq!(read_chat_json(body).unwrap().len(), 1);
        assert_eq!(read_chat_json(br#"{"model": "m"}"#), None);
        let twice = br#"{"messages": [], "messages": []}"#;
        assert_eq!(read_chat_json(twice), None);
    }

    #[test]
    fn anything_else_is_for_the_general_reader() {
        for body in [
            &br#"[{"role": "user", "content": "hi", "name": "x"}]"#[..],
            br#"[{"role": "user", "content": [{"type": "text", "text": "hi"}]}]"#,
            br#"[{"role": "user", "content": null}]"#,
            br#"[{"role": "user"}]"#,
            br#"[{"role": "user", "content": "a", "content": "b"}]"#,
            br#"[{"role": "developer", "content": "hi"}]"#,
            br#"[{"role": "assistant", "content": "a", "tool_calls": null}]"#,
            br#"[{"role": "assistant", "content": "a", "tool_calls": []}]"#,
            br#"[{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]"#,
            br#"[{"role": "assistant", "content": null, "tool_calls": [{"id": "", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]"#,
            br#"[{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}]"#,
            br#"[{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "custom", "function": {"name": "f", "arguments": "{}"}}]}]"#,
            br#"[{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}]}]"#,
            br#"[{"role": "tool", "tool_call_id": "", "content": "x"}]"#,
            br#"[{"role": "tool", "tool_call_id": 5, "content": "x"}]"#,
            br#"[{"role": "user", "content": "\ud800"}]"#,
            br#"{"temperature": 1e400, "messages": []}"#,
            b"\xef\xbb\xbf[]",
            b"[\"\xff\"]",
            b"[] []",
            b"[1]",
            b"\"text\"",
        ] {
            assert_eq!(
                read_chat_json(body),
                None,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
