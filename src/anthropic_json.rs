//! Anthropic Messages read from JSON bytes, for the shapes a server receives on every turn,
//! without building Python dicts first (as [`crate::chat_json`] reads Chat Completions).
//!
//! [`read_anthropic_json`] takes a JSON array of messages, or a request body: an object with
//! a `"messages"` array and optionally a string `"system"` (its other values are read and
//! dropped). It answers when every message has a common shape, exactly the shapes the dict
//! reader in the bindings (`anthropic_fast_prefix`) takes:
//!
//! - `{"role": "user" | "assistant", "content": "<text>"}`;
//! - the same with `content` a list of blocks: `{"type": "text", "text"}`,
//!   `{"type": "tool_use", "id", "name", "input": {...}}` (assistant only; id and name
//!   non-empty, input an object) and `{"type": "tool_result", "tool_use_id", "content"}`
//!   (user only; content a string or a list of text blocks; `"is_error": true` allowed, an
//!   explicit `false` is not: the general reader records it).
//!
//! Keys may come in any order; any other key, a duplicate key, another type or value is
//! `None`, as is any text `serde_json` refuses: `None` only means "read it the general way".
//! A tool call's `input` comes back as its JSON text, for the caller to load as the dict
//! reader would have it.

use std::borrow::Cow;
use std::fmt;

use serde::de::value::SeqAccessDeserializer;
use serde::de::{Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::json_read::{nonempty, once, read_whole, skip, under_key, Str};

/// A tool result's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultContent<'a> {
    /// A string.
    Text(Cow<'a, str>),
    /// A list of text blocks, their texts in order.
    Texts(Vec<Cow<'a, str>>),
}

/// One content block in a common shape. Its strings (and a call's input) borrow from the
/// body where they have no escapes: reading one costs no allocation.
#[derive(Debug, Clone)]
pub enum Block<'a> {
    Text(Cow<'a, str>),
    ToolUse {
        id: Cow<'a, str>,
        name: Cow<'a, str>,
        /// The input object's JSON text as it came.
        input: &'a RawValue,
    },
    ToolResult {
        id: Cow<'a, str>,
        content: ResultContent<'a>,
        is_error: bool,
    },
}

/// A message's content: a string, or blocks.
#[derive(Debug, Clone)]
pub enum Content<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

/// One message in a common shape.
#[derive(Debug, Clone)]
pub struct AnthropicMessage<'a> {
    pub assistant: bool,
    pub content: Content<'a>,
}

/// A request body (or a bare message array) in common shapes.
#[derive(Debug, Clone)]
pub struct AnthropicBody<'a> {
    /// The string system prompt, if the body has one.
    pub system: Option<Cow<'a, str>>,
    pub messages: Vec<AnthropicMessage<'a>>,
}

/// The body of `data` (see the module docs), or `None` for the general reader.
#[must_use]
pub fn read_anthropic_json(data: &[u8]) -> Option<AnthropicBody<'_>> {
    read_whole(data)
}

impl<'de> Deserialize<'de> for AnthropicBody<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnthropicBody<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a message array or a request body")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<AnthropicBody<'de>, A::Error> {
                let messages = Vec::deserialize(SeqAccessDeserializer::new(seq))?;
                Ok(AnthropicBody {
                    system: None,
                    messages,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<AnthropicBody<'de>, A::Error> {
                let mut system: Option<Str<'de>> = None;
                let messages = under_key(map, "messages", |key, map| match key {
                    "system" => once(&mut system, map.next_value()?),
                    _ => skip(key, map),
                })?;
                let system = system.map(Cow::from);
                Ok(AnthropicBody { system, messages })
            }
        }
        de.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for AnthropicMessage<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnthropicMessage<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an Anthropic message in a common shape")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<AnthropicMessage<'de>, A::Error> {
                let mut role: Option<Str> = None;
                let mut content: Option<Content> = None;
                while let Some(key) = map.next_key::<Str>()? {
                    match &*key {
                        "role" => once(&mut role, map.next_value()?)?,
                        "content" => once(&mut content, map.next_value()?)?,
                        _ => return Err(A::Error::custom("another key")),
                    }
                }
                let assistant = match role.as_deref() {
                    Some("assistant") => true,
                    Some("user") => false,
                    _ => return Err(A::Error::custom("another role")),
                };
                let content = content.ok_or_else(|| A::Error::custom("no content"))?;
                if let Content::Blocks(blocks) = &content {
                    // Calls only from the assistant, results only from the user.
                    let misplaced = |b: &Block| match b {
                        Block::Text(_) => false,
                        Block::ToolUse { .. } => !assistant,
                        Block::ToolResult { .. } => assistant,
                    };
                    if blocks.iter().any(misplaced) {
                        return Err(A::Error::custom("a block of the other role"));
                    }
                }
                Ok(AnthropicMessage { assistant, content })
            }
        }
        de.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for Content<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of blocks")
            }
            fn visit_borrowed_str<E: Error>(self, s: &'de str) -> Result<Content<'de>, E> {
                Ok(Content::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: Error>(self, s: &str) -> Result<Content<'de>, E> {
                Ok(Content::Text(Cow::Owned(s.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Content<'de>, A::Error> {
                Vec::deserialize(SeqAccessDeserializer::new(seq)).map(Content::Blocks)
            }
        }
        de.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for ResultContent<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ResultContent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of text blocks")
            }
            fn visit_borrowed_str<E: Error>(self, s: &'de str) -> Result<ResultContent<'de>, E> {
                Ok(ResultContent::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: Error>(self, s: &str) -> Result<ResultContent<'de>, E> {
                Ok(ResultContent::Text(Cow::Owned(s.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ResultContent<'de>, A::Error> {
                let mut texts = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(b) = seq.next_element::<Block>()? {
                    let Block::Text(text) = b else {
                        return Err(A::Error::custom("not a text block"));
                    };
                    texts.push(text);
                }
                Ok(ResultContent::Texts(texts))
            }
        }
        de.deserialize_any(V)
    }
}

/// The fields of a block; each key has one type whatever the block's `type`, so they can be
/// read before it is known (keys come in any order).
#[derive(Default)]
struct BlockFields<'a> {
    kind: Option<Str<'a>>,
    text: Option<Str<'a>>,
    id: Option<Str<'a>>,
    name: Option<Str<'a>>,
    input: Option<&'a RawValue>,
    tool_use_id: Option<Str<'a>>,
    content: Option<ResultContent<'a>>,
    is_error: Option<bool>,
}

impl<'de> Deserialize<'de> for Block<'de> {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Block<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content block in a common shape")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Block<'de>, A::Error> {
                let mut f = BlockFields::default();
                while let Some(key) = map.next_key::<Str>()? {
                    match &*key {
                        "type" => once(&mut f.kind, map.next_value()?)?,
                        "text" => once(&mut f.text, map.next_value()?)?,
                        "id" => once(&mut f.id, map.next_value()?)?,
                        "name" => once(&mut f.name, map.next_value()?)?,
                        "input" => once(&mut f.input, map.next_value()?)?,
                        "tool_use_id" => once(&mut f.tool_use_id, map.next_value()?)?,
                        "content" => once(&mut f.content, map.next_value()?)?,
                        "is_error" => once(&mut f.is_error, map.next_value()?)?,
                        _ => return Err(A::Error::custom("another key")),
                    }
                }
                block(f)
            }
        }
        de.deserialize_map(V)
    }
}

/// The block the fields make, if they are exactly one common shape's.
fn block<E: Error>(f: BlockFields<'_>) -> Result<Block<'_>, E> {
    let other = || E::custom("another shape");
    match f {
        BlockFields {
            kind: Some(kind),
            text: Some(text),
            id: None,
            name: None,
            input: None,
            tool_use_id: None,
            content: None,
            is_error: None,
        } if &*kind == "text" => Ok(Block::Text(text.into())),
        BlockFields {
            kind: Some(kind),
            text: None,
            id: Some(id),
            name: Some(name),
            input: Some(input),
            tool_use_id: None,
            content: None,
            is_error: None,
        } if &*kind == "tool_use" && input.get().starts_with('{') => Ok(Block::ToolUse {
            id: nonempty(id)?.into(),
            name: nonempty(name)?.into(),
            input,
        }),
        BlockFields {
            kind: Some(kind),
            text: None,
            id: None,
            name: None,
            input: None,
            tool_use_id: Some(id),
            content: Some(content),
            is_error: flag @ (None | Some(true)),
        } if &*kind == "tool_result" => Ok(Block::ToolResult {
            id: nonempty(id)?.into(),
            content,
            is_error: flag.is_some(),
        }),
        _ => Err(other()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Option<AnthropicBody<'_>> {
        read_anthropic_json(text.as_bytes())
    }

    #[test]
    fn reads_the_common_shapes_in_any_key_order() {
        let body = read(
            r#"{"model": "m", "max_tokens": 5, "system": "be terse", "messages": [
                {"role": "user", "content": "hi"},
                {"content": [{"text": "t", "type": "text"},
                             {"input": {"a": [1, 2.5]}, "name": "f", "type": "tool_use", "id": "c1"}],
                 "role": "assistant"},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "out"},
                    {"type": "tool_result", "tool_use_id": "c1", "is_error": true,
                     "content": [{"type": "text", "text": "a"}, {"text": "b", "type": "text"}]}]}
            ]}"#,
        )
        .unwrap();
        assert_eq!(body.system.as_deref(), Some("be terse"));
        assert_eq!(body.messages.len(), 3);
        let Content::Blocks(blocks) = &body.messages[1].content else {
            panic!("blocks expected");
        };
        assert!(body.messages[1].assistant);
        match &blocks[1] {
            Block::ToolUse { id, name, input } => {
                assert_eq!((&**id, &**name), ("c1", "f"));
                assert_eq!(input.get(), r#"{"a": [1, 2.5]}"#);
            }
            other => panic!("a tool call expected, got {other:?}"),
        }
        let Content::Blocks(results) = &body.messages[2].content else {
            panic!("blocks expected");
        };
        match &results[1] {
            Block::ToolResult {
                content, is_error, ..
            } => {
                assert!(*is_error);
                assert_eq!(content, &ResultContent::Texts(vec!["a".into(), "b".into()]));
            }
            other => panic!("a tool result expected, got {other:?}"),
        }
        assert!(read(r#"[{"role": "user", "content": "x"}]"#).is_some());
    }

    #[test]
    fn anything_else_is_for_the_general_reader() {
        for text in [
            r#"{"system": null, "messages": []}"#,
            r#"{"system": [{"type": "text", "text": "s"}], "messages": []}"#,
            r#"{"messages": [], "messages": []}"#,
            r#"{"model": "m"}"#,
            r#"[{"role": "system", "content": "x"}]"#,
            r#"[{"role": "user", "content": "x", "name": "bob"}]"#,
            r#"[{"role": "user", "content": [{"type": "image", "source": {}}]}]"#,
            r#"[{"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {}}]}]"#,
            r#"[{"role": "user", "content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}}]}]"#,
            r#"[{"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "x"}]}]"#,
            r#"[{"role": "assistant", "content": [{"type": "tool_use", "id": "", "name": "f", "input": {}}]}]"#,
            r#"[{"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "f", "input": []}]}]"#,
            r#"[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "x", "is_error": false}]}]"#,
            r#"[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": [{"type": "image"}]}]}]"#,
            r#"[{"role": "user", "content": "\ud800"}]"#,
            r#"[{"role": "user", "content": "x"}] trailing"#,
        ] {
            assert!(read(text).is_none(), "{text}");
        }
    }
}
