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
//!
//! The section itself is here; loading and its errors are in `load.rs`,
//! the `tools` table in `tool.rs`, the `extraction` table in
//! `extraction.rs`.

mod extraction;
mod load;
mod tool;

use std::{collections::BTreeMap, path::PathBuf, sync::Arc};

use serde::{Deserialize, Serialize};

pub use extraction::{
    DEFAULT_EXTRACT_MAX_CONCURRENT, DEFAULT_EXTRACT_MAX_PER_PRINCIPAL,
    DEFAULT_EXTRACT_MEMORY_BUDGET_MIB, DEFAULT_EXTRACT_QUEUE_TIMEOUT_SECONDS,
    DEFAULT_EXTRACT_TIMEOUT_SECONDS, ExtractionLimits, MAX_EXTRACT_TIMEOUT_SECONDS,
    MIN_EXTRACT_MEMORY_BUDGET_MIB,
};
pub use load::{ConfigError, env_var_for};
pub use tool::{ToolConfig, default_operation};

use crate::descriptor::GuidanceStyle;
use crate::quota::Quota;
pub use crate::quota::{DEFAULT_MAX_PRINCIPAL_BYTES, DEFAULT_MAX_TOTAL_BYTES};
use crate::tokens::{DEFAULT_EXACT_BAND, ScriptAware, TokenEstimator};

/// Default token threshold (normative spec: 1600).
pub const DEFAULT_OFFLOAD_THRESHOLD_TOKENS: u32 = 1600;
/// Default file time-to-live in seconds.
pub const DEFAULT_TTL_SECONDS: u64 = 3600;
/// Default bound of one object store operation, retries included.
pub const DEFAULT_STORE_TIMEOUT_SECONDS: u64 = 30;
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

/// What a server makes of a caller's W3C `traceparent` in a request's
/// `_meta` (MCP 2026-07-28): `caller_trace` in `[prompt.offload]`. Its spans
/// reach a trace only through an OpenTelemetry subscriber layer the
/// application installs (`tracing-opentelemetry`); without one this
/// changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallerTrace {
    /// The caller's span is the parent of the server's span when the
    /// caller is authenticated (its principal is not anonymous), and a link
    /// from it otherwise, so an anonymous caller cannot graft the server's
    /// spans into a trace of its choosing. The default.
    #[default]
    ParentIfAuthenticated,
    /// The caller's span is always the parent: for a trusted caller that is
    /// anonymous (one local client over stdio).
    Parent,
    /// The caller's span is always a link: the server's span is in a trace
    /// of its own.
    Link,
    /// The `traceparent` is not read.
    Ignore,
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
    /// directory `{temp_dir}/lro-{uid}` (lro-store's `resolved_output_dir`
    /// says which). Either way
    /// it must belong to this user, and is made mode 0700. Defaults to empty.
    pub output_dir: PathBuf,
    /// Where results go: empty for `output_dir`, or an object store URL,
    /// `s3://BUCKET/PREFIX`, configured from the standard AWS variables
    /// (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, `AWS_ALLOW_HTTP`). With a store, descriptors carry a
    /// handle any replica resolves, and `output_dir` holds only the
    /// short-lived copies `lro_extract` reads. Defaults to empty.
    pub store: String,
    /// The most one store operation may take, retries included, in
    /// seconds: an offload that passes it falls back to truncation, a read
    /// gets an error. Defaults to 30.
    pub store_timeout_seconds: u64,
    /// With a store, lets `lro_extract` answer `presign: true` with one
    /// download URL of the caller's result, valid 5 minutes, for clients
    /// with a shell; only with static credentials. Defaults to `false`.
    pub presign: bool,
    /// A file holding the secret principal folders are named with
    /// (`p-` and 16 hex digits of HMAC-SHA256 of the principal's name, see
    /// [`Principal::keyed`](crate::principal::Principal::keyed)): replicas
    /// that share folders must share it. Defaults to none: a key generated
    /// on first start and kept in the store (object `lro-principal-key`)
    /// or, without one, in `output_dir/.principal-key`.
    pub principal_key_file: Option<PathBuf>,
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
    /// Limits of `lro_extract`: memory, concurrency, waiting and time.
    /// Defaults to [`ExtractionLimits::default`].
    pub extraction: ExtractionLimits,
    /// What a caller's `traceparent` makes of the server's spans:
    /// `parent_if_authenticated`, `parent`, `link` or `ignore`. Defaults to
    /// [`CallerTrace::ParentIfAuthenticated`].
    pub caller_trace: CallerTrace,
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
            store: String::new(),
            store_timeout_seconds: DEFAULT_STORE_TIMEOUT_SECONDS,
            presign: false,
            principal_key_file: None,
            cleanup_schedule: DEFAULT_CLEANUP_SCHEDULE.to_owned(),
            max_total_bytes: Some(DEFAULT_MAX_TOTAL_BYTES),
            max_principal_bytes: Some(DEFAULT_MAX_PRINCIPAL_BYTES),
            profile: DescriptorProfile::Full,
            guidance: GuidanceStyle::Spec,
            estimator: Estimator::Chars,
            exact_band: DEFAULT_EXACT_BAND,
            extract: true,
            extraction: ExtractionLimits::default(),
            caller_trace: CallerTrace::ParentIfAuthenticated,
            tools: BTreeMap::new(),
        }
    }
}

impl OffloadConfig {
    /// The defaults of the spec.
    pub fn new() -> Self {
        Self::default()
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

    /// Sets `store`. Defaults to empty (`output_dir`).
    #[must_use]
    pub fn store(self, url: impl Into<String>) -> Self {
        Self {
            store: url.into(),
            ..self
        }
    }

    /// Whether results go to an object store rather than `output_dir`.
    pub fn is_remote(&self) -> bool {
        self.store.contains("://") && !self.store.starts_with("file://")
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

    /// Sets the limits of `lro_extract`. Defaults to
    /// [`ExtractionLimits::default`].
    #[must_use]
    pub fn extraction(self, limits: ExtractionLimits) -> Self {
        Self {
            extraction: limits,
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
        assert_eq!(
            cfg.quota(),
            Quota::new()
                .per_principal(Some(256 << 20))
                .total(Some(1 << 30))
        );
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
}
