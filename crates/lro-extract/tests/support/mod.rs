//! Shared test helpers: offload files built with the real `Offloader` from
//! the product's memory corpus (lro-corpus) or from text, a small seeded
//! PRNG for generated records, and the real `jq` binary.

#![allow(dead_code, unreachable_pub)]

pub mod generated;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

use lro_core::{
    descriptor::Detail,
    offload::{OffloadInput, OffloadOutput, Offloader},
    recipes::RecipeSet,
    records::RecordSet,
};
use lro_corpus::Corpus;
use lro_store::DirSink;
use serde_json::{Value, json};

/// A small deterministic PRNG (SplitMix64) for the generated records of
/// the rendering and slurp tests: the same records on every run and machine.
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

/// An offload file written by the real `Offloader`.
pub struct Offloaded {
    pub path: PathBuf,
    pub recipes: RecipeSet,
    pub records: Vec<Value>,
}

/// `size` memories of the product's corpus (lro-corpus: the memory-server's,
/// the same bytes for the same size and seed) at `detail`, offloaded into
/// `dir` as the memory-server hands its result to the layer: the JSON
/// array text of `Corpus::to_json_array`, fields in the server's order.
pub fn offload_memories(
    dir: &Path,
    operation: &str,
    size: usize,
    seed: u64,
    detail: Detail,
) -> Offloaded {
    let corpus = Corpus::generate(size, seed);
    let text = Corpus::to_json_array(corpus.memories(), detail);
    offload_array(dir, operation, &text, detail)
}

/// Offloads the JSON array `text`, serialized at `detail`.
fn offload_array(dir: &Path, operation: &str, text: &str, detail: Detail) -> Offloaded {
    let out = offload_output(dir, operation, text, Some(detail));
    Offloaded {
        path: out.result.path,
        recipes: out.recipes,
        records: serde_json::from_str(text).unwrap(),
    }
}

/// Offloads a tool's result `text` as the layer does.
fn offload_output(
    dir: &Path,
    operation: &str,
    text: &str,
    detail: Option<Detail>,
) -> OffloadOutput {
    let set = RecordSet::from_text(text);
    let mut input = OffloadInput::new(operation, operation, &set, text.len() / 4);
    input.detail = detail;
    Offloader::new(DirSink::new(dir))
        .offload(input, &|| false)
        .unwrap()
}

/// Offloads plain text (one record per line).
pub fn offload_text(dir: &Path, text: &str) -> PathBuf {
    offload_output(dir, "fetch_logs", text, None).result.path
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

/// Offloads `records`, of any shape, as one JSON array serialized at
/// `detail`.
pub fn offload(dir: &Path, operation: &str, records: &[Value], detail: Detail) -> Offloaded {
    offload_array(
        dir,
        operation,
        &serde_json::to_string(records).unwrap(),
        detail,
    )
}

/// Offloads the JSON text of a tool's result as the layer does, with the
/// recipes its descriptor names.
pub fn offload_result(dir: &Path, text: &str) -> Offloaded {
    let out = offload_output(dir, "result", text, None);
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
