//! Recipes from the server under audit: their shape, the fields they read,
//! and running them.
//!
//! The commands come from the server being judged, so they are never given
//! to a shell. Only the spec's shape is accepted,
//! `tail -n +2 FILE | jq [flags] [--arg NAME VALUE]... 'FILTER'` on the
//! descriptor's own file, and jq runs directly on the lines after the
//! header: the real `jq` when it is installed, otherwise jaq in-process.

use std::{
    collections::BTreeSet,
    path::Path,
    process::Stdio,
    sync::{LazyLock, OnceLock},
    time::Duration,
};

use regex::Regex;
use tokio::io::AsyncWriteExt as _;

/// A recipe command in the spec's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recipe {
    /// jq's arguments: flags and `--arg NAME VALUE`, then the filter.
    pub(crate) jq_args: Vec<String>,
    /// The filter.
    pub(crate) filter: String,
    slurp: bool,
    vars: Vec<(String, String)>,
}

/// jq flags a recipe may use: they change how output is printed or whether
/// input is slurped, never where data comes from or goes.
const SHORT_FLAGS: &str = "rcsjSMa";
const LONG_FLAGS: [&str; 7] = [
    "--raw-output",
    "--compact-output",
    "--slurp",
    "--join-output",
    "--sort-keys",
    "--monochrome-output",
    "--ascii-output",
];

/// Characters a shell treats as plain outside quotes.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_./+:=,@%-".contains(c) || c.is_whitespace() && c != '\n'
}

/// Parses `command` and checks it reads `file`. The error says what is
/// wrong with the shape.
pub(crate) fn parse(command: &str, file: &str) -> Result<Recipe, String> {
    // A shell would expand, redirect or chain what is outside single quotes
    // (and `$`, backticks and backslashes inside double quotes): refuse it
    // all, so that what runs here is what a shell would run.
    let mut quote = None;
    let mut pipes = 0;
    for c in command.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (Some('\''), _) => {}
            (Some(_), '$' | '`' | '\\' | '!') => {
                return Err(format!("`{c}` inside double quotes is expanded by a shell"));
            }
            (Some(_), _) => {}
            (None, '|') => pipes += 1,
            (None, c) if !plain(c) => {
                return Err(format!("`{c}` outside quotes has a meaning to a shell"));
            }
            (None, _) => {}
        }
    }
    if quote.is_some() {
        return Err("unbalanced quotes".to_owned());
    }
    if pipes != 1 {
        return Err(format!("{pipes} pipes; the shape has exactly one"));
    }
    let words = shlex::split(command).ok_or("cannot split into words")?;
    let expect_prefix = ["tail", "-n", "+2"];
    if words.len() < 7 || words[..3] != expect_prefix || words[4] != "|" || words[5] != "jq" {
        return Err("not `tail -n +2 FILE | jq …`".to_owned());
    }
    if words[3] != file {
        return Err(format!(
            "reads `{}`, not the descriptor's file_path",
            words[3]
        ));
    }
    let jq_args = words[6..].to_vec();
    let (filter, options) = jq_args.split_last().ok_or("no jq filter")?;
    let mut slurp = false;
    let mut vars = Vec::new();
    let mut i = 0;
    while i < options.len() {
        let opt = options[i].as_str();
        if opt == "--arg" {
            let (Some(name), Some(value)) = (options.get(i + 1), options.get(i + 2)) else {
                return Err("`--arg` without NAME VALUE".to_owned());
            };
            vars.push((name.clone(), value.clone()));
            i += 3;
            continue;
        }
        let short = opt
            .strip_prefix('-')
            .filter(|f| !f.is_empty() && !f.starts_with('-'));
        match short {
            Some(letters) if letters.chars().all(|l| SHORT_FLAGS.contains(l)) => {
                slurp |= letters.contains('s');
            }
            None if LONG_FLAGS.contains(&opt) => slurp |= opt == "--slurp",
            _ => return Err(format!("jq option `{opt}` is not in the recipe shape")),
        }
        i += 1;
    }
    Ok(Recipe {
        filter: filter.clone(),
        jq_args,
        slurp,
        vars,
    })
}

/// Field paths a filter reads: `.a`, `.a.b` (also written `.a?.b?`) and
/// the keys of object shorthand `{id, title}`. Paths after `]`, `)` or a variable (`.[0].x`,
/// `$x.y`) belong to other values and are left out.
pub(crate) fn fields(filter: &str) -> BTreeSet<String> {
    static PATH: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(^|[^A-Za-z0-9_\]\)\$.?])((?:\.[A-Za-z_][A-Za-z0-9_]*\??)+)").expect("valid")
    });
    static SHORTHAND: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[{,]\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:[,}])").expect("valid"));
    // String literals are data, not paths.
    let code = strip_strings(filter);
    let mut out: BTreeSet<String> = PATH
        .captures_iter(&code)
        // `.a?.b?` (errors suppressed) reads the path `a.b`.
        .map(|c| c[2][1..].replace('?', ""))
        .collect();
    // Overlapping shorthand keys (`{a, b, c}`) need repeated passes.
    let mut rest = code.clone();
    while let Some(c) = SHORTHAND.captures(&rest) {
        out.insert(c[1].to_owned());
        let end = c.get(1).map_or(rest.len(), |m| m.end());
        rest = rest[end..].to_owned();
    }
    out
}

/// `code` with the contents of its string literals blanked.
fn strip_strings(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut in_str = false;
    let mut escaped = false;
    for c in code.chars() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
                out.push('"');
            }
            continue;
        }
        if c == '"' {
            in_str = true;
        }
        out.push(c);
    }
    out
}

/// How long one recipe may run.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs `recipe` on the lines of `file` after its header. `Ok` carries
/// which jq ran; `Err` what went wrong.
pub(crate) async fn run(recipe: &Recipe, file: &Path) -> Result<&'static str, String> {
    let bytes = tokio::fs::read(file)
        .await
        .map_err(|e| format!("cannot read the file: {e}"))?;
    let body = match bytes.iter().position(|&b| b == b'\n') {
        Some(i) => bytes[i + 1..].to_vec(),
        None => Vec::new(),
    };
    if jq_installed() {
        run_jq(recipe, body).await.map(|()| "jq")
    } else {
        let recipe = recipe.clone();
        tokio::task::spawn_blocking(move || run_jaq(&recipe, &body))
            .await
            .map_err(|e| format!("jaq panicked: {e}"))?
            .map(|()| "jaq (in-process)")
    }
}

/// Whether the real `jq` can be run.
fn jq_installed() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| {
        std::process::Command::new("jq")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

async fn run_jq(recipe: &Recipe, body: Vec<u8>) -> Result<(), String> {
    let mut child = tokio::process::Command::new("jq")
        .args(&recipe.jq_args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run jq: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("jq has no stdin")?;
    // jq may stop reading early (an error): a broken pipe is its answer.
    let feed = tokio::spawn(async move {
        let _ = stdin.write_all(&body).await;
    });
    let out = tokio::time::timeout(RUN_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| format!("jq ran over {}s", RUN_TIMEOUT.as_secs()))?
        .map_err(|e| format!("jq failed: {e}"))?;
    let _ = feed.await;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "jq exited with {}: {}",
            out.status,
            crate::result::excerpt(err.trim(), 200)
        ))
    }
}

fn run_jaq(recipe: &Recipe, body: &[u8]) -> Result<(), String> {
    use jaq_core::{
        Ctx, Vars, data,
        load::{Arena, File, Loader},
        unwrap_valr,
    };
    use jaq_json::Val;

    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let arena = Arena::default();
    let modules = Loader::new(defs)
        .load(
            &arena,
            File {
                code: recipe.filter.as_str(),
                path: (),
            },
        )
        .map_err(|_| "the filter does not parse".to_owned())?;
    let names: Vec<String> = recipe.vars.iter().map(|(n, _)| format!("${n}")).collect();
    let filter = jaq_core::Compiler::default()
        .with_funs(funs)
        .with_global_vars(names.iter().map(String::as_str))
        .compile(modules)
        .map_err(|_| "the filter does not compile".to_owned())?;
    let mut inputs = Vec::new();
    for line in body.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        inputs.push(jaq_json::read::parse_single(line).map_err(|e| format!("bad line: {e}"))?);
    }
    if recipe.slurp {
        inputs = vec![inputs.into_iter().collect::<Val>()];
    }
    for input in inputs {
        let vars = Vars::new(recipe.vars.iter().map(|(_, v)| Val::from(v.clone())));
        let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, vars);
        for out in filter.id.run((ctx, input)).map(unwrap_valr) {
            out.map_err(|e| format!("jq error: {e}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "/tmp/atlatl-list-01J.jsonl";

    #[test]
    fn accepts_the_spec_shape() {
        let r = parse(
            &format!("tail -n +2 {FILE} | jq -r '[.title, .namespace] | @tsv'"),
            FILE,
        )
        .unwrap();
        assert_eq!(r.jq_args, ["-r", "[.title, .namespace] | @tsv"]);
        let r = parse(
            &format!(
                "tail -n +2 '{FILE}' | jq -s --arg ns \"_semantic\" 'map(select(.namespace == $ns))'"
            ),
            FILE,
        )
        .unwrap();
        assert!(r.slurp);
        assert_eq!(r.vars, [("ns".to_owned(), "_semantic".to_owned())]);
    }

    #[test]
    fn refuses_anything_a_shell_would_do_more_with() {
        let cases = [
            ("tail -n +2 {f} | jq '.' ; rm -rf /", "outside quotes"),
            ("tail -n +2 {f} | jq \"$(id)\"", "inside double quotes"),
            ("tail -n +2 {f} | jq '.' > /tmp/x", "outside quotes"),
            ("cat {f} | jq '.'", "not `tail"),
            ("tail -n +2 /etc/passwd | jq '.'", "not the descriptor"),
            (
                "tail -n +2 {f} | jq -f prog.jq '.'",
                "not in the recipe shape",
            ),
            ("tail -n +2 {f} | jq '.' | head", "2 pipes"),
            ("tail -n +2 {f} | jq '.", "unbalanced"),
        ];
        for (cmd, why) in cases {
            let cmd = cmd.replace("{f}", FILE);
            let err = parse(&cmd, FILE).unwrap_err();
            assert!(err.contains(why), "{cmd}: {err}");
        }
    }

    #[test]
    fn finds_the_fields_a_filter_reads() {
        let f = |s: &str| fields(s).into_iter().collect::<Vec<_>>();
        assert_eq!(f("[.title, .namespace] | @tsv"), ["namespace", "title"]);
        assert_eq!(f("{id, title, namespace}"), ["id", "namespace", "title"]);
        assert_eq!(
            f("sort_by(-.provenance.confidence)"),
            ["provenance.confidence"]
        );
        assert_eq!(
            f("sort_by(.provenance?.confidence?) | reverse"),
            ["provenance.confidence"]
        );
        assert_eq!(f("select(.title? == $t)?"), ["title"]);
        assert_eq!(
            f("group_by(.namespace) | map({namespace: .[0].namespace, count: length})"),
            ["namespace"]
        );
        assert_eq!(f(r#"select(.title | test("a.score"; "i"))"#), ["title"]);
        assert_eq!(f("select(.tags | index($tag))"), ["tags"]);
        assert_eq!(f("sort_by(.score)"), ["score"]);
    }

    #[test]
    fn jaq_runs_slurped_and_per_line() {
        let body = b"{\"a\":1}\n{\"a\":2}\n";
        let ok = parse(&format!("tail -n +2 {FILE} | jq -s 'map(.a) | add'"), FILE).unwrap();
        assert_eq!(run_jaq(&ok, body), Ok(()));
        let args = parse(
            &format!("tail -n +2 {FILE} | jq --arg x 1 'select(.a == ($x | tonumber))'"),
            FILE,
        )
        .unwrap();
        assert_eq!(run_jaq(&args, body), Ok(()));
        let bad = parse(&format!("tail -n +2 {FILE} | jq '.a | test(\"x\")'"), FILE).unwrap();
        assert!(run_jaq(&bad, body).unwrap_err().contains("jq error"));
    }
}
