//! The `[prompt.offload]` configuration section.
//!
//! Values are layered: built-in defaults, then an optional TOML file, then
//! `ATLATL_PROMPT__OFFLOAD__*` environment variables. A bad value is a start-up
//! error that names the key and where the value came from.
//!
//! ```
//! use lro_core::config::OffloadConfig;
//!
//! let cfg = OffloadConfig::from_toml_str(
//!     r#"
//!     [prompt.offload]
//!     threshold_tokens = 800
//!
//!     [prompt.offload.tools.list_memories]
//!     threshold_tokens = 4000
//!     "#,
//! )
//! .unwrap();
//! assert_eq!(cfg.threshold_for("recall_memories"), 800);
//! assert_eq!(cfg.threshold_for("list_memories"), 4000);
//! assert!(cfg.enabled);
//! ```

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
};

use figment::{
    Figment,
    providers::{Format, Serialized, Toml},
};
use serde::{Deserialize, Serialize};

use crate::descriptor::GuidanceStyle;
use crate::quota::Quota;
pub use crate::quota::{DEFAULT_MAX_PRINCIPAL_BYTES, DEFAULT_MAX_TOTAL_BYTES};
use crate::root::default_output_dir;
use crate::tokens::{DEFAULT_EXACT_BAND, ScriptAware, TokenEstimator};

/// Default token threshold (normative spec: 1600).
pub const DEFAULT_OFFLOAD_THRESHOLD_TOKENS: u32 = 1600;
/// Default file time-to-live in seconds.
pub const DEFAULT_TTL_SECONDS: u64 = 3600;
/// Default cleanup schedule: hourly, at second 0 of minute 0.
pub const DEFAULT_CLEANUP_SCHEDULE: &str = "0 0 * * * *";
/// Prefix of the environment variables that override the file.
pub const ENV_PREFIX: &str = "ATLATL_";
/// Dotted path of the section inside the configuration file.
pub const SECTION: &str = "prompt.offload";

/// What the model gets back when a result is offloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DescriptorProfile {
    /// The spec's full `OffloadResponse`: summary, schema, recipes, guidance.
    #[default]
    Full,
    /// The paper's bare pointer: file path, record count and detail level.
    Minimal,
}

/// How a result's tokens are counted against the threshold.
///
/// Non-exhaustive because the exact tokenizers exist only with the `bpe`
/// feature (on by default); without it their names are unknown values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Estimator {
    /// [`ScriptAware`]: characters / 4, one token per CJK character.
    #[default]
    Chars,
    /// `o200k_base` counts where the character estimate is within
    /// `exact_band` of the threshold.
    #[cfg(feature = "bpe")]
    O200k,
    /// `cl100k_base` counts where the character estimate is within
    /// `exact_band` of the threshold.
    #[cfg(feature = "bpe")]
    Cl100k,
}

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

/// The `[prompt.offload]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct OffloadConfig {
    /// Enables offloading. Defaults to `true`.
    pub enabled: bool,
    /// Results estimated above this many tokens are offloaded. Defaults to 1600.
    pub threshold_tokens: u32,
    /// Seconds before custodial cleanup may delete a file. Defaults to 3600.
    pub ttl_seconds: u64,
    /// Directory for offload files; empty means the per-user private
    /// directory `{temp_dir}/lro-{uid}` ([`default_output_dir`]). Either way
    /// it must belong to this user, and is made mode 0700. Defaults to empty.
    pub output_dir: PathBuf,
    /// Cron expression with seconds for the cleanup task. Defaults to hourly.
    pub cleanup_schedule: String,
    /// Disk quota of the whole offload directory: a write that would pass
    /// it takes the truncation fallback (reason `quota`), and cleanup deletes
    /// the oldest files beyond it. Defaults to 1 GiB.
    pub max_total_bytes: Option<u64>,
    /// Disk quota of one principal's files (the anonymous principal's are
    /// the directory's own, another's its `p-{digest}` folder): a write that
    /// would pass it takes the truncation fallback. Defaults to 256 MiB.
    pub max_principal_bytes: Option<u64>,
    /// Descriptor profile. Defaults to [`DescriptorProfile::Full`].
    pub profile: DescriptorProfile,
    /// How much the full profile's guidance says: `spec` (the spec's
    /// templates) or `compact` (count, path, detail level and a pointer to
    /// the recipes). Defaults to [`GuidanceStyle::Spec`].
    pub guidance: GuidanceStyle,
    /// How result sizes are counted. Defaults to [`Estimator::Chars`].
    pub estimator: Estimator,
    /// With an exact `estimator`, the band around the threshold, as a
    /// fraction of it, where the exact count replaces the character estimate:
    /// 0.5 is ±50%. Defaults to 0.5.
    pub exact_band: f64,
    /// Offers the native `lro_extract` tool and points the guidance at it
    /// (the descriptor keeps its jq recipes). Defaults to `true`.
    pub extract: bool,
    /// Per-tool overrides, keyed by tool name. Defaults to none.
    pub tools: BTreeMap<String, ToolConfig>,
}

impl Default for OffloadConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold_tokens: DEFAULT_OFFLOAD_THRESHOLD_TOKENS,
            ttl_seconds: DEFAULT_TTL_SECONDS,
            output_dir: PathBuf::new(),
            cleanup_schedule: DEFAULT_CLEANUP_SCHEDULE.to_owned(),
            max_total_bytes: Some(DEFAULT_MAX_TOTAL_BYTES),
            max_principal_bytes: Some(DEFAULT_MAX_PRINCIPAL_BYTES),
            profile: DescriptorProfile::Full,
            guidance: GuidanceStyle::Spec,
            estimator: Estimator::Chars,
            exact_band: DEFAULT_EXACT_BAND,
            extract: true,
            tools: BTreeMap::new(),
        }
    }
}

/// A configuration that could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A value has the wrong type, or a key is unknown.
    #[error("invalid offload configuration: `{key}` (from {origin}): {}", source.kind)]
    Invalid {
        /// Full dotted key, e.g. `prompt.offload.threshold_tokens`.
        key: String,
        /// Where the value came from: an environment variable or a file.
        origin: String,
        /// What is wrong with it: figment's error for this key.
        source: Box<figment::Error>,
    },
    /// A value has the right type but is out of range.
    #[error("invalid offload configuration: `{key}` {reason}")]
    OutOfRange {
        /// Full dotted key, e.g. `prompt.offload.threshold_tokens`.
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The configuration file does not exist.
    #[error("configuration file {0} does not exist")]
    MissingFile(PathBuf),
}

impl ConfigError {
    /// The dotted key at fault, when there is one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { key, .. } | ConfigError::OutOfRange { key, .. } => Some(key),
            ConfigError::MissingFile(_) => None,
        }
    }
}

/// The environment variable that sets a dotted key.
pub fn env_var_for(key: &str) -> String {
    format!(
        "{ENV_PREFIX}{}",
        key.to_ascii_uppercase().replace('.', "__")
    )
}

#[derive(Serialize)]
struct Root<'a> {
    prompt: Prompt<'a>,
}

#[derive(Serialize)]
struct Prompt<'a> {
    offload: &'a OffloadConfig,
}

impl OffloadConfig {
    /// The defaults of the spec.
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads defaults, then `file` (when given), then the process
    /// environment's `ATLATL_PROMPT__OFFLOAD__*` variables.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_from(file, std::env::vars())
    }

    /// Like [`OffloadConfig::load`], with the environment given as
    /// (name, value) pairs: hermetic for tests and for hosts that keep their
    /// own environment map.
    pub fn load_from<I, K, V>(file: Option<&Path>, env: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut figment = Self::base();
        let mut source = "defaults".to_owned();
        if let Some(path) = file {
            if !path.exists() {
                return Err(ConfigError::MissingFile(path.to_owned()));
            }
            figment = figment.merge(Toml::file_exact(path));
            source = format!("file {}", path.display());
        }
        Self::merge_env(figment, env, &source)
    }

    /// Loads defaults, then the given TOML text; the environment is not read.
    pub fn from_toml_str(toml: &str) -> Result<Self, ConfigError> {
        Self::from_parts(toml, std::iter::empty::<(String, String)>())
    }

    /// Loads defaults, then `toml`, then the given environment variables.
    pub fn from_parts<I, K, V>(toml: &str, env: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self::merge_env(
            Self::base().merge(Toml::string(toml)),
            env,
            "configuration text",
        )
    }

    fn merge_env<I, K, V>(
        mut figment: Figment,
        env: I,
        file_source: &str,
    ) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let section_prefix = env_var_for(SECTION) + "__";
        let mut from_env = Vec::new();
        for (name, value) in env {
            let (name, value): (String, String) = (name.into(), value.into());
            let Some(rest) = name.strip_prefix(&section_prefix) else {
                continue;
            };
            let key = format!("{SECTION}.{}", rest.to_ascii_lowercase().replace("__", "."));
            figment = figment.merge(Serialized::global(&key, parse_env_value(&value)));
            from_env.push(name);
        }
        let cfg: OffloadConfig = figment.extract_inner(SECTION).map_err(|err| {
            // figment reports one error per problem; the first names the key.
            let e = err
                .into_iter()
                .next()
                .expect("a figment error has at least one entry");
            // figment appends the `extract_inner` path after the field path
            // (`ttl_seconds.prompt.offload`); put the section back in front.
            let section: Vec<&str> = SECTION.split('.').collect();
            let mut path: Vec<&str> = e.path.iter().map(String::as_str).collect();
            if path.ends_with(&section) {
                path.truncate(path.len() - section.len());
            }
            if path.starts_with(&section) {
                path.drain(..section.len());
            }
            let key = format!("{SECTION}.{}", path.join("."));
            let var = env_var_for(&key);
            let origin = if from_env.contains(&var) {
                format!("environment variable {var}")
            } else {
                file_source.to_owned()
            };
            ConfigError::Invalid {
                key,
                origin,
                source: Box::new(e),
            }
        })?;
        cfg.validate()?;
        Ok(cfg)
    }

    fn base() -> Figment {
        Figment::from(Serialized::defaults(Root {
            prompt: Prompt {
                offload: &OffloadConfig::default(),
            },
        }))
    }

    /// Checks ranges that serde cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let out = |key: &str, reason| ConfigError::OutOfRange {
            key: format!("{SECTION}.{key}"),
            reason,
        };
        if self.threshold_tokens == 0 {
            return Err(out("threshold_tokens", "must be greater than 0"));
        }
        if self.ttl_seconds == 0 {
            return Err(out("ttl_seconds", "must be greater than 0"));
        }
        let fields = self.cleanup_schedule.split_whitespace().count();
        if !(6..=7).contains(&fields) {
            return Err(out(
                "cleanup_schedule",
                "must be a cron expression with seconds (6 or 7 fields), e.g. \"0 0 * * * *\"",
            ));
        }
        if !(self.exact_band.is_finite() && self.exact_band >= 0.0) {
            return Err(out(
                "exact_band",
                "must be a fraction of the threshold, 0 or more, e.g. 0.5 for ±50%",
            ));
        }
        if self.max_total_bytes == Some(0) {
            return Err(out("max_total_bytes", "must be greater than 0 when set"));
        }
        if self.max_principal_bytes == Some(0) {
            return Err(out(
                "max_principal_bytes",
                "must be greater than 0 when set",
            ));
        }
        for (tool, tc) in &self.tools {
            if tc.threshold_tokens == Some(0) {
                return Err(ConfigError::OutOfRange {
                    key: format!("{SECTION}.tools.{tool}.threshold_tokens"),
                    reason: "must be greater than 0",
                });
            }
            if let Some(op) = &tc.operation
                && crate::file::sanitize_operation(op) != *op
            {
                return Err(ConfigError::OutOfRange {
                    key: format!("{SECTION}.tools.{tool}.operation"),
                    reason: "must be lowercase letters, digits and underscores",
                });
            }
        }
        Ok(())
    }

    /// The directory files are written to: `output_dir`, or the per-user
    /// `{temp_dir}/lro-{uid}` when it is empty.
    pub fn resolved_output_dir(&self) -> PathBuf {
        if self.output_dir.as_os_str().is_empty() {
            default_output_dir()
        } else {
            self.output_dir.clone()
        }
    }

    /// The quotas every write is checked against.
    pub fn quota(&self) -> Quota {
        Quota::new()
            .per_principal(self.max_principal_bytes)
            .total(self.max_total_bytes)
    }

    /// The token estimator `estimator` and `exact_band` ask for.
    pub fn token_estimator(&self) -> Arc<dyn TokenEstimator> {
        #[cfg(feature = "bpe")]
        use crate::tokens::{Banded, Bpe};
        match self.estimator {
            Estimator::Chars => Arc::new(ScriptAware),
            #[cfg(feature = "bpe")]
            Estimator::O200k => {
                Arc::new(Banded::new(ScriptAware, Bpe::O200k).band(self.exact_band))
            }
            #[cfg(feature = "bpe")]
            Estimator::Cl100k => {
                Arc::new(Banded::new(ScriptAware, Bpe::Cl100k).band(self.exact_band))
            }
        }
    }

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

    /// Sets `enabled`. Defaults to `true`.
    #[must_use]
    pub fn enabled(self, enabled: bool) -> Self {
        Self { enabled, ..self }
    }

    /// Sets `threshold_tokens`. Defaults to 1600.
    #[must_use]
    pub fn threshold_tokens(self, tokens: u32) -> Self {
        Self {
            threshold_tokens: tokens,
            ..self
        }
    }

    /// Sets `ttl_seconds`. Defaults to 3600.
    #[must_use]
    pub fn ttl_seconds(self, secs: u64) -> Self {
        Self {
            ttl_seconds: secs,
            ..self
        }
    }

    /// Sets `output_dir`. Defaults to empty (the per-user `{temp_dir}/lro-{uid}`).
    #[must_use]
    pub fn output_dir(self, dir: impl Into<PathBuf>) -> Self {
        Self {
            output_dir: dir.into(),
            ..self
        }
    }

    /// Sets the descriptor profile. Defaults to [`DescriptorProfile::Full`].
    #[must_use]
    pub fn profile(self, profile: DescriptorProfile) -> Self {
        Self { profile, ..self }
    }

    /// Sets the guidance style. Defaults to [`GuidanceStyle::Spec`].
    #[must_use]
    pub fn guidance(self, style: GuidanceStyle) -> Self {
        Self {
            guidance: style,
            ..self
        }
    }

    /// Sets the cleanup schedule. Defaults to hourly (`0 0 * * * *`).
    #[must_use]
    pub fn cleanup_schedule(self, cron: impl Into<String>) -> Self {
        Self {
            cleanup_schedule: cron.into(),
            ..self
        }
    }

    /// Sets the disk quota of the whole directory. Defaults to 1 GiB.
    #[must_use]
    pub fn max_total_bytes(self, bytes: Option<u64>) -> Self {
        Self {
            max_total_bytes: bytes,
            ..self
        }
    }

    /// Sets the disk quota of one principal. Defaults to 256 MiB.
    #[must_use]
    pub fn max_principal_bytes(self, bytes: Option<u64>) -> Self {
        Self {
            max_principal_bytes: bytes,
            ..self
        }
    }

    /// Sets how result sizes are counted. Defaults to [`Estimator::Chars`].
    #[must_use]
    pub fn estimator(self, estimator: Estimator) -> Self {
        Self { estimator, ..self }
    }

    /// Sets the band of the exact count, as a fraction of the threshold.
    /// Defaults to 0.5 (±50%).
    #[must_use]
    pub fn exact_band(self, band: f64) -> Self {
        Self {
            exact_band: band,
            ..self
        }
    }

    /// Turns the `lro_extract` tool on or off. Defaults to `true`.
    #[must_use]
    pub fn extract(self, on: bool) -> Self {
        Self {
            extract: on,
            ..self
        }
    }

    /// Sets the overrides of one tool. Defaults to none.
    #[must_use]
    pub fn tool(mut self, tool: impl Into<String>, cfg: ToolConfig) -> Self {
        self.tools.insert(tool.into(), cfg);
        self
    }
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

/// Parses an environment value the way figment's `Env` provider does:
/// booleans and numbers (integers, finite decimals) become typed values,
/// everything else a string.
fn parse_env_value(raw: &str) -> figment::value::Value {
    use figment::value::Value;
    if let Ok(b) = raw.parse::<bool>() {
        return Value::from(b);
    }
    if let Ok(n) = raw.parse::<u64>() {
        return Value::from(n);
    }
    if let Ok(n) = raw.parse::<i64>() {
        return Value::from(n);
    }
    if let Ok(f) = raw.parse::<f64>()
        && f.is_finite()
    {
        return Value::from(f);
    }
    Value::from(raw.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_spec() {
        let cfg = OffloadConfig::from_toml_str("").unwrap();
        assert!(cfg.enabled);
        assert_eq!(cfg.threshold_tokens, 1600);
        assert_eq!(cfg.ttl_seconds, 3600);
        assert_eq!(cfg.output_dir, PathBuf::new());
        assert_eq!(cfg.resolved_output_dir(), default_output_dir());
        assert_ne!(cfg.resolved_output_dir(), std::env::temp_dir());
        assert_eq!(
            cfg.quota(),
            Quota::new()
                .per_principal(Some(256 << 20))
                .total(Some(1 << 30))
        );
    }

    #[test]
    fn env_overrides_file() {
        let cfg = OffloadConfig::from_parts(
            "[prompt.offload]\nthreshold_tokens = 10\nttl_seconds = 5",
            [
                ("ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS", "99"),
                ("ATLATL_PROMPT__OFFLOAD__ENABLED", "false"),
                ("ATLATL_PROMPT__OFFLOAD__OUTPUT_DIR", "/var/lro"),
                ("UNRELATED", "x"),
            ],
        )
        .unwrap();
        assert_eq!(cfg.threshold_tokens, 99);
        assert_eq!(cfg.ttl_seconds, 5);
        assert!(!cfg.enabled);
        assert_eq!(cfg.output_dir, PathBuf::from("/var/lro"));
    }

    #[test]
    fn bad_env_value_names_the_key() {
        let err =
            OffloadConfig::from_parts("", [("ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS", "lots")])
                .unwrap_err()
                .to_string();
        assert!(err.contains("threshold_tokens"), "{err}");
    }

    #[test]
    fn bad_file_value_and_unknown_key_name_the_key() {
        let err =
            OffloadConfig::from_toml_str("[prompt.offload]\nttl_seconds = \"soon\"").unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.ttl_seconds"));
        assert!(err.to_string().contains("from configuration text"), "{err}");
        let err = OffloadConfig::from_toml_str("[prompt.offload]\nthreshhold_tokens = 3")
            .unwrap_err()
            .to_string();
        assert!(err.contains("threshhold_tokens"), "{err}");
    }

    #[test]
    fn guidance_style_from_file_and_env() {
        assert_eq!(OffloadConfig::new().guidance, GuidanceStyle::Spec);
        let cfg = OffloadConfig::from_toml_str("[prompt.offload]\nguidance = \"compact\"").unwrap();
        assert_eq!(cfg.guidance, GuidanceStyle::Compact);
        let cfg = OffloadConfig::from_parts(
            "[prompt.offload]\nguidance = \"compact\"",
            [("ATLATL_PROMPT__OFFLOAD__GUIDANCE", "spec")],
        )
        .unwrap();
        assert_eq!(cfg.guidance, GuidanceStyle::Spec);
    }

    #[test]
    fn bad_guidance_and_profile_name_the_key_and_the_source() {
        let err = OffloadConfig::from_parts("", [("ATLATL_PROMPT__OFFLOAD__GUIDANCE", "terse")])
            .unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.guidance"));
        let text = err.to_string();
        assert!(
            text.contains("from environment variable ATLATL_PROMPT__OFFLOAD__GUIDANCE"),
            "{text}"
        );
        assert!(text.contains("compact"), "{text}");
        let err = OffloadConfig::from_toml_str("[prompt.offload]\nprofile = \"bare\"").unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.profile"));
        assert!(err.to_string().contains("from configuration text"), "{err}");
    }

    #[test]
    fn zero_threshold_is_rejected() {
        let err = OffloadConfig::from_toml_str("[prompt.offload]\nthreshold_tokens = 0")
            .unwrap_err()
            .to_string();
        assert!(err.contains("prompt.offload.threshold_tokens"), "{err}");
    }

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
    fn estimator_defaults_to_chars_and_a_band_of_half() {
        let cfg = OffloadConfig::from_toml_str("").unwrap();
        assert_eq!(cfg.estimator, Estimator::Chars);
        assert_eq!(cfg.exact_band, 0.5);
        // Chars is today's estimator: one token per CJK character, however close.
        assert_eq!(cfg.token_estimator().estimate_against(&["漢字"], 2), 2);
    }

    #[cfg(feature = "bpe")]
    #[test]
    fn estimator_and_band_from_file_and_env() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lro.toml");
        std::fs::write(
            &file,
            "[prompt.offload]\nestimator = \"cl100k\"\nexact_band = 0.25",
        )
        .unwrap();
        let cfg = OffloadConfig::load_from(Some(&file), [("UNRELATED", "x")]).unwrap();
        assert_eq!((cfg.estimator, cfg.exact_band), (Estimator::Cl100k, 0.25));
        let cfg = OffloadConfig::load_from(
            Some(&file),
            [
                ("ATLATL_PROMPT__OFFLOAD__ESTIMATOR", "o200k"),
                ("ATLATL_PROMPT__OFFLOAD__EXACT_BAND", "0.75"),
            ],
        )
        .unwrap();
        assert_eq!((cfg.estimator, cfg.exact_band), (Estimator::O200k, 0.75));
        // A whole number is a band too.
        let cfg =
            OffloadConfig::from_parts("", [("ATLATL_PROMPT__OFFLOAD__EXACT_BAND", "1")]).unwrap();
        assert_eq!(cfg.exact_band, 1.0);
        // 18 characters: 18 by the heuristic, 10 by o200k near a threshold of 16.
        let zh = "数据库连接超时错误，请检查网络配置。";
        let estimator = cfg
            .estimator(Estimator::O200k)
            .exact_band(0.5)
            .token_estimator();
        assert_eq!(estimator.estimate_against(&[zh], 16), 10);
        assert_eq!(estimator.estimate_against(&[zh], 1000), 18);
    }

    #[test]
    fn bad_estimator_names_the_key_and_where_it_came_from() {
        let err = OffloadConfig::from_parts("", [("ATLATL_PROMPT__OFFLOAD__ESTIMATOR", "gpt2")])
            .unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.estimator"));
        let msg = err.to_string();
        assert!(
            msg.contains("from environment variable ATLATL_PROMPT__OFFLOAD__ESTIMATOR"),
            "{msg}"
        );
        assert!(msg.contains("gpt2") && msg.contains("chars"), "{msg}");
        let err = OffloadConfig::from_toml_str("[prompt.offload]\nestimator = 200").unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.estimator"));
        assert!(err.to_string().contains("from configuration text"), "{err}");
    }

    #[test]
    fn bad_exact_band_names_the_key() {
        let err = OffloadConfig::from_parts("", [("ATLATL_PROMPT__OFFLOAD__EXACT_BAND", "wide")])
            .unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.exact_band"));
        assert!(
            err.to_string()
                .contains("from environment variable ATLATL_PROMPT__OFFLOAD__EXACT_BAND"),
            "{err}"
        );
        let err = OffloadConfig::from_toml_str("[prompt.offload]\nexact_band = -0.5").unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.exact_band"));
        assert!(err.to_string().contains("0 or more"), "{err}");
    }

    #[test]
    fn missing_file_is_an_error() {
        let err = OffloadConfig::load(Some(Path::new("/nonexistent/lro.toml"))).unwrap_err();
        assert!(matches!(err, ConfigError::MissingFile(_)));
    }
}
