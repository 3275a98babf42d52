//! Loading `[prompt.offload]`: defaults, a TOML file, the environment, and
//! the errors that name the key at fault.

use std::path::{Path, PathBuf};

use figment::{
    Figment,
    providers::{Format, Serialized, Toml},
};
use serde::Serialize;

use super::{ENV_PREFIX, OffloadConfig, SECTION};

/// A configuration that could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A value has the wrong type, or a key is unknown.
    #[error("invalid offload configuration: `{key}` (from {origin})")]
    Invalid {
        /// Full dotted key, e.g. `prompt.offload.threshold_tokens`.
        key: String,
        /// Where the value came from: an environment variable or a file.
        origin: String,
        /// What is wrong with it: figment's error for this key, which
        /// names neither the key nor the origin again.
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

    /// An out-of-range error for `key` under the section
    /// (`tools.fetch_logs.operation`).
    pub(super) fn out_of_range(key: &str, reason: &'static str) -> Self {
        ConfigError::OutOfRange {
            key: format!("{SECTION}.{key}"),
            reason,
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
            let mut e = err
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
            // The key and origin are this error's text; without its
            // metadata figment's own says only what is wrong.
            e.metadata = None;
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
        let out = ConfigError::out_of_range;
        if self.threshold_tokens == 0 {
            return Err(out("threshold_tokens", "must be greater than 0"));
        }
        if self.ttl_seconds == 0 {
            return Err(out("ttl_seconds", "must be greater than 0"));
        }
        if !(1..=3600).contains(&self.store_timeout_seconds) {
            return Err(out(
                "store_timeout_seconds",
                "must be between 1 and 3600 seconds",
            ));
        }
        if !self.store.is_empty() && !self.is_remote() {
            return Err(out(
                "store",
                "must be an object store URL, s3://BUCKET/PREFIX (a local directory is output_dir)",
            ));
        }
        if self.is_remote() && !self.extract {
            return Err(out(
                "extract",
                "must be true with an object store: lro_extract is the only way to read its results",
            ));
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
        self.extraction.validate()?;
        for (tool, tc) in &self.tools {
            tc.validate(tool)?;
        }
        Ok(())
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
    use crate::error::chain;

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
                .map_err(|e| chain(&e).to_string())
                .unwrap_err();
        assert!(err.contains("threshold_tokens"), "{err}");
        // The key and where it came from once, then figment's reason alone.
        assert!(
            err.starts_with(
                "invalid offload configuration: `prompt.offload.threshold_tokens` (from \
                 environment variable ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS): invalid type"
            ),
            "{err}"
        );
        assert_eq!(err.matches("THRESHOLD_TOKENS").count(), 1, "{err}");
    }

    #[test]
    fn store_and_caller_trace_are_read_and_checked() {
        let cfg = OffloadConfig::from_parts(
            "",
            [
                ("ATLATL_PROMPT__OFFLOAD__STORE", "s3://results/lro"),
                ("ATLATL_PROMPT__OFFLOAD__CALLER_TRACE", "link"),
            ],
        )
        .unwrap();
        assert!(cfg.is_remote());
        assert_eq!(cfg.caller_trace, super::super::CallerTrace::Link);
        let err =
            OffloadConfig::from_parts("", [("ATLATL_PROMPT__OFFLOAD__CALLER_TRACE", "often")])
                .map_err(|e| chain(&e).to_string())
                .unwrap_err();
        assert!(err.contains("caller_trace"), "{err}");
        for (store, extract) in [("/var/lro", "true"), ("s3://b/p", "false")] {
            let err = OffloadConfig::from_parts(
                "",
                [
                    ("ATLATL_PROMPT__OFFLOAD__STORE", store),
                    ("ATLATL_PROMPT__OFFLOAD__EXTRACT", extract),
                ],
            )
            .map_err(|e| chain(&e).to_string())
            .unwrap_err();
            assert!(err.contains("store") || err.contains("extract"), "{err}");
        }
    }

    #[test]
    fn bad_file_value_and_unknown_key_name_the_key() {
        let err =
            OffloadConfig::from_toml_str("[prompt.offload]\nttl_seconds = \"soon\"").unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.ttl_seconds"));
        assert!(
            chain(&err).to_string().contains("from configuration text"),
            "{err}"
        );
        let err = OffloadConfig::from_toml_str("[prompt.offload]\nthreshhold_tokens = 3")
            .map_err(|e| chain(&e).to_string())
            .unwrap_err();
        assert!(err.contains("threshhold_tokens"), "{err}");
    }

    #[test]
    fn bad_guidance_and_profile_name_the_key_and_the_source() {
        let err = OffloadConfig::from_parts("", [("ATLATL_PROMPT__OFFLOAD__GUIDANCE", "terse")])
            .unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.guidance"));
        let text = chain(&err).to_string();
        assert!(
            text.contains("from environment variable ATLATL_PROMPT__OFFLOAD__GUIDANCE"),
            "{text}"
        );
        assert!(text.contains("compact"), "{text}");
        let err = OffloadConfig::from_toml_str("[prompt.offload]\nprofile = \"bare\"").unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.profile"));
        assert!(
            chain(&err).to_string().contains("from configuration text"),
            "{err}"
        );
    }

    #[test]
    fn zero_threshold_is_rejected() {
        let err = OffloadConfig::from_toml_str("[prompt.offload]\nthreshold_tokens = 0")
            .map_err(|e| chain(&e).to_string())
            .unwrap_err();
        assert!(err.contains("prompt.offload.threshold_tokens"), "{err}");
    }

    #[test]
    fn bad_estimator_names_the_key_and_where_it_came_from() {
        let err = OffloadConfig::from_parts("", [("ATLATL_PROMPT__OFFLOAD__ESTIMATOR", "gpt2")])
            .unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.estimator"));
        let msg = chain(&err).to_string();
        assert!(
            msg.contains("from environment variable ATLATL_PROMPT__OFFLOAD__ESTIMATOR"),
            "{msg}"
        );
        assert!(msg.contains("gpt2") && msg.contains("chars"), "{msg}");
        let err = OffloadConfig::from_toml_str("[prompt.offload]\nestimator = 200").unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.estimator"));
        assert!(
            chain(&err).to_string().contains("from configuration text"),
            "{err}"
        );
    }

    #[test]
    fn bad_exact_band_names_the_key() {
        let err = OffloadConfig::from_parts("", [("ATLATL_PROMPT__OFFLOAD__EXACT_BAND", "wide")])
            .unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.exact_band"));
        assert!(
            chain(&err)
                .to_string()
                .contains("from environment variable ATLATL_PROMPT__OFFLOAD__EXACT_BAND"),
            "{err}"
        );
        let err = OffloadConfig::from_toml_str("[prompt.offload]\nexact_band = -0.5").unwrap_err();
        assert_eq!(err.key(), Some("prompt.offload.exact_band"));
        assert!(chain(&err).to_string().contains("0 or more"), "{err}");
    }

    #[test]
    fn missing_file_is_an_error() {
        let err = OffloadConfig::load(Some(Path::new("/nonexistent/lro.toml"))).unwrap_err();
        assert!(matches!(err, ConfigError::MissingFile(_)));
    }
}
