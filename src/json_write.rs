//! Provider request JSON written from a message's parts, for the shapes every server turn
//! renders: the same bytes the general path makes (the renderer's dicts encoded by msgspec),
//! without building those dicts. Chat Completions messages (`write_message`, `write_tool`),
//! Anthropic messages (`write_anthropic`) and Responses input items (`write_responses_item`).
//!
//! The writers append one message object each, keys in the renderer's order and with no
//! whitespace; strings are escaped as msgspec and `json.dumps(ensure_ascii=False)` escape
//! them: `"` and `\`, the control characters below U+0020 (`\b \t \n \f \r` by name, the
//! rest as `\u00XX`, lowercase), everything else written as it is (serde_json's compact
//! string writer does exactly that). Which messages have these shapes, and the JSON of a
//! call's arguments or input, are the caller's to decide: the bindings take them from a
//! `Message`.

/// The `content` of a system, user or assistant message.
#[derive(Debug, Clone, Copy)]
pub enum Content<'a> {
    /// No text: `null` (an assistant message of calls alone).
    Null,
    /// One text: a string.
    Text(&'a str),
    /// Several texts: `[{"type":"text","text":...}, ...]`.
    Parts(&'a [&'a str]),
}

/// One function call of an assistant message, its arguments already JSON text.
#[derive(Debug, Clone, Copy)]
pub struct CallParts<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub arguments: &'a str,
}

/// Appends `value` as a JSON string.
pub fn write_str(out: &mut Vec<u8>, value: &str) {
    if needs_escape(value.as_bytes()) {
        // Serialising a `str` into a Vec cannot fail.
        let _ = serde_json::to_writer(out, value);
    } else {
        // Most texts, ids and names escape nothing: the string is its own JSON, quoted.
        out.reserve(value.len() + 2);
        out.push(b'"');
        out.extend_from_slice(value.as_bytes());
        out.push(b'"');
    }
}

/// Whether any byte of `bytes` is one a JSON string escapes (`"`, `\`, below 0x20), read a
/// word at a time: serde_json's writer looks each byte up in a table, several times slower
/// on the texts a turn renders, which almost never hold one.
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // Whether any byte of `x` is below `n` (n <= 0x80): exact for the word as a whole.
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH != 0;
    let has = |x: u64, b: u8| below(x ^ (ONES * u64::from(b)), 1);
    let special = |x: u64| below(x, 0x20) || has(x, b'"') || has(x, b'\\');
    let word = |w: &[u8]| {
        // The tail padded with spaces, which nothing escapes.
        let mut word = [b' '; 8];
        word[..w.len()].copy_from_slice(w);
        special(u64::from_ne_bytes(word))
    };
    let mut words = bytes.chunks_exact(8);
    words.by_ref().any(word) || word(words.remainder())
}

/// Appends `{"role":role,"content":content}`, with `"tool_calls":[...]` when there are calls.
pub fn write_message(out: &mut Vec<u8>, role: &str, content: Content<'_>, calls: &[CallParts<'_>]) {
    out.extend_from_slice(b"{\"role\":");
    write_str(out, role);
    out.extend_from_slice(b",\"content\":");
    match content {
        Content::Null => out.extend_from_slice(b"null"),
        Content::Text(text) => write_str(out, text),
        Content::Parts(texts) => {
            out.push(b'[');
            for (i, text) in texts.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                write_str(out, text);
                out.push(b'}');
            }
            out.push(b']');
        }
    }
    if !calls.is_empty() {
        out.extend_from_slice(b",\"tool_calls\":[");
        for (i, call) in calls.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"id\":");
            write_str(out, call.id);
            out.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":");
            write_str(out, call.name);
            out.extend_from_slice(b",\"arguments\":");
            write_str(out, call.arguments);
            out.extend_from_slice(b"}}");
        }
        out.push(b']');
    }
    out.push(b'}');
}

/// Appends `{"role":"tool","tool_call_id":call_id,"content":text}`.
pub fn write_tool(out: &mut Vec<u8>, call_id: &str, text: &str) {
    out.extend_from_slice(b"{\"role\":\"tool\",\"tool_call_id\":");
    write_str(out, call_id);
    out.extend_from_slice(b",\"content\":");
    write_str(out, text);
    out.push(b'}');
}

/// One content block of an Anthropic message.
#[derive(Debug, Clone, Copy)]
pub enum AnthropicPart<'a> {
    /// `{"type":"text","text":...}`.
    Text(&'a str),
    /// `{"type":"tool_use","id":...,"name":...,"input":<input, JSON as given>}`.
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a [u8],
    },
    /// `{"type":"tool_result","tool_use_id":...,"content":...}`, with `"is_error":true` when
    /// it is one.
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        is_error: bool,
    },
    /// `{"type":"thinking","thinking":...,"signature":...}`.
    Thinking { text: &'a str, signature: &'a str },
    /// `{"type":"redacted_thinking","data":...}`.
    Redacted { data: &'a str },
}

/// Appends `{"role":role,"content":[parts]}`.
pub fn write_anthropic(out: &mut Vec<u8>, role: &str, parts: &[AnthropicPart<'_>]) {
    out.extend_from_slice(b"{\"role\":");
    write_str(out, role);
    out.extend_from_slice(b",\"content\":[");
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match *part {
            AnthropicPart::Text(text) => {
                out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                write_str(out, text);
            }
            AnthropicPart::ToolUse { id, name, input } => {
                out.extend_from_slice(b"{\"type\":\"tool_use\",\"id\":");
                write_str(out, id);
                out.extend_from_slice(b",\"name\":");
                write_str(out, name);
                out.extend_from_slice(b",\"input\":");
                out.extend_from_slice(input);
            }
            AnthropicPart::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                out.extend_from_slice(b"{\"type\":\"tool_result\",\"tool_use_id\":");
                write_str(out, tool_use_id);
                out.extend_from_slice(b",\"content\":");
                write_str(out, content);
                if is_error {
                    out.extend_from_slice(b",\"is_error\":true");
                }
            }
            AnthropicPart::Thinking { text, signature } => {
                out.extend_from_slice(b"{\"type\":\"thinking\",\"thinking\":");
                write_str(out, text);
                out.extend_from_slice(b",\"signature\":");
                write_str(out, signature);
            }
            AnthropicPart::Redacted { data } => {
                out.extend_from_slice(b"{\"type\":\"redacted_thinking\",\"data\":");
                write_str(out, data);
            }
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
}

/// One Responses input item.
#[derive(Debug, Clone, Copy)]
pub enum ResponsesItem<'a> {
    /// A message's short form, `{"role":role,"content":text}`.
    Short { role: &'a str, text: &'a str },
    /// `{"type":"message","role":role,"content":...}`: `Text` as a string, else `Parts` as
    /// `[{"type":kind,"text":...}, ...]` (`kind` is `input_text` or `output_text`).
    Message {
        role: &'a str,
        content: ResponsesContent<'a>,
    },
    /// `{"type":"function_call","call_id":...,"name":...,"arguments":...}`.
    Call {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    /// `{"type":"function_call_output","call_id":...,"output":...}`.
    Output { call_id: &'a str, output: &'a str },
    /// `{"type":"reasoning","summary":[...]}`: one `summary_text` part unless `text` is
    /// empty, then `"encrypted_content":signature` unless that is empty.
    Reasoning { text: &'a str, signature: &'a str },
}

/// The `content` of a Responses `message` item.
#[derive(Debug, Clone, Copy)]
pub enum ResponsesContent<'a> {
    Text(&'a str),
    Parts { kind: &'a str, texts: &'a [&'a str] },
}

/// Appends one Responses input item.
pub fn write_responses_item(out: &mut Vec<u8>, item: &ResponsesItem<'_>) {
    match *item {
        ResponsesItem::Short { role, text } => {
            out.extend_from_slice(b"{\"role\":");
            write_str(out, role);
            out.extend_from_slice(b",\"content\":");
            write_str(out, text);
        }
        ResponsesItem::Message { role, content } => {
            out.extend_from_slice(b"{\"type\":\"message\",\"role\":");
            write_str(out, role);
            out.extend_from_slice(b",\"content\":");
            match content {
                ResponsesContent::Text(text) => write_str(out, text),
                ResponsesContent::Parts { kind, texts } => {
                    out.push(b'[');
                    for (i, text) in texts.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(b"{\"type\":");
                        write_str(out, kind);
                        out.extend_from_slice(b",\"text\":");
                        write_str(out, text);
                        out.push(b'}');
                    }
                    out.push(b']');
                }
            }
        }
        ResponsesItem::Call {
            call_id,
            name,
            arguments,
        } => {
            out.extend_from_slice(b"{\"type\":\"function_call\",\"call_id\":");
            write_str(out, call_id);
            out.extend_from_slice(b",\"name\":");
            write_str(out, name);
            out.extend_from_slice(b",\"arguments\":");
            write_str(out, arguments);
        }
        ResponsesItem::Output { call_id, output } => {
            out.extend_from_slice(b"{\"type\":\"function_call_output\",\"call_id\":");
            write_str(out, call_id);
            out.extend_from_slice(b",\"output\":");
            write_str(out, output);
        }
        ResponsesItem::Reasoning { text, signature } => {
            out.extend_from_slice(b"{\"type\":\"reasoning\",\"summary\":[");
            if !text.is_empty() {
                out.extend_from_slice(b"{\"type\":\"summary_text\",\"text\":");
                write_str(out, text);
                out.push(b'}');
            }
            out.push(b']');
            if !signature.is_empty() {
                out.extend_from_slice(b",\"encrypted_content\":");
                write_str(out, signature);
            }
        }
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    proptest::proptest! {
        /// The shortcut for strings that escape nothing writes what serde_json writes, for
        /// every string, escapes at any place in a word or in the tail included.
        #[test]
        fn writes_what_serde_json_writes(
            value in proptest::string::string_regex("[a-z\"\\\\\\x00-\\x1f\\x7f é😀]{0,40}").unwrap()
        ) {
            proptest::prop_assert_eq!(
                text(|o| write_str(o, &value)),
                serde_json::to_string(&value).unwrap()
            );
        }
    }

    #[test]
    fn escapes_as_msgspec_does() {
        let s = text(|o| write_str(o, "\u{0}\u{1}\u{8}\t\n\u{c}\r\u{1f}\"\\/\u{2028}\u{7f} é😀"));
        assert_eq!(
            s,
            "\"\\u0000\\u0001\\b\\t\\n\\f\\r\\u001f\\\"\\\\/\u{2028}\u{7f} é😀\""
        );
    }

    #[test]
    fn writes_each_shape_in_the_renderers_key_order() {
        let call = CallParts {
            id: "c1",
            name: "f",
            arguments: "{\"a\":1}",
        };
        assert_eq!(
            text(|o| write_message(o, "assistant", Content::Null, &[call, call])),
            "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[\
             {\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}},\
             {\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]}"
        );
        assert_eq!(
            text(|o| write_message(o, "user", Content::Parts(&["a", "b"]), &[])),
            "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]}"
        );
        assert_eq!(
            text(|o| write_message(o, "system", Content::Text("s"), &[])),
            "{\"role\":\"system\",\"content\":\"s\"}"
        );
        assert_eq!(
            text(|o| write_anthropic(
                o,
                "assistant",
                &[
                    AnthropicPart::Thinking {
                        text: "t",
                        signature: "s"
                    },
                    AnthropicPart::ToolUse {
                        id: "c1",
                        name: "f",
                        input: b"{}"
                    },
                    AnthropicPart::ToolResult {
                        tool_use_id: "c1",
                        content: "x",
                        is_error: true
                    },
                ]
            )),
            "{\"role\":\"assistant\",\"content\":[\
             {\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"s\"},\
             {\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"f\",\"input\":{}},\
             {\"type\":\"tool_result\",\"tool_use_id\":\"c1\",\"content\":\"x\",\"is_error\":true}]}"
        );
        let parts = ResponsesContent::Parts {
            kind: "output_text",
            texts: &["a", "b"],
        };
        let items = [
            ResponsesItem::Short {
                role: "user",
                text: "hi",
            },
            ResponsesItem::Message {
                role: "assistant",
                content: parts,
            },
            ResponsesItem::Call {
                call_id: "c1",
                name: "f",
                arguments: "{}",
            },
            ResponsesItem::Output {
                call_id: "c1",
                output: "x",
            },
            ResponsesItem::Reasoning {
                text: "",
                signature: "s",
            },
            ResponsesItem::Reasoning {
                text: "t",
                signature: "",
            },
        ];
        let written: Vec<String> = items
            .iter()
            .map(|item| text(|o| write_responses_item(o, item)))
            .collect();
        assert_eq!(
            written,
            [
                "{\"role\":\"user\",\"content\":\"hi\"}",
                "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[\
                 {\"type\":\"output_text\",\"text\":\"a\"},{\"type\":\"output_text\",\"text\":\"b\"}]}",
                "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{}\"}",
                "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"x\"}",
                "{\"type\":\"reasoning\",\"summary\":[],\"encrypted_content\":\"s\"}",
                "{\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"t\"}]}",
            ]
        );
        assert_eq!(
            text(|o| write_tool(o, "c1", "out")),
            "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"out\"}"
        );
    }
}
