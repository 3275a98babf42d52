//! Realistic histories and the invariants every result must keep.

#![allow(dead_code, unreachable_pub)]

use std::collections::HashSet;

use lro_context::{Message, Offloaded, parse_messages, read_file};
use serde_json::{Value, json};

/// A deterministic text of about `tokens` tokens (characters / 4), unique
/// to `seed` through its first words.
pub fn text(seed: usize, tokens: usize) -> String {
    let words = [
        "context", "window", "agent", "tool", "result", "paper", "cache", "token", "summary",
        "file",
    ];
    let mut out = format!("doc-{seed} ");
    let mut x = seed as u64 * 2_654_435_761 + 1;
    while out.len() < tokens * 4 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        out.push_str(words[(x >> 33) as usize % words.len()]);
        out.push(if (x >> 20).is_multiple_of(11) {
            '\n'
        } else {
            ' '
        });
    }
    out
}

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

/// A 60-message research session: a system prompt, a goal, then rounds of
/// searches and page reads with large results, and notes along the way.
pub fn research_session() -> Vec<Message> {
    let mut msgs = vec![
        json!({"role": "system", "content": "You are a research assistant."}),
        json!({"role": "user", "content": "Survey how agents manage long contexts; cite sources."}),
    ];
    let mut n: usize = 0;
    while msgs.len() < 59 {
        n += 1;
        let (name, size) = if n.is_multiple_of(2) {
            ("read_webpage", 7_000)
        } else {
            ("web_search", 3_500)
        };
        let id = format!("call_{n}");
        msgs.push(
            json!({"role": "assistant", "content": format!("Step {n}: {name}."),
            "tool_calls": [call(&id, name, json!({"q": format!("topic {n}")}))]}),
        );
        msgs.push(json!({"role": "tool", "tool_call_id": id, "content": text(n, size)}));
        if n.is_multiple_of(5) && msgs.len() < 59 {
            msgs.push(json!({"role": "assistant", "content": format!("Notes after {n} steps: {}", text(1000 + n, 60))}));
        }
    }
    msgs.push(
        json!({"role": "assistant", "content": "Summary: compaction, compression and retrieval."}),
    );
    parse_messages(Value::Array(msgs)).unwrap()
}

/// An assistant turn with three parallel calls and their three results.
pub fn parallel_calls() -> Vec<Message> {
    let calls: Vec<Value> = (1..=3)
        .map(|i| call(&format!("p{i}"), "fetch", json!({"i": i})))
        .collect();
    let mut msgs = vec![
        json!({"role": "system", "content": "sys"}),
        json!({"role": "user", "content": "Fetch three things."}),
        json!({"role": "assistant", "content": null, "tool_calls": calls}),
    ];
    for i in 1..=3 {
        msgs.push(
            json!({"role": "tool", "tool_call_id": format!("p{i}"), "content": text(i, 5_000)}),
        );
    }
    msgs.push(json!({"role": "assistant", "content": "All three fetched."}));
    msgs.push(json!({"role": "user", "content": "Now compare them."}));
    parse_messages(Value::Array(msgs)).unwrap()
}

/// A history whose tool-call ids are 300 characters long (and odd).
pub fn long_ids() -> Vec<Message> {
    let id = |i: usize| format!("{i}/../{}", "é-x".repeat(99));
    let mut msgs = vec![json!({"role": "user", "content": "Go."})];
    for i in 0..4 {
        msgs.push(json!({"role": "assistant", "content": null, "tool_calls": [call(&id(i), "read", json!({}))]}));
        msgs.push(json!({"role": "tool", "tool_call_id": id(i), "content": text(i, 4_000)}));
    }
    msgs.push(json!({"role": "assistant", "content": "Done."}));
    parse_messages(Value::Array(msgs)).unwrap()
}

/// Fails unless every tool message answers a call made before it and every
/// call is answered after it.
pub fn assert_no_orphans(msgs: &[Message]) {
    let mut open: HashSet<String> = HashSet::new();
    let mut answered: HashSet<String> = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        if let Some(id) = m.tool_call_id() {
            assert!(
                open.contains(id),
                "messages[{i}] answers {id:.40}, which no earlier message calls"
            );
            answered.insert(id.to_owned());
        }
        open.extend(m.tool_call_ids().into_iter().map(str::to_owned));
    }
    let unanswered: Vec<_> = open.difference(&answered).collect();
    assert!(
        unanswered.is_empty(),
        "calls without results: {unanswered:?}"
    );
}

/// Fails unless the system message survives (its text a prefix of the new
/// one) and the last `keep` messages are unchanged.
pub fn assert_kept(before: &[Message], after: &[Message], keep: usize) {
    let sys_before = before.iter().find(|m| m.is_system());
    if let Some(s) = sys_before {
        let s_after = after
            .iter()
            .find(|m| m.is_system())
            .expect("the system message is kept");
        assert!(s_after.text().starts_with(&s.text()));
    }
    assert_eq!(
        before[before.len() - keep..],
        after[after.len() - keep..],
        "the last {keep} messages changed"
    );
}

/// Fails unless every stored file reads back byte-identical.
pub fn assert_files_read_back(out: &Offloaded) {
    for f in &out.files {
        assert_eq!(
            read_file(&f.path, None, None).unwrap(),
            f.content,
            "{}",
            f.path.display()
        );
    }
}

/// `messages` offloaded with `params` by a fresh offloader, as the anonymous
/// principal (a single-user store: the root itself).
pub fn anonymous_offload(
    messages: Vec<Message>,
    params: &lro_context::Params,
) -> Result<lro_context::Offloaded, lro_context::ContextError> {
    lro_context::ContextOffloader::new().offload(
        &lro_core::principal::Principal::anonymous(),
        messages,
        params,
    )
}
