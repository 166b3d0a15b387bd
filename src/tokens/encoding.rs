//! Which price table a text is estimated with ([`Encoding`]), and which table each model
//! family uses.
//!
//! Invariants: `MODELS` is the one place the model-to-table mapping lives, searched first
//! match first (so `gpt-4o` precedes `gpt-4`); a name matches a prefix only as a whole name
//! part (`o3` and `o3-mini`, not `o300`); parsing a table's own name gives that table.

use super::features::FEATURES;
use super::image::ImageRule;
use super::prices::{ByteWeight, Prices, CL100K, CL100K_BYTES, O200K, O200K_BYTES};

/// The price table: which tokenizer the text estimate imitates and which provider's rule
/// prices images. OpenAI's two encodings agree within a few percent on English, code and
/// JSON, and disagree by 30–50 % on CJK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// `cl100k_base` (GPT-4, GPT-3.5), images at OpenAI's high detail; also the safe default:
    /// it prices CJK highest, and over-estimating is the safe side when trimming to a window.
    #[default]
    Cl100k,
    /// `o200k_base` (GPT-4o, o-series, GPT-4.1 and later), images at OpenAI's high detail.
    O200k,
    /// `anthropic` (Claude): texts at `cl100k_base`'s prices (Anthropic publishes no
    /// tokenizer; cl100k's are the higher of the two, the safe side), images by Anthropic's
    /// rule.
    Anthropic,
}

/// Which price table each model family uses, by model-name prefix, the first match winning
/// (so `gpt-4o` comes before `gpt-4`). The one place the mapping lives.
const MODELS: &[(&str, Encoding)] = &[
    ("gpt-4o", Encoding::O200k),
    ("gpt-4.1", Encoding::O200k),
    ("gpt-4.5", Encoding::O200k),
    ("gpt-5", Encoding::O200k),
    ("chatgpt-4o", Encoding::O200k),
    ("o1", Encoding::O200k),
    ("o3", Encoding::O200k),
    ("o4", Encoding::O200k),
    ("gpt-4", Encoding::Cl100k),
    ("gpt-3.5", Encoding::Cl100k),
    ("gpt-35", Encoding::Cl100k),
    ("text-embedding-3", Encoding::Cl100k),
    ("text-embedding-ada-002", Encoding::Cl100k),
    ("claude", Encoding::Anthropic),
];

impl Encoding {
    pub(crate) const fn prices(self) -> &'static Prices {
        match self {
            Self::Cl100k | Self::Anthropic => &CL100K,
            Self::O200k => &O200K,
        }
    }

    /// The prices as the vector path multiplies by them.
    pub(crate) fn byte_weights(self) -> &'static [ByteWeight; FEATURES] {
        match self {
            Self::Cl100k | Self::Anthropic => &CL100K_BYTES,
            Self::O200k => &O200K_BYTES,
        }
    }

    /// The rule images are priced by.
    #[must_use]
    pub const fn image_rule(self) -> ImageRule {
        match self {
            Self::Cl100k | Self::O200k => ImageRule::OpenAiHigh,
            Self::Anthropic => ImageRule::Anthropic,
        }
    }

    /// The table's name: the encoding's as OpenAI spells it, or `"anthropic"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Cl100k => "cl100k_base",
            Self::O200k => "o200k_base",
            Self::Anthropic => "anthropic",
        }
    }

    /// The price table of a model, by its name (`"gpt-4o"`, `"gpt-4.1-mini"`, `"o3"`,
    /// `"gpt-4"`, `"claude-sonnet-4-5"`; a provider prefix such as `"openai/"` and a
    /// fine-tune's `"ft:"` are ignored), or `None` for a model it does not know.
    #[must_use]
    pub fn for_model(model: &str) -> Option<Self> {
        let model = model.strip_prefix("ft:").unwrap_or(model);
        let model = model.rsplit('/').next().unwrap_or(model);
        MODELS
            .iter()
            .find(|(prefix, _)| {
                model.strip_prefix(prefix).is_some_and(|rest| {
                    // A whole name part: "o3" and "o3-mini", not "o300".
                    rest.is_empty()
                        || rest.starts_with(['-', '.', ':', '@'])
                        || prefix.ends_with(|c: char| !c.is_ascii_digit())
                })
            })
            .map(|&(_, encoding)| encoding)
    }
}

impl std::str::FromStr for Encoding {
    type Err = String;

    /// `"cl100k_base"`/`"cl100k"`, `"o200k_base"`/`"o200k"`, `"anthropic"`, or a model name
    /// ([`Encoding::for_model`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cl100k_base" | "cl100k" => Ok(Self::Cl100k),
            "o200k_base" | "o200k" => Ok(Self::O200k),
            "anthropic" => Ok(Self::Anthropic),
            other => Self::for_model(other).ok_or_else(|| {
                format!(
                    "unknown encoding or model {other:?}: expected \"cl100k_base\", \"o200k_base\", \
                     \"anthropic\" or a model name such as \"gpt-4o\", \"gpt-4\", \"o3\" or \"claude-…\""
                )
            }),
        }
    }
}
