//! Shared test helpers: a deterministic synthetic MIF memory corpus, offload
//! files built with the real `Offloader`, and the real `jq` binary.

#![allow(dead_code, unreachable_pub)]

pub mod generated;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

use lro_core::{
    descriptor::Detail,
    offload::{OffloadInput, Offloader},
    recipes::RecipeSet,
    records::RecordSet,
};
use serde_json::{Value, json};

/// The namespaces of the corpus, with their memory type.
pub const NAMESPACES: [(&str, &str); 5] = [
    ("_semantic/knowledge", "semantic"),
    ("_semantic/decisions", "semantic"),
    ("_procedural/patterns", "procedural"),
    ("_episodic/incidents", "episodic"),
    ("_episodic/sessions", "episodic"),
];

const TOPICS: [&str; 12] = [
    "cache",
    "retry",
    "deploy",
    "schema",
    "latency",
    "index",
    "backup",
    "quota",
    "token",
    "migration",
    "outage",
    "release",
];
const WORDS: [&str; 16] = [
    "service", "request", "timeout", "database", "budget", "client", "server", "queue", "memory",
    "pipeline", "config", "metric", "alert", "rollback", "shard", "café",
];
const TAGS: [&str; 8] = [
    "perf", "ops", "security", "api", "infra", "ux", "data", "ml",
];
const STATUSES: [&str; 3] = ["active", "archived", "draft"];
const AGENTS: [&str; 3] = ["claude", "gpt", "human"];

/// A small deterministic PRNG (SplitMix64): the corpus must be identical on
/// every run and machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

fn timestamp(rng: &mut Rng, after_day: usize) -> (String, usize) {
    let day = after_day + rng.below(60);
    let (month, dom) = (1 + (day / 28) % 12, 1 + day % 28);
    let s = format!(
        "2025-{month:02}-{dom:02}T{:02}:{:02}:{:02}Z",
        rng.below(24),
        rng.below(60),
        rng.below(60)
    );
    (s, day)
}

/// One full-detail memory.
pub fn memory(i: usize, rng: &mut Rng) -> Value {
    let (namespace, memory_type) = NAMESPACES[rng.below(NAMESPACES.len())];
    let topic = rng.pick(&TOPICS);
    let title = format!(
        "{} {} {}",
        capitalize(topic),
        rng.pick(&WORDS),
        ["notes", "strategy", "postmortem", "checklist"][rng.below(4)]
    );
    let sentences: Vec<String> = (0..2 + rng.below(4))
        .map(|_| {
            format!(
                "The {} {} hit a {} near the {}.",
                rng.pick(&WORDS),
                rng.pick(&TOPICS),
                rng.pick(&WORDS),
                rng.pick(&WORDS)
            )
        })
        .collect();
    let (created, day) = timestamp(rng, 0);
    let (modified, _) = timestamp(rng, day);
    let tags: Vec<&str> = {
        let mut t: Vec<&str> = (0..1 + rng.below(3)).map(|_| rng.pick(&TAGS)).collect();
        t.dedup();
        t
    };
    let entities: Vec<Value> = (0..rng.below(3))
        .map(|_| json!({"name": format!("{}-{}", rng.pick(&WORDS), rng.below(9)), "type": "component"}))
        .collect();
    let confidence = (30 + rng.below(71)) as f64 / 100.0;
    let trust_level = ["low", "medium", "high"][rng.below(3)];
    let source_type = ["conversation", "document", "tool"][rng.below(3)];
    let half_life = 30 + rng.below(60);
    let related = format!("mem-{:06}", rng.below(1000));
    let status = rng.pick(&STATUSES);
    let agent = rng.pick(&AGENTS);
    let priority = 1 + rng.below(5);
    json!({
        "id": format!("mem-{i:06}"),
        "memory_type": memory_type,
        "namespace": namespace,
        "title": title,
        "content": sentences.join(" "),
        "created": created,
        "modified": modified,
        "tags": tags,
        "status": status,
        "entities": entities,
        "relationships": [{"type": "relates_to", "target": related}],
        "provenance": {
            "confidence": confidence,
            "trust_level": trust_level,
            "source_type": source_type,
            "agent": agent,
        },
        "temporal": {"valid_from": created, "valid_until": null, "decay": {"half_life_days": half_life}},
        "priority": priority,
    })
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// `n` full-detail memories from `seed`.
pub fn corpus(n: usize, seed: u64) -> Vec<Value> {
    let mut rng = Rng::new(seed);
    (0..n).map(|i| memory(i, &mut rng)).collect()
}

const LIGHT: [&str; 9] = [
    "id",
    "memory_type",
    "namespace",
    "title",
    "tags",
    "created",
    "modified",
    "status",
    "priority",
];

/// A memory serialized at `detail`.
pub fn at_detail(m: &Value, detail: Detail) -> Value {
    let pick = |keys: &[&str]| -> serde_json::Map<String, Value> {
        keys.iter()
            .filter_map(|k| m.get(*k).map(|v| ((*k).to_owned(), v.clone())))
            .collect()
    };
    match detail {
        Detail::Light => Value::Object(pick(&LIGHT)),
        Detail::Medium => {
            let mut o = pick(&LIGHT);
            o.insert("content".into(), m["content"].clone());
            o.insert("confidence".into(), m["provenance"]["confidence"].clone());
            let names: Vec<Value> = m["entities"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| e["name"].clone())
                .collect();
            o.insert("entities".into(), Value::Array(names));
            Value::Object(o)
        }
        Detail::Full => m.clone(),
    }
}

/// An offload file written by the real `Offloader`.
pub struct Offloaded {
    pub path: PathBuf,
    pub recipes: RecipeSet,
    pub records: Vec<Value>,
}

/// Offloads `records` (at `detail`) into `dir`.
pub fn offload(dir: &Path, operation: &str, records: &[Value], detail: Detail) -> Offloaded {
    let text = serde_json::to_string(records).unwrap();
    let set = RecordSet::from_text(&text);
    let mut input = OffloadInput::new(operation, operation, &set, text.len() / 4);
    input.detail = Some(detail);
    let out = Offloader::new(dir).offload(input, &|| false).unwrap();
    Offloaded {
        path: out.result.path,
        recipes: out.recipes,
        records: records.to_vec(),
    }
}

/// Offloads plain text (one record per line).
pub fn offload_text(dir: &Path, text: &str) -> PathBuf {
    let set = RecordSet::from_text(text);
    let input = OffloadInput::new("fetch_logs", "fetch_logs", &set, text.len() / 4);
    Offloader::new(dir)
        .offload(input, &|| false)
        .unwrap()
        .result
        .path
}

/// Output of `tail -n +2 FILE | jq ARGS` with the real jq binary.
pub fn jq_stdout(file: &Path, args: &[String]) -> String {
    let out = jq_output(file, args);
    assert!(
        out.status.success(),
        "jq {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Offloads the JSON text of a tool's result as the layer does, with the
/// recipes its descriptor names.
pub fn offload_result(dir: &Path, text: &str) -> Offloaded {
    let set = RecordSet::from_text(text);
    let input = OffloadInput::new("result", "result", &set, text.len() / 4);
    let out = Offloader::new(dir).offload(input, &|| false).unwrap();
    Offloaded {
        path: out.result.path,
        recipes: out.recipes,
        records: Vec::new(),
    }
}

/// `tail -n +2 FILE | jq ARGS` with the real jq binary, whatever it exits.
pub fn jq_output(file: &Path, args: &[String]) -> std::process::Output {
    Command::new("bash")
        .arg("-c")
        .arg("tail -n +2 \"$1\" | jq \"${@:2}\"")
        .arg("_")
        .arg(file)
        .args(args)
        .output()
        .expect("bash and jq must be installed")
}

/// Asserts that `jq` is jq 1.6, the version the answers are checked against.
pub fn assert_jq_1_6() {
    let out = Command::new("jq")
        .arg("--version")
        .output()
        .expect("jq 1.6 must be installed");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "jq-1.6");
}

/// Every JSON value in a stream of JSON texts.
pub fn json_values(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Params as the jq-args helper wants them.
pub fn str_params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Whether `/usr/bin/jq` (or `jq` on PATH) can run.
pub fn have_jq() -> bool {
    Command::new("jq")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `v` with every number as an f64, so `1` and `1.0` (the same JSON
/// number, printed differently by jq and by serde_json) compare equal.
pub fn normalized(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(a) => Value::Array(a.iter().map(normalized).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), normalized(v))).collect())
        }
        other => other.clone(),
    }
}

/// Asserts two value lists are equal as JSON; on failure reports the first
/// difference only (outputs can be large).
pub fn assert_same_values(native: &[Value], jq: &[Value], what: &str) {
    assert_eq!(native.len(), jq.len(), "{what}: number of results");
    for (i, (a, b)) in native.iter().zip(jq).enumerate() {
        let (na, nb) = (normalized(a), normalized(b));
        if na != nb {
            let (sa, sb) = (na.to_string(), nb.to_string());
            let at = sa
                .bytes()
                .zip(sb.bytes())
                .take_while(|(x, y)| x == y)
                .count();
            let from = at.saturating_sub(80);
            panic!(
                "{what}: result {i} differs at byte {at}:\n native …{}\n jq     …{}",
                &sa[from..(at + 80).min(sa.len())],
                &sb[from..(at + 80).min(sb.len())]
            );
        }
    }
}

/// One lexical JSON token: a string as its exact printed bytes, a number
/// as its value, anything else (punctuation, literals) as its bytes.
#[derive(Debug, PartialEq)]
pub enum Token {
    Str(String),
    Num(f64),
    Other(String),
}

/// The JSON tokens of `text`, whitespace between tokens dropped.
pub fn tokens(text: &str) -> Vec<Token> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\n' | b'\r' | b'\t' => i += 1,
            b'"' => {
                let mut j = i + 1;
                while b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                out.push(Token::Str(text[i..=j].to_owned()));
                i = j + 1;
            }
            b'-' | b'0'..=b'9' => {
                let mut j = i;
                while j < b.len() && matches!(b[j], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    j += 1;
                }
                out.push(Token::Num(text[i..j].parse().unwrap()));
                i = j;
            }
            b'a'..=b'z' => {
                let mut j = i;
                while j < b.len() && b[j].is_ascii_lowercase() {
                    j += 1;
                }
                out.push(Token::Other(text[i..j].to_owned()));
                i = j;
            }
            _ => {
                out.push(Token::Other(text[i..i + 1].to_owned()));
                i += 1;
            }
        }
    }
    out
}

/// Asserts two outputs print the same values exactly: strings byte for
/// byte (`"café"` is not `"caf\u00e9"`), numbers by value (`1e+17` is
/// `100000000000000000`); on failure, names the first differing token.
pub fn assert_same_text(native: &str, jq: &str, what: &str) {
    let (a, b) = (tokens(native), tokens(jq));
    if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
        panic!(
            "{what}: token {i} differs: native {:?}, jq {:?}",
            a.get(i),
            b.get(i)
        );
    }
}
