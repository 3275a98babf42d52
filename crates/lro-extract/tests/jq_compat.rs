//! Extraction against the real jq 1.6 on generated records (duplicate keys
//! at any depth, escapes, non-ASCII text, `-0`, big and small numbers,
//! elements of every type mixed in one array): every filter, per record and
//! slurped, every recipe, with and without the fast paths, prints what jq
//! prints (strings byte for byte, numbers as the doubles jq holds), the
//! same number of `jq: error` lines, and fails exactly where jq fails;
//! `where` prints what the `select` it means prints.

mod support;

use std::{
    io::Write,
    path::Path,
    sync::{Arc, Mutex},
};

use lro_extract::{Condition, ExtractConfig, ExtractRequest, Extractor, Op};
use proptest::prelude::*;
use serde_json::json;
use support::*;

/// Per-record filters: the fast paths' shapes, projections, errors on
/// some records (`length` of a boolean, `keys` of a string, `+` on a
/// string), numbers printed and computed.
const PER_RECORD: [&str; 20] = [
    ".",
    ".k",
    ".n",
    ".o",
    "{k, n}",
    "{n, o, tags}",
    "select(.k == \"x\")",
    "select(.k | startswith(\"x\"))",
    "select(.k | test(\"x\"))",
    "select(any(.tags[]?; . == \"x\"))",
    "[.k, .n] | @tsv",
    "[.k, .n] | @csv",
    "length",
    "keys",
    ".n + 1",
    "[.n, .k] | sort",
    "select(.n > 0) | .n",
    ".o.k",
    "[.[]?] | length",
    "tojson",
];

/// Slurping filters: the slurp fast paths' shapes, arithmetic over every
/// record, sorting and grouping by numbers.
const SLURPED: [&str; 12] = [
    "sort_by(.k)",
    "sort_by(.n)",
    "sort_by(-.n)",
    "group_by(.k) | map({k: .[0].k, count: length})",
    "group_by(.n) | map({n: .[0].n, count: length})",
    "map(.n) | add",
    "[.[] | .n? | numbers] | add",
    "unique_by(.n) | map(.n)",
    "[.[] | objects] | sort_by(.n) | map(.n)",
    "map(select(type == \"object\" and .k == \"x\"))",
    ".[] | length",
    "length",
];

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a run printed and how it ended.
#[derive(Debug)]
struct Answer {
    stdout: String,
    /// The `jq: error (at <stdin>:N): …` lines, byte for byte after `jq: error `.
    errors: Vec<String>,
    success: bool,
}

/// Each jq error line in `stderr`, from its `(at <stdin>:N)` on: the
/// place and jq 1.6's words.
fn error_places(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("jq: error (at "))
        .map(str::to_owned)
        .collect()
}

/// What `lro extract` prints with `ex`; with `tool`, also checks that the
/// tool's answer holds the same results and names what failed.
fn ours(ex: &Extractor, req: &ExtractRequest, tool: bool) -> Answer {
    let (out, err) = (Shared::default(), Shared::default());
    let done = ex
        .run_to_writers(req, Box::new(out.clone()), Box::new(err.clone()))
        .unwrap_or_else(|e| panic!("{req:?}: {e}"));
    if tool {
        let answer = ex.run(req).unwrap();
        assert_eq!(answer.results(), out.text(), "{req:?}: the tool's results");
        if done.failed > 0 {
            let notice = answer.notice.unwrap_or_default();
            assert!(notice.contains("the filter failed"), "{notice}");
        }
    }
    Answer {
        stdout: out.text(),
        errors: error_places(&err.text()),
        success: !done.last_failed && done.unread == 0,
    }
}

fn theirs(path: &Path, args: &[String]) -> Answer {
    let out = jq_output(path, args);
    Answer {
        stdout: String::from_utf8(out.stdout).unwrap(),
        errors: error_places(&String::from_utf8_lossy(&out.stderr)),
        success: out.status.success(),
    }
}

fn same(native: &Answer, jq: &Answer, what: &str) {
    assert_same_text(&native.stdout, &jq.stdout, what);
    assert_eq!(native.errors, jq.errors, "{what}: jq's error lines");
    assert_eq!(native.success, jq.success, "{what}: exit status");
}

fn engines(dir: &Path) -> [Extractor; 2] {
    let cfg = ExtractConfig::new(dir)
        .max_output_bytes(usize::MAX / 2)
        .max_output_values(usize::MAX / 2);
    [
        Extractor::new(cfg.clone()),
        Extractor::new(cfg.fast_paths(false)),
    ]
}

/// Compares every filter and recipe on `records`, written as one array,
/// with and without the fast paths.
fn compare(records: &[String]) {
    compare_with(records, &PER_RECORD, &SLURPED, true);
}

/// Compares `per_record` and `slurped` filters (and the `where` forms and,
/// with `recipes`, every recipe) on `records`, with and without the fast
/// paths.
fn compare_with(records: &[String], per_record: &[&str], slurped: &[&str], recipes: bool) {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("[{}]", records.join(","));
    let file = offload_result(dir.path(), &text);
    let path = file.path.to_string_lossy().into_owned();
    let mut cases: Vec<(ExtractRequest, Vec<String>, String)> = Vec::new();
    for &query in per_record {
        let req = ExtractRequest::new(&path).query(query);
        cases.push((req, vec!["-c".into(), query.into()], query.into()));
    }
    for &query in slurped {
        let req = ExtractRequest::new(&path).query(query).slurp(true);
        let args = vec!["-s".into(), "-c".into(), query.into()];
        cases.push((req, args, format!("-s {query}")));
    }
    // `where`, against the `select` it means.
    for (field, op, value, select) in [
        (
            "k",
            Op::Eq,
            json!("x"),
            r#"select(type == "object" and .k == "x")"#,
        ),
        (
            "n",
            Op::Gt,
            json!(0),
            r#"select(type == "object" and (.n | type) == "number" and .n > 0)"#,
        ),
    ] {
        let req = ExtractRequest::new(&path).r#where(vec![Condition::new(field, op, Some(value))]);
        let what = format!("where {field} {op:?} ({select})");
        cases.push((req, vec!["-c".into(), select.into()], what));
    }
    for n in (1..=10u8).filter(|_| recipes) {
        let recipe = file.recipes.get(n).unwrap();
        let args = recipe.jq_args(&Default::default());
        let what = format!("recipe {n} ({})", recipe.filter);
        cases.push((ExtractRequest::new(&path).recipe(n), args, what));
    }
    let [fast, plain] = engines(dir.path());
    for (req, args, what) in cases {
        let jq = theirs(&file.path, &args);
        let what = format!("{what} on {text}");
        same(&ours(&fast, &req, true), &jq, &what);
        same(
            &ours(&plain, &req, false),
            &jq,
            &format!("{what}, no fast paths"),
        );
    }
}

proptest! {
    // Each case runs 32 filters and 10 recipes three times, and jq 42
    // times: about two seconds of CPU in a debug build.
    #![proptest_config(ProptestConfig { cases: 3, ..ProptestConfig::default() })]

    #[test]
    fn generated_records_answer_as_jq_1_6_does(records in generated::records(16)) {
        compare(&records);
    }
}

#[test]
fn the_jq_here_is_1_6() {
    assert_jq_1_6();
}

/// A record of `n` fields whose last repeats field 7 (a repeat past the
/// few keys compared pairwise), with a key of 10,000 characters.
fn wide(n: usize) -> String {
    let mut fields: Vec<String> = (0..n).map(|i| format!("\"f{i}\":{i}")).collect();
    fields.push(format!("\"{}\":\"long\"", "k".repeat(10_000)));
    fields.push("\"f7\":\"again\"".into());
    format!("{{{}}}", fields.join(","))
}

#[test]
fn the_issue_cases_answer_as_jq_1_6_does() {
    assert_jq_1_6();
    compare(&[
        wide(300),
        wide(3),
        // A duplicate key, at the top and nested: one key, the last value,
        // at the first key's place.
        r#"{"k":[186.367,[true],true],"k":null}"#.into(),
        r#"{"k":1,"n":2,"k":"Red","o":{"a":1,"a":{"b":2,"b":3}}}"#.into(),
        // An error in one record: the others still answer.
        "true".into(),
        r#"{"k":"x","n":100000000000000000001}"#.into(),
        r#"{"k":"x","n":-0,"tags":["x"]}"#.into(),
        "[1,2]".into(),
    ]);
}

/// Filters that fail where jq 1.6 fails, with its words, on records of
/// every kind.
const FAILING: [&str; 79] = [
    ".k % 2",
    ".[0]",
    "0 as $i | .[$i]",
    "1 as $i | .[$i]?",
    "[path(0 as $i | .[$i])]",
    "\"k\" as $k | .[$k]",
    "0 as $i | [.[$i]?, .[1:]?]",
    ".[-1]?",
    "[.[0]?, .[1:]?]",
    "[path(.[0])]",
    "tonumber",
    ".k | tonumber",
    "fromjson",
    ".k | fromjson",
    "ascii_downcase",
    "explode",
    // jq 1.6 aborts on an array holding anything but numbers.
    "if type == \"array\" and any(.[]; type != \"number\") then 0 else implode end",
    "split(\",\")",
    "join(\",\")",
    "has(\"k\")",
    "has(0)",
    ".[1:2]",
    ".k | test(\"(\")",
    ".k | match(\"[\")",
    ".k | sub(\")\"; \"x\")",
    "test(\"a{2,1}\")",
    "floor",
    "sqrt",
    "-.",
    ".n % 0.5",
    ".n % 2",
    "[.[]?] | join(\"-\")",
    // A computed index, as `.[0]`.
    ".[.n]",
    "[.[1 + 0]?]",
    "[path(.[1 + 0])]",
    ".[1 + 0] |= 3",
    // What an update changes, made where it is missing.
    ".a.b = 1",
    ".[2] = 1",
    ".k[1] = 0",
    ".[-9] |= 1",
    "del(.k)",
    // jq 1.6's definitions, and its words for what does not sort.
    "flatten",
    "to_entries",
    "from_entries",
    "with_entries(.value |= type)",
    "[leaf_paths]",
    "sort",
    "sort_by(.)",
    "group_by(.)",
    "unique",
    "ltrimstr(\"a\")",
    "rtrimstr(1)",
    "contains({})",
    "inside([])",
    "index(\"a\")",
    "indices(1)",
    "[tostream]",
    "IN(1, 2)",
    "(.[0]?) = 9",
    ".a? = 1",
    "[1, error(null), 2]",
    "try error catch .",
    "[limit(0; .[]?)]",
    "[limit(1; .[]?)]",
    "setpath([\"x\"]; 1)",
    "getpath([\"a\", \"b\"]) = 5",
    "getpath([\"k\", 0])",
    "fromstream(tostream)",
    "del(.[0], .[1])",
    "del(.a, .c)",
    "min",
    "max",
    "min_by(.k)",
    "max_by(.n)",
    "utf8bytelength",
    "delpaths([[\"k\"], [0]])",
    "delpaths([[\"a\", \"b\"], [1, 0]])",
    "@sh",
    "@sh \"x \\(.)\"",
];

/// Numbers as jq 1.6 computes and spells them: interpolated, and past
/// 2^53, where every step rounds to a double.
const NUMBERS: [&str; 10] = [
    "\"\\(.n)\"",
    "\"n=\\(.n) k=\\(.k)\"",
    "{\"\\(.n)\": 1}",
    ".n + 1 - .n",
    ".n * 3 - .n * 2 - .n",
    ".n / 3 * 3 == .n",
    "[.n + 1, .n] | .[0] > .[1]",
    "9007199254740993 - 9007199254740992",
    ".n - 1 | . % 7",
    "-.n",
];

#[test]
fn errors_and_numbers_answer_as_jq_1_6_does() {
    assert_jq_1_6();
    let records: Vec<String> = [
        r#"{"k":"abc","n":9007199254740993}"#,
        r#"{"k":"12","n":0.00001}"#,
        r#"{"k":"[1]","n":1.0000000000000002}"#,
        r#"{"k":"1 2","n":-0}"#,
        r#"{"k":" 7","n":1e20}"#,
        r#"[1,[2],{"a":null},true]"#,
        r#""a,b""#,
        "12345678901234567",
        "true",
        "null",
        "[65,66.7]",
        r#"{"a":1,"k":"x","b":[2],"c":3}"#,
    ]
    .map(String::from)
    .into();
    let mut per_record = FAILING.to_vec();
    per_record.extend(NUMBERS);
    let slurped = [
        "map(.n?) | add",
        "[.[] | .n? | numbers] | add - 9007199254740992",
        "sort_by(.n?) | map(.n?)",
        "unique_by(.n?) | length",
        "[.[] | .n? | numbers | . * 1000000007] | sort",
    ];
    compare_with(&records, &per_record, &slurped, false);
}

/// Line records for the sample of 32, then records of other shapes: the
/// line recipes (guarded as the others) print what jq prints, fast or not;
/// paths and other text.
#[test]
fn line_records_that_change_shape_answer_as_jq_1_6_does() {
    assert_jq_1_6();
    let others = [
        r#""a string""#,
        r#"{"line":"x","text":5}"#,
        r#"{"line":39,"text":{"a":1}}"#,
        r#"{"text":"no line"}"#,
        r#"[1,"two"]"#,
        "null",
        r#"{"line":42,"text":true}"#,
        r#"{"line":43,"text":""}"#,
        r#"{"line":44,"text":"/no/extension"}"#,
    ];
    for text in ["step {} took {i} ms\\r", "/src/dir{}/file{i}.rs"] {
        let mut records: Vec<String> = (1..=36)
            .map(|i| {
                let text = text
                    .replace("{}", &(i % 3).to_string())
                    .replace("{i}", &i.to_string());
                format!(r#"{{"line":{i},"text":"{text}"}}"#)
            })
            .collect();
        records.extend(others.map(String::from));
        let dir = tempfile::tempdir().unwrap();
        let file = offload_result(dir.path(), &format!("[{}]", records.join(",")));
        assert_eq!(
            file.recipes.get(1).unwrap().filter,
            "([.line, .text] | @tsv)?"
        );
        let folders = file.recipes.get(6).unwrap().filter.contains("folder");
        assert_eq!(folders, text.starts_with('/'));
        compare_with(&records, &[], &[], true);
    }
}

/// The fuzzer's find: a `-0` inside a record sorted by a missing key (the
/// slurp fast path against jaq).
#[test]
fn a_negative_zero_sorts_as_jq_1_6_does() {
    assert_jq_1_6();
    let slurped = [
        "sort_by(.id)",
        "sort_by(-.id)",
        "sort_by(.id) | .[0][\"\"][0]",
    ];
    compare_with(&[r#"{"":[-0]}"#.into()], &["."], &slurped, false);
    let records = [r#"{"":[-0]}"#, r#"{"id":-0,"":[-0.0,0]}"#].map(String::from);
    compare_with(&records, &["."], &slurped, false);
    // As the fuzz target runs it: the default limits, fast against plain.
    let dir = tempfile::tempdir().unwrap();
    let file = offload_result(dir.path(), r#"[{"":[-0]}]"#);
    let config = ExtractConfig::new(dir.path());
    let req = ExtractRequest::new(file.path.to_string_lossy())
        .query("sort_by(.id)")
        .slurp(true);
    let fast = Extractor::new(config.clone()).run(&req).unwrap();
    let plain = Extractor::new(config.fast_paths(false)).run(&req).unwrap();
    assert_eq!(fast.results(), "[{\"\":[-0]}]\n");
    assert_eq!(plain.results(), fast.results());
}

#[test]
fn a_deep_record_is_left_out_and_named() {
    assert_jq_1_6();
    let dir = tempfile::tempdir().unwrap();
    let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    let fits = format!("{}1{}", "[".repeat(256), "]".repeat(256));
    // Written as the offload file's third line (serde, which splits the
    // result, reads 128 levels).
    let text = format!(r#"[{{"k":"a","n":1}},{{"deep":0}},{fits},{{"k":"b","n":2}}]"#);
    let file = offload_result(dir.path(), &text);
    let written = std::fs::read_to_string(&file.path).unwrap();
    assert_eq!(written.lines().nth(2), Some(r#"{"deep":0}"#));
    // The header's size follows the edit, or the file reads as damaged.
    let edited = written.replace(r#"{"deep":0}"#, &deep);
    let (header, records) = edited.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(header).unwrap();
    header["bytes"] = records.len().into();
    std::fs::write(&file.path, format!("{header}\n{records}")).unwrap();
    let path = file.path.to_string_lossy().into_owned();
    // jq refuses the file at the deep record.
    let jq = theirs(&file.path, &["-c".into(), ".k?".into()]);
    assert!(!jq.success);
    for ex in engines(dir.path()) {
        for (req, want) in [
            (ExtractRequest::new(&path).query(".k?"), "\"a\"\n\"b\"\n"),
            (
                ExtractRequest::new(&path)
                    .query("sort_by(.n?) | length")
                    .slurp(true),
                "3\n",
            ),
            (
                ExtractRequest::new(&path)
                    .query("group_by(.k?) | map({k: .[0].k?, count: length})")
                    .slurp(true),
                "[{\"k\":\"a\",\"count\":1},{\"k\":\"b\",\"count\":1}]\n",
            ),
        ] {
            let out = ex.run(&req).unwrap();
            assert_eq!(out.results(), want, "{req:?}");
            assert_eq!(out.unread, 1);
            let notice = out.notice.unwrap();
            assert!(
                notice.contains(
                    "1 record (line 3) is nested deeper than jq 1.6 reads (256 levels) and left out"
                ),
                "{notice}"
            );
        }
        // `where` answers the other records too.
        let req = ExtractRequest::new(&path).count(true);
        let out = ex.run(&req).unwrap();
        assert_eq!(out.results(), "{\"count\":3}\n");
        assert_eq!(out.unread, 1);
        // And so does every recipe.
        for n in 1..=10u8 {
            let out = ex.run(&ExtractRequest::new(&path).recipe(n)).unwrap();
            assert_eq!(out.unread, 1, "recipe {n}");
        }
    }
}

/// The outside checker's findings (issue 33): a lone low surrogate escape
/// (U+FFFD to jq, in a value and in a key), numbers past the doubles
/// (`1E400`, which jq 1.6 holds as infinity when it reads the record, and
/// prints as the largest double), `-0` through `floor`, and `to_entries`
/// on a scalar, per record, slurped, in `where` and in every recipe.
#[test]
fn the_checker_findings_answer_as_jq_1_6_does() {
    assert_jq_1_6();
    let records: Vec<String> = [
        r#"{"s":"x\udc00y","n":1}"#,
        r#"{"id":2,"n":2,"k":"x"}"#,
        r#"{"\udc00":1,"\udfff":2,"s":"\udc00\udc00","k":"\udc00"}"#,
        r#"{"id":1,"n":1E400}"#,
        r#"{"id":2,"n":1.7976931348623157e308}"#,
        r#"{"id":3,"n":-0}"#,
        r#"{"id":4,"n":-0.4}"#,
        "true",
        r#""s""#,
        "null",
        "5",
    ]
    .map(String::from)
    .into();
    let per_record = [
        ".",
        ".s",
        ".k",
        "length",
        "keys",
        "tojson",
        "tostring",
        ".. | numbers",
        "to_entries",
        "with_entries(.value |= tostring)",
        ".n == 1.7976931348623157e308",
        ".n / 3",
        ".n | sqrt",
        ".n | log10",
        ".n | floor",
        ".n | ceil",
        ".n | round",
        "select(.k == \"\\ufffd\")",
    ];
    let slurped = [
        "length",
        "[.[] | objects] | max_by(.n) | .id",
        "[.[] | objects] | sort_by(.n) | map(.id)",
        "[.[] | objects] | sort_by(.s)",
        "[.[] | objects] | group_by(.s) | map({s: .[0].s, count: length})",
        "map(.s?)",
    ];
    compare_with(&records, &per_record, &slurped, true);
}

#[test]
fn a_record_with_a_lone_high_surrogate_is_left_out_and_named() {
    assert_jq_1_6();
    let dir = tempfile::tempdir().unwrap();
    let text =
        r#"[{"k":"a","n":1},{"s":"\ud800","n":2,"k":"c"},{"k":"b","n":3,"s":"\ud83d\ude00"}]"#;
    let file = offload_result(dir.path(), text);
    let path = file.path.to_string_lossy().into_owned();
    // jq refuses the file at that record, as at a deep one.
    let jq = theirs(&file.path, &["-c".into(), ".n".into()]);
    assert!(!jq.success);
    let named = "1 record (line 3) is not JSON that jq 1.6 reads \
                 (Invalid \\uXXXX\\uXXXX surrogate pair escape) and left out";
    for ex in engines(dir.path()) {
        for (req, want) in [
            (ExtractRequest::new(&path).query(".n"), "1\n3\n"),
            (ExtractRequest::new(&path).query(".k"), "\"a\"\n\"b\"\n"),
            (
                ExtractRequest::new(&path).query("."),
                "{\"k\":\"a\",\"n\":1}\n{\"k\":\"b\",\"n\":3,\"s\":\"😀\"}\n",
            ),
            (
                ExtractRequest::new(&path)
                    .query("sort_by(.k) | map(.n)")
                    .slurp(true),
                "[1,3]\n",
            ),
            (
                ExtractRequest::new(&path)
                    .query("group_by(.k) | map({k: .[0].k, count: length})")
                    .slurp(true),
                "[{\"k\":\"a\",\"count\":1},{\"k\":\"b\",\"count\":1}]\n",
            ),
            (ExtractRequest::new(&path).count(true), "{\"count\":2}\n"),
        ] {
            let out = ex.run(&req).unwrap();
            assert_eq!(out.results(), want, "{req:?}");
            assert_eq!(out.unread, 1, "{req:?}");
            let notice = out.notice.unwrap_or_default();
            assert!(notice.contains(named), "{notice}");
        }
        for n in 1..=10u8 {
            let out = ex.run(&ExtractRequest::new(&path).recipe(n)).unwrap();
            assert_eq!(out.unread, 1, "recipe {n}");
        }
        // `lro extract` says one line of it, where jq would stop.
        let (out, err) = (Shared::default(), Shared::default());
        let req = ExtractRequest::new(&path).query(".n");
        let done = ex
            .run_to_writers(&req, Box::new(out.clone()), Box::new(err.clone()))
            .unwrap();
        assert_eq!(out.text(), "1\n3\n");
        assert_eq!(
            err.text(),
            "# record on line 3 is not JSON that jq 1.6 reads \
             (Invalid \\uXXXX\\uXXXX surrogate pair escape); skipped\n"
        );
        assert_eq!(done.notice, None);
        assert_eq!((done.unread, done.failed), (1, 0));
    }
}
