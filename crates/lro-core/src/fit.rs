//! Keeping a full descriptor within its token ceiling, whatever the records
//! and however long the path.
//!
//! The ceilings are this project's, after the paper's descriptor of about
//! 800 tokens: 800 for the spec's guidance, 450 for the compact one,
//! counted as the spec's estimator counts, characters / 4. Most
//! descriptors fit as first built. One that does not (a long output
//! directory, whose path every spec recipe repeats; records of hundreds of
//! fields) is rebuilt, a step at a time, until it fits:
//!
//! 1. the line schema gets the room left, down to the most frequent
//!    top-level fields (see [`crate::schema::descriptor_line_schema`]), or,
//!    with no room, the bare `{"type": "object"}`;
//! 2. the guidance drops what the recipes and `file_path` already say
//!    ([`GuidanceInput::brief`]);
//! 3. each recipe's description stops before its details (`, tab-separated`,
//!    ` (case-insensitive)`, `: id, name`);
//! 4. last, the recipes are given from the first, the most useful, for as
//!    many as fit (the line schema again getting the room left): the ones
//!    left out keep their numbers, so `lro_extract`'s `recipe=N` and
//!    `lro extract --recipe N` still run them.
//!
//! A recipe of the spec's guidance is always a whole shell command, its
//! path included, so it runs as given: a recipe is left out rather than
//! shortened to its jq arguments.

use serde_json::Value;

use crate::{
    descriptor::{
        GuidanceInput, GuidanceStyle, OffloadResponse, OffloadSummary, native_guidance,
        shell_guidance,
    },
    recipes::RecipeSet,
    schema::DESCRIPTOR_SCHEMA_CHARS,
};

/// The spec guidance's ceiling, in characters / 4.
pub const SPEC_CEILING_TOKENS: usize = 800;
/// The compact guidance's ceiling, in characters / 4.
pub const COMPACT_CEILING_TOKENS: usize = 450;

/// The descriptor's cost as the ceilings count it: characters / 4, rounded
/// up.
pub fn descriptor_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// What a full descriptor is made of, before it is fitted.
pub(crate) struct Parts<'a> {
    pub(crate) summary: OffloadSummary,
    /// Empty for a result in a store.
    pub(crate) file_path: String,
    pub(crate) handle: Option<String>,
    pub(crate) recipes: &'a RecipeSet,
    /// The guidance's inputs; its recipes are set here.
    pub(crate) guidance: GuidanceInput<'a>,
    /// The `lro_extract` template rather than the shell one.
    pub(crate) native: bool,
    /// The line schema within a number of characters.
    pub(crate) schema: &'a dyn Fn(usize) -> Value,
}

/// The full descriptor, fitted within its ceiling (see the module docs).
pub(crate) fn full(parts: &Parts<'_>) -> OffloadResponse {
    let style = parts.guidance.style;
    let ceiling = match style {
        GuidanceStyle::Spec => SPEC_CEILING_TOKENS,
        GuidanceStyle::Compact => COMPACT_CEILING_TOKENS,
    } * 4;
    let all = parts.recipes.recipes.len();
    // Steps 0 to 3 with every recipe, then step 3 with one fewer at a time.
    let steps = (0..=3)
        .map(|step| (step, all))
        .chain((0..all).rev().map(|kept| (3, kept)));
    let mut fitted = None;
    for (step, kept) in steps {
        let d = build(parts, step, kept, ceiling);
        if len(&d) <= ceiling {
            return d;
        }
        fitted = Some(d);
    }
    fitted.expect("there is always a step")
}

/// The descriptor at fitting step `step` with the first `kept` recipes.
fn build(parts: &Parts<'_>, step: usize, kept: usize, ceiling: usize) -> OffloadResponse {
    let style = parts.guidance.style;
    // A handle has no file to pipe into jq, and the compact profile shows
    // how to run its jq arguments once.
    let path_free = style == GuidanceStyle::Compact || parts.handle.is_some();
    let mut jq_recipes = if path_free {
        parts.recipes.to_compact_recipes()
    } else {
        parts.recipes.to_jq_recipes(&parts.file_path)
    };
    jq_recipes.truncate(kept);
    if step >= 3 {
        for r in &mut jq_recipes {
            r.description = without_details(&r.description).to_owned();
        }
    }
    let g = parts
        .guidance
        .recipes(&jq_recipes)
        .brief(step >= 2)
        .path_free(path_free);
    let guidance = if parts.native {
        native_guidance(g)
    } else {
        shell_guidance(g)
    };
    let mut d = OffloadResponse {
        offloaded: true,
        summary: parts.summary.clone(),
        file_path: parts.file_path.clone(),
        handle: parts.handle.clone(),
        line_schema: Value::Null,
        jq_recipes,
        guidance,
    };
    if style == GuidanceStyle::Spec {
        let whole = (parts.schema)(DESCRIPTOR_SCHEMA_CHARS);
        d.line_schema = if step == 0 {
            whole
        } else {
            // `,"line_schema":` and the schema in what is left; with no
            // room, the bare type, which every record still validates
            // against (a schema cut to nothing would say more).
            let room = ceiling.saturating_sub(len(&d) + 15);
            let cut = (parts.schema)(room.min(DESCRIPTOR_SCHEMA_CHARS));
            let shortest = if cut.to_string().len() < whole.to_string().len() {
                cut
            } else {
                whole
            };
            if shortest.to_string().len() <= room {
                shortest
            } else {
                serde_json::json!({"type": "object"})
            }
        };
    }
    d
}

/// A recipe's description up to its details.
fn without_details(description: &str) -> &str {
    let end = [" (", ", ", ": "]
        .iter()
        .filter_map(|sep| description.find(sep))
        .min()
        .unwrap_or(description.len());
    &description[..end]
}

fn len(d: &OffloadResponse) -> usize {
    serde_json::to_string(d)
        .expect("descriptors always serialize")
        .chars()
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_what_follows_a_comma_colon_or_parenthesis() {
        assert_eq!(
            without_details("Line numbers and text, tab-separated"),
            "Line numbers and text"
        );
        assert_eq!(
            without_details("Search by keyword (case-insensitive)"),
            "Search by keyword"
        );
        assert_eq!(
            without_details("Browse records: id, name"),
            "Browse records"
        );
        assert_eq!(without_details("Sort by date"), "Sort by date");
    }
}
