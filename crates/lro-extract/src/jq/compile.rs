//! Compiling a filter with our natives and definitions, and readable
//! compile errors.

use jaq_core::load::{Arena, File, Loader, lex, parse, parse::Def};

use super::{natives::natives, rewrite, stop::JqData};
use crate::ExtractError;

/// A compiled filter.
pub(crate) type Program = jaq_core::Filter<JqData>;

/// Our definitions: `@text` and `@sh` as jaq-std defines them, through
/// `tostring`; `join` as jq 1.6 defines it (numbers and booleans through
/// `tojson`, null as nothing, anything else added as it is, so that an
/// array fails as jq's does); the regex filters checking their input
/// first, as jq 1.6 does; `to_entries` as jq 1.6 defines it (through
/// `keys_unsorted`, so that a scalar fails as jq's does: `boolean (true) has
/// no keys`), and `with_entries` again to call it.
const OUR_DEFS: &str = r#"
def @text: tostring;
def to_entries: [keys_unsorted[] as $k | {key: $k, value: .[$k]}];
def with_entries(f): to_entries | map(f) | from_entries;
def matches(re; flags): _lro_matchable | _lro_matches(re; flags);
def split_matches(re; flags): _lro_matchable | _lro_split_matches(re; flags);
def split_(re; flags): _lro_matchable | _lro_split_(re; flags);
"#;

/// Ours that need jaq-std's definitions, after them.
const OUR_LAST_DEFS: &str = r#"
def join($x): reduce .[] as $i (null; (if . == null then "" else . + $x end) + ($i | if . == null then "" elif (type == "boolean" or type == "number") then tojson else . end)) // "";
def @sh: [if isarray then .[] end | if . >= "" then "'\(escape_sh)'" else tostring end] | join(" ");
"#;

/// The definitions of jaq's libraries that ours replace, by name and
/// arity: `test` and `tostring` are natives of ours (`test` with a
/// compiled-regex cache, `tostring` printing numbers as jq 1.6 does), and
/// so are `tonumber` and `split/1` (failing in jq 1.6's words); `@text`,
/// `@sh`, `join`, `to_entries` and `with_entries` are in [`OUR_DEFS`] and
/// [`OUR_LAST_DEFS`].
const REPLACED: &[(&str, Option<usize>)] = &[
    ("test", None),
    ("tostring", None),
    ("tonumber", None),
    ("split", Some(1)),
    ("to_entries", None),
    ("with_entries", None),
    ("join", None),
    ("@text", None),
    ("@sh", None),
];

/// The name the user's filter is defined by, after our definitions.
const MAIN: &str = "_lro_main";

/// Compiles `code` with the given global variables (names without `$`).
///
/// The filter and every definition are rewritten (`rewrite.rs`) so that
/// jaq computes what jq 1.6 does; jaq's loader takes only text for the
/// main filter, so the rewritten filter is handed over as the last
/// definition, `_lro_main`, and the text compiled is its name.
pub(crate) fn compile_with_vars(code: &str, vars: &[&str]) -> Result<Program, ExtractError> {
    let replaced = |d: &Def<&str>| {
        REPLACED
            .iter()
            .any(|(name, arity)| *name == d.name && arity.is_none_or(|a| a == d.args.len()))
    };
    // A definition sees only those before it: ours that jaq-std's use
    // (`matches`) come before them.
    let ours = |text| parse(text, |p| p.defs()).unwrap_or_default();
    let defs: Vec<Def<&str>> = jaq_core::defs()
        .filter(|d| !replaced(d))
        .chain(ours(OUR_DEFS))
        .chain(
            jaq_std::defs()
                .chain(jaq_json::defs())
                .filter(|d| !replaced(d)),
        )
        .chain(ours(OUR_LAST_DEFS))
        .map(rewrite::def)
        .collect();
    let arena = Arena::default();
    // Text that does not parse as one filter (a syntax error, an import)
    // is loaded as it is, for the loader's own errors.
    let main = parse(code, |p| p.term());
    let (defs, code) = match main {
        Some(body) => {
            let main = Def {
                name: MAIN,
                args: Vec::new(),
                body: rewrite::term(body),
            };
            (defs.into_iter().chain([main]).collect(), MAIN)
        }
        None => (defs, code),
    };
    let modules = Loader::new(defs)
        .load(&arena, File { code, path: () })
        .map_err(|errs| ExtractError::Compile(load_errors(code, errs)))?;
    let dollar: Vec<String> = vars.iter().map(|v| format!("${v}")).collect();
    jaq_core::Compiler::default()
        .with_funs(natives())
        .with_global_vars(dollar.iter().map(String::as_str))
        .compile(modules)
        .map_err(|errs| {
            let msgs: Vec<String> = errs
                .into_iter()
                .flat_map(|(_, es)| es)
                .map(|(name, undefined)| match undefined {
                    jaq_core::compile::Undefined::Filter(arity) => {
                        format!("undefined filter {name}/{arity}")
                    }
                    other => format!("undefined {} {name}", other.as_str()),
                })
                .collect();
            ExtractError::Compile(msgs.join("; "))
        })
}

/// Compiles `code` with no variables.
#[cfg(test)]
pub(crate) fn compile(code: &str) -> Result<Program, ExtractError> {
    compile_with_vars(code, &[])
}

fn load_errors(code: &str, errs: jaq_core::load::Errors<&str, ()>) -> String {
    let at = |part: &str| {
        // `part` is a slice of `code` (the rest of the input at the error).
        let start = (part.as_ptr() as usize).saturating_sub(code.as_ptr() as usize);
        let snippet: String = part.chars().take(20).collect();
        if snippet.is_empty() {
            format!("at end of filter (offset {start})")
        } else {
            format!("at offset {start} near {snippet:?}")
        }
    };
    let mut msgs = Vec::new();
    for (_, err) in errs {
        match err {
            jaq_core::load::Error::Io(es) => {
                msgs.extend(
                    es.into_iter()
                        .map(|(p, e)| format!("cannot import {p}: {e}")),
                );
            }
            jaq_core::load::Error::Lex(es) => msgs.extend(es.into_iter().map(
                |(expect, part): (lex::Expect<&str>, &str)| {
                    format!("expected {} {}", expect.as_str(), at(part))
                },
            )),
            jaq_core::load::Error::Parse(es) => msgs.extend(es.into_iter().map(
                |(expect, part): (parse::Expect<&str>, &str)| {
                    format!("expected {} {}", expect.as_str(), at(part))
                },
            )),
        }
    }
    msgs.join("; ")
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_errors_are_readable() {
        let e = compile("map(").err().unwrap().to_string();
        assert!(e.contains("expected"), "{e}");
        let e = compile("nosuchfilter(1)").err().unwrap().to_string();
        assert!(e.contains("undefined filter nosuchfilter/1"), "{e}");
        let e = compile("$nope").err().unwrap().to_string();
        assert!(e.contains("undefined variable"), "{e}");
        for blocked in ["env", "$ENV", "input", "inputs", "import \"x\" as x; ."] {
            assert!(compile(blocked).is_err(), "{blocked} must not compile");
        }
    }
}
