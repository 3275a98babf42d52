//! Summarising a group of messages for compression.
//!
//! [`Extractive`] is deterministic and needs nothing: the goal from the
//! first user message, the tool calls made with their file references, and
//! the last assistant conclusions. Any other [`Summariser`] (an LLM) that
//! fails falls back to it, so compression never fails because of one.

use std::{fmt::Write as _, sync::LazyLock};

use regex::Regex;

use crate::Message;

/// Summarises one group of older messages into the body of a
/// `<state_snapshot>`. Implemented for closures, by [`Extractive`], and by
/// `()`, which is [`Extractive`].
pub trait Summariser: Send + Sync {
    /// The summary, or why there is none (the extractive one is used then).
    fn summarise(&self, group: &[Message]) -> Result<String, String>;

    /// What the answer calls this summariser, e.g. `extractive` or `llm`.
    fn kind(&self) -> &'static str;
}

impl<F> Summariser for F
where
    F: Fn(&[Message]) -> Result<String, String> + Send + Sync,
{
    fn summarise(&self, group: &[Message]) -> Result<String, String> {
        self(group)
    }

    fn kind(&self) -> &'static str {
        "custom"
    }
}

/// No summariser of one's own: the extractive summary.
impl Summariser for () {
    fn summarise(&self, group: &[Message]) -> Result<String, String> {
        Extractive.summarise(group)
    }

    fn kind(&self) -> &'static str {
        Extractive.kind()
    }
}

/// The deterministic summary.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extractive;

/// Characters kept of each quoted message.
const QUOTE_CHARS: usize = 300;
/// Assistant conclusions kept.
const CONCLUSIONS: usize = 2;

/// `… stored in PATH` in either pointer format.
static STORED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:detailed result is stored in |result is stored in file path=`)([^\s)`]+)")
        .expect("valid")
});

fn quote(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = one_line.chars().take(QUOTE_CHARS).collect();
    if cut.len() < one_line.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

impl Summariser for Extractive {
    fn summarise(&self, group: &[Message]) -> Result<String, String> {
        let mut out = String::new();
        if let Some(goal) = group.iter().find(|m| m.role() == "user") {
            let _ = writeln!(out, "<overall_goal>{}</overall_goal>", quote(&goal.text()));
        }
        let calls: Vec<String> = group
            .iter()
            .flat_map(Message::tool_call_texts)
            .map(|c| quote(&c))
            .collect();
        if !calls.is_empty() {
            let _ = writeln!(out, "<tool_calls>\n- {}\n</tool_calls>", calls.join("\n- "));
        }
        let files: Vec<String> = group
            .iter()
            .flat_map(|m| {
                STORED
                    .captures_iter(&m.text())
                    .map(|c| c[1].to_owned())
                    .collect::<Vec<_>>()
            })
            .collect();
        if !files.is_empty() {
            let _ = writeln!(
                out,
                "<file_references>\n- {}\n</file_references>",
                files.join("\n- ")
            );
        }
        let conclusions: Vec<String> = group
            .iter()
            .rev()
            .filter(|m| m.role() == "assistant" && !m.text().trim().is_empty())
            .take(CONCLUSIONS)
            .map(|m| quote(&m.text()))
            .collect();
        if !conclusions.is_empty() {
            let ordered: Vec<_> = conclusions.into_iter().rev().collect();
            let _ = writeln!(out, "<progress>\n- {}\n</progress>", ordered.join("\n- "));
        }
        Ok(out.trim_end().to_owned())
    }

    fn kind(&self) -> &'static str {
        "extractive"
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::parse_messages;

    #[test]
    fn extractive_keeps_goal_calls_files_and_conclusions() {
        let group = parse_messages(json!([
            {"role": "user", "content": "Find papers on context rot"},
            {"role": "assistant", "content": "Searching.", "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "web_search", "arguments": "{\"q\":\"context rot\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "20 results (detailed result is stored in /s/tool_call_c1_ab.txt)"},
            {"role": "assistant", "content": "Three techniques stand out."},
        ]))
        .unwrap();
        let s = Extractive.summarise(&group).unwrap();
        assert_eq!(
            s,
            "<overall_goal>Find papers on context rot</overall_goal>\n\
             <tool_calls>\n- web_search({\"q\":\"context rot\"})\n</tool_calls>\n\
             <file_references>\n- /s/tool_call_c1_ab.txt\n</file_references>\n\
             <progress>\n- Searching.\n- Three techniques stand out.\n</progress>"
        );
    }

    #[test]
    fn unit_is_the_extractive_summary() {
        let group = parse_messages(json!([{"role": "user", "content": "Goal"}])).unwrap();
        assert_eq!(().summarise(&group), Extractive.summarise(&group));
        assert_eq!(Summariser::kind(&()), "extractive");
    }
}
