//! Line windows and grep over plain-text offloads (and JSON ones).

mod support;

use lro_core::descriptor::Detail;
use lro_extract::{ExtractConfig, ExtractRequest, Extractor, Grep, LineWindow};
use serde_json::{Value, json};
use support::*;

fn log_text() -> String {
    let mut lines: Vec<String> = (1..=40)
        .map(|i| match i {
            7 => "ERROR connection refused to db-1".to_owned(),
            8 => "retrying in 5s".to_owned(),
            20 => "error: timeout talking to cache".to_owned(),
            _ => format!("info step {i} ok"),
        })
        .collect();
    // Line 30: one 1 MB line.
    lines[29] = "x".repeat(1_000_000);
    lines.join("\n")
}

fn setup() -> (tempfile::TempDir, String, Extractor) {
    let dir = tempfile::tempdir().unwrap();
    let path = offload_text(dir.path(), &log_text());
    let ex = Extractor::new(ExtractConfig::new(dir.path()));
    (dir, path.to_string_lossy().into_owned(), ex)
}

fn lines(
    path: &str,
    offset: Option<usize>,
    limit: Option<usize>,
    max_chars: Option<usize>,
) -> ExtractRequest {
    let mut window = LineWindow::default();
    window.offset = offset;
    window.limit = limit;
    window.max_chars = max_chars;
    ExtractRequest::new(path).lines(window)
}

#[test]
fn a_window_shows_original_text_with_numbers() {
    let (_dir, path, ex) = setup();
    let out = ex.run(&lines(&path, Some(5), Some(4), None)).unwrap();
    assert_eq!(out.mode, lro_core::metric::label::ExtractMode::Lines);
    assert_eq!(out.count, 4);
    assert_eq!(
        out.text,
        "6:info step 6 ok\n7:ERROR connection refused to db-1\n8:retrying in 5s\n9:info step 9 ok\n\
         # more lines follow: continue with lines.offset = 9 (40 records in total)\n"
    );
    assert_eq!(
        out.values[1],
        json!({"line": 7, "text": "ERROR connection refused to db-1"})
    );
    assert!(!out.truncated);
}

#[test]
fn a_one_megabyte_line_is_cut_with_a_notice() {
    let (_dir, path, ex) = setup();
    let out = ex.run(&lines(&path, Some(28), Some(3), Some(500))).unwrap();
    assert_eq!(out.count, 3);
    let long = out.values[1]["text"].as_str().unwrap();
    assert!(long.starts_with(&"x".repeat(500)));
    assert!(
        long.ends_with("… [999500 more chars]"),
        "{}",
        &long[long.len() - 40..]
    );
    assert!(out.text.len() < 2_000, "{}", out.text.len());
    assert!(
        out.notice
            .as_deref()
            .unwrap()
            .contains("line 30 was cut to 500 characters")
    );
    // The default cap applies too.
    let out = ex.run(&lines(&path, Some(29), Some(1), None)).unwrap();
    assert!(out.text.len() < 2_200);
}

#[test]
fn past_the_end_says_how_many_records_there_are() {
    let (_dir, path, ex) = setup();
    let out = ex.run(&lines(&path, Some(100), None, None)).unwrap();
    assert_eq!(out.count, 0);
    assert!(out.text.contains("the file has 40 records"), "{}", out.text);
}

#[test]
fn grep_shows_matches_with_context_like_grep_n() {
    let (_dir, path, ex) = setup();
    let req = ExtractRequest::new(&path).grep(Grep::new("error").context(1).ignore_case(true));
    let out = ex.run(&req).unwrap();
    assert_eq!(
        out.text,
        "6-info step 6 ok\n7:ERROR connection refused to db-1\n8-retrying in 5s\n--\n\
         19-info step 19 ok\n20:error: timeout talking to cache\n21-info step 21 ok\n"
    );
    let matches: Vec<u64> = out
        .values
        .iter()
        .filter(|v| v["match"] == true)
        .map(|v| v["line"].as_u64().unwrap())
        .collect();
    assert_eq!(matches, [7, 20]);

    // Case-sensitive by default.
    let req = ExtractRequest::new(&path).grep(Grep::new("error"));
    let out = ex.run(&req).unwrap();
    assert_eq!(out.text, "20:error: timeout talking to cache\n");
}

#[test]
fn grep_over_json_records_searches_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let file = offload_memories(dir.path(), "list", 30, 11, Detail::Light);
    let ex = Extractor::new(ExtractConfig::new(dir.path()));
    // The 11th to 13th records: lines 11 to 13 (records count from 1).
    let ids: Vec<&str> = file.records[10..13]
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let req = ExtractRequest::new(file.path.to_string_lossy())
        .grep(Grep::new(format!("\"id\":\"({})\"", ids.join("|"))));
    let out = ex.run(&req).unwrap();
    assert_eq!(out.count, 3);
    let first = out.text.lines().next().unwrap();
    assert!(first.starts_with("11:{"), "{first}");
    assert!(first.contains(&format!("\"id\":\"{}\"", ids[0])), "{first}");
}

/// `.` over a record larger than the output limit: what fits of it, or a
/// notice saying that not even one part fits and how to narrow the query;
/// never empty text without a word.
#[test]
fn a_record_larger_than_the_output_limit_gets_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    for (records, what) in [
        (
            vec![json!({"id": "a", "content": "word ".repeat(4000)})],
            "a long field",
        ),
        (
            vec![json!({"content": "word ".repeat(4000)})],
            "one long field",
        ),
        (vec![json!("word ".repeat(4000))], "a long string"),
    ] {
        let file = offload(dir.path(), "big", &records, Detail::Full);
        for keep in [false, true] {
            let ex = Extractor::new(
                ExtractConfig::new(dir.path())
                    .max_output_tokens(200)
                    .keep_values(keep),
            );
            let mut req = ExtractRequest::new(file.path.to_string_lossy());
            req.query = Some(".".into());
            let out = ex.run(&req).unwrap();
            assert!(
                out.notice.is_some() && out.text.contains("# "),
                "{what}, keep {keep}: {:?} / {:?}",
                out.text,
                out.notice
            );
        }
    }
}

/// A file that does not hold what was written (cut at a line end, lines
/// appended, the header alone) is refused as damaged by every form, from
/// its size against the header's, before anything is read from it.
#[test]
fn a_damaged_file_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<Value> = (0..50)
        .map(|i| json!({"id": i, "text": "word ".repeat(5)}))
        .collect();
    let file = offload(dir.path(), "list", &records, Detail::Full);
    let written = std::fs::read_to_string(&file.path).unwrap();
    let lines: Vec<&str> = written.lines().collect();
    let ex = Extractor::new(ExtractConfig::new(dir.path()));
    let run = |mut req: ExtractRequest| {
        req.file_path = file.path.to_string_lossy().into_owned();
        ex.run(&req)
    };
    let query = || {
        let mut r = ExtractRequest::new("");
        r.query = Some(".id".into());
        r
    };
    assert!(run(query()).is_ok());
    for body in [
        lines[..11].join("\n") + "\n",
        format!("{written}{}\n", lines[1]),
        format!("{}\n", lines[0]),
    ] {
        std::fs::write(&file.path, &body).unwrap();
        let window: ExtractRequest =
            serde_json::from_value(json!({"file_path": "", "lines": {"offset": 0, "limit": 2}}))
                .unwrap();
        for req in [query(), window] {
            let err = run(req).unwrap_err().to_string();
            assert!(
                err.contains("damaged") && err.contains("50 records"),
                "{err}"
            );
        }
    }
}
