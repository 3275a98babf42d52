//! Compiling a filter with our natives and definitions, and readable
//! compile errors.

use jaq_core::load::{Arena, File, Loader, lex, parse};

use super::{natives::natives, stop::JqData};
use crate::ExtractError;

/// A compiled filter.
pub(crate) type Program = jaq_core::Filter<JqData>;

/// `@text` and `@sh` as jaq-std defines them, through `tostring`.
const OUR_DEFS: &str = r#"
def @text: tostring;
def @sh: [if isarray then .[] end | if . >= "" then "'\(escape_sh)'" else tostring end] | join(" ");
"#;

/// Compiles `code` with the given global variables (names without `$`).
pub(crate) fn compile_with_vars(code: &str, vars: &[&str]) -> Result<Program, ExtractError> {
    // `test` and `tostring` are ours (natives: `test` with a compiled-regex
    // cache, `tostring` printing numbers as jq 1.6 does), and so are `@text`
    // and `@sh`: jaq's interpolate (`"\(.)"`), which spells numbers jaq's way.
    const OURS: &[&str] = &["test", "@text", "@sh"];
    let defs = jaq_core::defs()
        .filter(|d| d.name != "tostring")
        .chain(jaq_std::defs().filter(|d| !OURS.contains(&d.name)))
        .chain(jaq_json::defs())
        .chain(parse(OUR_DEFS, |p| p.defs()).unwrap_or_default());
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let modules = loader
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
