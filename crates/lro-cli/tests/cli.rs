//! The built `lro` binary, end to end.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use lro_core::{
    descriptor::Detail,
    offload::{OffloadInput, Offloader},
    records::RecordSet,
};
use lro_store::DirSink;
use serde_json::{Value, json};

fn lro(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(args)
        .output()
        .expect("run lro")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn memories() -> Vec<Value> {
    (0..40)
        .map(|i| {
            let (namespace, memory_type, tag) = [
                ("_semantic/knowledge", "semantic", "perf"),
                ("_episodic/incidents", "episodic", "ops"),
            ][i % 2];
            json!({
                "id": format!("m{i:03}"),
                "title": format!("Note {i} about {}", if i % 4 == 0 { "caching" } else { "deploys" }),
                "namespace": namespace,
                "memory_type": memory_type,
                "tags": [tag],
                "created": format!("2025-01-{:02}T00:00:00Z", 1 + i % 28),
                "priority": 1 + i % 5,
            })
        })
        .collect()
}

fn offload(dir: &Path, text: &str, detail: Option<Detail>) -> PathBuf {
    let records = RecordSet::from_text(text);
    let input = OffloadInput::new("recall", "recall", &records, text.len() / 4).detail(detail);
    Offloader::new(DirSink::new(dir))
        .offload(input, &|| false)
        .unwrap()
        .result
        .path
}

fn memory_file(dir: &Path) -> String {
    let text = serde_json::to_string(&memories()).unwrap();
    offload(dir, &text, Some(Detail::Light))
        .to_string_lossy()
        .into_owned()
}

#[test]
fn extract_recipe_prints_jq_style_output() {
    let dir = tempfile::tempdir().unwrap();
    let file = memory_file(dir.path());
    let o = lro(&["extract", &file, "--recipe", "6"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        v,
        json!([{"namespace": "_episodic/incidents", "count": 20}, {"namespace": "_semantic/knowledge", "count": 20}])
    );
    // Raw recipe 1: tab-separated lines.
    let o = lro(&["extract", &file, "--recipe", "1"]);
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 40);
    assert_eq!(
        out.lines().next().unwrap(),
        "Note 0 about caching\t_semantic/knowledge"
    );
    // Recipe params.
    let o = lro(&[
        "extract",
        &file,
        "--recipe",
        "3",
        "--param",
        "keyword=CACHING",
    ]);
    assert_eq!(stdout(&o).lines().count(), 10);
}

#[test]
fn extract_structured_and_query() {
    let dir = tempfile::tempdir().unwrap();
    let file = memory_file(dir.path());
    let truth = memories()
        .iter()
        .filter(|m| m["namespace"] == "_episodic/incidents" && m["priority"].as_u64().unwrap() >= 3)
        .count();
    let o = lro(&[
        "extract",
        &file,
        "--where",
        "namespace:prefix:_episodic",
        "--where",
        "priority:gte:3",
        "--count",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), format!("{{\"count\":{truth}}}"));

    let o = lro(&[
        "extract",
        &file,
        "-w",
        "id:in:m001,m002,zzz",
        "--fields",
        "id,priority",
        "--sort-by",
        "-priority",
    ]);
    assert_eq!(
        stdout(&o),
        "{\"id\":\"m002\",\"priority\":3}\n{\"id\":\"m001\",\"priority\":2}\n"
    );

    let o = lro(&[
        "extract",
        &file,
        "--query",
        "select(.priority == ($p|tonumber)) | .id",
        "--param",
        "p=5",
    ]);
    assert_eq!(stdout(&o).lines().count(), 8);
    let o = lro(&[
        "extract",
        &file,
        "--query",
        "map(.priority) | add",
        "--slurp",
    ]);
    assert_eq!(stdout(&o).trim(), "120");
    let o = lro(&["extract", &file, "--group-by", "tags"]);
    assert_eq!(
        stdout(&o),
        "{\"key\":\"ops\",\"count\":20}\n{\"key\":\"perf\",\"count\":20}\n"
    );
}

/// The real jq 1.6 over the records of `file` (its lines after the header),
/// as the recipe commands pipe them in.
fn jq(file: &str, args: &[&str]) -> Output {
    use std::io::Write;

    let version = Command::new("jq")
        .arg("--version")
        .output()
        .expect("jq 1.6");
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), "jq-1.6");
    let text = std::fs::read_to_string(file).unwrap();
    let records = text.split_once('\n').map_or("", |(_, rest)| rest);
    let mut child = Command::new("jq")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("jq");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(records.as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn extract_answers_and_exits_as_jq_1_6_when_records_fail() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"[{"k":1,"a":[1],"k":"Red"},true,{"k":[2],"k":null},"s",false]"#;
    let file = offload(dir.path(), text, None)
        .to_string_lossy()
        .into_owned();
    // `length` and `{k}` fail on the booleans; the last record is one.
    // Standard error is jq's, line for line, and nothing more.
    for (filter, status) in [
        ("length", 5),
        (".", 0),
        ("{k}", 5),
        (".k?", 0),
        ("select(length > 1)", 5),
        ("to_entries", 5),
        ("with_entries(.value |= 1)", 5),
        ("select(type == \"object\") | to_entries", 0),
    ] {
        let ours = lro(&["extract", &file, "-q", filter]);
        let theirs = jq(&file, &["-c", filter]);
        assert_eq!(stdout(&ours), stdout(&theirs), "{filter}");
        assert_eq!(ours.status.code(), theirs.status.code(), "{filter}");
        assert_eq!(ours.status.code(), Some(status), "{filter}");
        assert_eq!(stderr(&ours), stderr(&theirs), "{filter}");
    }
}

#[test]
fn extract_says_one_line_for_a_record_jq_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"[{"k":"a"},{"deep":0},{"k":"b"}]"#;
    let path = offload(dir.path(), text, None);
    // Made deeper than jq reads once written (serde, which splits the
    // result, reads 128 levels); the header's size follows the edit.
    let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    let written = std::fs::read_to_string(&path).unwrap();
    let edited = written.replace(r#"{"deep":0}"#, &deep);
    let (header, records) = edited.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(header).unwrap();
    header["bytes"] = records.len().into();
    std::fs::write(&path, format!("{header}\n{records}")).unwrap();
    let file = path.to_string_lossy().into_owned();
    let o = lro(&["extract", &file, "-q", ".k"]);
    assert_eq!(stdout(&o), "\"a\"\n\"b\"\n");
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(
        stderr(&o),
        "# record on line 3 is nested deeper than jq 1.6 reads (256 levels); skipped\n"
    );
}

#[test]
fn extract_text_modes() {
    let dir = tempfile::tempdir().unwrap();
    let text = (1..=30)
        .map(|i| {
            if i == 12 {
                "ERROR boom".to_owned()
            } else {
                format!("line {i}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let file = offload(dir.path(), &text, None)
        .to_string_lossy()
        .into_owned();
    let o = lro(&["extract", &file, "--lines", "0:2"]);
    assert_eq!(stdout(&o), "1:line 1\n2:line 2\n");
    assert!(stderr(&o).contains("more lines follow"), "{}", stderr(&o));
    let o = lro(&["extract", &file, "--grep", "error", "-i", "-C", "1"]);
    assert_eq!(stdout(&o), "11-line 11\n12:ERROR boom\n13-line 13\n");
}

#[test]
fn extract_errors_exit_with_the_table_status_and_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = memory_file(dir.path());
    let other = tempfile::tempdir().unwrap();
    // The file is outside the given root.
    let o = lro(&[
        "extract",
        &file,
        "--root",
        &other.path().to_string_lossy(),
        "--count",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a refused file is a run-time failure"
    );
    assert!(
        stderr(&o).contains("outside the offload directory"),
        "{}",
        stderr(&o)
    );
    // Not an offload file.
    let o = lro(&["extract", "/etc/passwd", "--count"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not an offload file"), "{}", stderr(&o));
    // Two modes.
    let o = lro(&["extract", &file, "--recipe", "1", "--count"]);
    assert_eq!(o.status.code(), Some(2), "two modes are a usage error");
    assert!(stderr(&o).contains("give exactly one of"), "{}", stderr(&o));
    // A bad filter.
    let o = lro(&["extract", &file, "--query", "map("]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a filter that does not compile is a usage error"
    );
    assert!(stderr(&o).contains("does not compile"), "{}", stderr(&o));
    // A runaway, with a short timeout.
    let o = lro(&[
        "extract",
        &file,
        "--query",
        "last(range(infinite))",
        "--timeout-ms",
        "200",
    ]);
    assert_eq!(o.status.code(), Some(1), "a timeout is a run-time failure");
    assert!(stderr(&o).contains("timeout"), "{}", stderr(&o));
}

#[test]
fn inspect_checks_the_count_and_lists_recipes() {
    let dir = tempfile::tempdir().unwrap();
    let file = memory_file(dir.path());
    let o = lro(&["inspect", &file]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("records: 40 (header says 40: ok)"), "{text}");
    assert!(text.contains("namespace: string"), "{text}");
    assert!(
        text.contains("lro extract") && text.contains("--recipe 10"),
        "{text}"
    );
    let o = lro(&["inspect", &file, "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["records"], 40);
    assert_eq!(v["count_matches"], true);
    assert_eq!(v["recipes"].as_array().unwrap().len(), 10);
    assert_eq!(v["header"]["detail"], "light");
    let o = lro(&["inspect", "/etc/passwd"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn gc_deletes_expired_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = memory_file(dir.path());
    let d = dir.path().to_string_lossy().into_owned();
    // A fresh file survives the default TTL.
    let o = lro(&["gc", &d, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["scanned"].as_u64(), v["deleted"].as_u64()),
        (Some(1), Some(0))
    );
    assert!(Path::new(&file).exists());
    // TTL 0: it is expired.
    let o = lro(&["gc", &d, "--ttl-seconds", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("deleted 1"), "{}", stdout(&o));
    assert!(!Path::new(&file).exists());
    let o = lro(&["gc", "/definitely/not/here"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn usage_errors_exit_2_and_help_documents_the_table() {
    let o = lro(&["extract", "f.jsonl", "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2));
    let o = lro(&["extract", "f.jsonl", "--lines", "5:1", "-C", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("only apply to --grep"),
        "{}",
        stderr(&o)
    );
    // The exporter could not report the port it picked: refused up front.
    let o = lro(&["proxy", "--metrics", "127.0.0.1:0", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("name a port"), "{}", stderr(&o));
    let o = lro(&["--help"]);
    assert!(o.status.success());
    let help = stdout(&o);
    for row in ["0  success", "1  failure at run time", "2  usage error"] {
        assert!(help.contains(row), "{help}");
    }
}

#[test]
fn metrics_json_is_the_checked_in_catalogue() {
    let o = lro(&["metrics", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let checked_in = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/metrics.json"),
    )
    .unwrap();
    assert_eq!(stdout(&o), checked_in);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["metrics"].as_array().unwrap().len(),
        lro_core::metric::ALL.len()
    );
    let o = lro(&["metrics"]);
    assert!(
        stdout(&o).contains(
            "lro_tool_results_total (counter) {tool, outcome=inline|offloaded|truncated|bypassed}"
        ),
        "{}",
        stdout(&o)
    );
}

fn lro_home(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(args)
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .current_dir(home)
        .output()
        .unwrap()
}

#[test]
fn install_says_what_it_did_and_exits_1_when_it_could_not() {
    let home = tempfile::tempdir().unwrap();
    let none = lro_home(home.path(), &["install", "windsurf"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(
        stderr(&none).contains("no configuration file of windsurf found (looked at ~/.codeium/windsurf/mcp_config.json)"),
        "{}",
        stderr(&none)
    );
    let unknown = lro_home(home.path(), &["install", "zed"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("unknown client \"zed\""));

    let file = home.path().join(".gemini/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"b\": {\"url\": \"https://h/sse\", \"type\": \"sse\"}}}").unwrap();
    let done = lro_home(
        home.path(),
        &["install", "gemini", "--lro", "npx -y lro-mcp"],
    );
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    let out = stdout(&done);
    assert!(
        out.starts_with(
            "~/.gemini/settings.json (gemini, user scope)\n  wrapped: a\n  left b: sse transport"
        ),
        "{out}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains(r#""command": "npx", "args": ["-y", "lro-mcp", "proxy", "--", "x"]"#),
        "{text}"
    );
    let listed = lro_home(
        home.path(),
        &["install", "--list", "gemini", "--lro", "npx -y lro-mcp"],
    );
    assert_eq!(
        stdout(&listed),
        "~/.gemini/settings.json (gemini, user scope)\n  a: wrapped\n  b: left: sse transport (lro proxy --url speaks streamable HTTP)\n"
    );

    std::fs::write(&file, "{\"mcpServers\": ").unwrap();
    let broken = lro_home(home.path(), &["install", "gemini"]);
    assert_eq!(broken.status.code(), Some(1));
    assert!(
        stdout(&broken).contains("  error: does not parse: "),
        "{}",
        stdout(&broken)
    );
}

/// `lro extract --recipe N` prints what recipe N's command prints with jq
/// 1.6, also on records of mixed types, where a string among objects or a
/// field of another type must stop neither.
#[test]
fn every_recipe_prints_what_its_command_prints_on_mixed_records() {
    let version = Command::new("/usr/bin/jq").arg("--version").output();
    let version = version.expect("jq 1.6 at /usr/bin/jq");
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), "jq-1.6");
    let mut mixed_memories = memories();
    mixed_memories[3]["memory_type"] = json!(7);
    mixed_memories[5]["tags"] = json!("ops");
    mixed_memories.push(json!("a string after the sample"));
    mixed_memories.push(json!([1, {"id": "x"}]));
    let objects: Vec<Value> = (0..40)
        .map(|i| match i % 9 {
            4 => json!("a string"),
            7 => json!([i, {"id": i}]),
            8 => json!({"id": format!("r{i}"), "level": i, "path": ["a"]}),
            _ => json!({"id": format!("r{i}"), "level": (["warn", "info"][i % 2]),
                        "path": format!("src/{}/f{i}.rs", ["a", "b"][i % 2]), "size": (i * 10)}),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for records in [mixed_memories, objects] {
        let text = serde_json::to_string(&records).unwrap();
        let set = RecordSet::from_text(&text);
        let out = Offloader::new(DirSink::new(dir.path()))
            .offload(OffloadInput::new("recall", "recall", &set, 99_999), &|| {
                false
            })
            .unwrap();
        let file = out.result.path.to_string_lossy().into_owned();
        let d: Value = serde_json::from_str(&out.text).unwrap();
        for (n, recipe) in (1..).zip(d["jq_recipes"].as_array().unwrap()) {
            let command = recipe["command"].as_str().unwrap();
            let command = command.replacen("| jq ", "| /usr/bin/jq ", 1);
            let jq = Command::new("sh").args(["-c", &command]).output().unwrap();
            assert!(
                jq.status.success() && jq.stderr.is_empty(),
                "{command}: {jq:?}"
            );
            let ours = lro(&["extract", &file, "--recipe", &n.to_string()]);
            assert!(ours.status.success(), "recipe {n}: {}", stderr(&ours));
            assert_eq!(stdout(&ours), stdout(&jq), "recipe {n}: {command}");
        }
    }
}

/// `lro` with `args`, its environment cleared but for `PATH` and `env`, its
/// stdin `input`: a failure's text depends on nothing of the test host's.
fn lro_in(dir: &Path, args: &[&str], env: &[(&str, &str)], input: &str) -> Output {
    use std::io::Write as _;

    let mut child = Command::new(env!("CARGO_BIN_EXE_lro"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("TMPDIR", dir)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run lro");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The error line of a failed `lro`, checked to show every level of its
/// chain once: its last line is `lro: outer: cause: …`, and no level of it
/// (a text between `: `) is repeated anywhere in the line.
fn error_line(o: &Output, status: i32) -> String {
    let text = stderr(o);
    assert_eq!(o.status.code(), Some(status), "{text}");
    let line = text.lines().last().unwrap_or_default();
    let message = line
        .strip_prefix("lro: ")
        .unwrap_or_else(|| panic!("no error line: {text}"));
    for level in message.split(": ").filter(|l| l.len() > 3) {
        assert_eq!(
            message.matches(level).count(),
            1,
            "{level:?} is printed twice: {message}"
        );
    }
    message.to_owned()
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One real failure of each command of `lro --help`, as its user reads it
/// on stderr: every cause once, outermost first.
#[test]
fn each_command_prints_its_failure_as_one_chain() {
    let help = stdout(&lro(&["--help"]));
    let commands = [
        "proxy",
        "audit",
        "context",
        "extract",
        "inspect",
        "gc",
        "metrics",
        "install",
        "uninstall",
    ];
    for command in commands {
        assert!(help.contains(&format!("\n  {command} ")), "{help}");
    }
    let home = tempfile::tempdir().unwrap();
    let dir = home.path();
    let run = |args: &[&str]| lro_in(dir, args, &[], "");

    // proxy: a missing upstream command, a refused upstream URL, a store
    // the configuration names that cannot be opened.
    assert_eq!(
        error_line(&run(&["proxy", "--", "lro-no-such-command"]), 1),
        "cannot start upstream command `lro-no-such-command`: not found on PATH"
    );
    let port = closed_port();
    assert_eq!(
        error_line(
            &run(&["proxy", "--url", &format!("http://127.0.0.1:{port}/mcp")]),
            1
        ),
        format!(
            "upstream http://127.0.0.1:{port}/mcp is unreachable: Connection refused (os error 111)"
        )
    );
    let store = lro_in(
        dir,
        &["proxy", "--", "true"],
        &[
            ("ATLATL_PROMPT__OFFLOAD__STORE", "s3://results"),
            ("AWS_ALLOW_HTTP", "maybe"),
        ],
        "",
    );
    let line = error_line(&store, 1);
    assert!(
        line.starts_with(
            "cannot open the offload store: cannot configure the object store s3://results: "
        ),
        "{line}"
    );

    // audit: a target that cannot be launched (exit 3).
    assert_eq!(
        error_line(&run(&["audit", "--", "lro-no-such-command"]), 3),
        "cannot reach `lro-no-such-command`: cannot launch: No such file or directory (os error 2)"
    );

    // context: stdin that is not JSON; a port another holds.
    assert_eq!(
        error_line(&lro_in(dir, &["context", "offload"], &[], "{"), 2),
        "stdin is not JSON: EOF while parsing an object at line 1 column 1"
    );
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let root = dir.to_string_lossy();
    assert_eq!(
        error_line(
            &run(&["context", "serve", "--http", &addr, "--store-root", &root]),
            1
        ),
        format!("cannot listen on {addr}: Address already in use (os error 98)")
    );

    // extract: an offload directory that is not there; a directory where
    // the file should be.
    let results = dir.join("results");
    std::fs::create_dir(&results).unwrap();
    let file = memory_file(&results);
    assert_eq!(
        error_line(
            &run(&["extract", &file, "--root", "/lro-no-such-dir", "--count"]),
            1
        ),
        "offload directory /lro-no-such-dir is not usable: No such file or directory (os error 2)"
    );
    let folder = results.join("atlatl-recall-01JD0000000000000000000000.jsonl");
    std::fs::create_dir(&folder).unwrap();
    let folder = folder.to_string_lossy();
    assert!(
        error_line(&run(&["extract", &folder, "--count"]), 1).ends_with(
            "is not an offload file (expected a regular file named atlatl-<operation>-<ULID>.jsonl)"
        )
    );

    // inspect: a file of the right name whose first line is no header.
    let headless = results.join("atlatl-recall-01JD0000000000000000000001.jsonl");
    std::fs::write(&headless, "not json\n").unwrap();
    let headless = headless.to_string_lossy();
    assert_eq!(
        error_line(&run(&["inspect", &headless]), 1),
        format!("{headless} has no valid LRO header line: expected ident at line 1 column 2")
    );

    // gc: a file where the directory should be.
    assert_eq!(
        error_line(&run(&["gc", &file]), 1),
        format!("{file} is not a directory")
    );

    // metrics: an output that cannot be written.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_lro"))
        .arg("metrics")
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(
        error_line(&o, 1),
        "cannot write the output: No space left on device (os error 28)"
    );

    // install, uninstall: a records file that does not read.
    let state = dir.join("state");
    std::fs::create_dir_all(state.join("lro")).unwrap();
    std::fs::write(state.join("lro/installs.json"), "{").unwrap();
    let records = state.join("lro/installs.json");
    for command in ["install", "uninstall"] {
        let o = lro_in(
            dir,
            &[command, "gemini", "--lro", "lro"],
            &[("XDG_STATE_HOME", &state.to_string_lossy())],
            "",
        );
        assert_eq!(
            error_line(&o, 1),
            format!(
                "the records in {} cannot be used: EOF while parsing an object at line 1 column 1",
                records.display()
            )
        );
    }
}
