//! What the offloader takes and what it gives back.

use std::time::Duration;

use crate::{
    descriptor::{Detail, MinimalOffloadResponse, OffloadResponse, OffloadedResult},
    principal::Principal,
    recipes::RecipeSet,
    records::RecordSet,
};

/// What to offload.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OffloadInput<'a> {
    /// Tool name.
    pub tool: &'a str,
    /// Operation name for the file name and header.
    pub operation: &'a str,
    /// The query, when the call had one.
    pub query: Option<String>,
    /// Detail level the records were serialized at; inferred when `None`.
    pub detail: Option<Detail>,
    /// The records.
    pub records: &'a RecordSet<'a>,
    /// Estimated tokens of the whole result set.
    pub estimated_tokens: usize,
    /// Score range, when the tool knows one.
    pub score_range: Option<(f64, f64)>,
    /// Whose result this is: the file goes to [`Principal::dir`].
    pub principal: Principal,
}

impl<'a> OffloadInput<'a> {
    /// An input with no query, inferred detail and no score range.
    pub fn new(
        tool: &'a str,
        operation: &'a str,
        records: &'a RecordSet<'a>,
        estimated_tokens: usize,
    ) -> Self {
        Self {
            tool,
            operation,
            query: None,
            detail: None,
            records,
            estimated_tokens,
            score_range: None,
            principal: Principal::anonymous(),
        }
    }

    /// Sets whose result this is. Defaults to [`Principal::anonymous`]:
    /// the file goes straight into the output directory.
    #[must_use]
    pub fn principal(self, principal: Principal) -> Self {
        Self { principal, ..self }
    }

    /// Sets the query, for the file header. Defaults to none.
    #[must_use]
    pub fn query(self, query: Option<String>) -> Self {
        Self { query, ..self }
    }

    /// Sets the detail level the records were serialized at. Defaults to
    /// none: inferred from the records.
    #[must_use]
    pub fn detail(self, detail: Option<Detail>) -> Self {
        Self { detail, ..self }
    }

    /// Sets the score range. Defaults to none.
    #[must_use]
    pub fn score_range(self, score_range: Option<(f64, f64)>) -> Self {
        Self {
            score_range,
            ..self
        }
    }
}

/// The descriptor that replaces the result.
// One is built per offloaded result and moved once; boxing the full one
// would cost an allocation for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Descriptor {
    /// The spec's full descriptor.
    Full(OffloadResponse),
    /// The bare pointer.
    Minimal(MinimalOffloadResponse),
}

/// A finished offload.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OffloadOutput {
    /// The descriptor.
    pub descriptor: Descriptor,
    /// The descriptor as JSON text, what the model reads.
    pub text: String,
    /// The file.
    pub result: OffloadedResult,
    /// Bytes written.
    pub bytes: u64,
    /// Time spent writing the file.
    pub write_duration: Duration,
    /// The recipes in the descriptor.
    pub recipes: RecipeSet,
}
