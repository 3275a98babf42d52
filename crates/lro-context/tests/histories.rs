//! Compact, compress and auto on realistic histories, with the invariants:
//! no orphaned tool message, the system message kept, the recent messages
//! unchanged, every stored file read back byte-identical and found by grep,
//! and compaction idempotent.

mod support;

use std::fs;

use lro_context::{Mode, Params, grep};
use support::*;

fn files_in(dir: &std::path::Path) -> usize {
    fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn compacting_a_research_session_keeps_every_invariant_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let history = research_session();
    assert_eq!(history.len(), 60);
    let params = Params::new(dir.path())
        .mode(Mode::Compact)
        .chat_id("research");
    let out = anonymous_offload(history.clone(), &params).unwrap();
    let tool_messages = history.iter().filter(|m| m.role() == "tool").count();
    // The last message is an assistant's: every tool result is outside it.
    assert_eq!(out.stats.compacted, tool_messages);
    assert!(
        out.stats.tokens_after * 20 < out.stats.tokens_before,
        "{:?}",
        out.stats
    );
    assert_eq!(out.messages.len(), history.len());
    assert_no_orphans(&out.messages);
    assert_kept(&history, &out.messages, 1);
    assert_files_read_back(&out);
    assert!(out.files.iter().all(|f| f.new));
    let found = grep("doc-7 ", dir.path(), "store", Some("*.txt"), None).unwrap();
    assert!(found.starts_with("Found 1 matches"), "{found}");

    // The same history again, original or compacted: nothing new, same messages.
    let written = files_in(dir.path());
    let again = anonymous_offload(history.clone(), &params).unwrap();
    assert_eq!(again.messages, out.messages);
    assert!(again.files.iter().all(|f| !f.new));
    let compacted_again = anonymous_offload(out.messages.clone(), &params).unwrap();
    assert_eq!(compacted_again.messages, out.messages);
    assert!(compacted_again.files.is_empty());
    assert_eq!(files_in(dir.path()), written);
}

#[test]
fn compressing_never_orphans_a_parallel_tool_result() {
    let dir = tempfile::tempdir().unwrap();
    let history = parallel_calls();
    // Keep 3 recent: they would begin inside the parallel results, so the
    // call and all its results stay together on one side.
    for keep in 0..history.len() {
        let params = Params::new(dir.path())
            .mode(Mode::Compress)
            .max_total_tokens(100)
            .keep_recent_count(keep)
            .group_token_threshold(3_000);
        let out = anonymous_offload(history.clone(), &params).unwrap();
        assert_no_orphans(&out.messages);
        assert_kept(&history, &out.messages, keep.min(history.len() - 1));
        assert_files_read_back(&out);
    }
}

#[test]
fn compressing_a_research_session_in_groups() {
    let dir = tempfile::tempdir().unwrap();
    let history = research_session();
    let params = Params::new(dir.path())
        .mode(Mode::Compress)
        .group_token_threshold(20_000)
        .chat_id("r1");
    let out = anonymous_offload(history.clone(), &params).unwrap();
    assert!(out.stats.groups > 3, "{:?}", out.stats);
    // The 2 recent ones begin with a tool result: its call stays with it.
    assert_eq!(
        out.messages.len(),
        1 + 3,
        "the system message and the 3 recent ones"
    );
    assert_no_orphans(&out.messages);
    assert_kept(&history, &out.messages, 2);
    let system = out.messages[0].text();
    assert_eq!(system.matches("<state_snapshot>").count(), out.stats.groups);
    assert!(
        system.contains("<overall_goal>Survey how agents manage long contexts"),
        "{system:.400}"
    );
    assert_files_read_back(&out);
    // Every group file is a JSON array of the original messages, in order.
    let stored: Vec<serde_json::Value> = out
        .files
        .iter()
        .flat_map(|f| serde_json::from_str::<Vec<serde_json::Value>>(&f.content).unwrap())
        .collect();
    let originals: Vec<serde_json::Value> = history[1..history.len() - 3]
        .iter()
        .map(|m| m.clone().into_json())
        .collect();
    assert_eq!(stored, originals);
}

#[test]
fn auto_compacts_then_compresses_only_when_compaction_kept_too_much() {
    let dir = tempfile::tempdir().unwrap();
    let history = research_session();
    let compact_enough = Params::new(dir.path()).mode(Mode::Auto);
    let out = anonymous_offload(history.clone(), &compact_enough).unwrap();
    assert!(
        out.stats.compacted > 0 && out.stats.groups == 0,
        "{:?}",
        out.stats
    );

    // Large messages that are not tool results cannot be compacted: the
    // ratio stays high, so auto compresses too.
    let mut chatty = history.clone();
    for m in chatty.iter_mut().filter(|m| m.role() == "tool") {
        *m = lro_context::parse_messages(serde_json::json!([
            {"role": "tool", "tool_call_id": m.tool_call_id().unwrap(), "content": "ok"}]))
        .unwrap()
        .remove(0);
    }
    chatty.insert(2, lro_context::Message::new("user", text(77, 30_000)));
    let out = anonymous_offload(chatty.clone(), &compact_enough).unwrap();
    assert_eq!(out.stats.compacted, 0);
    assert!(out.stats.groups == 1, "{:?}\n{}", out.stats, out.answer());
    assert_no_orphans(&out.messages);
    assert_kept(&chatty, &out.messages, 2);
}

#[test]
fn long_and_odd_ids_make_safe_distinct_files() {
    let dir = tempfile::tempdir().unwrap();
    let history = long_ids();
    let params = Params::new(dir.path())
        .mode(Mode::Compact)
        .max_total_tokens(0);
    let out = anonymous_offload(history.clone(), &params).unwrap();
    assert_eq!(out.stats.compacted, 4);
    assert_eq!(files_in(dir.path()), 4);
    for f in &out.files {
        assert_eq!(f.path.parent().unwrap(), dir.path());
        assert!(f.path.file_name().unwrap().len() < 120);
    }
    assert_files_read_back(&out);
    assert_no_orphans(&out.messages);
}

#[test]
fn a_failed_write_keeps_the_message_whole() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    fs::write(&blocker, "").unwrap();
    let history = research_session();
    let params = Params::new(blocker.join("store")).mode(Mode::Compact);
    let out = anonymous_offload(history.clone(), &params).unwrap();
    assert_eq!(out.messages, history);
    assert!(out.files.is_empty());
    assert!(
        out.answer()
            .contains("warning: cannot store the result of tool call call_1"),
        "{}",
        out.answer()
    );
}

#[test]
fn excluded_tools_are_never_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let history = research_session();
    let params = Params::new(dir.path())
        .mode(Mode::Compact)
        .exclude_tools(["read_webpage"]);
    let out = anonymous_offload(history.clone(), &params).unwrap();
    let searches = history
        .iter()
        .filter(|m| m.role() == "tool")
        .count()
        .div_ceil(2);
    assert_eq!(out.stats.compacted, searches);
    for (b, a) in history.iter().zip(&out.messages) {
        if b.text().len() > 20_000 {
            assert_eq!(a, b, "a read_webpage result was compacted");
        }
    }
}
