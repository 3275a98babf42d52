//! An LLM summariser over any OpenAI-compatible chat-completions endpoint.
//!
//! Configured from the environment: `LRO_CONTEXT_LLM_MODEL` turns it on;
//! `LRO_CONTEXT_LLM_BASE_URL` (else `OPENAI_BASE_URL`, else OpenAI's) and
//! `LRO_CONTEXT_LLM_API_KEY` (else `OPENAI_API_KEY`) say where and as whom;
//! `LRO_CONTEXT_LLM_TIMEOUT_SECS` bounds a call (default 60). Any failure
//! (an error status, a timeout, a reply without a summary) is returned as
//! an error, and compression falls back to the extractive summary.

use std::{fmt, time::Duration};

use serde_json::{Value, json};

use crate::{Message, Summariser};

/// What the summary must hold, in the order agents need it.
const PROMPT: &str = "You compress the older part of an AI agent's working history so the agent can \
continue its task without it. Write a state snapshot with these XML sections, each short and \
factual: <overall_goal> (the user's goal), <constraints> (requirements and preferences stated), \
<progress> (what has been done and found), <decisions> (choices made and why), <open_items> (what \
remains to do or verify), <file_references> (every file path mentioned, especially paths where \
full tool results are stored: keep them verbatim). Do not invent anything. Reply with the \
sections only.";

/// Characters of one message shown to the model; stored files hold the rest.
const MESSAGE_CHARS: usize = 4_000;

/// The default endpoint.
const OPENAI: &str = "https://api.openai.com/v1";

/// The OpenAI-compatible summariser.
#[derive(Clone)]
pub struct OpenAiSummariser {
    base_url: String,
    model: String,
    api_key: Option<String>,
    client: reqwest::blocking::Client,
}

impl fmt::Debug for OpenAiSummariser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key never reaches a log.
        f.debug_struct("OpenAiSummariser")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl OpenAiSummariser {
    /// A summariser calling `model` at `base_url` (e.g.
    /// `http://127.0.0.1:8000/v1`), each call bounded by `timeout`.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>, timeout: Duration) -> Self {
        let client = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
            .unwrap_or_default();
        Self {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model.into(),
            api_key: None,
            client,
        }
    }

    /// Sends `Authorization: Bearer {key}`. Defaults to no key.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The summariser the environment configures, if
    /// `LRO_CONTEXT_LLM_MODEL` is set.
    pub fn from_env() -> Option<Self> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let model = var("LRO_CONTEXT_LLM_MODEL")?;
        let base = var("LRO_CONTEXT_LLM_BASE_URL")
            .or_else(|| var("OPENAI_BASE_URL"))
            .unwrap_or_else(|| OPENAI.to_owned());
        let timeout = var("LRO_CONTEXT_LLM_TIMEOUT_SECS")
            .and_then(|s| s.parse().ok())
            .unwrap_or(60);
        let mut s = Self::new(base, model, Duration::from_secs(timeout));
        if let Some(key) = var("LRO_CONTEXT_LLM_API_KEY").or_else(|| var("OPENAI_API_KEY")) {
            s = s.api_key(key);
        }
        Some(s)
    }

    fn transcript(group: &[Message]) -> String {
        group
            .iter()
            .map(|m| {
                let mut text: String = m.text().chars().take(MESSAGE_CHARS).collect();
                for call in m.tool_call_texts() {
                    text.push_str(&format!("\n[calls {call}]"));
                }
                match m.tool_call_id() {
                    Some(id) => format!("tool ({id}): {text}"),
                    None => format!("{}: {text}", m.role()),
                }
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

impl Summariser for OpenAiSummariser {
    fn summarise(&self, group: &[Message]) -> Result<String, String> {
        let body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": Self::transcript(group)},
            ],
            "temperature": 0,
        });
        let mut req = self
            .client
            .post(format!("{}/chat/completions", self.base_url))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().map_err(|e| {
            if e.is_timeout() {
                "the LLM timed out".to_owned()
            } else {
                format!("the LLM cannot be reached: {}", lro_core::error::chain(&e))
            }
        })?;
        let status = resp.status();
        let text = resp.text().map_err(|e| {
            format!(
                "the LLM reply cannot be read: {}",
                lro_core::error::chain(&e)
            )
        })?;
        if !status.is_success() {
            let shown: String = text.chars().take(200).collect();
            return Err(format!("the LLM answered {status}: {shown}"));
        }
        let reply: Value =
            serde_json::from_str(&text).map_err(|_| "the LLM reply is not JSON".to_owned())?;
        reply
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| "the LLM reply has no choices[0].message.content".to_owned())
    }

    fn kind(&self) -> &'static str {
        "llm"
    }
}
