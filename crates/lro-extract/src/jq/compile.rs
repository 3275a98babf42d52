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
/// first, as jq 1.6 does.
const OUR_DEFS: &str = r#"
def @text: tostring;
def matches(re; flags): _lro_matchable | _lro_matches(re; flags);
def split_matches(re; flags): _lro_matchable | _lro_split_matches(re; flags);
def split_(re; flags): _lro_matchable | _lro_split_(re; flags);
"#;

/// Ours that need jaq-std's definitions, after them; and jq 1.6's own
/// definitions of `to_entries` (through `keys_unsorted`, so that a scalar
/// fails as jq's does: `boolean (true) has no keys`), `from_entries` (its key names: `key`, `Key`,
/// `name`, `Name`), `with_entries` and `flatten` (over an object's values
/// too), `ltrimstr`/`rtrimstr` (anything but a string as it is),
/// `indices`, `index` and `rindex` (`.[$i]` of anything but an array or a
/// string), `limit` (all of `f` for a negative count, the first for 0); `leaf_paths`,
/// `IN`, `tostream` and `fromstream`, which jaq lacks; `delpaths` (the
/// last path first, as jq 1.6 sorts them, nothing below a null, jq's
/// errors) and `del` through it; `group_by`
/// (and so `unique_by` and `unique`), `min`, `max`, `min_by` and `max_by`
/// checking their input first (these four shadow jaq's, which jaq's own
/// `transpose` keeps).
const OUR_LAST_DEFS: &str = r#"
def join($x): reduce .[] as $i (null; (if . == null then "" else . + $x end) + ($i | if . == null then "" elif (type == "boolean" or type == "number") then tojson else . end)) // "";
def @sh: [if isarray then .[] end | if isstring then "'\(escape_sh)'" elif . >= "" then _lro_unescapable else tostring end] | join(" ");
def to_entries: [keys_unsorted[] as $k | {key: $k, value: .[$k]}];
def from_entries: map({(.key // .Key // .name // .Name): (if has("value") then .value else .Value end)}) | add + {} // {};
def with_entries(f): to_entries | map(f) | from_entries;
def _flatten($x): [.[] | if type == "array" and $x != 0 then _flatten($x - 1)[] else . end];
def flatten($x): if $x < 0 then error("flatten depth must not be negative") else _flatten($x) end;
def flatten: _flatten(-1);
def leaf_paths: paths(scalars);
def group_by(f): if type == "array" then _lro_group_by(f) else map([f]) as $k | _lro_unsortable($k) end;
def unique_by(f): [group_by(f)[] | .[0]];
def unique: unique_by(.);
def min_by(f): if type == "array" then reduce min_by_or_empty(f) as $x (null; $x) else map([f]) as $k | _lro_uniterable($k) end;
def max_by(f): if type == "array" then reduce max_by_or_empty(f) as $x (null; $x) else map([f]) as $k | _lro_uniterable($k) end;
def min: if type == "array" then min_by(.) else _lro_uniterable(.) end;
def max: if type == "array" then max_by(.) else _lro_uniterable(.) end;
def ltrimstr($x): if type == "string" and ($x | type) == "string" and startswith($x) then .[$x | length:] else . end;
def rtrimstr($x): if type == "string" and ($x | type) == "string" and endswith($x) then .[:length - ($x | length)] else . end;
def indices($i): if type == "array" and ($i | type) == "array" then _lro_indices($i) elif type == "array" then _lro_indices([$i]) elif type == "string" and ($i | type) == "string" then _lro_indices($i) else .[$i] end;
def index($i): indices($i) | .[0];
def rindex($i): indices($i) | .[-1:][0];
def IN(s): any(s == .; .);
def IN(src; s): any(src == s; .);
def tostream: path(def r: (.[]?|r), .; r) as $p | getpath($p) | reduce path(.[]?) as $q ([$p, .]; [$p+$q]);
def delpaths($paths): ($paths | sort) as $ps | _lro_deletable($ps) | reduce ($ps | reverse)[] as $p (.; if getpath($p[:-1]) == null then . else getpath($p) |= empty end);
def del(f): delpaths([path(f)]);
def fromstream(f): {x: null, e: false} as $init | foreach f as $i ($init; if .e then $init else . end | if $i | length == 2 then setpath(["e"]; $i[0] | length == 0) | setpath(["x"] + $i[0]; $i[1]) else setpath(["e"]; $i[0] | length == 1) end; if .e then .x else empty end);
def limit($n; f): if $n < 0 then f else label $out | foreach f as $item (0; . + 1; $item, if . >= $n then break $out else empty end) end;
"#;

/// The definitions of jaq's libraries that ours replace, by name and
/// arity: `test` and `tostring` are natives of ours (`test` with a
/// compiled-regex cache, `tostring` printing numbers as jq 1.6 does), and
/// so are `tonumber` and `split/1` (failing in jq 1.6's words); `@text`,
/// `@sh`, `join` and the entries and `flatten` filters are ours.
const REPLACED: &[(&str, Option<usize>)] = &[
    ("test", None),
    ("tostring", None),
    ("tonumber", None),
    ("split", Some(1)),
    ("join", None),
    ("@text", None),
    ("@sh", None),
    ("to_entries", None),
    ("from_entries", None),
    ("with_entries", None),
    ("flatten", None),
    ("unique_by", None),
    ("unique", None),
    ("index", None),
    ("rindex", None),
    ("delpaths", None),
    ("del", None),
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
