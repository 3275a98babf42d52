//! Per-tool settings, under `[prompt.offload.tools.<tool name>]`.

use serde::{Deserialize, Serialize};

use super::{ConfigError, OffloadConfig};

/// Per-tool overrides, under `[prompt.offload.tools.<tool name>]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolConfig {
    /// Threshold for this tool. Defaults to the global threshold.
    pub threshold_tokens: Option<u32>,
    /// `false` turns offloading off for this tool. Defaults to the global `enabled`.
    pub enabled: Option<bool>,
    /// Operation name used in file names and headers. Defaults to the built-in
    /// mapping (`recall`, `list`, `search`, `inject`) or the sanitized tool name.
    pub operation: Option<String>,
}

impl ToolConfig {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets this tool's threshold. Defaults to the global threshold.
    #[must_use]
    pub fn threshold_tokens(self, tokens: u32) -> Self {
        Self {
            threshold_tokens: Some(tokens),
            ..self
        }
    }

    /// Turns offloading on or off for this tool. Defaults to the global setting.
    #[must_use]
    pub fn enabled(self, enabled: bool) -> Self {
        Self {
            enabled: Some(enabled),
            ..self
        }
    }

    /// Sets this tool's operation name. Defaults to the built-in mapping.
    #[must_use]
    pub fn operation(self, operation: impl Into<String>) -> Self {
        Self {
            operation: Some(operation.into()),
            ..self
        }
    }

    /// Checks the ranges of the overrides of `tool`.
    pub(super) fn validate(&self, tool: &str) -> Result<(), ConfigError> {
        if self.threshold_tokens == Some(0) {
            return Err(ConfigError::out_of_range(
                &format!("tools.{tool}.threshold_tokens"),
                "must be greater than 0",
            ));
        }
        if let Some(op) = &self.operation
            && crate::file::sanitize_operation(op) != *op
        {
            return Err(ConfigError::out_of_range(
                &format!("tools.{tool}.operation"),
                "must be lowercase letters, digits and underscores",
            ));
        }
        Ok(())
    }
}

impl OffloadConfig {
    /// Whether offloading applies to `tool`.
    pub fn enabled_for(&self, tool: &str) -> bool {
        self.tools
            .get(tool)
            .and_then(|t| t.enabled)
            .unwrap_or(self.enabled)
    }

    /// The threshold that applies to `tool`.
    pub fn threshold_for(&self, tool: &str) -> usize {
        self.tools
            .get(tool)
            .and_then(|t| t.threshold_tokens)
            .unwrap_or(self.threshold_tokens) as usize
    }

    /// The operation name for `tool`: configured mapping, the memory tools'
    /// spec names, or the sanitized tool name.
    pub fn operation_for(&self, tool: &str) -> String {
        if let Some(op) = self.tools.get(tool).and_then(|t| t.operation.clone()) {
            return op;
        }
        default_operation(tool)
    }
}

/// The spec's operation names for the memory tools, else the sanitized name.
pub fn default_operation(tool: &str) -> String {
    match tool {
        "recall_memories" => "recall".into(),
        "list_memories" => "list".into(),
        "search_memories" => "search".into(),
        "inject_context" => "inject".into(),
        other => crate::file::sanitize_operation(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::chain;

    #[test]
    fn tool_overrides_and_operation_mapping() {
        let cfg = OffloadConfig::from_toml_str(
            r#"
            [prompt.offload.tools.fetch_logs]
            enabled = false
            [prompt.offload.tools.query_db]
            operation = "search"
            "#,
        )
        .unwrap();
        assert!(!cfg.enabled_for("fetch_logs"));
        assert!(cfg.enabled_for("query_db"));
        assert_eq!(cfg.operation_for("query_db"), "search");
        assert_eq!(cfg.operation_for("recall_memories"), "recall");
        assert_eq!(cfg.operation_for("Get-Issues"), "get_issues");
    }

    #[test]
    fn bad_tool_values_name_the_tool_and_the_key() {
        let err =
            OffloadConfig::from_toml_str("[prompt.offload.tools.query_db]\nthreshold_tokens = 0")
                .unwrap_err();
        assert_eq!(
            err.key(),
            Some("prompt.offload.tools.query_db.threshold_tokens")
        );
        let err =
            OffloadConfig::from_toml_str("[prompt.offload.tools.query_db]\noperation = \"Q-DB\"")
                .unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.tools.query_db.operation"));
        assert!(chain(&err).to_string().contains("lowercase"), "{err}");
    }
}
