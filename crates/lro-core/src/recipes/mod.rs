//! The ten extraction recipes of every descriptor.
//!
//! For MIF memories these are the spec's recipes (`memory.rs`): 1–8 use
//! Light fields only, 9–10 adapt to the detail level. For any other records
//! ten equivalents are derived from the records themselves: line records
//! (`{line, text}`) get recipes for lines of text (`lines.rs`), other
//! records recipes from the fields they have (`generic.rs`). No recipe
//! references a field that is absent at its detail level, and none
//! references `.score`.
//!
//! Every derived recipe prints something when run exactly as given: its
//! example values come from the records (`values.rs`), and no two recipes
//! of a set run the same command; a slot whose own recipe does not apply
//! takes the next of a list that applies to any records (`Slots`).
//!
//! A recipe is a jq filter plus named parameters. Parameters are passed as jq
//! variables (`--arg name value`, `$name` in the filter), so a value can never
//! break out of the filter: the same filter runs in the shell and natively.
//!
//! ```
//! use lro_core::{descriptor::Detail, recipes::RecipeSet};
//! use serde_json::json;
//!
//! let sample = [json!({"id": "m1", "title": "Cache", "namespace": "_semantic/knowledge",
//!                      "memory_type": "semantic", "tags": ["perf"], "created": "2025-01-01"})];
//! let set = RecipeSet::derive(&sample, Detail::Light);
//! assert!(set.memories);
//! assert_eq!(set.recipes.len(), 10);
//! let cmd = set.get(2).unwrap().command("/tmp/atlatl-list-x.jsonl");
//! assert_eq!(cmd, "tail -n +2 /tmp/atlatl-list-x.jsonl | jq -c --arg namespace _semantic 'select(.namespace | startswith($namespace))?'");
//! ```

mod generic;
mod lines;
mod memory;
mod roles;
mod values;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use memory::is_memory_sample;

use crate::descriptor::{Detail, JqRecipe};

/// One named parameter of a recipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecipeParam {
    /// Variable name (`$name` in the filter, `params.name` in `lro_extract`).
    pub name: String,
    /// Value used in the descriptor's ready-to-run command.
    pub default: String,
}

/// One recipe: a jq filter, how to run it, and its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Recipe {
    /// 1 to 10.
    pub number: u8,
    /// What it does.
    pub description: String,
    /// The jq filter, with parameters as `$name` variables.
    pub filter: String,
    /// Run over all records at once (`jq -s`).
    pub slurp: bool,
    /// Print strings raw (`jq -r`).
    pub raw: bool,
    /// Parameters, with the defaults used in the rendered command.
    pub params: Vec<RecipeParam>,
}

impl Recipe {
    /// A recipe numbered when its set is made ([`RecipeSet::numbered`]).
    fn new(description: impl Into<String>, filter: impl Into<String>) -> Self {
        Self {
            number: 0,
            description: description.into(),
            filter: filter.into(),
            slurp: false,
            raw: false,
            params: Vec::new(),
        }
    }

    /// Whether two recipes run the same command (descriptions aside).
    fn same_as(&self, other: &Recipe) -> bool {
        self.filter == other.filter
            && self.slurp == other.slurp
            && self.raw == other.raw
            && self.params == other.params
    }

    fn slurp(mut self) -> Self {
        self.slurp = true;
        self
    }

    fn raw(mut self) -> Self {
        self.raw = true;
        self
    }

    /// The recipe with jq's error suppression around its filter, so that a
    /// record of another shape (a string among objects, a field of another
    /// type) prints nothing instead of stopping jq: `F?`, or `(F)?` when
    /// `F` is a pipe or has an operator at its top level.
    fn tolerant(mut self) -> Self {
        self.filter = if is_one_term(&self.filter) {
            format!("{}?", self.filter)
        } else {
            format!("({})?", self.filter)
        };
        self
    }

    fn param(mut self, name: &str, default: impl Into<String>) -> Self {
        self.params.push(RecipeParam {
            name: name.to_owned(),
            default: default.into(),
        });
        self
    }

    /// The jq command-line arguments after `jq`, with `params` overriding the
    /// defaults: flags (`-sc`, `-sr`, `-c` or `-r`), `--arg` pairs, then the
    /// filter.
    pub fn jq_args(&self, params: &BTreeMap<String, String>) -> Vec<String> {
        // One word for both flags (`-sc`): a character less in every
        // command than `-s -c`, which counts at a long path.
        let flags = match (self.slurp, self.raw) {
            (true, true) => "-sr",
            (true, false) => "-sc",
            (false, true) => "-r",
            (false, false) => "-c",
        };
        let mut args = vec![flags.to_owned()];
        for p in &self.params {
            args.push("--arg".to_owned());
            args.push(p.name.clone());
            args.push(params.get(&p.name).unwrap_or(&p.default).clone());
        }
        args.push(self.filter.clone());
        args
    }

    /// The ready-to-run shell command for `file`, with default parameters.
    pub fn command(&self, file: &str) -> String {
        format!("tail -n +2 {} | jq {}", shell_quote(file), self.jq_part())
    }

    /// What follows `jq` in [`Recipe::command`]: flags, `--arg` pairs with
    /// their defaults, and the filter, shell-quoted.
    pub fn jq_part(&self) -> String {
        let args: Vec<String> = self
            .jq_args(&BTreeMap::new())
            .iter()
            .map(|a| shell_quote(a))
            .collect();
        args.join(" ")
    }

    /// The descriptor form.
    pub fn to_jq_recipe(&self, file: &str) -> JqRecipe {
        JqRecipe {
            description: self.description.clone(),
            command: self.command(file),
        }
    }

    /// The compact descriptor form: the command without `tail -n +2 FILE |
    /// jq`, which the compact guidance shows once.
    pub fn to_compact_recipe(&self) -> JqRecipe {
        JqRecipe {
            description: self.description.clone(),
            command: self.jq_part(),
        }
    }
}

/// Whether `filter` is one jq term, which a postfix `?` applies to whole:
/// nothing but brackets and strings holds a space or a `|`.
fn is_one_term(filter: &str) -> bool {
    let (mut depth, mut string, mut escaped) = (0usize, false, false);
    for c in filter.chars() {
        if string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => string = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ' ' | '|' | ',' if depth == 0 => return false,
            _ => {}
        }
    }
    true
}

/// Quotes `s` for a POSIX shell; plain words stay unquoted.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The ten recipes for one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecipeSet {
    /// Whether these are the spec's memory recipes.
    pub memories: bool,
    /// Exactly ten recipes, numbered 1 to 10.
    pub recipes: Vec<Recipe>,
}

/// Records parsed from the front of a file are enough to choose recipes and
/// example parameters; both the layer and the extractor use this many.
pub const SAMPLE_SIZE: usize = 32;

/// How many recipes a set has.
const RECIPES: usize = 10;

impl RecipeSet {
    /// Chooses memory or derived recipes from sample records.
    pub fn derive(sample: &[Value], detail: Detail) -> Self {
        if is_memory_sample(sample) {
            Self::memories(sample, detail)
        } else {
            Self::generic(sample)
        }
    }

    /// The spec's ten memory recipes at `detail`.
    pub fn memories(sample: &[Value], detail: Detail) -> Self {
        Self::numbered(true, memory::recipes(sample, detail))
    }

    /// Ten recipes derived from arbitrary records: for lines of text when
    /// they are line records, else from the fields the records have.
    pub fn generic(sample: &[Value]) -> Self {
        let recipes = if lines::are_lines(sample) {
            lines::recipes(sample)
        } else {
            generic::recipes(sample)
        };
        Self::numbered(false, recipes)
    }

    fn numbered(memories: bool, mut recipes: Vec<Recipe>) -> Self {
        debug_assert_eq!(recipes.len(), RECIPES);
        for (n, r) in (1..).zip(&mut recipes) {
            r.number = n;
        }
        RecipeSet { memories, recipes }
    }

    /// Recipe `number` (1-based).
    pub fn get(&self, number: u8) -> Option<&Recipe> {
        self.recipes.iter().find(|r| r.number == number)
    }

    /// The descriptor form of all ten.
    pub fn to_jq_recipes(&self, file: &str) -> Vec<JqRecipe> {
        self.recipes.iter().map(|r| r.to_jq_recipe(file)).collect()
    }

    /// The compact descriptor form of all ten (see
    /// [`Recipe::to_compact_recipe`]).
    pub fn to_compact_recipes(&self) -> Vec<JqRecipe> {
        self.recipes.iter().map(Recipe::to_compact_recipe).collect()
    }
}

/// Ten distinct recipes, filled slot by slot: a slot takes the first of its
/// candidates that no earlier slot runs, else the next unused recipe that
/// applies to any records ([`universal`]).
struct Slots {
    taken: Vec<Recipe>,
    spare: std::vec::IntoIter<Recipe>,
}

impl Slots {
    fn new() -> Self {
        Self {
            taken: Vec::with_capacity(RECIPES),
            spare: universal().into_iter(),
        }
    }

    fn fill(&mut self, candidates: impl IntoIterator<Item = Recipe>) {
        let fresh = |r: &Recipe, taken: &[Recipe]| !taken.iter().any(|t| t.same_as(r));
        let chosen = candidates
            .into_iter()
            .find(|r| fresh(r, &self.taken))
            .or_else(|| self.spare.by_ref().find(|r| fresh(r, &self.taken)))
            .expect("more universal recipes than slots");
        self.taken.push(chosen);
    }

    fn finish(self) -> Vec<Recipe> {
        self.taken
    }
}

/// Recipes that print something for any non-empty records, JSON values of
/// any type; more of them than a set has slots. The ones that print all the
/// records come last: they would show again what a browse recipe shows.
fn universal() -> Vec<Recipe> {
    vec![
        Recipe::new("Count records", "length").slurp(),
        Recipe::new("The first 10 records", ".[:10][]").slurp(),
        Recipe::new("The last 10 records", ".[-10:][]").slurp(),
        Recipe::new("Record number N, from 0", ".[$n | tonumber]")
            .slurp()
            .param("n", "0"),
        Recipe::new(
            "The 5 largest records",
            "sort_by(tojson | length) | .[-5:] | reverse | .[]",
        )
        .slurp(),
        Recipe::new(
            "Record sizes in characters: shortest and longest",
            "map(tojson | length) | {shortest: min, longest: max}",
        )
        .slurp(),
        Recipe::new("Count distinct records", "unique | length").slurp(),
        Recipe::new(
            "Count records that occur more than once",
            "group_by(.) | map(select(length > 1) | length) | add // 0",
        )
        .slurp(),
        Recipe::new(
            "Count records by JSON type",
            "group_by(type) | map({type: .[0] | type, count: length})",
        )
        .slurp(),
        Recipe::new("Records as JSON text, sorted", "map(tojson) | sort | .[]")
            .slurp()
            .raw(),
        Recipe::new("All records, one a line", "."),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_never_repeat_a_command() {
        let mut slots = Slots::new();
        slots.fill([Recipe::new("Browse", ".")]);
        // The same command under another name: the next universal one.
        slots.fill([Recipe::new("All", ".")]);
        for _ in 2..RECIPES {
            slots.fill([]);
        }
        let set = RecipeSet::numbered(false, slots.finish());
        assert_eq!(set.recipes[0].description, "Browse");
        assert_eq!(set.recipes[1].filter, "length");
        // The universal "." came last and was skipped: Browse runs it.
        assert!(set.recipes[2..].iter().all(|r| r.filter != "."));
        for (i, a) in set.recipes.iter().enumerate() {
            assert_eq!(a.number as usize, i + 1);
            assert!(!set.recipes[..i].iter().any(|b| b.same_as(a)), "{a:?}");
        }
        // Parameters count: the same filter with another value is another recipe.
        let a = Recipe::new("a", "$v").param("v", "1");
        assert!(!a.same_as(&Recipe::new("a", "$v").param("v", "2")));
    }

    #[test]
    fn error_suppression_covers_the_whole_filter() {
        let t = |f: &str| Recipe::new("d", f).tolerant().filter;
        assert_eq!(t("select(.a == $v)"), "select(.a == $v)?");
        assert_eq!(t("{a, b}"), "{a, b}?");
        assert_eq!(t(r#".["odd key"]"#), r#".["odd key"]?"#);
        assert_eq!(t("[.a, .b] | @tsv"), "([.a, .b] | @tsv)?");
        assert_eq!(
            t(r#"select(.array == "x | y") | .a"#),
            r#"(select(.array == "x | y") | .a)?"#
        );
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("abc"), "abc");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
