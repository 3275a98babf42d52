//! The guidance templates: the spec's shell and native guidance (memories,
//! or other records named by what they are), this project's compact
//! profile, and the brief form `fit.rs` falls back to over a ceiling.

use super::{Detail, GuidanceStyle, JqRecipe, Location};
use crate::{example::WorkedExample, fields::ARRAY_FIELD, quote::cut};

/// The guidance names this many arrays of records of several arrays, then
/// says how many more there are.
const MAX_ARRAYS_NAMED: usize = 5;

/// Inputs of the guidance text.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct GuidanceInput<'a> {
    /// Records in the file.
    pub count: usize,
    /// Estimated tokens saved.
    pub tokens: usize,
    /// File path, or the handle.
    pub path: &'a str,
    /// Which of the two `path` is, and so the `lro_extract` argument that
    /// takes it.
    pub location: Location,
    /// Detail level.
    pub detail: Detail,
    /// Whether the records are MIF memories (the spec's templates).
    pub memories: bool,
    /// What the records are, when they are not memories ("commits").
    pub what: &'a str,
    /// A line the result had before its records, which is not in the file.
    pub heading: Option<&'a str>,
    /// For records of several arrays, each array's name and count: the
    /// guidance names the field that tells them apart.
    pub arrays: &'a [(String, usize)],
    /// The recipes, which the guidance for other records than memories
    /// names by their descriptions.
    pub recipes: &'a [JqRecipe],
    /// How much to say.
    pub style: GuidanceStyle,
    /// The native guidance's worked example, built from the records.
    pub example: Option<&'a WorkedExample>,
    /// Whether to leave out what the recipes and `file_path` already say,
    /// for a descriptor over its ceiling (`fit.rs`).
    pub brief: bool,
    /// Whether the recipes are jq arguments without the file, so the
    /// guidance says once how to run them.
    pub path_free: bool,
}

impl<'a> GuidanceInput<'a> {
    /// Guidance for `count` records at `path`; `memories` picks the nouns.
    pub fn new(count: usize, tokens: usize, path: &'a str, detail: Detail, memories: bool) -> Self {
        Self {
            count,
            tokens,
            path,
            location: Location::FilePath,
            detail,
            memories,
            what: "records",
            heading: None,
            arrays: &[],
            recipes: &[],
            style: GuidanceStyle::Spec,
            example: None,
            brief: false,
            path_free: false,
        }
    }

    /// Sets what the records are and the result's heading, for records
    /// that are not memories. Defaults to "records" and none.
    #[must_use]
    pub fn records(mut self, what: &'a str, heading: Option<&'a str>) -> Self {
        self.what = what;
        self.heading = heading;
        self
    }

    /// Sets the arrays records of several arrays came from, each with its
    /// count. Defaults to none.
    #[must_use]
    pub fn arrays(mut self, arrays: &'a [(String, usize)]) -> Self {
        self.arrays = arrays;
        self
    }

    /// Sets the recipes the guidance names. Defaults to none.
    #[must_use]
    pub fn recipes(mut self, recipes: &'a [JqRecipe]) -> Self {
        self.recipes = recipes;
        self
    }

    /// Sets the native guidance's worked example. Defaults to none (a jq
    /// query example instead).
    #[must_use]
    pub fn example(mut self, example: Option<&'a WorkedExample>) -> Self {
        self.example = example;
        self
    }

    /// Sets how much the guidance says. Defaults to [`GuidanceStyle::Spec`].
    #[must_use]
    pub fn style(mut self, style: GuidanceStyle) -> Self {
        self.style = style;
        self
    }

    /// Sets whether to leave out the lines the recipes and `file_path`
    /// already say (the spec template's path line, its list of patterns,
    /// the worked example). Defaults to `false`.
    #[must_use]
    pub fn brief(mut self, brief: bool) -> Self {
        self.brief = brief;
        self
    }

    /// Sets whether the recipes are jq arguments without the file, in the
    /// spec style: the shell guidance then says how to run them. Defaults
    /// to `false`.
    #[must_use]
    pub fn path_free(mut self, path_free: bool) -> Self {
        self.path_free = path_free;
        self
    }

    /// Sets what `path` is. Defaults to [`Location::FilePath`].
    #[must_use]
    pub fn location(mut self, location: Location) -> Self {
        self.location = location;
        self
    }

    fn noun(&self) -> &'a str {
        if self.memories { "memories" } else { self.what }
    }

    /// Recipe `n`'s description, for records other than memories.
    fn recipe(&self, n: usize) -> &'a str {
        self.recipes
            .get(n - 1)
            .map_or("see jq_recipes", |r| r.description.as_str())
    }

    /// Where the records are in the file and that they are whole, for
    /// records other than memories: it stands for the spec's "Detail level"
    /// line, which speaks of memory fields.
    fn layout(&self) -> String {
        let heading = self
            .heading
            .map(|h| format!(" The result's heading {:?} is not in the file.", cut(h)))
            .unwrap_or_default();
        let arrays = if self.arrays.is_empty() {
            String::new()
        } else {
            let mut each: Vec<String> = self
                .arrays
                .iter()
                .take(MAX_ARRAYS_NAMED)
                .map(|(name, n)| format!("{} ({n})", cut(name)))
                .collect();
            if self.arrays.len() > MAX_ARRAYS_NAMED {
                each.push(format!("{} more", self.arrays.len() - MAX_ARRAYS_NAMED));
            }
            let says = if self.brief {
                ":"
            } else {
                " names each one's array:"
            };
            format!(" Field {ARRAY_FIELD:?}{says} {}.", each.join(", "))
        };
        // Brief: the first line has said the count and what they are.
        if self.brief {
            return format!(
                "Line 1 is a header (detail: {detail}).{heading}{arrays}",
                detail = self.detail
            );
        }
        format!(
            "The header line (line 1) contains metadata; the {count} {what} follow, one a \
             line, each whole (detail: {detail}).{heading}{arrays}",
            count = self.count,
            what = self.what,
            detail = self.detail,
        )
    }

    /// The compact style's first sentence: what, at which detail, where;
    /// brief, what and where only (the summary says the rest).
    fn compact_head(&self) -> String {
        if self.brief {
            return format!(
                "{count} {noun} are in {field}, after a header line.",
                field = self.location.field(),
                count = self.count,
                noun = self.noun(),
            );
        }
        format!(
            "{count} {noun} (detail: {detail}, ~{tokens} tokens) are in {field}, after a \
             header line.",
            field = self.location.field(),
            count = self.count,
            noun = self.noun(),
            detail = self.detail,
            tokens = self.tokens,
        )
    }
}

/// The spec's shell guidance template, or its compact form.
pub fn shell_guidance(g: GuidanceInput<'_>) -> String {
    if g.style == GuidanceStyle::Compact {
        return format!(
            "{} Run a recipe as: tail -n +2 FILE | jq COMMAND (FILE: file_path).",
            g.compact_head()
        );
    }
    // Path-free recipes say once how they run.
    let run = if g.path_free {
        "Run a recipe as: tail -n +2 FILE | jq COMMAND (FILE: file_path).\n"
    } else {
        ""
    };
    // Brief: the spec template's count, path and detail level, and what
    // the file holds; no list of patterns.
    if g.brief {
        let about = if g.memories {
            format!(
                "Detail level: {}\nLine 1 is a header; the memories follow, one a line.",
                g.detail
            )
        } else {
            g.layout()
        };
        return format!(
            "{count} {noun} offloaded to JSONL.\n\
             File: {path}\n{run}{about}",
            count = g.count,
            noun = g.noun(),
            path = g.path,
        );
    }
    if !g.memories {
        return format!(
            "Results offloaded to JSONL ({count} {what}, ~{tokens} tokens saved).\n\
             File: {path}\n\
             Use the jq recipes above to extract specific data. Common patterns:\n\
             - Browse: recipe #1 ({browse})\n\
             - Filter: recipe #2 ({filter}) or #3 ({search})\n\
             - Analyze: recipe #6 ({analyze})\n\
             Read the file directly only if you need the complete dataset.\n\
             {layout}",
            count = g.count,
            what = g.what,
            tokens = g.tokens,
            path = g.path,
            browse = g.recipe(1),
            filter = g.recipe(2),
            search = g.recipe(3),
            analyze = g.recipe(6),
            layout = g.layout(),
        );
    }
    format!(
        "Results offloaded to JSONL ({count} memories, ~{tokens} tokens saved).\n\
         File: {path}\n\
         Detail level: {detail}\n\
         Use the jq recipes above to extract specific data. Common patterns:\n\
         - Browse: recipe #1 (titles with namespaces)\n\
         - Filter: recipe #2 (by namespace) or #3 (by keyword)\n\
         - Analyze: recipe #6 (count by namespace)\n\
         Read the file directly only if you need the complete dataset.\n\
         The header line (line 1) contains metadata; memory objects start at line 2.",
        count = g.count,
        tokens = g.tokens,
        path = g.path,
        detail = g.detail,
    )
}

/// The spec's native-extraction guidance template, or its compact form.
///
/// The template names the path once, in the first example, where the spec
/// repeats it in every example; and it points at `jq_recipes` instead of
/// listing the recipes again (the spec's list says only "detail-adaptive"
/// for 9 and 10). The structured filter (`where`) is documented by the
/// `lro_extract` tool itself, so the guidance does not repeat it.
pub fn native_guidance(g: GuidanceInput<'_>) -> String {
    // A file's recipes run in a shell too: the compact ones say how.
    let shell = if g.location == Location::FilePath {
        " In a shell: tail -n +2 FILE | jq COMMAND."
    } else {
        ""
    };
    if g.style == GuidanceStyle::Compact && g.brief {
        return format!(
            "{} Query it with lro_extract: {} and recipe=N (a jq_recipes entry).{shell}",
            g.compact_head(),
            g.location.field(),
        );
    }
    if g.style == GuidanceStyle::Compact {
        return format!(
            "{} Query it with lro_extract: {} and recipe=N (a jq_recipes entry; params \
             sets its --arg values), query=\"FILTER\", or where with count for several \
             conditions.{shell}",
            g.compact_head(),
            g.location.field(),
        );
    }
    let about = if g.memories {
        format!("Detail level: {}", g.detail)
    } else {
        g.layout()
    };
    // Brief: the template's count, detail level and path, with no examples.
    if g.brief {
        return format!(
            "{count} {noun} offloaded to JSONL.\n\
             {about}\n\
             lro_extract({field}=\"{path}\", recipe=N) runs recipe N.",
            field = g.location.field(),
            count = g.count,
            noun = g.noun(),
            path = g.path,
        );
    }
    // The worked example stands for the filter, keyword and custom-filter
    // lines: one call with several conditions is what models miss.
    let examples = match g.example {
        Some(example) => format!("- Count with conditions: {}\n", example.call()),
        None if g.memories => {
            "- Filter by namespace: recipe=2, params={\"namespace\": \"_semantic\"}\n\
             - Search by keyword: recipe=3, params={\"keyword\": \"your term\"}\n"
                .to_owned()
        }
        None => format!(
            "- Filter: recipe=2 ({}); search: recipe=3 ({})\n",
            g.recipe(2),
            g.recipe(3)
        ),
    };
    format!(
        "Results offloaded to JSONL ({count} {noun}, ~{tokens} tokens saved).\n\
         {about}\n\
         Query it with the `lro_extract` tool:\n\
         - Browse: lro_extract({field}=\"{path}\", recipe=1)\n\
         {examples}\
         Recipes 1-10 are the jq_recipes above.",
        field = g.location.field(),
        count = g.count,
        noun = g.noun(),
        tokens = g.tokens,
        path = g.path,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guidance_follows_the_template() {
        let g = GuidanceInput::new(247, 38285, "/tmp/a.jsonl", Detail::Full, true);
        let text = shell_guidance(g);
        assert!(text.starts_with("Results offloaded to JSONL (247 memories, ~38285 tokens saved).\nFile: /tmp/a.jsonl\nDetail level: full\n"));
        assert!(text.ends_with("memory objects start at line 2."));
        let native = native_guidance(g);
        assert!(native.contains("Query it with the `lro_extract` tool"));
        assert!(native.contains("Detail level: full"));
        assert!(native.contains("lro_extract(file_path=\"/tmp/a.jsonl\", recipe=1)"));
        assert_eq!(native.matches("/tmp/a.jsonl").count(), 1, "{native}");
    }

    #[test]
    fn other_records_are_named_and_so_are_their_recipes() {
        let recipes: Vec<JqRecipe> = (1..=10)
            .map(|n| JqRecipe {
                description: format!("what {n} does"),
                command: String::new(),
            })
            .collect();
        let g = GuidanceInput::new(300, 9000, "/tmp/a.jsonl", Detail::Full, false)
            .records("commits", Some("Commit history:"))
            .recipes(&recipes);
        let shell = shell_guidance(g);
        assert!(
            shell.starts_with(
                "Results offloaded to JSONL (300 commits, ~9000 tokens saved).\nFile: /tmp/a.jsonl\n"
            ),
            "{shell}"
        );
        assert!(shell.contains("- Filter: recipe #2 (what 2 does) or #3 (what 3 does)"));
        assert!(shell.contains("- Analyze: recipe #6 (what 6 does)"));
        assert!(shell.ends_with(
            "the 300 commits follow, one a line, each whole (detail: full). The result's \
             heading \"Commit history:\" is not in the file."
        ));
        let native = native_guidance(g);
        assert!(
            native.contains("- Filter: recipe=2 (what 2 does); search: recipe=3 (what 3 does)")
        );
        assert_eq!(native.matches("/tmp/a.jsonl").count(), 1, "{native}");
        for text in [&shell, &native] {
            assert!(
                !text.contains("memor") && !text.contains("Detail level"),
                "{text}"
            );
        }
        let compact = native_guidance(g.style(GuidanceStyle::Compact));
        assert!(
            compact.starts_with("300 commits (detail: full"),
            "{compact}"
        );
    }

    #[test]
    fn compact_guidance_names_count_and_detail_but_not_the_path() {
        let g = GuidanceInput::new(247, 38285, "/tmp/a.jsonl", Detail::Light, true)
            .style(GuidanceStyle::Compact);
        let spec = g.style(GuidanceStyle::Spec);
        for (text, full) in [
            (shell_guidance(g), shell_guidance(spec)),
            (native_guidance(g), native_guidance(spec)),
        ] {
            assert!(
                text.starts_with("247 memories (detail: light, ~38285 tokens) are in file_path"),
                "{text}"
            );
            assert!(!text.contains("/tmp/a.jsonl"), "{text}");
            assert!(text.len() < full.len(), "{text} against {full}");
        }
        assert!(native_guidance(g).contains("lro_extract"));
        // Both say how to run a recipe in a shell, but for a handle's.
        assert!(shell_guidance(g).contains("tail -n +2 FILE | jq COMMAND"));
        assert!(native_guidance(g).contains("In a shell: tail -n +2 FILE | jq COMMAND."));
        let handle = g.location(Location::Handle);
        assert!(!native_guidance(handle).contains("jq COMMAND"));
    }

    #[test]
    fn brief_guidance_keeps_the_count_the_detail_and_the_path() {
        for memories in [true, false] {
            let g =
                GuidanceInput::new(500, 36730, "/tmp/a.jsonl", Detail::Light, memories).brief(true);
            for text in [shell_guidance(g), native_guidance(g)] {
                for needle in ["500 ", "light", "/tmp/a.jsonl"] {
                    assert!(text.contains(needle), "{needle} in {text}");
                }
                let whole = g.brief(false);
                assert!(
                    text.len()
                        < shell_guidance(whole)
                            .len()
                            .min(native_guidance(whole).len())
                );
            }
            let run = shell_guidance(g.path_free(true));
            assert!(run.contains("tail -n +2 FILE | jq COMMAND"), "{run}");
        }
    }
}
